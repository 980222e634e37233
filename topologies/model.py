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

    def zone_of(self, node_name: str) -> str:
        for broker in self.brokers:
            if broker.name == node_name:
                return broker.zone
        for zk in self.zookeepers:
            if zk.name == node_name:
                return zk.zone
        raise TopologyError(f"topology {self.name!r} has no node {node_name!r}")

    def nodes_in_zone(self, zone: str) -> list[str]:
        if zone not in self.zones:
            raise TopologyError(f"unknown zone {zone!r}; zones are {', '.join(self.zones)}")
        return [b.name for b in self.brokers if b.zone == zone] + [
            z.name for z in self.zookeepers if z.zone == zone
        ]

    @property
    def node_names(self) -> list[str]:
        return [z.name for z in self.zookeepers] + [b.name for b in self.brokers]

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
        }


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
    for zone_of_node in [b.zone for b in topology.brokers] + [z.zone for z in topology.zookeepers]:
        if zone_of_node not in topology.zones:
            raise TopologyError(f"node in unknown zone {zone_of_node!r}; zones are {topology.zones}")
    for zone in topology.zones:
        if not any(b.zone == zone for b in topology.brokers):
            raise TopologyError(f"zone {zone!r} of topology {topology.name!r} has no broker")
        if not any(z.zone == zone for z in topology.zookeepers):
            raise TopologyError(f"zone {zone!r} of topology {topology.name!r} has no ZooKeeper node")
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
