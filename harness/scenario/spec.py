"""What a scenario is, as data: its topics, clients, faults and checks.

A spec is declared in Python by a test or read from a scenario file
(:mod:`harness.scenario.file_format`), and written back as one by ``to_dict``; running
it is :mod:`harness.scenario.runner`'s job. Its schedule and checks name the topic as
:data:`TOPIC`, since the real name is only made when a run creates it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from harness import history as hist
from harness.cluster.migration.plan import MigrationSpec
from harness.scenario.checks import Check as DeclaredCheck
from harness.scenario.checks import parse_check
from harness.scenario.probes import Probe
from harness.scenario.spec_check import ScenarioSpecError, spec_problems
from harness.workload.client_settings import LIBRDKAFKA
from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.pipeline import PipelineSpec
from topologies.model import SettingValue

if TYPE_CHECKING:
    from faults.schedule import Schedule

TOPIC = "$topic"
"""The scenario's topic in a spec's schedule and checks (a scenario file writes the same);
``"$topic:<name>"`` is its further topic ``<name>``."""


def topic_named(topic: str, name: str | None) -> str:
    """The real name of the scenario topic ``name`` (None: the scenario's own)."""
    return topic if name is None else f"{topic}-{name}"


def substitute(value: Any, topic: str) -> Any:
    """``value`` with every string equal to :data:`TOPIC` replaced by ``topic``, and every
    ``"$topic:<name>"`` by that further topic's real name."""
    if isinstance(value, str):
        if value.startswith(TOPIC + ":"):
            return topic_named(topic, value[len(TOPIC) + 1 :])
        return topic if value == TOPIC else value
    if isinstance(value, list | tuple):
        return [substitute(v, topic) for v in value]
    if isinstance(value, Mapping):
        return {k: substitute(v, topic) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class TopicSpec:
    """The scenario's topic; ``assignment`` pins replicas (partition -> broker ids)."""

    partitions: int = 6
    replication_factor: int = 3
    config: Mapping[str, SettingValue] = field(default_factory=dict)
    assignment: Mapping[int, Sequence[int]] | None = None

    @property
    def partition_count(self) -> int:
        """How many partitions the topic has: pinned ones when an assignment gives them."""
        return self.partitions if self.assignment is None else len(self.assignment)

    @property
    def replicas(self) -> int:
        """Its replication factor: the pinned replica lists' length when assigned."""
        return (self.replication_factor if self.assignment is None
                else len(next(iter(self.assignment.values()), ())))

    def to_dict(self, name: str) -> dict[str, Any]:
        return {"name": name, "partitions": self.partition_count,
                "replication_factor": self.replicas, "config": dict(self.config),
                "assignment": None if self.assignment is None
                else {str(p): list(r) for p, r in self.assignment.items()}}


@dataclass(frozen=True)
class NamedTopic:
    """A further topic of a scenario, beside its own: written ``"$topic:<name>"`` in
    schedules and checks, and created as ``<the scenario's topic>-<name>``."""

    name: str
    spec: TopicSpec = TopicSpec()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]+", self.name):
            raise ValueError(f"topic name {self.name!r}: letters, digits and '_' only")


@dataclass(frozen=True)
class ScenarioSpec:
    """What a scenario is: its text, topic, clients and what it accepts."""

    id: str
    title: str
    description: str = ""
    expected: str = ""
    topic: TopicSpec = TopicSpec()
    producers: tuple[ProducerSpec, ...] = (ProducerSpec("pa", "a"),)
    consumers: tuple[ConsumerSpec, ...] = (ConsumerSpec("ca", "a"),)
    # Further topics (a pipeline's output), and consume-transform-produce pipeline members
    # reading the scenario's topic and writing one of them (harness/workload/pipeline.py).
    topics: tuple[NamedTopic, ...] = ()
    pipelines: tuple[PipelineSpec, ...] = ()
    expectations: Mapping[str, hist.Rule] = field(default_factory=dict)
    # The faults, as a scenario file's [[schedule]] entries spell them (faults/schedule.py),
    # with the topic written as "$topic": its real name is only known when the run makes it.
    schedule: tuple[Mapping[str, Any], ...] = ()
    # What must happen beyond the verdict's rules: predicates over the cluster-state
    # timeline, the schedule's moments and the sends (harness/scenario/checks/).
    checks: tuple[DeclaredCheck, ...] = ()
    # Looks at what one broker believes, at moments of the schedule, for probe checks
    # (harness/scenario/probes.py).
    probes: tuple[Probe, ...] = ()
    # Broker settings the scenario needs. The cluster must already run them: `kafka-chaos
    # run FILE` starts one per distinct set; a shared cluster without them is refused.
    broker_settings: Mapping[str, SettingValue] = field(default_factory=dict)
    # How often the run's one ZooKeeper sampler looks (seconds); a scenario that times a
    # failover asks for finer samples, and reads them from ``run.cluster_state``.
    sample_interval_s: float = 0.25
    # The workload runs alone before the schedule starts and after it ends; the schedule
    # also waits for ``warmup_acked`` acknowledgements, so a fault strikes a workload that
    # is flowing (a cold JVM may take seconds to start a new partition's followers).
    warmup_s: float = 3.0
    warmup_acked: int = 0
    cooldown_s: float = 3.0
    # A run in which almost nothing was acknowledged tested nothing, whatever its verdict.
    min_acked: int = 50
    # A control run: the checks named here (as the run records them) are run where what
    # they look for cannot happen, to show they can fail. Each must be evaluated and fail;
    # it then counts as passed, and the report says it failed as required.
    must_fail: tuple[str, ...] = ()
    # A ZooKeeper-to-KRaft migration walked beside the workload and the schedule, on a
    # cluster started from a migrating topology (harness/cluster/migration/).
    migration: MigrationSpec | None = None

    def __post_init__(self) -> None:
        names = [t.name for t in self.topics]
        if len(set(names)) < len(names):
            raise ValueError(f"scenario {self.id}: a topic name is given twice in {names}")
        for consumer in self.consumers:
            if consumer.topic is not None and consumer.topic not in names:
                raise ValueError(f"consumer {consumer.name}: topic {consumer.topic!r} is none of the "
                                 f"scenario's topics {names}")
        for pipeline in self.pipelines:
            if pipeline.output not in names:
                raise ValueError(f"pipeline {pipeline.name}: output {pipeline.output!r} is none of the "
                                 f"scenario's topics {names}")
        problems = spec_problems(self)
        if problems:
            raise ScenarioSpecError(problems, f"scenario {self.id}")

    def on_client(self, client: str, version: str | None = None) -> ScenarioSpec:
        """This scenario with every producer and consumer on ``client`` (of ``version``),
        under an id that says so unless it is librdkafka's: the same faults and checks, to
        compare clients. Pipelines keep their client. A client part the chosen client
        cannot run (a Java transactional producer) is refused as it would be in a file."""
        suffix = "" if client == LIBRDKAFKA else f"-{client}" + ("" if version is None else version)
        return replace(self, id=self.id + suffix.replace(".", "_"),
                       title=self.title + ("" if client == LIBRDKAFKA else f" ({client} client)"),
                       producers=tuple(replace(p, client=client, client_version=version)
                                       for p in self.producers),
                       consumers=tuple(replace(c, client=client, client_version=version)
                                       for c in self.consumers))

    def groups(self) -> tuple[tuple[str, str | None], ...]:
        """Each consumer group of the scenario and the topic name it reads (None: the
        scenario's own), once each, consumers' groups first, then pipelines'."""
        read = [(c.group, c.topic) for c in self.consumers if c.group is not None]
        return tuple(dict.fromkeys([*read, *((p.group, None) for p in self.pipelines)]))

    def to_dict(self) -> dict[str, Any]:
        """The spec as a scenario file spells it (``tomli_w.dumps`` writes the file that
        :func:`harness.scenario.file_format.parse_scenario` reads back to this spec)."""
        topic = _topic_table(self.topic)
        out: dict[str, Any] = {
            "id": self.id, "title": self.title, "description": self.description, "expected": self.expected,
            "warmup_s": self.warmup_s, "warmup_acked": self.warmup_acked, "cooldown_s": self.cooldown_s,
            "min_acked": self.min_acked,
            "sample_interval_s": self.sample_interval_s, "topic": topic,
            "producers": [p.to_dict() for p in self.producers],
            "consumers": [c.to_dict() for c in self.consumers],
            "expectations": dict(self.expectations),
        }
        if self.topics:
            out["topics"] = [{"name": t.name, **_topic_table(t.spec)} for t in self.topics]
        if self.pipelines:
            out["pipelines"] = [p.to_dict() for p in self.pipelines]
        if self.broker_settings:
            out["brokers"] = {"settings": dict(self.broker_settings)}
        if self.must_fail:
            out["must_fail"] = list(self.must_fail)
        if self.migration:
            out["migration"] = self.migration.to_dict()
        out["schedule"] = [dict(entry) for entry in self.schedule]
        out["checks"] = [check.to_spec() for check in self.checks]
        out["probes"] = [probe.to_spec() for probe in self.probes]
        return out

    def for_topic(self, topic: str) -> tuple[Schedule, list[DeclaredCheck]]:
        """The schedule and checks with ``$topic`` replaced by the run's real topic."""
        from faults.schedule import Schedule

        schedule = Schedule.from_dict({"entries": substitute(list(self.schedule), topic)}, self.id)
        checks = [parse_check(substitute(c.to_spec(), topic), f"check {i}")
                  for i, c in enumerate(self.checks, start=1)]
        return schedule, checks


def _topic_table(topic: TopicSpec) -> dict[str, Any]:
    """A topic as a scenario file's ``[topic]`` (or ``[[topics]]``) table spells it."""
    table: dict[str, Any] = {"partitions": topic.partitions, "replication_factor": topic.replication_factor,
                             "config": dict(topic.config)}
    if topic.assignment is not None:
        table["assignment"] = {str(p): list(r) for p, r in sorted(topic.assignment.items())}
    return table
