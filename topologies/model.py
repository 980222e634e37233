"""The typed model of a cluster declaration and the maths that places nodes in zones.

Everything here is pure: no Docker, no network. Validation happens when a topology is
built, so a malformed declaration fails with one clear sentence before any container
starts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from topologies.errors import TopologyError

SettingValue = str | int | float | bool

# How a cluster keeps its metadata: in a ZooKeeper ensemble (the default, up to Kafka
# 3.9) or in a KRaft controller quorum (3.x as an option, the only mode of 4.x).
ZOOKEEPER, KRAFT = METADATA_MODES = ("zookeeper", "kraft")
# A cluster on its way from ZooKeeper to KRaft: its ZooKeeper ensemble and the dedicated
# controllers that take over from it are both there until the migration is finalized. A
# topology in this state is made from a ZooKeeper one and its KRaft variant
# (:func:`migration_topology`); ``--metadata`` never asks for it.
MIGRATION = "migration"
TOPOLOGY_METADATA = (*METADATA_MODES, MIGRATION)
# Where a KRaft cluster's controllers run: nodes of their own, or inside the brokers
# (process.roles=broker,controller).
DEDICATED, COMBINED = CONTROLLER_LAYOUTS = ("dedicated", "combined")
# A dedicated controller's node.id: apart from the brokers' ids, which start at 0.
CONTROLLER_ID_BASE = 100


@dataclass(frozen=True)
class BrokerNode:
    """One Kafka broker: its id, its zone (also its ``broker.rack``) and its node name."""

    broker_id: int
    zone: str

    @property
    def name(self) -> str:
        return f"kafka-{self.broker_id}"


@dataclass(frozen=True)
class ZooKeeperNode:
    """One ZooKeeper ensemble member; ``sid`` is its myid (1-based, as ZooKeeper wants)."""

    sid: int
    zone: str
    name: str


@dataclass(frozen=True)
class ControllerNode:
    """One voter of a KRaft controller quorum: its ``node.id``, its zone and its node. In
    a combined layout it is a broker (same id, same node); else a node of its own."""

    node_id: int
    zone: str
    name: str


PlacedNode = BrokerNode | ZooKeeperNode | ControllerNode


@dataclass(frozen=True)
class Topology:
    """A cluster spread over availability zones, with its broker and topic settings."""

    name: str
    zones: tuple[str, ...]
    brokers: tuple[BrokerNode, ...]
    zookeepers: tuple[ZooKeeperNode, ...]
    broker_settings: Mapping[str, SettingValue] = field(default_factory=dict)
    topic_defaults: Mapping[str, SettingValue] = field(default_factory=dict)
    zookeeper_settings: Mapping[str, SettingValue] = field(default_factory=dict)
    broker_heap_mb: int = 384
    zookeeper_heap_mb: int = 128
    # Each broker's log directory on a disk of this size (MiB), which a fault can fill;
    # None: a volume as large as the host's disk, which nothing fills.
    broker_disk_mb: int | None = None
    metadata: str = ZOOKEEPER
    controller_layout: str = DEDICATED
    controllers: tuple[ControllerNode, ...] = ()
    controller_settings: Mapping[str, SettingValue] = field(default_factory=dict)
    controller_heap_mb: int = 256

    def __post_init__(self) -> None:
        validate(self)

    # -- lookups ---------------------------------------------------------------------------
    def broker(self, broker_id: int) -> BrokerNode:
        for node in self.brokers:
            if node.broker_id == broker_id:
                return node
        raise TopologyError(f"topology {self.name!r} has no broker {broker_id}")

    def zookeeper(self, name: str) -> ZooKeeperNode:
        for node in self.zookeepers:
            if node.name == name:
                return node
        raise TopologyError(f"topology {self.name!r} has no ZooKeeper node {name!r}")

    def controller(self, node_id: int) -> ControllerNode:
        """The KRaft controller (quorum voter) ``node_id``."""
        for node in self.controllers:
            if node.node_id == node_id:
                return node
        ids = ", ".join(str(c.node_id) for c in self.controllers)
        has = f"its controllers are {ids}" if ids else "it has no KRaft controllers"
        raise TopologyError(f"topology {self.name!r} has no KRaft controller {node_id}; {has}")

    def before_migration(self) -> Topology:
        """A migrating topology as its cluster is before the controllers start: ZooKeeper
        mode, no KRaft controller (for the rules on what may act when)."""
        return replace(self, metadata=ZOOKEEPER, controllers=(), controller_settings={})

    @property
    def migrating(self) -> bool:
        """True for a cluster on its way from ZooKeeper to KRaft: what has migration
        phases, and the one thing code outside the metadata modes asks of it."""
        return self.metadata == MIGRATION

    @property
    def controller_candidates(self) -> tuple[str, ...]:
        """The nodes one of which is the active controller: the quorum's voters where the
        cluster has a quorum of controllers, else (a ZooKeeper-mode cluster) every broker."""
        return tuple(c.name for c in self.controllers) or tuple(b.name for b in self.brokers)

    def node_of_id(self, node_id: int) -> str:
        """The node of a controller id as the metadata reports it: a KRaft voter's node, or
        (a ZooKeeper-mode controller is a broker) the broker's."""
        for node in self.controllers:
            if node.node_id == node_id:
                return node.name
        return self.broker(node_id).name

    @property
    def quorum_members(self) -> tuple[PlacedNode, ...]:
        """The metadata quorum's members: the ZooKeeper ensemble, or the KRaft voters."""
        return (*self.zookeepers, *self.controllers)

    def id_of_node(self, name: str) -> int:
        """The metadata's id of a node that can be the active controller (the inverse of
        :meth:`node_of_id`): a KRaft voter's node id, or a broker's id."""
        for controller in self.controllers:
            if controller.name == name:
                return controller.node_id
        for broker in self.brokers:
            if broker.name == name:
                return broker.broker_id
        raise TopologyError(f"topology {self.name!r} has no broker or controller {name!r}")

    @property
    def placed_nodes(self) -> tuple[PlacedNode, ...]:
        """Every broker, ZooKeeper node and controller (a combined one twice: as broker too)."""
        return (*self.brokers, *self.zookeepers, *self.controllers)

    def zone_of(self, node_name: str) -> str:
        for node in self.placed_nodes:
            if node.name == node_name:
                return node.zone
        raise TopologyError(f"topology {self.name!r} has no node {node_name!r}")

    @property
    def dedicated_controllers(self) -> tuple[ControllerNode, ...]:
        """The controllers that are nodes of their own (none in a combined layout)."""
        return self.controllers if self.controller_layout == DEDICATED else ()

    def nodes_in_zone(self, zone: str) -> list[str]:
        if zone not in self.zones:
            raise TopologyError(f"unknown zone {zone!r}; zones are {', '.join(self.zones)}")
        quorum: tuple[PlacedNode, ...] = (*self.zookeepers, *self.dedicated_controllers)
        return [b.name for b in self.brokers if b.zone == zone] + [n.name for n in quorum if n.zone == zone]

    @property
    def node_names(self) -> list[str]:
        """Every node, metadata quorum first (the start order)."""
        return ([z.name for z in self.zookeepers] + [c.name for c in self.dedicated_controllers]
                + [b.name for b in self.brokers])

    @property
    def default_replication_factor(self) -> int:
        return int(self.topic_defaults.get("replication.factor", min(3, len(self.brokers))))

    def check_replication_factor(self, replication_factor: int) -> None:
        if not 1 <= replication_factor <= len(self.brokers):
            raise TopologyError(
                f"replication factor {replication_factor} is impossible on {len(self.brokers)} "
                f"broker(s) of topology {self.name!r}"
            )

    def with_broker_settings(self, settings: Mapping[str, SettingValue]) -> Topology:
        """The same cluster with ``settings`` over its broker settings, validated like any
        topology (a scenario's settings must not ask for an impossible replication factor)."""
        if not settings:
            return self
        return replace(self, broker_settings={**self.broker_settings, **settings})

    def describe(self) -> dict[str, object]:
        """A JSON-friendly record of the topology, for the run's saved configuration."""
        return {
            "name": self.name,
            "zones": list(self.zones),
            "brokers": [{"id": b.broker_id, "zone": b.zone} for b in self.brokers],
            "zookeepers": [{"name": z.name, "sid": z.sid, "zone": z.zone} for z in self.zookeepers],
            "broker_settings": dict(self.broker_settings),
            "topic_defaults": dict(self.topic_defaults),
            "zookeeper_settings": dict(self.zookeeper_settings),
            "broker_heap_mb": self.broker_heap_mb,
            "zookeeper_heap_mb": self.zookeeper_heap_mb,
            "broker_disk_mb": self.broker_disk_mb,
            "metadata": self.metadata,
            **({"controller_layout": self.controller_layout,
                "controllers": [{"id": c.node_id, "name": c.name, "zone": c.zone} for c in self.controllers],
                "controller_settings": dict(self.controller_settings),
                "controller_heap_mb": self.controller_heap_mb} if self.controllers else {}),
        }


def migration_topology(source: Topology, target: Topology) -> Topology:
    """The cluster while ``source`` (ZooKeeper mode) migrates to ``target`` (its KRaft
    variant): ``source``'s brokers and ZooKeeper nodes, with ``target``'s dedicated
    controllers beside them. The brokers keep their ids, as Kafka requires. Their settings
    are both topologies': a broker in migration mode keeps its ZooKeeper session and also
    heartbeats to the quorum (a broker rolled to KRaft leaves the ``zookeeper.`` ones)."""
    if source.metadata != ZOOKEEPER:
        raise TopologyError(f"a migration starts from a ZooKeeper-mode topology; {source.name!r} is "
                            f"in {source.metadata} mode")
    if target.metadata != KRAFT or target.controller_layout != DEDICATED:
        raise TopologyError(f"a migration ends on a KRaft topology with dedicated controllers; "
                            f"{target.name!r} is {target.metadata} ({target.controller_layout})")
    if (source.zones, source.brokers) != (target.zones, target.brokers):
        raise TopologyError(f"{source.name!r} and {target.name!r} differ in zones or brokers: a "
                            "migration keeps every broker, its id and its zone")
    return replace(source, name=f"{source.name}_migration", metadata=MIGRATION,
                   broker_settings={**source.broker_settings, **target.broker_settings},
                   controller_layout=DEDICATED, controllers=target.controllers,
                   controller_settings=target.controller_settings,
                   controller_heap_mb=target.controller_heap_mb)


def place_round_robin(zones: tuple[str, ...], count: int) -> list[str]:
    """Zone of the i-th node when ``count`` nodes are spread evenly, in zone order.

    Round-robin keeps the scenario convention that brokers 0, 1, 2 sit in zones a, b, c,
    and with six brokers puts 3, 4, 5 in a, b, c again.
    """
    return [zones[i % len(zones)] for i in range(count)]


def zookeeper_names(zones: tuple[str, ...], placement: list[str]) -> list[str]:
    """``zk-a`` when a zone holds one ZooKeeper node, ``zk-a1``, ``zk-a2`` when several."""
    per_zone = Counter(placement)
    seen: Counter[str] = Counter()
    names = []
    for zone in placement:
        seen[zone] += 1
        names.append(f"zk-{zone}" if per_zone[zone] == 1 else f"zk-{zone}{seen[zone]}")
    return names


def controller_names(zones: tuple[str, ...], placement: list[str]) -> list[str]:
    """``kraft-a`` when a zone holds one dedicated controller, ``kraft-a1``, ``kraft-a2``
    when several."""
    return [name.replace("zk-", "kraft-", 1) for name in zookeeper_names(zones, placement)]


def _validate_metadata(topology: Topology) -> None:
    """The metadata mode's own rules: a ZooKeeper node in every zone, or a controller, or
    (migrating) both."""
    if topology.metadata not in TOPOLOGY_METADATA:
        raise TopologyError(f"metadata {topology.metadata!r} is not a metadata mode; "
                            f"modes: {', '.join(METADATA_MODES)}")
    if topology.controller_layout not in CONTROLLER_LAYOUTS:
        raise TopologyError(f"controllers {topology.controller_layout!r} is not a controller layout; "
                            f"layouts: {', '.join(CONTROLLER_LAYOUTS)}")
    held_by: dict[str, tuple[str, tuple[PlacedNode, ...]]] = {
        ZOOKEEPER: ("ZooKeeper node", topology.zookeepers), KRAFT: ("KRaft controller", topology.controllers)}
    kept_in = (ZOOKEEPER, KRAFT) if topology.metadata == MIGRATION else (topology.metadata,)
    for mode in METADATA_MODES:
        if mode not in kept_in and held_by[mode][1]:
            other_what, other = held_by[mode]
            raise TopologyError(f"topology {topology.name!r} keeps its metadata in {topology.metadata} mode "
                                f"but declares {other_what}s ({', '.join(n.name for n in other)})")
    for what, quorum in (held_by[mode] for mode in kept_in):
        for zone in topology.zones:
            if not any(n.zone == zone for n in quorum):
                raise TopologyError(f"zone {zone!r} of topology {topology.name!r} has no {what}")
    if topology.metadata == MIGRATION and topology.controller_layout != DEDICATED:
        raise TopologyError(f"topology {topology.name!r}: Kafka migrates from ZooKeeper to dedicated "
                            "KRaft controllers only, not combined ones")
    ids = [c.node_id for c in topology.controllers]
    if len(set(ids)) != len(ids):
        raise TopologyError(f"topology {topology.name!r} has duplicate controller ids")
    if topology.controller_layout == DEDICATED:
        clash = sorted(set(ids) & {b.broker_id for b in topology.brokers})
        if clash:
            raise TopologyError(f"topology {topology.name!r}: dedicated controller id(s) {clash} are "
                                "broker ids too")
    elif topology.controllers:
        brokers = {(b.broker_id, b.zone, b.name) for b in topology.brokers}
        strays = [c.name for c in topology.controllers if (c.node_id, c.zone, c.name) not in brokers]
        if strays:
            raise TopologyError(f"topology {topology.name!r}: combined controllers must be brokers, "
                                f"not {', '.join(strays)}")
    if topology.metadata != ZOOKEEPER and topology.controller_heap_mb < 128:
        raise TopologyError("a controller heap below 128 MiB cannot run")
    if topology.metadata == KRAFT:
        zk_settings = sorted(k for k in topology.broker_settings if k.startswith("zookeeper."))
        if zk_settings or topology.zookeeper_settings:
            named = ", ".join(zk_settings) or "zookeeper_settings"
            raise TopologyError(f"topology {topology.name!r} is a KRaft cluster: {named} has no meaning "
                                "there")


def validate(topology: Topology) -> None:
    """Reject declarations that cannot describe a working cluster."""
    if not topology.zones:
        raise TopologyError(f"topology {topology.name!r} declares no zones")
    duplicate_zones = [z for z, n in Counter(topology.zones).items() if n > 1]
    if duplicate_zones:
        raise TopologyError(f"topology {topology.name!r} repeats zone(s) {duplicate_zones}")
    for zone in topology.zones:
        if not zone.isalnum() or not zone.islower():
            raise TopologyError(f"zone name {zone!r} must be lower-case letters and digits")
    ids = [b.broker_id for b in topology.brokers]
    duplicate_ids = sorted(i for i, n in Counter(ids).items() if n > 1)
    if duplicate_ids:
        raise TopologyError(f"topology {topology.name!r} has duplicate broker id(s) {duplicate_ids}")
    names = topology.node_names
    duplicate_names = sorted(n for n, c in Counter(names).items() if c > 1)
    if duplicate_names:
        raise TopologyError(f"topology {topology.name!r} has duplicate node name(s) {duplicate_names}")
    sids = [z.sid for z in topology.zookeepers]
    if len(set(sids)) != len(sids):
        raise TopologyError(f"topology {topology.name!r} has duplicate ZooKeeper ids")
    for node in topology.placed_nodes:
        if node.zone not in topology.zones:
            raise TopologyError(f"node in unknown zone {node.zone!r}; zones are {topology.zones}")
    for zone in topology.zones:
        if not any(b.zone == zone for b in topology.brokers):
            raise TopologyError(f"zone {zone!r} of topology {topology.name!r} has no broker")
    _validate_metadata(topology)
    if not topology.brokers:
        raise TopologyError(f"topology {topology.name!r} has no brokers")
    if topology.broker_disk_mb is not None and topology.broker_disk_mb < 64:
        raise TopologyError(f"broker_disk_mb {topology.broker_disk_mb} is too small for a broker's log "
                            "directory (at least 64)")
    topology.check_replication_factor(topology.default_replication_factor)
    for key in ("default.replication.factor", "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor"):
        if key in topology.broker_settings:
            topology.check_replication_factor(int(topology.broker_settings[key]))
    if topology.broker_heap_mb < 128 or topology.zookeeper_heap_mb < 64:
        raise TopologyError("heap sizes below 128 MiB (broker) / 64 MiB (ZooKeeper) cannot run")
