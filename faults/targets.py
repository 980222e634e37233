"""What a fault is aimed at: roles in the cluster, resolved only when the fault strikes.

"Kill the leader of partition 0" is a different broker from one run to the next and
even from one second to the next, so a fault names a *role* (a :class:`Target`) and the
role is turned into node names from the live cluster at injection time; the resolved
names are what the event log records. Every target can also be checked against the
topology alone (unknown zone, broker or node), so a schedule is refused as a whole
before its first fault runs.

Targets resolve to *endpoints*: node names (``kafka-0``, ``zk-a``) and, for zones, the
fabric's name for the zone's clients (``client-a``). Process faults keep the nodes;
network faults cut the links touching the endpoints. :class:`LinkTarget` selects links
(by endpoints and kind, or every link crossing the border of a set of endpoints).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from faults.errors import FaultSpecError, TargetError
from faults.spec import as_mapping, check_keys, optional, typed
from harness.cluster.fabric import Fabric, LinkKind, client_name
from harness.cluster.state import ClusterState, PartitionState
from harness.tagged import SpecKinds
from topologies.errors import TopologyError
from topologies.model import Topology


class ClusterView(Protocol):
    """What resolving a target needs from a running cluster (:class:`Cluster` has it)."""

    @property
    def topology(self) -> Topology: ...

    @property
    def fabric(self) -> Fabric: ...

    def state(self, topics: list[str] | None = None) -> ClusterState: ...

    def quorum_roles(self) -> dict[str, str | None]: ...

    def stopped_nodes(self) -> frozenset[str]: ...


class Target(ABC):
    """A role that resolves to endpoint names (nodes, or a zone's clients)."""

    kind: ClassVar[str]
    # Whether the nodes it names can change with the cluster's state (a controller, a
    # leader); a fixed target (a broker id, a node, a zone) names the same nodes always.
    moves: ClassVar[bool] = True

    def check(self, topology: Topology) -> None:
        """Refuse, before anything runs, a target the topology cannot have."""
        return None

    def check_exists(self, cluster: ClusterView) -> None:
        """:meth:`check`, plus what only the live cluster knows (does the topic exist)."""
        self.check(cluster.topology)

    @abstractmethod
    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        """The endpoints this role names right now; raises TargetError when none."""

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def to_spec(self) -> Any: ...

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Target:
        """The target the one-key table ``{kind = value}`` names. A role that takes no
        argument ignores the value: ``{ all_zookeepers = true }`` reads as ``"all_zookeepers"``
        (recorded schedules hold that spelling)."""
        return cls()

    def __str__(self) -> str:
        return self.describe()


TARGETS: SpecKinds[Target] = SpecKinds(
    "target", FaultSpecError, one_key=True, ordered=True,
    words={"unknown": "unknown target {name!r}; targets are {known}",
           "not_a_table": "{what} must be a table/object, got {spec!r}",
           "not_one": "{what} has exactly one kind, got {spec!r}",
           "needs_parameters": "target {name!r} needs parameters, as in {{ {name} = ... }}"},
)
"""Every target form, in the order docs/FAULTS.md lists them (the order they register in)."""

T = TypeVar("T", bound=type[Target])


def target_kind(*, table: bool = True, bare: bool = False) -> Callable[[T], T]:
    """Class decorator: register the target class under its ``kind``, read from a one-key
    table by its ``from_spec`` (``table``), or written as a bare word (``bare``: a role
    that takes no argument)."""
    def register(cls: T) -> T:
        if table:
            TARGETS.add(cls.kind, cls.from_spec)
        if bare:
            TARGETS.add_bare(cls.kind, cls)
        return cls
    return register


def _argument(table: Mapping[str, Any], kind: str, of_type: type[Any]) -> Any:
    """The value of the one-key table ``{kind = value}``, as ``of_type``."""
    return typed(table[kind], of_type, f"target {kind!r}")


# -- fixed targets ---------------------------------------------------------------------
@target_kind()
@dataclass(frozen=True)
class BrokerId(Target):
    """Broker ``broker_id``, wherever it runs."""

    broker_id: int
    kind: ClassVar[str] = "broker"
    moves: ClassVar[bool] = False

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> BrokerId:
        return cls(_argument(table, cls.kind, int))

    def check(self, topology: Topology) -> None:
        _checked(lambda: topology.broker(self.broker_id))

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        return (cluster.topology.broker(self.broker_id).name,)

    def describe(self) -> str:
        return f"broker {self.broker_id}"

    def to_spec(self) -> Any:
        return {self.kind: self.broker_id}


@target_kind()
@dataclass(frozen=True)
class Node(Target):
    """A node by name (``kafka-1``, ``zk-c``)."""

    name: str
    kind: ClassVar[str] = "node"
    moves: ClassVar[bool] = False

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Node:
        return cls(_argument(table, cls.kind, str))

    def check(self, topology: Topology) -> None:
        if self.name not in topology.node_names:
            raise TargetError(
                f"no node {self.name!r} in topology {topology.name!r}; "
                f"nodes are {', '.join(topology.node_names)}"
            )

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        return (self.name,)

    def describe(self) -> str:
        return self.name

    def to_spec(self) -> Any:
        return {self.kind: self.name}


@target_kind()
@dataclass(frozen=True)
class Zone(Target):
    """Every node of a zone and the zone's clients: what a zone outage takes down."""

    zone: str
    kind: ClassVar[str] = "zone"
    moves: ClassVar[bool] = False

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> Zone:
        return cls(_argument(table, cls.kind, str))

    def check(self, topology: Topology) -> None:
        _checked(lambda: topology.nodes_in_zone(self.zone))

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        return (*cluster.topology.nodes_in_zone(self.zone), client_name(self.zone))

    def describe(self) -> str:
        return f"zone {self.zone}"

    def to_spec(self) -> Any:
        return {self.kind: self.zone}


@target_kind()
@dataclass(frozen=True)
class ZoneClients(Target):
    """The clients placed in a zone (the fabric's ``client-<zone>`` endpoint)."""

    zone: str
    kind: ClassVar[str] = "zone_clients"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> ZoneClients:
        return cls(_argument(table, cls.kind, str))

    def check(self, topology: Topology) -> None:
        _checked(lambda: topology.nodes_in_zone(self.zone))

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        return (client_name(self.zone),)

    def describe(self) -> str:
        return f"clients of zone {self.zone}"

    def to_spec(self) -> Any:
        return {self.kind: self.zone}


# -- roles of a partition, read from the metadata --------------------------------------
def _partition_role(table: Mapping[str, Any], kind: str, ranked: bool) -> tuple[str, int, int]:
    """``[topic, partition]`` (or with ``ranked``, ``[topic, partition, rank]``) of ``{kind = [...]}``."""
    what = f"target {kind!r}"
    args = typed(table[kind], list, what)
    if len(args) not in ((2, 3) if ranked else (2,)):
        rank = " or [topic, partition, rank]" if ranked else ""
        raise FaultSpecError(f"{what} takes [topic, partition]{rank}, got {args!r}")
    topic = typed(args[0], str, f"{what} topic")
    partition = typed(args[1], int, f"{what} partition")
    return topic, partition, typed(args[2], int, f"{what} rank") if len(args) == 3 else 0


@target_kind()
@dataclass(frozen=True)
class LeaderOf(Target):
    """The broker leading ``topic``-``partition`` now."""

    topic: str
    partition: int
    kind: ClassVar[str] = "leader_of"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> LeaderOf:
        topic, partition, _ = _partition_role(table, cls.kind, ranked=False)
        return cls(topic, partition)

    def check_exists(self, cluster: ClusterView) -> None:
        partition_state(cluster, self.topic, self.partition)

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        state = partition_state(cluster, self.topic, self.partition)
        if not state.online:
            raise TargetError(f"{self.topic}-{self.partition} has no leader now (leader -1)")
        return (cluster.topology.broker(state.leader).name,)

    def describe(self) -> str:
        return f"leader of {self.topic}-{self.partition}"

    def to_spec(self) -> Any:
        return {self.kind: [self.topic, self.partition]}


@target_kind()
@dataclass(frozen=True)
class FollowerOf(Target):
    """An in-sync follower of ``topic``-``partition`` that is not stopped: the ``rank``-th
    in replica order.

    Replica order (not ISR order) makes the choice stable while the ISR churns.
    """

    topic: str
    partition: int
    rank: int = 0
    kind: ClassVar[str] = "follower_of"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> FollowerOf:
        return cls(*_partition_role(table, cls.kind, ranked=True))

    def check_exists(self, cluster: ClusterView) -> None:
        partition_state(cluster, self.topic, self.partition)

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        state = partition_state(cluster, self.topic, self.partition)
        # A stopped follower is still in the ISR until its leader or its session gives up
        # on it, but it is out in all but name: a second fault on it would wait on the
        # first (a controlled shutdown of a paused broker cannot run until it is resumed).
        stopped = cluster.stopped_nodes()
        followers = [r for r in state.replicas if r != state.leader and r in state.isr
                     and cluster.topology.broker(r).name not in stopped]
        if self.rank >= len(followers):
            raise TargetError(
                f"{self.topic}-{self.partition} has {len(followers)} in-sync follower(s) that run "
                f"(leader {state.leader}, isr {list(state.isr)}, stopped {sorted(stopped) or 'none'}); "
                f"no follower #{self.rank}"
            )
        return (cluster.topology.broker(followers[self.rank]).name,)

    def describe(self) -> str:
        suffix = f" #{self.rank}" if self.rank else ""
        return f"follower{suffix} of {self.topic}-{self.partition}"

    def to_spec(self) -> Any:
        args: list[Any] = [self.topic, self.partition]
        if self.rank:
            args.append(self.rank)
        return {self.kind: args}


@target_kind()
@dataclass(frozen=True)
class ZoneOf(Target):
    """The zone (nodes and clients) of whatever node ``inner`` resolves to now."""

    inner: Target
    kind: ClassVar[str] = "zone_of"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> ZoneOf:
        return cls(parse_target(table[cls.kind]))

    def check(self, topology: Topology) -> None:
        self.inner.check(topology)

    def check_exists(self, cluster: ClusterView) -> None:
        self.inner.check_exists(cluster)

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        nodes = [n for n in self.inner.resolve(cluster) if n in cluster.topology.node_names]
        if not nodes:
            raise TargetError(f"{self.inner.describe()} resolved to no node, so it has no zone")
        return Zone(cluster.topology.zone_of(nodes[0])).resolve(cluster)

    def describe(self) -> str:
        return f"zone of {self.inner.describe()}"

    def to_spec(self) -> Any:
        return {self.kind: self.inner.to_spec()}


# The internal topics whose partition leaders are coordinators: a consumer group's
# coordinator leads one partition of __consumer_offsets, a transactional producer's
# leads one partition of __transaction_state. Kafka creates each on the first
# FindCoordinator request for its kind of key.
GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: 31-based over the UTF-16 code units, in 32-bit signed
    arithmetic. Kafka places a coordinator key by it, so it must be Java's, not Python's hash."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The partition of a coordinator topic that ``key`` (a group id, a transactional.id)
    is placed on: the absolute value of the key's Java hash (Kafka's ``Utils.abs``, which
    maps Integer.MIN_VALUE to 0) modulo the topic's partition count. The group coordinator
    and the transaction coordinator place their keys by this one rule."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def offsets_partition(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of consumer group ``group``."""
    return coordinator_partition(group, partitions)


def _coordinator(cluster: ClusterView, topic: str, key: str, missing: str) -> tuple[str, ...]:
    """The broker leading ``key``'s partition of coordinator topic ``topic`` now. The
    partition count is the topic's own, as ZooKeeper holds it (Kafka reads it from there
    too, falling back to the broker setting only while the topic does not exist);
    ``missing`` says why there is no coordinator when the topic does not exist yet."""
    states = cluster.state([topic]).topic(topic)
    if not states:
        raise TargetError(f"{topic} does not exist yet: {missing}")
    return LeaderOf(topic, coordinator_partition(key, len(states))).resolve(cluster)


@target_kind()
@dataclass(frozen=True)
class CoordinatorOf(Target):
    """The broker coordinating consumer group ``group`` now: the leader of the group's
    ``__consumer_offsets`` partition. The topic exists once any consumer group has asked
    for its coordinator, so the role resolves only after the group's members started."""

    group: str
    kind: ClassVar[str] = "coordinator_of"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> CoordinatorOf:
        return cls(_argument(table, cls.kind, str))

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        return _coordinator(cluster, GROUP_METADATA_TOPIC, self.group, "no consumer group has asked for a "
                            f"coordinator, so group {self.group!r} has none")

    def describe(self) -> str:
        return f"coordinator of group {self.group}"

    def to_spec(self) -> Any:
        return {self.kind: self.group}


@target_kind()
@dataclass(frozen=True)
class TxnCoordinatorOf(Target):
    """The broker coordinating the transactions of ``transactional_id`` now: the leader
    of its ``__transaction_state`` partition. That topic exists only once some
    transactional producer has called ``init_transactions`` (whose FindCoordinator
    request makes the broker create it), so the role resolves only after one did."""

    transactional_id: str
    kind: ClassVar[str] = "txn_coordinator_of"

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> TxnCoordinatorOf:
        return cls(_argument(table, cls.kind, str))

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        return _coordinator(cluster, TRANSACTION_STATE_TOPIC, self.transactional_id,
                            "no transactional producer has called init_transactions, so "
                            f"transactional.id {self.transactional_id!r} has no coordinator")

    def describe(self) -> str:
        return f"transaction coordinator of {self.transactional_id}"

    def to_spec(self) -> Any:
        return {self.kind: self.transactional_id}


def needs_zookeeper(topology: Topology, what: str, on_kraft: str) -> None:
    """Refuse ``what`` on a topology with no ZooKeeper ensemble (a KRaft cluster), naming
    ``on_kraft``, its KRaft counterpart."""
    if not topology.zookeepers:
        raise TargetError(f"{what} acts on ZooKeeper, and topology {topology.name!r} has none (its metadata "
                          f"is in a KRaft controller quorum); on KRaft: {on_kraft}")


def needs_controllers(topology: Topology, what: str, on_zookeeper: str) -> None:
    """Refuse ``what`` on a topology with no KRaft controller quorum (a ZooKeeper-mode
    cluster), naming ``on_zookeeper``, its ZooKeeper-mode counterpart."""
    if not topology.controllers:
        raise TargetError(f"{what} names KRaft controllers, and topology {topology.name!r} has none (its "
                          f"metadata is in ZooKeeper); in ZooKeeper mode: {on_zookeeper}")


# -- the controllers and the metadata quorum -------------------------------------------
@target_kind()
@dataclass(frozen=True)
class KRaftController(Target):
    """The KRaft controller (quorum voter) with node id ``node_id``, whatever its role."""

    node_id: int
    kind: ClassVar[str] = "controller"
    moves: ClassVar[bool] = False

    @classmethod
    def from_spec(cls, table: Mapping[str, Any], what: str) -> KRaftController:
        return cls(_argument(table, cls.kind, int))

    def check(self, topology: Topology) -> None:
        needs_controllers(topology, f"target {{controller = {self.node_id}}}",
                          '"controller" (the broker holding /controller)')
        _checked(lambda: topology.controller(self.node_id))

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        return (cluster.topology.controller(self.node_id).name,)

    def describe(self) -> str:
        return f"controller {self.node_id}"

    def to_spec(self) -> Any:
        return {self.kind: self.node_id}


@target_kind(bare=True)
@dataclass(frozen=True)
class ActiveController(Target):
    """The active controller now: the broker that holds ``/controller`` in ZooKeeper mode,
    the quorum's leader in KRaft."""

    kind: ClassVar[str] = "active_controller"

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        controller = cluster.state(topics=[]).controller
        if controller is None:
            raise TargetError("there is no active controller now (no broker holds /controller, or the KRaft "
                              "quorum has no leader)")
        return (cluster.topology.node_of_id(controller),)

    def describe(self) -> str:
        return "active controller"

    def to_spec(self) -> Any:
        return self.kind


@target_kind(table=False, bare=True)  # {controller = id} is a KRaftController
@dataclass(frozen=True)
class Controller(ActiveController):
    """``"controller"``: the active controller, by the name ZooKeeper-mode schedules give it."""

    kind: ClassVar[str] = "controller"

    def describe(self) -> str:
        return "controller"


@target_kind(bare=True)
@dataclass(frozen=True)
class ControllerMajority(Target):
    """A majority of the KRaft quorum's voters (n // 2 + 1 of n): the active controller
    first, then the other voters in id order. Down or cut off, the rest cannot elect a
    leader or commit a metadata change."""

    kind: ClassVar[str] = "controller_majority"

    def check(self, topology: Topology) -> None:
        needs_controllers(topology, f"target {self.kind!r}",
                          "a majority of the ZooKeeper nodes (e.g. two {node = ...} targets)")

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        voters = sorted(cluster.topology.controllers, key=lambda c: c.node_id)
        leader = cluster.state(topics=[]).controller
        ordered = sorted(voters, key=lambda c: c.node_id != leader)
        return tuple(c.name for c in ordered[:len(voters) // 2 + 1])

    def describe(self) -> str:
        return "a majority of the KRaft controllers"

    def to_spec(self) -> Any:
        return self.kind


@target_kind(bare=True)
@dataclass(frozen=True)
class ZooKeeperLeader(Target):
    """The ZooKeeper node that leads the ensemble now (``srvr`` says Mode: leader)."""

    kind: ClassVar[str] = "zookeeper_leader"

    def check(self, topology: Topology) -> None:
        needs_zookeeper(topology, f"target {self.kind!r}", '"active_controller" (the quorum\'s leader)')

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        leaders = [name for name, mode in cluster.quorum_roles().items() if mode == "leader"]
        if not leaders:
            raise TargetError("no ZooKeeper node is leading now (the ensemble has no quorum)")
        return (leaders[0],)

    def describe(self) -> str:
        return "ZooKeeper leader"

    def to_spec(self) -> Any:
        return self.kind


@target_kind(bare=True)
@dataclass(frozen=True)
class QuorumLeader(Target):
    """The KRaft controller that leads the quorum now, by the quorum's own account. On a
    KRaft cluster that is the active controller; on a migrating one it is the controller
    that leads the migration, also before it has claimed ``/controller`` (until the copy,
    ``active_controller`` there is the ZooKeeper-mode controller, a broker)."""

    kind: ClassVar[str] = "quorum_leader"

    def check(self, topology: Topology) -> None:
        needs_controllers(topology, f"target {self.kind!r}",
                          '"active_controller" (the broker holding /controller)')

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        voters = {c.name for c in cluster.topology.controllers}
        leaders = [name for name, role in cluster.quorum_roles().items()
                   if role == "leader" and name in voters]
        if not leaders:
            raise TargetError("no KRaft controller leads the quorum now")
        return (leaders[0],)

    def describe(self) -> str:
        return "KRaft quorum leader"

    def to_spec(self) -> Any:
        return self.kind


# -- every node of a kind at once ------------------------------------------------------
@target_kind(bare=True)
@dataclass(frozen=True)
class AllBrokers(Target):
    """Every broker of the topology: what a power cut of the whole cluster takes down."""

    kind: ClassVar[str] = "all_brokers"
    moves: ClassVar[bool] = False

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        return tuple(b.name for b in cluster.topology.brokers)

    def describe(self) -> str:
        return "all brokers"

    def to_spec(self) -> Any:
        return self.kind


@target_kind(bare=True)
@dataclass(frozen=True)
class AllZooKeepers(Target):
    """Every ZooKeeper node of the topology: the whole ensemble losing power together."""

    kind: ClassVar[str] = "all_zookeepers"
    moves: ClassVar[bool] = False

    def check(self, topology: Topology) -> None:
        needs_zookeeper(topology, f"target {self.kind!r}", '"all_controllers"')

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        return tuple(z.name for z in cluster.topology.zookeepers)

    def describe(self) -> str:
        return "all ZooKeeper nodes"

    def to_spec(self) -> Any:
        return self.kind


@target_kind(bare=True)
@dataclass(frozen=True)
class AllControllers(Target):
    """Every voter of the KRaft controller quorum: the controllers losing power together."""

    kind: ClassVar[str] = "all_controllers"
    moves: ClassVar[bool] = False

    def check(self, topology: Topology) -> None:
        needs_controllers(topology, f"target {self.kind!r}", '"all_zookeepers"')

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        self.check(cluster.topology)
        return tuple(dict.fromkeys(c.name for c in cluster.topology.controllers))

    def describe(self) -> str:
        return "all KRaft controllers"

    def to_spec(self) -> Any:
        return self.kind


def partition_state(cluster: ClusterView, topic: str, partition: int) -> PartitionState:
    """The partition as ZooKeeper holds it, or a TargetError naming what is missing."""
    states = cluster.state([topic]).topic(topic)
    if not states:
        raise TargetError(f"topic {topic!r} does not exist in this cluster")
    for state in states:
        if state.partition == partition:
            return state
    raise TargetError(f"topic {topic!r} has no partition {partition} (it has {len(states)})")


def _checked(lookup: Any) -> None:
    try:
        lookup()
    except TopologyError as err:
        raise TargetError(str(err)) from err


# -- link selections -----------------------------------------------------------------------
class LinkTarget(ABC):
    """A set of directed links, chosen from targets resolved at injection time."""

    @abstractmethod
    def check(self, topology: Topology) -> None: ...

    @abstractmethod
    def check_exists(self, cluster: ClusterView) -> None: ...

    @abstractmethod
    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        """Names of the faultable links selected now (never the harness's observer links)."""

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def to_spec(self) -> dict[str, Any]: ...

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class Links(LinkTarget):
    """Links from any endpoint of ``source`` to any endpoint of ``destination``.

    ``kind`` narrows to one link kind (a follower's fetch link is the REPLICATION link
    from follower to leader); ``both_ways`` adds the reverse direction.
    """

    source: Target
    destination: Target
    kind: LinkKind | None = None
    both_ways: bool = False

    def check(self, topology: Topology) -> None:
        self.source.check(topology)
        self.destination.check(topology)

    def check_exists(self, cluster: ClusterView) -> None:
        self.source.check_exists(cluster)
        self.destination.check_exists(cluster)

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        sources = self.source.resolve(cluster)
        destinations = self.destination.resolve(cluster)
        pairs = [(s, d) for s in sources for d in destinations]
        if self.both_ways:
            pairs += [(d, s) for s, d in pairs]
        names = [
            link.name for s, d in pairs for link in cluster.fabric.find(s, d, self.kind) if link.faultable
        ]
        if not names:
            raise TargetError(
                f"no link from {','.join(sources)} to {','.join(destinations)}"
                + (f" of kind {self.kind}" if self.kind else "")
            )
        return tuple(dict.fromkeys(names))

    def describe(self) -> str:
        arrow = "<->" if self.both_ways else "->"
        kind = f" ({self.kind})" if self.kind else ""
        return f"{self.source.describe()} {arrow} {self.destination.describe()}{kind}"

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"from": self.source.to_spec(), "to": self.destination.to_spec()}
        if self.kind is not None:
            spec["kind"] = str(self.kind)
        if self.both_ways:
            spec["both_ways"] = True
        return spec


@dataclass(frozen=True)
class Isolation(LinkTarget):
    """Every faultable link with exactly one end among ``target``'s endpoints.

    For a zone this is :meth:`Fabric.crossing_zone` (clients included: the zone's clients
    still reach the zone's brokers); for one node it is every link into or out of it.
    """

    target: Target

    def check(self, topology: Topology) -> None:
        self.target.check(topology)

    def check_exists(self, cluster: ClusterView) -> None:
        self.target.check_exists(cluster)

    def resolve(self, cluster: ClusterView) -> tuple[str, ...]:
        inside = set(self.target.resolve(cluster))
        return tuple(
            link.name
            for link in cluster.fabric.links
            if link.faultable and (link.source in inside) != (link.destination in inside)
        )

    def describe(self) -> str:
        return f"isolate {self.target.describe()}"

    def to_spec(self) -> dict[str, Any]:
        return {"isolate": self.target.to_spec()}


# -- parsing -----------------------------------------------------------------------------
TARGET_KINDS: tuple[str, ...] = tuple(TARGETS.kinds())
"""Every target form, in the order the documentation lists them."""


def parse_target(spec: object) -> Target:
    """A target from its spec: ``"controller"``, ``{"leader_of": ["t", 0]}``, ``{"zone": "a"}``."""
    return TARGETS.parse(spec, "a target")


def parse_links(spec: object) -> LinkTarget:
    """Links from ``{"from": T, "to": T, "kind": "replication", "both_ways": false}``
    or ``{"isolate": T}``."""
    mapping = as_mapping(spec, "a link selection")
    if "isolate" in mapping:
        check_keys(mapping, ["isolate"], "an isolation")
        return Isolation(parse_target(mapping["isolate"]))
    check_keys(mapping, ["from", "to", "kind", "both_ways"], "a link selection")
    for key in ("from", "to"):
        if key not in mapping:
            raise FaultSpecError(f"a link selection needs {key!r} (or use {{'isolate': target}})")
    kind_name = optional(mapping, "kind", str, "", "a link selection")
    kind = None
    if kind_name:
        try:
            kind = LinkKind(kind_name)
        except ValueError:
            kinds = ", ".join(k.value for k in LinkKind if k is not LinkKind.OBSERVER)
            raise FaultSpecError(f"unknown link kind {kind_name!r}; kinds are {kinds}") from None
        if kind is LinkKind.OBSERVER:
            raise FaultSpecError("observer links carry the harness's own view and are never faulted")
    return Links(
        parse_target(mapping["from"]),
        parse_target(mapping["to"]),
        kind,
        optional(mapping, "both_ways", bool, False, "a link selection"),
    )


def target_from(spec: Mapping[str, Any], key: str, what: str) -> Target:
    if key not in spec:
        raise FaultSpecError(f"{what} needs {key!r}")
    return parse_target(spec[key])
