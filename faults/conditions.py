"""Conditions on the live cluster state that a schedule entry can wait for.

A fault schedule timed by the clock alone has to guess how long the cluster takes to
recover between two faults: guess short and a rolling restart takes down a second
broker while the first one's replicas are still catching up (a test of an outage the
operator would never cause), guess long and the run is slow everywhere. A *condition*
replaces the guess with the fact an operator would wait for - "every ISR is full
again", "the controller moved" - read from ZooKeeper
(:class:`harness.cluster.state.ClusterState`).

Conditions are data, written as a schedule entry's ``when``: a bare word, or a table
with exactly one key, as targets are (:mod:`faults.targets`)::

    when = "isr_full"
    when = "controller_changed"
    when = { leaves_isr = { broker = 1, topic = "$topic", partition = 0 } }
    when = { joins_isr = { broker = 1, topic = "$topic", partition = 0 } }
    when = { leader_changed = { topic = "$topic", partition = 0 } }
    when = { broker_gone = 1 }
    when = { broker_registered = 1 }
    when = { controller_is = 2 }
    when = { offline = { topic = "$topic", partition = 0 } }
    when = { leader_is = { broker = 2, topic = "$topic", partition = 0 } }
    when = { new_leader_from_isr = { topic = "$topic", partition = 0 } }
    when = { isr_is = { brokers = [0, 2], topic = "$topic", partition = 0 } }
    when = { quorum_serving = "zk-a" }      # or a KRaft voter, "kraft-a"
    when = { migration_phase = "copy" }     # a ZooKeeper-to-KRaft migration's phase
    when = { not = "controller_changed" }
    when = { all = [ { offline = { ... } }, { isr_is = { ... } } ] }

The same conditions are a scenario's checks (:mod:`harness.scenario.checks`): "within
30 s of entry 1's inject, partition 0 is offline", "from entry 1's inject to its heal,
the controller never changed".

Each condition is evaluated against a state and the *baseline* - the state in force
when the entry began to wait - because "the controller changed" means nothing without
"since when". :meth:`Condition.evaluate` says whether it holds and, when not, what the
state was instead, so a wait that times out can say why in one line.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from faults.errors import FaultSpecError, TargetError
from faults.spec import as_mapping, check_keys, required, typed
from faults.targets import BrokerId, ClusterView, partition_state
from harness.cluster.migration.plan import phase_named
from harness.cluster.state import ClusterState, PartitionState
from harness.tagged import SpecKinds
from topologies.errors import TopologyError
from topologies.model import Topology

Observe = Callable[[float], ClusterState | None]
"""Where a running schedule reads the cluster state: called with a monotonic time, it
returns the latest state read at or after that time, or None (unreadable, or nothing
read since). :meth:`harness.cluster.sampler.StateSampler.latest` is one."""

Verdict = tuple[bool, str]
"""(held, why not): the second item is empty when the condition holds."""

HELD: Verdict = (True, "")
# How long an entry waits for its condition unless it says (``when_timeout_s``).
DEFAULT_WAIT_S = 120.0
# A migration's phase can begin many minutes into a run: the phases before it come first,
# each of its restarts waiting for a healthy cluster, a fault in force lengthening them.
PHASE_WAIT_S = 900.0
_SHOWN = 3  # partitions named in a why-not before "and N more": one line, not a dump


class Condition(ABC):
    """A predicate on the cluster state, relative to the state when the wait began."""

    kind: ClassVar[str]

    def check(self, topology: Topology) -> None:
        """Refuse, before anything runs, a broker the topology does not have."""
        return None

    def check_exists(self, cluster: ClusterView) -> None:
        """:meth:`check`, plus what only the live cluster knows (does the partition exist)."""
        self.check(cluster.topology)

    def topics(self) -> tuple[str, ...]:
        """The topics whose partitions the condition reads (none: brokers or controller only)."""
        return ()

    @property
    def default_wait_s(self) -> float:
        """How long an entry waits for this condition when it does not say."""
        return DEFAULT_WAIT_S

    @property
    def all_topics(self) -> bool:
        """True when the condition reads every partition it is shown, whatever its topic."""
        return False

    def evaluate(self, state: ClusterState | None, baseline: ClusterState | None) -> Verdict:
        """Whether the condition holds in ``state``; when not, what the state showed instead.

        ``state`` None means ZooKeeper could not be read: nothing holds then, because a
        condition that cannot be seen to hold must not trigger a fault.
        """
        if state is None:
            return False, "the cluster state could not be read"
        return self._evaluate(state, state if baseline is None else baseline)

    @abstractmethod
    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict: ...

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def to_spec(self) -> Any:
        """The value of ``when`` that :func:`parse_condition` turns back into this condition."""

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        """The condition the one-key table ``{kind = parameters}`` names; a condition that
        takes no parameters refuses the table (it is written as its bare name)."""
        raise FaultSpecError(f"{what}: {cls.kind} takes no parameters; write when = \"{cls.kind}\"")

    def __str__(self) -> str:
        return self.describe()


_SHAPE = "{what} must be a condition name or a table with exactly one key (one of: {known}), got {spec!r}"
_OLD_SPELLINGS = {"zk_serving": "quorum_serving"}
"""Older spellings still read (in scenario files and recorded exploration rounds), never written."""

CONDITIONS: SpecKinds[Condition] = SpecKinds(
    "condition", FaultSpecError, one_key=True, ordered=True, aliases=_OLD_SPELLINGS,
    words={"unknown": "{what}: unknown condition {name!r}; conditions are: {known}",
           "not_a_table": _SHAPE, "not_one": _SHAPE,
           "needs_parameters": "{what}: {name} needs parameters, as in when = {{ {name} = ... }} (see the "
                               "schedule documentation)"},
)
"""Every condition kind, in the order its class is declared here."""

C = TypeVar("C", bound=type[Condition])


def condition_kind(*, bare: bool = False) -> Callable[[C], C]:
    """Class decorator: register the condition class under its ``kind``, as a one-key table
    read by its ``from_spec`` and, with ``bare``, as its bare name."""
    def register(cls: C) -> C:
        CONDITIONS.add(cls.kind, cls.from_spec)
        if bare:
            CONDITIONS.add_bare(cls.kind, cls)
        return cls
    return register


def _partition(state: ClusterState, topic: str, partition: int) -> PartitionState | None:
    return state.partitions.get((topic, partition))


def _missing(state: ClusterState, topic: str, partition: int) -> str:
    topics = sorted({t for t, _ in state.partitions})
    seen = ", ".join(topics) if topics else "none"
    return f"{topic}-{partition} is not in the observed state (topics observed: {seen})"


# -- conditions on every partition, the controller, a broker -----------------------------
@condition_kind(bare=True)
@dataclass(frozen=True)
class IsrFull(Condition):
    """Every observed partition has a leader and every one of its replicas in its ISR."""

    kind: ClassVar[str] = "isr_full"

    @property
    def all_topics(self) -> bool:
        return True

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        if not state.partitions:
            # An empty state is no evidence of health: the topic may not be read yet.
            return False, "no partition observed"
        behind = []
        for _, part in sorted(state.partitions.items()):
            if not part.online:
                behind.append(f"{part.topic}-{part.partition} has no leader")
            elif not part.replicas:
                behind.append(f"{part.topic}-{part.partition} has no known replica set")
            elif not part.isr_full:
                behind.append(f"{part.topic}-{part.partition} isr {sorted(part.isr)} of replicas "
                              f"{sorted(part.replicas)}")
        if not behind:
            return HELD
        more = f" and {len(behind) - _SHOWN} more" if len(behind) > _SHOWN else ""
        return False, "; ".join(behind[:_SHOWN]) + more

    def describe(self) -> str:
        return "every ISR full"

    def to_spec(self) -> Any:
        return self.kind


@condition_kind(bare=True)
@dataclass(frozen=True)
class ControllerChanged(Condition):
    """A controller election happened since the wait began (``/controller_epoch`` moved)."""

    kind: ClassVar[str] = "controller_changed"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        # The epoch, not the broker id: the same broker may win the election again.
        if state.controller_epoch is not None and state.controller_epoch != baseline.controller_epoch:
            return HELD
        return False, (f"controller {state.controller} at epoch {state.controller_epoch}, "
                       f"as when the wait began")

    def describe(self) -> str:
        return "the controller changed"

    def to_spec(self) -> Any:
        return self.kind


@dataclass(frozen=True)
class _BrokerCondition(Condition):
    broker: int

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        return cls(typed(table[cls.kind], int, f"{what}: {cls.kind}"))

    def check(self, topology: Topology) -> None:
        BrokerId(self.broker).check(topology)

    def to_spec(self) -> Any:
        return {self.kind: self.broker}


@condition_kind()
@dataclass(frozen=True)
class BrokerGone(_BrokerCondition):
    """Broker ``broker`` is not registered in ``/brokers/ids`` (its session is over)."""

    kind: ClassVar[str] = "broker_gone"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        if self.broker not in state.live_brokers:
            return HELD
        return False, f"broker {self.broker} is registered (live brokers {list(state.live_brokers)})"

    def describe(self) -> str:
        return f"broker {self.broker} no longer registered"


@condition_kind()
@dataclass(frozen=True)
class BrokerRegistered(_BrokerCondition):
    """Broker ``broker`` is registered in ``/brokers/ids``."""

    kind: ClassVar[str] = "broker_registered"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        if self.broker in state.live_brokers:
            return HELD
        return False, f"broker {self.broker} is not registered (live brokers {list(state.live_brokers)})"

    def describe(self) -> str:
        return f"broker {self.broker} registered"


# -- conditions on one partition -----------------------------------------------------------
@dataclass(frozen=True)
class _PartitionCondition(Condition):
    topic: str
    partition: int

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        where = f"{what}: {cls.kind}"
        spec = as_mapping(table[cls.kind], f"{where} (topic, partition)")
        check_keys(spec, ("topic", "partition"), where)
        return cls(required(spec, "topic", str, where), required(spec, "partition", int, where))

    def topics(self) -> tuple[str, ...]:
        return (self.topic,)

    def check_exists(self, cluster: ClusterView) -> None:
        self.check(cluster.topology)
        partition_state(cluster, self.topic, self.partition)

    def to_spec(self) -> Any:
        return {self.kind: {"topic": self.topic, "partition": self.partition}}

    def _now_and_before(self, state: ClusterState,
                        baseline: ClusterState) -> tuple[PartitionState, PartitionState] | str:
        """The partition in ``state`` and in ``baseline``, or why one of them is missing."""
        part = _partition(state, self.topic, self.partition)
        if part is None:
            return _missing(state, self.topic, self.partition)
        before = _partition(baseline, self.topic, self.partition)
        if before is None:
            return f"{self.topic}-{self.partition} was not in the state when the wait began"
        return part, before


@dataclass(frozen=True)
class _IsrMembership(_PartitionCondition):
    broker: int
    member: ClassVar[bool]

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        where = f"{what}: {cls.kind}"
        spec = as_mapping(table[cls.kind], f"{where} (broker, topic, partition)")
        check_keys(spec, ("broker", "topic", "partition"), where)
        return cls(topic=required(spec, "topic", str, where),
                   partition=required(spec, "partition", int, where),
                   broker=required(spec, "broker", int, where))

    def check(self, topology: Topology) -> None:
        BrokerId(self.broker).check(topology)

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        part = _partition(state, self.topic, self.partition)
        if part is None:
            return False, _missing(state, self.topic, self.partition)
        if (self.broker in part.isr) == self.member:
            return HELD
        is_in = "is" if self.broker in part.isr else "is not"
        return False, (f"broker {self.broker} {is_in} in the isr {sorted(part.isr)} of "
                       f"{self.topic}-{self.partition}")

    def to_spec(self) -> Any:
        return {self.kind: {"broker": self.broker, "topic": self.topic, "partition": self.partition}}


@condition_kind()
@dataclass(frozen=True)
class LeavesIsr(_IsrMembership):
    """Broker ``broker`` is out of the ISR of ``topic``-``partition``."""

    kind: ClassVar[str] = "leaves_isr"
    member: ClassVar[bool] = False

    def describe(self) -> str:
        return f"broker {self.broker} out of the isr of {self.topic}-{self.partition}"


@condition_kind()
@dataclass(frozen=True)
class JoinsIsr(_IsrMembership):
    """Broker ``broker`` is in the ISR of ``topic``-``partition``."""

    kind: ClassVar[str] = "joins_isr"
    member: ClassVar[bool] = True

    def describe(self) -> str:
        return f"broker {self.broker} in the isr of {self.topic}-{self.partition}"


@condition_kind()
@dataclass(frozen=True)
class LeaderChanged(_PartitionCondition):
    """``topic``-``partition`` got a new leader epoch since the wait began.

    The epoch, not the leader: a leader that loses and regains leadership (or a
    controller that re-elects the same broker) is still an election the clients saw.
    """

    kind: ClassVar[str] = "leader_changed"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        found = self._now_and_before(state, baseline)
        if isinstance(found, str):
            return False, found
        part, before = found
        if part.leader_epoch != before.leader_epoch:
            return HELD
        return False, (f"{self.topic}-{self.partition} led by {part.leader} at leader epoch "
                       f"{part.leader_epoch}, as when the wait began")

    def describe(self) -> str:
        return f"the leader of {self.topic}-{self.partition} changed"


@condition_kind()
@dataclass(frozen=True)
class NewLeaderFromIsr(_PartitionCondition):
    """``topic``-``partition`` is led by another broker than when the wait began, one
    that was in the ISR then: a clean failover (an unclean election picks from outside)."""

    kind: ClassVar[str] = "new_leader_from_isr"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        found = self._now_and_before(state, baseline)
        if isinstance(found, str):
            return False, found
        part, before = found
        if part.online and part.leader != before.leader and part.leader in before.isr:
            return HELD
        return False, (f"{self.topic}-{self.partition} led by {part.leader} (before: {before.leader}, "
                       f"isr {sorted(before.isr)})")

    def describe(self) -> str:
        return f"a new leader of {self.topic}-{self.partition} from its ISR"


@condition_kind()
@dataclass(frozen=True)
class Offline(_PartitionCondition):
    """``topic``-``partition`` has no leader (leader -1 in ZooKeeper)."""

    kind: ClassVar[str] = "offline"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        part = _partition(state, self.topic, self.partition)
        if part is None:
            return False, _missing(state, self.topic, self.partition)
        if not part.online:
            return HELD
        return False, f"{self.topic}-{self.partition} led by {part.leader} (isr {sorted(part.isr)})"

    def describe(self) -> str:
        return f"{self.topic}-{self.partition} offline (no leader)"


@condition_kind()
@dataclass(frozen=True)
class LeaderIs(_PartitionCondition):
    """Broker ``broker`` leads ``topic``-``partition``."""

    kind: ClassVar[str] = "leader_is"
    broker: int = 0

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        where = f"{what}: {cls.kind}"
        spec = as_mapping(table[cls.kind], f"{where} (broker, topic, partition)")
        check_keys(spec, ("broker", "topic", "partition"), where)
        return cls(required(spec, "topic", str, where), required(spec, "partition", int, where),
                   broker=required(spec, "broker", int, where))

    def check(self, topology: Topology) -> None:
        BrokerId(self.broker).check(topology)

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        part = _partition(state, self.topic, self.partition)
        if part is None:
            return False, _missing(state, self.topic, self.partition)
        if part.leader == self.broker:
            return HELD
        return False, f"{self.topic}-{self.partition} led by {part.leader}, not {self.broker}"

    def describe(self) -> str:
        return f"broker {self.broker} leads {self.topic}-{self.partition}"

    def to_spec(self) -> Any:
        return {self.kind: {"broker": self.broker, "topic": self.topic, "partition": self.partition}}


@condition_kind()
@dataclass(frozen=True)
class IsrIs(_PartitionCondition):
    """The ISR of ``topic``-``partition`` is exactly ``brokers`` (in any order)."""

    kind: ClassVar[str] = "isr_is"
    brokers: tuple[int, ...] = ()

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        where = f"{what}: {cls.kind}"
        spec = as_mapping(table[cls.kind], f"{where} (brokers, topic, partition)")
        check_keys(spec, ("brokers", "topic", "partition"), where)
        brokers = required(spec, "brokers", list, where)
        return cls(required(spec, "topic", str, where), required(spec, "partition", int, where),
                   brokers=tuple(typed(b, int, f"{where}: brokers") for b in brokers))

    def __post_init__(self) -> None:
        # A set of brokers: [1, 0] and [0, 1] are one condition (and one spelling).
        object.__setattr__(self, "brokers", tuple(sorted(self.brokers)))

    def check(self, topology: Topology) -> None:
        for broker in self.brokers:
            BrokerId(broker).check(topology)

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        part = _partition(state, self.topic, self.partition)
        if part is None:
            return False, _missing(state, self.topic, self.partition)
        if sorted(part.isr) == sorted(self.brokers):
            return HELD
        return False, f"the isr of {self.topic}-{self.partition} is {sorted(part.isr)}"

    def describe(self) -> str:
        return f"the isr of {self.topic}-{self.partition} is {sorted(self.brokers)}"

    def to_spec(self) -> Any:
        return {self.kind: {"brokers": sorted(self.brokers), "topic": self.topic,
                            "partition": self.partition}}


@condition_kind()
@dataclass(frozen=True)
class ControllerIs(_BrokerCondition):
    """Node ``broker`` is the active controller: the broker holding ``/controller`` in
    ZooKeeper mode, the quorum's leader (a controller id) in KRaft."""

    kind: ClassVar[str] = "controller_is"

    def check(self, topology: Topology) -> None:
        names = topology.controller_candidates
        if self.broker not in {topology.id_of_node(name) for name in names}:
            ids = ", ".join(str(topology.id_of_node(name)) for name in names)
            raise TargetError(f"controller_is = {self.broker}: node {self.broker} can never be the active "
                              f"controller of topology {topology.name!r}; the ones that can are {ids}")

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        if state.controller == self.broker:
            return HELD
        return False, f"the controller is {state.controller}, not {self.broker}"

    def describe(self) -> str:
        return f"broker {self.broker} is the controller"


@condition_kind()
@dataclass(frozen=True)
class QuorumServing(Condition):
    """Metadata-quorum member ``node`` serves: a ZooKeeper node whose mode is leader or
    follower, or a KRaft voter that leads or has fetched from the leader lately. Read from
    the roles the sampler records beside each snapshot; a state without roles shows
    nothing, so the condition does not hold on it. ``zk_serving`` is its older spelling."""

    node: str
    kind: ClassVar[str] = "quorum_serving"
    OLD_KIND: ClassVar[str] = "zk_serving"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        return cls(typed(table[cls.kind], str, f"{what}: {cls.kind}"))

    def check(self, topology: Topology) -> None:
        names = [node.name for node in topology.quorum_members]
        if self.node not in names:
            raise TargetError(f"{self.kind} = {self.node!r}: topology {topology.name!r} has no "
                              f"metadata-quorum member {self.node!r}; its members are {', '.join(names)}")

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        if state.zk_modes is None:
            return False, "no quorum roles were read with this state"
        mode = state.zk_modes.get(self.node)
        if mode in ("leader", "follower"):
            return HELD
        return False, f"{self.node} is {mode or 'not serving'}"

    def describe(self) -> str:
        return f"{self.node} serves"

    def to_spec(self) -> Any:
        return {self.kind: self.node}


@condition_kind()
@dataclass(frozen=True)
class MigrationPhaseIs(Condition):
    """The cluster's migration from ZooKeeper to KRaft is in ``phase`` (one of
    :class:`harness.cluster.migration.plan.Phase`), as its driver recorded it with the
    state. It anchors a fault to a phase: ``when = { migration_phase = "dual_write" }``."""

    phase: str
    kind: ClassVar[str] = "migration_phase"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        name = typed(table[cls.kind], str, f"{what}: {cls.kind}")
        try:
            return cls(phase_named(name).value)
        except TopologyError as err:
            raise FaultSpecError(f"{what}: {err}") from None

    def check(self, topology: Topology) -> None:
        if not topology.migrating:
            raise TargetError(f"{self.kind} = {self.phase!r}: topology {topology.name!r} is not migrating "
                              f"(metadata = {topology.metadata!r}); only a migration run has phases")

    @property
    def default_wait_s(self) -> float:
        return PHASE_WAIT_S

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        if state.migration_phase == self.phase:
            return HELD
        now = state.migration_phase
        return False, f"the migration is in its {now} phase" if now else "no migration phase is under way"

    def describe(self) -> str:
        return f"the migration is in its {self.phase} phase"

    def to_spec(self) -> Any:
        return {self.kind: self.phase}


@condition_kind()
@dataclass(frozen=True)
class Not(Condition):
    """``condition`` does not hold (``{ not = "controller_changed" }``)."""

    condition: Condition
    kind: ClassVar[str] = "not"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        return cls(parse_condition(table[cls.kind], f"{what}: not"))

    def check(self, topology: Topology) -> None:
        self.condition.check(topology)

    def check_exists(self, cluster: ClusterView) -> None:
        self.condition.check_exists(cluster)

    def topics(self) -> tuple[str, ...]:
        return self.condition.topics()

    @property
    def default_wait_s(self) -> float:
        return self.condition.default_wait_s

    @property
    def all_topics(self) -> bool:
        return self.condition.all_topics

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        held, _ = self.condition.evaluate(state, baseline)
        return (False, f"{self.condition.describe()}") if held else HELD

    def describe(self) -> str:
        return f"not: {self.condition.describe()}"

    def to_spec(self) -> Any:
        return {self.kind: self.condition.to_spec()}


@dataclass(frozen=True)
class _Combination(Condition):
    """Several conditions judged on the same state: what ``all`` and ``any`` share."""

    conditions: tuple[Condition, ...]

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Condition:
        items = typed(table[cls.kind], list, f"{what}: {cls.kind}")
        if not items:
            raise FaultSpecError(f"{what}: {cls.kind} needs at least one condition")
        return cls(tuple(parse_condition(item, f"{what}: {cls.kind}[{i}]") for i, item in enumerate(items)))

    def check(self, topology: Topology) -> None:
        for condition in self.conditions:
            condition.check(topology)

    def check_exists(self, cluster: ClusterView) -> None:
        for condition in self.conditions:
            condition.check_exists(cluster)

    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({t for c in self.conditions for t in c.topics()}))

    @property
    def default_wait_s(self) -> float:
        return max(c.default_wait_s for c in self.conditions)

    @property
    def all_topics(self) -> bool:
        return any(c.all_topics for c in self.conditions)

    def to_spec(self) -> Any:
        return {self.kind: [c.to_spec() for c in self.conditions]}


@condition_kind()
@dataclass(frozen=True)
class AllOf(_Combination):
    """Every one of ``conditions`` holds in the same state (``{ all = [ ..., ... ] }``)."""

    kind: ClassVar[str] = "all"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        for condition in self.conditions:
            held, why = condition.evaluate(state, baseline)
            if not held:
                return False, why
        return HELD

    def describe(self) -> str:
        return " and ".join(c.describe() for c in self.conditions)


@condition_kind()
@dataclass(frozen=True)
class AnyOf(_Combination):
    """At least one of ``conditions`` holds in the state (``{ any = [ ..., ... ] }``)."""

    kind: ClassVar[str] = "any"

    def _evaluate(self, state: ClusterState, baseline: ClusterState) -> Verdict:
        why_not = []
        for condition in self.conditions:
            held, why = condition.evaluate(state, baseline)
            if held:
                return HELD
            why_not.append(why)
        return False, "; ".join(why_not)

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.conditions)


# -- parsing -------------------------------------------------------------------------------
CONDITION_KINDS: tuple[str, ...] = tuple(CONDITIONS.kinds())
"""Every condition kind, in the order they are declared (and listed in errors)."""


def parse_condition(value: object, what: str = "'when'") -> Condition:
    """The condition ``value`` describes; FaultSpecError (one sentence naming ``what``) if none."""
    return CONDITIONS.parse(value, what)


def topics_to_read(conditions: list[Condition]) -> list[str] | None:
    """The topics a state read must cover for ``conditions``: those they name, or every
    topic of the cluster (None) when a condition reads all partitions and none is named."""
    named = sorted({topic for condition in conditions for topic in condition.topics()})
    if any(condition.all_topics for condition in conditions) and not named:
        return None
    return named


