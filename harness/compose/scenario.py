"""One scenario, end to end: topic, workload, faults, heal, drain, judge, record.

The order is Jepsen's: clients run against the cluster while a nemesis breaks it; then
everything heals, a final read collects what survived, and the checker judges the
history. Data flows one way - the run writes a history, the Spark job turns it into a
verdict - and the test adds what ZooKeeper showed (checks and measured windows). All of
it lands in the run's folder (:mod:`harness.compose.rundir`) for the HTML report.
"""

from __future__ import annotations

import re
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

from harness import history as hist
from harness.cluster.node_config import format_value
from harness.cluster.sampler import ZkSampler
from harness.compose.checks import (
    Anchor,
    Evidence,
    Moment,
    Observed,
    ProbeResult,
    evaluate_checks,
    parse_check,
)
from harness.compose.checks import Check as DeclaredCheck
from harness.compose.expectations import (
    Bounds,
    IsrAfterHeal,
    Measured,
    broker_setting_differences,
    controller_changes,
    evaluate,
    isr_full_after,
    isr_full_since,
    isr_shortfalls,
    leader_epoch_changes,
    longest_gaps,
    send_outcomes,
)
from harness.compose.judge import Judge
from harness.compose.probes import PROBE_TOPIC_SUFFIX, Looker, Probe, ProbeTaker
from harness.compose.rundir import RunDirectory, write_json
from harness.errors import ChaosError
from harness.workload.driver import (
    ConsumerSpec,
    ProducerSpec,
    Workload,
    drain_final_log,
    record_final_offsets,
)
from harness.workload.pipeline import EXACTLY_ONCE, PipelineSpec, default_transactional_id
from topologies.model import SettingValue

if TYPE_CHECKING:
    from faults.base import Fault
    from faults.events import EventLog
    from faults.schedule import Schedule
    from harness.cluster.lifecycle import Cluster
    from spark_jobs.findings import Verdict


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
        return {"name": name, "partitions": self.partitions,
                "replication_factor": self.replication_factor, "config": dict(self.config),
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
    # timeline, the schedule's moments and the sends (harness/compose/checks/).
    checks: tuple[DeclaredCheck, ...] = ()
    # Looks at what one broker believes, at moments of the schedule, for probe checks
    # (harness/compose/probes.py).
    probes: tuple[Probe, ...] = ()
    # Bounds on failed and in-doubt sends, unavailability, elections and ISR recovery,
    # each judged as one check when the scenario finishes (harness/compose/expectations.py).
    bounds: Bounds | None = None
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

    def __post_init__(self) -> None:
        names = [t.name for t in self.topics]
        if len(set(names)) < len(names):
            raise ValueError(f"scenario {self.id}: a topic name is given twice in {names}")
        for consumer in self.consumers:
            if consumer.topic is not None and consumer.topic not in names:
                raise ValueError(f"consumer {consumer.name}: topic {consumer.topic!r} is none of the "
                                 f"scenario's topics {names}")
        clients = [p.name for p in self.producers] + [c.name for c in self.consumers]
        for pipeline in self.pipelines:
            if pipeline.output not in names:
                raise ValueError(f"pipeline {pipeline.name}: output {pipeline.output!r} is none of the "
                                 f"scenario's topics {names}")
            if pipeline.name in clients:
                raise ValueError(f"pipeline {pipeline.name}: a producer or consumer has that name too")
        if len({p.name for p in self.pipelines}) < len(self.pipelines):
            raise ValueError(f"scenario {self.id}: two pipeline members share a name")

    def groups(self) -> tuple[tuple[str, str | None], ...]:
        """Each consumer group of the scenario and the topic name it reads (None: the
        scenario's own), once each, consumers' groups first, then pipelines'."""
        read = [(c.group, c.topic) for c in self.consumers if c.group is not None]
        return tuple(dict.fromkeys([*read, *((p.group, None) for p in self.pipelines)]))

    def to_dict(self) -> dict[str, Any]:
        """The spec as a scenario file spells it (``tomli_w.dumps`` writes the file that
        :func:`harness.compose.scenario_file.parse_scenario` reads back to this spec)."""
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
        if self.bounds is not None and not self.bounds.empty:
            out["bounds"] = self.bounds.to_dict()
        if self.broker_settings:
            out["brokers"] = {"settings": dict(self.broker_settings)}
        if self.must_fail:
            out["must_fail"] = list(self.must_fail)
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


# How long past the schedule's end a probe set after its last action may still be taken.
PROBE_GRACE_S = 30.0

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


def _partitions(topic: TopicSpec) -> list[int]:
    return list(range(topic.partition_count))


class ScenarioError(ChaosError):
    """A scenario that cannot run on the cluster it was given."""


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class _IsrPoll:
    """What polling ZooKeeper after the heal found, for the ISR bound."""

    healed_at: float
    replicas: Mapping[int, tuple[int, ...]]
    full_at: float | None  # when a poll saw every ISR full; None: not before the bound
    waiting: list[str]  # the partitions still short at the last poll


class ScenarioRun:
    """A running scenario; use as a context manager, call :meth:`finish` to judge."""

    def __init__(self, cluster: Cluster, spec: ScenarioSpec, run: RunDirectory, judge: Judge,
                 scenario_id: str | None = None) -> None:
        from faults.events import EventLog

        self.cluster = cluster
        self.spec = spec
        self._controls_evaluated: set[str] = set()
        self.judge = judge
        self.scenario_id = scenario_id or spec.id
        self.dir = run.scenario_dir(self.scenario_id)
        self.topic = f"{self.scenario_id}-{uuid.uuid4().hex[:6]}"
        self.partitions = _partitions(spec.topic)
        # Each further topic's name -> its real name and partitions.
        self.named_topics = {t.name: (topic_named(self.topic, t.name), _partitions(t.spec))
                             for t in spec.topics}
        self.checks: list[Check] = []
        self.windows: list[dict[str, Any]] = []
        self.verdict: Verdict | None = None
        self.writer = hist.HistoryWriter(self.dir / "history", run.run_id, scenario={
            "id": self.scenario_id, "title": spec.title, "topic": self.topic,
            "expectations": dict(spec.expectations),
        })
        self.log: EventLog = EventLog(sink=self._record_fault)
        self._writer_lock = threading.Lock()
        self.sampler: ZkSampler | None = None
        self._sampler_recorded = False
        self.workload: Workload | None = None
        self._finished = False
        self._error: str | None = None
        self.started = time.time()
        # The workload's wall-clock span: gaps between acknowledgements end at its stop.
        self._workload_started: float | None = None
        self._workload_stopped: float | None = None
        self._workload_stopped_mono: float | None = None
        # When each schedule action began, and what the probes found, for the spec's
        # checks (filled by run_schedule).
        self.moments: dict[Anchor, Moment] = {}
        self.probe_results: dict[str, ProbeResult] = {}

    # -- recording -------------------------------------------------------------------------
    def _record_fault(self, row: Mapping[str, Any]) -> None:
        if self.workload is not None:
            self.workload.recorder.row("faults", row)
        else:
            with self._writer_lock:
                self.writer.append("faults", row)

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        """Record a check for the report; returns ``passed`` to assert on. A check the spec
        names in ``must_fail`` is inverted: it passes when it failed, as a control run
        requires."""
        if name in self.spec.must_fail:
            self._controls_evaluated.add(name)
            held = "held" if passed else "failed"
            name = f"{name} (must fail in this control run)"
            detail = f"{held}, as measured: {detail}"
            passed = not passed
        self.checks.append(Check(name, bool(passed), detail))
        return bool(passed)

    def _check_controls(self) -> None:
        """Every check a control run names in ``must_fail`` was evaluated: a name that
        matches no check (misspelt, or the check never ran) would otherwise pass unseen."""
        if not self.spec.must_fail:
            return
        missing = [name for name in self.spec.must_fail if name not in self._controls_evaluated]
        self.check("every check the control run must see fail was evaluated", not missing,
                   "never evaluated: " + "; ".join(missing) if missing
                   else f"{len(self.spec.must_fail)} evaluated")

    def record_test_outcome(self, passed: bool, detail: str) -> None:
        """The pytest result of the test that ran this scenario, added to its checks."""
        self.checks.append(Check("test assertions (pytest)", passed, detail))
        self._write_assertions()

    def window(self, name: str, seconds: float) -> float:
        """Record a measured window (e.g. unavailability of a partition) for the report."""
        self.windows.append({"name": name, "seconds": round(seconds, 3)})
        return seconds

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, workload: bool = True) -> ScenarioRun:
        try:
            self._refuse_missing_broker_settings()
        except ScenarioError as err:  # the page says why the scenario never ran
            self._close(hist.STATUS_ABORTED)
            self._error = str(err)
            self._write_assertions()
            raise
        topic = self.spec.topic
        assignment = None if topic.assignment is None else {p: list(r) for p, r in topic.assignment.items()}
        self.cluster.create_topic(self.topic, topic.partitions, topic.replication_factor,
                                  dict(topic.config), assignment=assignment)
        if any(probe.look == "produce" for probe in self.spec.probes):
            # Produce probes write beside the topic: their records are no workload's sends.
            self.cluster.create_topic(self.topic + PROBE_TOPIC_SUFFIX, topic.partitions,
                                      topic.replication_factor, dict(topic.config), assignment=assignment)
        for named in self.spec.topics:
            further = named.spec
            pinned = (None if further.assignment is None
                      else {p: list(r) for p, r in further.assignment.items()})
            self.cluster.create_topic(self.named_topics[named.name][0], further.partitions,
                                      further.replication_factor, dict(further.config), assignment=pinned)
        self._write_config()
        self._check_broker_settings()
        sampled = [self.topic, *(real for real, _ in self.named_topics.values())]
        self.sampler = ZkSampler.for_cluster(self.cluster, sampled, interval_s=self.spec.sample_interval_s)
        self.sampler.start()
        if workload:
            self.start_workload()
        return self

    @property
    def cluster_state(self) -> ZkSampler:
        """The run's one ZooKeeper sampler, for checks that ask when something changed;
        what it saw becomes the history's ``cluster_state`` table."""
        if self.sampler is None:
            raise ScenarioError("the scenario has not started: no cluster state is being sampled")
        return self.sampler

    def start_workload(self) -> Workload:
        self._workload_started = time.time()
        self.workload = Workload(self.cluster, self.topic, self.partitions, self.writer,
                                 self.spec.producers, self.spec.consumers, self.spec.pipelines,
                                 self.named_topics).start()
        return self.workload

    def stop_workload(self) -> dict[str, int]:
        if self.workload is None:
            return {}
        if self._workload_stopped is None:
            self._workload_stopped, self._workload_stopped_mono = time.time(), time.monotonic()
        self.workload.stop()
        return self.workload.outcomes()

    def inject(self, fault: Fault) -> tuple[str, ...]:
        return fault.inject(self.cluster, self.log)

    def heal(self, fault: Fault) -> None:
        fault.heal(self.cluster, self.log)

    def run_schedule(self, schedule: Schedule, timeout_s: float | None = None) -> bool:
        """Run a fault schedule beside the workload and wait for it to finish.

        The schedule is a check of its own: it passes only when every entry was injected
        and healed without error, within ``timeout_s`` past its latest planned end (every
        condition waited to its timeout) - a schedule that did not happen must not let the
        scenario pass as if it had. Conditions (``when``) read the run's one sampler.
        """
        schedule.save(self.dir / "schedule.json")
        # Each `after` link waits behind a heal whose own length is not planned: a grace each.
        chained = sum(1 for e in schedule.entries if e.after is not None)
        with schedule.start(self.cluster, self.log, observe=self.cluster_state.latest) as running:
            probes = ProbeTaker(self.spec.probes, lambda: running.moments,
                                Looker(self.cluster, self.topic)).start()
            grace = None if timeout_s is None else schedule.longest_s + timeout_s * (1 + chained)
            finished = running.wait(grace)
            probes.finish(max((p.after_s for p in self.spec.probes), default=0.0) + PROBE_GRACE_S)
        self.probe_results.update(probes.results)
        write_json(self.dir / "probes.json", [r.to_dict() for r in probes.results.values()])
        self.moments.update({Anchor(entry, action): Moment(ts, mono)
                             for (entry, action), (ts, mono) in running.moments.items()})
        schedule.save(self.dir / "schedule.json", self.log)
        problems = list(running.errors)
        if not finished:
            problems.insert(0, f"the schedule had not finished {timeout_s:.0f} s after its latest "
                               "planned end")
        injected = sum(1 for e in self.log if e.action == "inject" and e.ok)
        if injected < len(schedule.entries):
            problems.append(f"{injected} of {len(schedule.entries)} entries injected")
        return self.check(f"fault schedule ran: {len(schedule.entries)} entries injected and healed",
                          not problems, "; ".join(problems) or f"{injected} injections, all healed")

    def await_acked(self, acked: int, timeout_s: float) -> bool:
        """Wait until the workload has ``acked`` acknowledgements and every group whose
        members commit has had a commit go through; a check of its own. A group joins,
        rebalances and (for a pipeline) initialises its transactions before it first
        commits, which a loaded machine stretches to seconds: a fault meant to strike a
        group that is committing must not strike before it started."""
        workload = self.workload
        groups = [] if workload is None else workload.committing_groups
        if acked <= 0 and not groups:
            return True
        counts = workload.outcomes() if workload is not None else {}
        waiting = [] if workload is None else workload.groups_yet_to_commit()
        deadline = time.monotonic() + timeout_s
        while ((counts.get("acked", 0) < acked or waiting) and time.monotonic() < deadline
               and workload is not None):
            time.sleep(0.1)
            counts, waiting = workload.outcomes(), workload.groups_yet_to_commit()
        name = f"workload flowing before the faults: {acked} sends acknowledged"
        detail = f"{counts.get('acked', 0)} acknowledged (sends so far {counts})"
        if groups:
            name += " and a commit of every group through"
            detail += f"; groups yet to commit: {', '.join(waiting) or 'none'}"
        return self.check(name, counts.get("acked", 0) >= acked and not waiting,
                          f"{detail} after at most {timeout_s:.0f} s")

    def settle(self, seconds: float) -> None:
        """Let the workload run for ``seconds`` (before, during or after a fault)."""
        time.sleep(seconds)

    def finish(self) -> Verdict:
        """Stop clients, heal everything, drain the log, judge, and write the record."""
        from faults.heal import heal_all

        if self._finished:
            assert self.verdict is not None
            return self.verdict
        self.stop_workload()
        self._check_clients()
        heal_started = time.time()
        heal_all(self.cluster, self.log)
        self._check_fault_events()
        isr = self._poll_isr_after_heal(heal_started)
        self._stop_sampler()
        transactional = (any(p.transaction_size is not None for p in self.spec.producers)
                         or any(p.guarantee == EXACTLY_ONCE for p in self.spec.pipelines))
        topics: dict[str | None, tuple[str, list[int]]] = {None: (self.topic, self.partitions)}
        topics.update(self.named_topics)
        for topic, partitions in topics.values():
            drain_final_log(self.cluster.observer_bootstrap(), topic, partitions, self.writer,
                            read_committed_pass=transactional)
        record_final_offsets(self.cluster.observer_bootstrap(),
                             [(group, *topics[name]) for group, name in self.spec.groups()], self.writer)
        drained = time.monotonic()
        self._close(hist.STATUS_COMPLETE)
        self._check_bounds(isr)
        self._evaluate_checks()
        self._check_controls()
        self.verdict = self.judge.verdict(self.dir / "history")
        self.window("end of the final drain to the verdict (history closed, bounds and checks, judgement)",
                    time.monotonic() - drained)
        self.verdict.write(self.dir / "verdict.json")
        self._finished = True
        self._write_assertions()
        return self.verdict

    def _check_clients(self) -> None:
        """Every producer and consumer ran until told to stop: a client whose loop died
        left a history that stops early, and a verdict on it would look clean."""
        if self.workload is None:
            return
        died = self.workload.client_errors()
        names = ([p.name for p in self.spec.producers] + [c.name for c in self.spec.consumers]
                 + [p.name for p in self.spec.pipelines])
        self.check("every client ran until the workload stopped", not died,
                   "; ".join(f"{name}: {error}" for name, error in died.items())
                   or f"{', '.join(names)} ran to the end")

    def _check_fault_events(self) -> None:
        """Every fault event of the scenario succeeded: an inject or heal that raised
        means the scenario did not test what it says, whatever the verdict."""
        failed = [f"{e.action} {e.fault} {', '.join(e.targets)}: {e.outcome}" for e in self.log if not e.ok]
        injected = sum(1 for e in self.log if e.action == "inject")
        healed = len(self.log) - injected
        self.check("faults injected and healed without error", not failed,
                   "; ".join(failed) or f"{injected} injections and {healed} heals, all ok")

    # -- broker settings -------------------------------------------------------------------
    def _refuse_missing_broker_settings(self) -> None:
        """A scenario needing broker settings the cluster was not started with would test
        something else; refuse it before anything is created."""
        running = {k: format_value(v) for k, v in self.cluster.broker_settings().items()}
        missing = [f"{k}={format_value(v)} (cluster: {running.get(k, 'unset')})"
                   for k, v in self.spec.broker_settings.items() if running.get(k) != format_value(v)]
        if missing:
            raise ScenarioError(
                f"scenario {self.scenario_id} needs broker settings this cluster does not run: "
                f"{', '.join(missing)}; run it with `kafka-chaos run FILE`, which starts a cluster "
                "with a scenario file's [brokers] settings")

    def _check_broker_settings(self) -> None:
        """Ask every broker for the scenario's settings: Kafka ignores a name it does not
        know, so only the broker's own answer shows that a setting is in force."""
        declared = {k: format_value(v) for k, v in self.spec.broker_settings.items()}
        if not declared:
            return
        name = "brokers run the scenario's broker settings"
        try:
            reported = {b.broker_id: self._broker_config(b.broker_id) for b in self.cluster.topology.brokers}
        except Exception as err:  # any admin failure: the check cannot pass unread
            self.check(name, False, f"the brokers' configuration could not be read: {err}")
            return
        differences = broker_setting_differences(declared, reported)
        listing = ", ".join(f"{k}={v}" for k, v in declared.items())
        self.check(name, not differences, "; ".join(differences)
                   or f"{listing} on brokers {', '.join(map(str, sorted(reported)))}, as each reports it")

    def _broker_config(self, broker_id: int) -> dict[str, str | None]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        resource = ConfigResource(ResourceType.BROKER, str(broker_id))
        [future] = self.cluster.admin.describe_configs([resource], request_timeout=15).values()
        return {name: entry.value for name, entry in future.result(timeout=30).items()}

    # -- bounds ----------------------------------------------------------------------------
    def _poll_isr_after_heal(self, heal_started: float) -> _IsrPoll | None:
        """Poll ZooKeeper until every ISR of the topic is full or the ISR bound has passed
        since the last heal; the replica sets it reads also serve the sampler's events.

        The last heal is the last heal event recorded (a schedule's or heal_all's), else
        the moment finish began healing. Not ``measure_until``: its clock starts at the
        call, and the bound runs from the heal, which may be long past by now.
        """
        bound = None if self.spec.bounds is None else self.spec.bounds.isr_full_after_heal_s
        if bound is None:
            return None
        healed_at = max((e.ts for e in self.log if e.action == "heal"), default=heal_started)
        replicas: dict[int, tuple[int, ...]] = {}
        while True:
            try:
                parts = self.cluster.state([self.topic]).topic(self.topic)
                replicas = {p.partition: p.replicas for p in parts}
                waiting = isr_shortfalls({p.partition: (p.isr, p.replicas) for p in parts})
                if parts and not waiting:
                    return _IsrPoll(healed_at, replicas, time.time(), [])
            except Exception as err:  # ZooKeeper unreadable for a moment: try until the bound
                waiting = [f"ZooKeeper could not be read: {err}"]
            if time.time() >= healed_at + bound:
                return _IsrPoll(healed_at, replicas, None, waiting or ["the topic has no partition state"])
            time.sleep(0.25)

    def _check_bounds(self, isr: _IsrPoll | None) -> None:
        """One check per bound of the spec, each with the measured figure beside the bound;
        per-partition gaps are also recorded as measured windows."""
        bounds = self.spec.bounds
        if bounds is None or bounds.empty:
            return
        try:
            measured = self._measure(bounds, isr)
            checks = evaluate(bounds, measured)
        except Exception as err:  # a bug here must fail the bounds, not lose the verdict
            self.check("bounds judged", False, f"the bounds could not be judged: {err!r}")
            return
        for check in checks:
            self.check(check.name, check.passed, check.detail)
        for partition, gap in sorted((measured.gaps or {}).items()):
            self.window(f"longest stretch without an acknowledgement on {self.topic}-{partition}, "
                        f"from {measured.window_from} to the end of the workload", gap)

    def _measure(self, bounds: Bounds, isr: _IsrPoll | None) -> Measured:
        """Gather the figures from the closed history, the sampler and the ISR poll; what
        cannot be read is a reason in ``problems``, and its bounds fail with it."""
        problems: dict[str, str] = {}
        rows: list[dict[str, Any]] | None = None
        try:
            rows = [row for part in hist.part_files(self.dir / "history", "sends")
                    for row in pq.read_table(part, columns=["partition", "outcome", "ack_ts"]).to_pylist()]
        except (OSError, pa.ArrowException) as err:
            problems["sends"] = problems["gaps"] = f"the sends table cannot be read: {err}"
        injects = [e.ts for e in self.log if e.action == "inject"]
        start = min(injects) if injects else self._workload_started
        window_from = "the first fault inject" if injects else "the start of the workload"
        end = self._workload_stopped
        window = None
        if start is None or end is None:
            problems.setdefault("gaps", "no workload ran, so no acknowledgement could be timed")
        elif end <= start:
            problems.setdefault("gaps", "the first fault was injected after the workload stopped")
        else:
            window = (start, end)
        states = self.sampler.rows() if self.sampler is not None else []
        measured: dict[str, Any] = {}
        for key, measure in (("controller_changes", lambda: controller_changes(states)),
                             ("leader_epoch_changes", lambda: leader_epoch_changes(states, self.topic)),
                             ("isr_full_after_heal_s", lambda: self._isr_after_heal(states, isr))):
            try:
                measured[key] = measure()
            except ValueError as err:  # a sampled row that cannot be read
                problems[key] = str(err)
        if self.sampler is None:
            for key in ("controller_changes", "leader_epoch_changes"):
                problems[key] = "ZooKeeper was not sampled"
                measured.pop(key, None)
        return Measured(
            sends=None if rows is None else send_outcomes(rows),
            window=window, window_from=window_from,
            gaps=None if rows is None or window is None else longest_gaps(rows, *window),
            controller=measured.get("controller_changes"),
            leader_epochs=measured.get("leader_epoch_changes"),
            isr=measured.get("isr_full_after_heal_s"),
            problems=problems,
        )

    def _evaluate_checks(self) -> None:
        """Judge the spec's checks on what the run recorded; each becomes one check line."""
        if not self.spec.checks:
            return
        try:
            _, checks = self.spec.for_topic(self.topic)
            sends = self._rows("sends", ["producer_id", "partition", "send_ts", "ack_ts", "outcome",
                                         "message_id", "transaction_id"])
            polls = self._rows("polls", ["consumer_id", "partition", "offset", "poll_ts", "message_id",
                                         "isolation"])
            attempts = self._rows("attempts", ["producer_id", "ts", "error"])
            commits = self._rows("commits", ["group", "consumer_id", "topic", "partition", "offset", "ts",
                                             "outcome", "error"])
            transactions = self._rows("transactions", ["transaction_id", "producer_id", "begin_ts",
                                                       "end_requested_ts", "end_ts", "outcome", "error"])
            final_log = self._rows("final_log", ["message_id", "read_committed"])
            final_offsets = self._rows("final_offsets", ["group", "topic", "partition", "offset"])
            records = [] if self.sampler is None else self.sampler.records()
            timeline = [Observed(r.mono, r.held_until(), state) for r in records
                        if (state := r.with_modes()) is not None]
            stopped = (self._workload_stopped or time.time(), self._workload_stopped_mono or time.monotonic())
            evidence = Evidence(timeline, dict(self.moments), sends, Moment(*stopped), polls, attempts,
                                dict(self.probe_results), commits, transactions, final_log, final_offsets)
        except Exception as err:  # evidence that cannot be read fails every check, with the reason
            for check in self.spec.checks:
                self.check(check.name, False, f"the run's evidence could not be read: {err!r}")
            return
        # Named as the spec wrote them, partitions as "p0": the topic's full name is noise.
        for declared, result in zip(self.spec.checks, evaluate_checks(checks, evidence), strict=True):
            self.check(declared.name.replace(f"{TOPIC}-", "p"), result.passed,
                       result.detail.replace(f"{self.topic}-", "p"))

    def _rows(self, table: str, columns: list[str]) -> list[dict[str, Any]]:
        """The closed history's ``table``, those columns only, as rows."""
        return [row for part in hist.part_files(self.dir / "history", table)
                for row in pq.read_table(part, columns=columns).to_pylist()]

    @property
    def passed(self) -> bool:
        """Every check held, the verdict (if judged) passed, and nothing stopped the run."""
        return (self._error is None and all(c.passed for c in self.checks)
                and (self.verdict is None or self.verdict.passed))

    def failures(self) -> list[str]:
        """The failed checks and rules, one line each, for an assertion message."""
        lines = [f"{c.name}: {c.detail}" for c in self.checks if not c.passed]
        if self.verdict is not None and not self.verdict.passed:
            lines.extend(f"verdict: {r.reason}" for r in self.verdict.rules if not r.passed)
        return lines

    def _isr_after_heal(self, states: Sequence[Any], isr: _IsrPoll | None) -> IsrAfterHeal | None:
        if isr is None:
            return None
        since = isr_full_since(states, self.topic, isr.replicas)
        return isr_full_after(isr.healed_at, since, isr.full_at, isr.waiting)

    def _stop_sampler(self) -> None:
        """Stop sampling ZooKeeper, once, and record what it saw: its samples as the
        history's cluster_state rows, and the changes derived from them for the report."""
        if self.sampler is None or self._sampler_recorded:
            return
        self._sampler_recorded = True
        events = self.sampler.stop()
        for row in self.sampler.rows():
            self.writer.append("cluster_state", row)
        write_json(self.dir / "cluster_events.json", [e.to_dict() for e in events])

    def _close(self, status: str) -> None:
        self._stop_sampler()
        self.writer.close(status)

    def _write_assertions(self) -> None:
        checks = [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks]
        if self._error:
            checks.append({"name": "scenario ran to completion", "passed": False, "detail": self._error})
        write_json(self.dir / "assertions.json", {
            "passed": all(c["passed"] for c in checks) and self._error is None,
            "checks": checks, "windows": self.windows,
            "duration_s": round(time.time() - self.started, 1),
        })

    def _write_config(self) -> None:
        schedule = substitute(list(self.spec.schedule), self.topic)
        settings = self.cluster.topology.broker_settings
        write_json(self.dir / "config.json", {
            "scenario": {"id": self.scenario_id, "title": self.spec.title,
                         "description": self.spec.description, "expected": self.spec.expected},
            "kafka_version": self.cluster.kafka_version,
            "topology": self.cluster.topology.describe(),
            "broker_settings": {k: format_value(v) for k, v in self.cluster.broker_settings().items()},
            "topic": self.spec.topic.to_dict(self.topic),
            "producer": [p.to_dict() for p in self.spec.producers],
            "consumer": [c.to_dict() for c in self.spec.consumers],
            "schedule": schedule,
            "expectations": dict(self.spec.expectations),
            "bounds": {} if self.spec.bounds is None else self.spec.bounds.to_dict(),
            "effective_config": self._effective_config(),
            "test_timeouts": {k: settings[k] for k in (
                "zookeeper.session.timeout.ms", "replica.lag.time.max.ms") if k in settings},
        })
        if self.spec.schedule:
            self.spec.for_topic(self.topic)[0].save(self.dir / "schedule.json")
        # The spec itself, replayable as it ran: `kafka-chaos run <this folder>/scenario.toml`.
        (self.dir / "scenario.toml").write_text(
            f"# {self.spec.title}: the spec this scenario ran, replayable with `kafka-chaos run FILE`.\n"
            + tomli_w.dumps(self.spec.to_dict()))

    def _effective_config(self) -> dict[str, Any]:
        """Every setting brokers, topic and clients ran with and where its value came from,
        so a page answers "was that the default?" without reading harness code."""
        from harness.workload.attempts import attempt_logging_shown
        from harness.workload.clients import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS
        from harness.workload.group_member import member_settings

        running = self.cluster.broker_settings()
        extra = self.cluster.release.extra_broker_settings
        scenario = {k: format_value(v) for k, v in self.spec.broker_settings.items()}
        topology = {k: format_value(v) for k, v in running.items() if k not in scenario and k not in extra}
        topic_defaults = {key: format_value(running[broker_key])
                          for key, broker_key in TOPIC_BROKER_DEFAULTS.items() if broker_key in running}

        def harness(zone: str) -> dict[str, Any]:
            return {"bootstrap.servers": self.cluster.bootstrap_servers(zone), "client.id": None}

        clients = [{"role": "producer", "name": p.name, "zone": p.zone, "settings": layered_settings(
                        [("default", PRODUCER_DEFAULTS), ("scenario", p.settings),
                         ("harness", {**harness(p.zone), **attempt_logging_shown(p.settings)})])}
                   for p in self.spec.producers]
        def member(c: ConsumerSpec) -> dict[str, Any]:
            return {} if c.group is None else member_settings(c.group, c.commit, c.settings)

        clients += [{"role": "consumer", "name": c.name, "zone": c.zone, "settings": layered_settings(
                         [("default", CONSUMER_DEFAULTS), ("harness", {"group.id": None}),
                          ("scenario", c.settings), ("harness", {**harness(c.zone), **member(c)})])}
                    for c in self.spec.consumers]
        for pipe in self.spec.pipelines:  # a member is a consumer and a producer
            consuming = member_settings(pipe.group, "none" if pipe.guarantee == EXACTLY_ONCE else "sync",
                                        pipe.consumer_settings)
            producing: dict[str, Any] = {"enable.idempotence": True, "acks": "all"}
            if pipe.guarantee == EXACTLY_ONCE:
                producing["transactional.id"] = pipe.transactional_id or default_transactional_id(
                    pipe.group, pipe.name)
            clients += [
                {"role": "consumer", "name": pipe.name, "zone": pipe.zone, "settings": layered_settings(
                    [("default", CONSUMER_DEFAULTS), ("scenario", pipe.consumer_settings),
                     ("harness", {**harness(pipe.zone), **consuming})])},
                {"role": "producer", "name": pipe.name, "zone": pipe.zone, "settings": layered_settings(
                    [("default", PRODUCER_DEFAULTS), ("harness", producing),
                     ("scenario", pipe.producer_settings), ("harness", harness(pipe.zone))])},
            ]
        return {
            "brokers": layered_settings([("topology", topology), ("scenario", scenario),
                                         ("release", {k: format_value(v) for k, v in extra.items()})]),
            # The scenario's own topic first, then each further topic (a pipeline's output).
            "topics": [topic_config(self.topic, self.spec.topic, topic_defaults),
                       *(topic_config(self.named_topics[t.name][0], t.spec, topic_defaults)
                         for t in self.spec.topics)],
            "clients": clients,
        }

    def __enter__(self) -> ScenarioRun:
        return self.start()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            if not self._finished:
                self.finish()
            self._write_assertions()
            return
        # The test failed or was interrupted: record that, never a verdict it did not earn.
        try:
            if self.workload is not None:
                self.workload.stop(drain_timeout_s=5, catch_up_timeout_s=0)
        finally:
            if not self._finished:
                self._close(hist.STATUS_ABORTED)
            self._error = "".join(traceback.format_exception_only(exc)).strip()
            self._write_assertions()


# Topic settings whose default is a broker setting (Kafka's "server default property"),
# shown beside the topic so its effective durability settings read in one place.
TOPIC_BROKER_DEFAULTS = {
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "segment.bytes": "log.segment.bytes",
    "retention.ms": "log.retention.ms",
    "message.timestamp.type": "log.message.timestamp.type",
}


def topic_config(name: str, spec: TopicSpec, broker_defaults: Mapping[str, Any]) -> dict[str, Any]:
    """One topic as the effective configuration shows it: its size, and its settings over
    the broker defaults they replace."""
    return {"name": name, "partitions": spec.partition_count, "replication_factor": spec.replicas,
            "settings": layered_settings([("broker", broker_defaults), ("scenario", spec.config)])}


def layered_settings(layers: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Settings merged lowest layer first, as ``{**a, **b}`` merges them, one row per
    setting: its winning value, the layer it came from and, if it replaced a value of a
    lower layer, that value and layer. Values that are not JSON (a Python logger handed
    to librdkafka) are shown by name."""
    rows: dict[str, dict[str, Any]] = {}
    for source, settings in layers:
        for key, value in settings.items():
            row: dict[str, Any] = {"key": str(key), "value": shown(value), "source": source}
            if key in rows:
                row["replaced"], row["replaced_source"] = rows[key]["value"], rows[key]["source"]
            rows[key] = row
    return list(rows.values())


def shown(value: Any) -> Any:
    """A setting's value as JSON: plain values as they are; an object by its type and
    name (``Logger kafka-chaos.attempts.pa``), since its repr would be noise."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): shown(v) for k, v in value.items()}
    name = getattr(value, "name", None) or getattr(value, "__qualname__", None)
    return f"{type(value).__name__} {name}" if isinstance(name, str) else type(value).__name__


def measure_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.1) -> float | None:
    """Seconds until ``predicate`` holds, or None if it never did within ``timeout_s``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if predicate():
            return time.monotonic() - started
        time.sleep(interval_s)
    return None
