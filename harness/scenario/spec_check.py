"""What makes a scenario spec impossible to run, found before any container starts.

Two layers of rules, one mechanism: each rule returns :class:`Problem` values, each naming
the key path as a scenario file spells it (``topic.replication_factor``,
``producers[2].partitions``, ``schedule[1].target.leader_of``), the value found there and
why it cannot run. :func:`spec_problems` holds the rules a spec breaks on its own (its
parts must name each other consistently); :class:`~harness.scenario.spec.ScenarioSpec`
runs them when it is built, so a scenario written in Python is refused with the same
line a file gets. :func:`topology_problems` holds the rules that need the cluster's
shape (brokers, zones); ``kafka-chaos check``, ``run`` and ``explore`` and the pytest
plugin run them once the topology is known, still before any container.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.cluster.migration.plan import CONTROLLERS_RUN_IN
from harness.errors import ChaosError
from topologies.errors import problem_line
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.scenario.spec import ScenarioSpec, TopicSpec
    from harness.workload.driver import ConsumerSpec, ProducerSpec
    from harness.workload.pipeline import PipelineSpec

TOPIC_WORD = "$topic"


class ScenarioSpecError(ChaosError, ValueError):
    """A spec that cannot run, with every problem found (one line each)."""

    def __init__(self, problems: Sequence[Problem], where: str = "") -> None:
        self.problems = tuple(problems)
        self.where = where
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        prefix = f"{self.where}: " if self.where else ""
        return [f"{prefix}{p}" for p in self.problems]


@dataclass(frozen=True)
class Problem:
    """One reason a spec cannot run: where (a key path), what was found, why."""

    key: str
    value: Any
    why: str

    def __str__(self) -> str:
        return problem_line(self.key, self.value, self.why)


# -- rules of a spec on its own ---------------------------------------------------------------

def spec_problems(spec: ScenarioSpec) -> list[Problem]:
    """Every problem of ``spec`` that needs no topology: counts that cannot be, names
    given twice, partitions beyond the topic."""
    problems = list(_topic_problems(spec.topic, "topic"))
    for i, named in enumerate(spec.topics, start=1):
        problems += _topic_problems(named.spec, f"topics[{i}]")
    problems += _name_problems(spec)
    if any(p.key.startswith(("topic", "topics[")) for p in problems):
        return problems  # a topic without a partition count: nothing to hold partitions to
    counts = _partition_counts(spec)
    for i, producer in enumerate(spec.producers, start=1):
        outside = sorted(p for p in (producer.partitions or ()) if not 0 <= p < counts[TOPIC_WORD])
        if outside:
            problems.append(Problem(f"producers[{i}].partitions", list(producer.partitions or ()),
                                    f"the topic has partitions 0 to {counts[TOPIC_WORD] - 1}"))
    for section, entries in (("schedule", spec.schedule), ("checks", [c.to_spec() for c in spec.checks])):
        for i, entry in enumerate(entries, start=1):
            problems += _partition_references(entry, f"{section}[{i}]", counts)
    return problems


def topic_problems(topic: TopicSpec, key: str = "topic") -> list[Problem]:
    """What makes ``topic`` (at ``key``) impossible on any cluster."""
    return list(_topic_problems(topic, key))


def _topic_problems(topic: TopicSpec, key: str) -> Iterator[Problem]:
    if topic.assignment is None:
        for field_name in ("partitions", "replication_factor"):
            value = getattr(topic, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                yield Problem(f"{key}.{field_name}", value, "must be a whole number of at least 1")
        return
    lengths = {len(replicas) for replicas in topic.assignment.values()}
    if len(lengths) > 1:
        yield Problem(f"{key}.assignment", _assignment(topic), "every partition needs as many replicas "
                      f"(lengths {sorted(lengths)})")
    for partition, replicas in sorted(topic.assignment.items()):
        where = f"{key}.assignment.\"{partition}\""
        if not replicas:
            yield Problem(where, list(replicas), "a partition needs at least one replica")
        elif len(set(replicas)) < len(replicas):
            yield Problem(where, list(replicas), "a broker is named twice")


def _assignment(topic: TopicSpec) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted((topic.assignment or {}).items())}


def _name_problems(spec: ScenarioSpec) -> Iterator[Problem]:
    """Producers, consumers and pipeline members are told apart by name everywhere (the
    history, the report, checks): one name, one client."""
    seen: dict[str, str] = {}
    for where, name, _ in _clients(spec):
        if name in seen:
            yield Problem(f"{where}.name", name, f"{seen[name]} has that name already")
        else:
            seen[name] = where


def _clients(spec: ScenarioSpec) -> Iterator[tuple[str, str, str]]:
    """Every client of ``spec``: its key path (``consumers[2]``), name and zone."""
    placed: list[tuple[str, Sequence[ProducerSpec | ConsumerSpec | PipelineSpec]]] = [
        ("producers", spec.producers), ("consumers", spec.consumers), ("pipelines", spec.pipelines)]
    for section, clients in placed:
        for i, client in enumerate(clients, start=1):
            yield f"{section}[{i}]", client.name, client.zone


def _partition_counts(spec: ScenarioSpec) -> dict[str, int]:
    """How many partitions each topic a spec can name has, by the word that names it."""
    counts = {TOPIC_WORD: spec.topic.partition_count}
    counts.update({f"{TOPIC_WORD}:{t.name}": t.spec.partition_count for t in spec.topics})
    return counts


def _partition_references(value: Any, key: str, counts: Mapping[str, int]) -> Iterator[Problem]:
    """Every partition of a scenario topic that ``value`` names - ``["$topic", p, ...]``
    in a target, or ``topic = "$topic"`` beside ``partition`` / ``partitions`` in a fault
    or condition - that the topic does not have."""
    if isinstance(value, Mapping):
        topic = value.get("topic")
        if isinstance(topic, str) and topic in counts:
            count = counts[topic]
            partition = value.get("partition")
            if isinstance(partition, int) and _whole(partition) and not 0 <= partition < count:
                yield Problem(f"{key}.partition", partition, _beyond(topic, count))
            partitions = value.get("partitions")
            if isinstance(partitions, Sequence) and not isinstance(partitions, str):
                outside = [p for p in partitions if _whole(p) and not 0 <= p < count]
                if outside:
                    yield Problem(f"{key}.partitions", list(partitions), _beyond(topic, count))
        for name, inner in value.items():
            yield from _partition_references(inner, f"{key}.{name}", counts)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        items = list(value)
        if len(items) >= 2 and isinstance(items[0], str) and items[0] in counts and _whole(items[1]):
            count = counts[items[0]]
            if not 0 <= items[1] < count:
                yield Problem(key, items, _beyond(items[0], count))
            return
        for i, inner in enumerate(items):
            yield from _partition_references(inner, f"{key}[{i}]", counts)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _beyond(topic: str, count: int) -> str:
    name = "the topic" if topic == TOPIC_WORD else f"topic {topic}"
    return f"{name} has partitions 0 to {count - 1}"


# -- rules that need the cluster's shape ------------------------------------------------------

def topology_problems(spec: ScenarioSpec, topology: Topology) -> list[Problem]:
    """Every problem of ``spec`` on ``topology``: more replicas than brokers, brokers or
    zones the cluster does not have, fault targets it cannot resolve."""
    problems: list[Problem] = []
    broker_ids = sorted(b.broker_id for b in topology.brokers)
    for key, topic in (("topic", spec.topic), *((f"topics[{i}]", t.spec) for i, t in
                                                 enumerate(spec.topics, start=1))):
        if topic.assignment is None:
            if topic.replication_factor > len(broker_ids):
                problems.append(Problem(f"{key}.replication_factor", topic.replication_factor,
                                        f"topology {topology.name} has {len(broker_ids)} brokers"))
            continue
        for partition, replicas in sorted(topic.assignment.items()):
            unknown = [b for b in replicas if b not in broker_ids]
            if unknown:
                problems.append(Problem(f"{key}.assignment.\"{partition}\"", list(replicas),
                                        f"no broker {unknown[0]} in topology {topology.name} "
                                        f"(brokers {broker_ids})"))
    for where, _, zone in _clients(spec):
        if zone not in topology.zones:
            problems.append(Problem(f"{where}.zone", zone,
                                    f"topology {topology.name} has zones {', '.join(topology.zones)}"))
    if spec.migration and not topology.migrating:
        problems.append(Problem("migration", "a migration", f"topology {topology.name} is in "
                                f"{topology.metadata} mode; a migration runs on a migrating topology "
                                "(topologies.model.migration_topology)"))
    problems += _schedule_on(spec, topology)
    return problems


def _schedule_on(spec: ScenarioSpec, topology: Topology) -> list[Problem]:
    from faults.errors import FaultError
    from faults.registry import build_fault
    from faults.schedule import ENTRY_KEYS
    from harness.scenario.spec import substitute

    problems = []
    for i, entry in enumerate(spec.schedule, start=1):
        fault_spec = {k: v for k, v in entry.items() if k not in ENTRY_KEYS}
        try:
            fault = build_fault(substitute(fault_spec, "placeholder-topic"))
            fault.check(topology)
        except FaultError as err:
            problems.append(Problem(f"schedule[{i}].fault", entry.get("fault"), str(err)))
            continue
        if spec.migration and topology.migrating and not _controllers_there(entry.get("when")) \
                and not _checks_on(fault, topology.before_migration()):
            problems.append(Problem(f"schedule[{i}].when", entry.get("when"),
                                    f"{fault.describe()} acts on the KRaft controllers, which a migration "
                                    "starts in its provision phase and stops in a rollback: anchor it with "
                                    "when = { migration_phase = ... } to one of "
                                    + ", ".join(CONTROLLERS_RUN_IN)))
    return problems


def _controllers_there(when: Any) -> bool:
    """Whether an entry's ``when`` holds only in a phase with the controllers running."""
    return isinstance(when, dict) and when.get("migration_phase") in {str(p) for p in CONTROLLERS_RUN_IN}


def _checks_on(fault: Any, topology: Topology) -> bool:
    """Whether ``fault`` can act on ``topology`` (the cluster before its controllers)."""
    from faults.errors import FaultError

    try:
        fault.check(topology)
    except FaultError:
        return False
    return True
