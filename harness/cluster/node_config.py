"""Rendering each node's configuration file from the topology and the fabric.

Pure functions: given where every proxy listens (and, for links published to the host,
which 127.0.0.1 port Docker gave it), produce ``server.properties`` for a broker or a
KRaft controller and ``zoo.cfg`` for a ZooKeeper node. A broker's file is the same in
both metadata modes but for what its mode adds (:class:`MetadataSettings`:
``zookeeper.connect``, or the KRaft roles, node id and voters). See
:mod:`harness.cluster.fabric` for why each node's file names its own proxies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.cluster.fabric import (
    BROKER_LISTENER_PORT,
    OBSERVER,
    OBSERVER_LISTENER_PORT,
    TOXIPROXY_HOST,
    ZK_CLIENT_PORT,
    ZK_ELECTION_PORT,
    ZK_QUORUM_PORT,
    ZONE_LISTENER_PORT,
    Fabric,
    LinkKind,
    broker_listener,
    client_name,
    controller_listener,
    controller_port,
    controller_sources,
    migration_listener,
    migration_port,
    zone_listener,
)
from topologies.model import BrokerNode, ControllerNode, SettingValue, ZooKeeperNode

KAFKA_DATA_DIR = "/var/lib/kafka/data"
ZK_DATA_DIR = "/var/lib/zookeeper"
CONFIG_DIR = "/etc/kafka-chaos"
# The power-loss model's sync journal (docker/kafka/syncjournal.c): the library in the
# image, and where a node's JVM journals what it made durable (outside its data directory,
# so a power loss never cuts the journal itself).
SYNC_JOURNAL_LIBRARY = "/opt/kafka-chaos/lib/libsyncjournal.so"
SYNC_JOURNAL = "/var/lib/sync-journal"


def format_value(value: SettingValue) -> str:
    """A setting as Kafka and ZooKeeper config files spell it (``true``, not ``True``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _render(settings: Mapping[str, SettingValue]) -> str:
    return "".join(f"{key}={format_value(value)}\n" for key, value in settings.items())


@dataclass(frozen=True)
class MetadataSettings:
    """What a broker's metadata mode adds to its ``server.properties``: settings,
    listeners it binds but never advertises (a combined node's CONTROLLER listener), and
    the cluster id its storage is formatted with before it starts (KRaft)."""

    settings: Mapping[str, SettingValue]
    listeners: tuple[str, ...] = field(default=())
    format_cluster_id: str | None = None
    # Controller listener names the broker speaks (mapped to PLAINTEXT), and where a
    # combined node advertises its own controller listeners.
    protocol_names: tuple[str, ...] = field(default=())
    advertised: tuple[str, ...] = field(default=())
    # Prefixes of the topology's broker settings this mode leaves out (a migrated broker
    # drops the ``zookeeper.`` ones it ran with until then).
    omitted: tuple[str, ...] = field(default=())


def zookeeper_connect(fabric: Fabric, node: str) -> str:
    """``zookeeper.connect`` for ``node`` (a broker, or a migrating controller): every
    ZooKeeper node through ``node``'s own session proxies."""
    return ",".join(
        f"{TOXIPROXY_HOST}:{fabric.one(node, zk.name, LinkKind.ZK_SESSION).listen_port}"
        for zk in fabric.topology.zookeepers
    )


def zookeeper_broker_settings(fabric: Fabric, broker: BrokerNode) -> MetadataSettings:
    """A ZooKeeper-mode broker's ``zookeeper.connect``, through its own session proxies."""
    return MetadataSettings({"zookeeper.connect": zookeeper_connect(fabric, broker.name)})


def _controller_link_port(fabric: Fabric, source: str, voter: str) -> int:
    """The proxy port of ``source``'s link to the controller ``voter``."""
    upstream = f"{voter}:{controller_port(fabric.topology, source)}"
    return next(link.listen_port for link in fabric.find(source, voter) if link.upstream == upstream)


def kraft_voters(fabric: Fabric, node: str) -> str:
    """``controller.quorum.voters`` as ``node`` reaches them: each voter at the proxy of the
    link from ``node`` to it, ``node`` itself (a voter) at its own listener."""
    voters = []
    for voter in fabric.topology.controllers:
        if voter.name == node:
            address = f"{node}:{controller_port(fabric.topology, node)}"
        else:
            address = f"{TOXIPROXY_HOST}:{_controller_link_port(fabric, node, voter.name)}"
        voters.append(f"{voter.node_id}@{address}")
    return ",".join(voters)


def _controller_listeners(fabric: Fabric, controller: str) -> tuple[list[str], list[str], list[str]]:
    """A controller's listeners, one per node connecting to it, its own first: (names,
    bound, advertised), each advertised at the proxy of that node's link to it."""
    topology = fabric.topology
    sources = [controller, *(s for s in controller_sources(topology) if s != controller)]
    names, bound, advertised = [], [], []
    for source in sources:
        name, port = controller_listener(source), controller_port(topology, source)
        names.append(name)
        bound.append(f"{name}://0.0.0.0:{port}")
        where = f"{controller}:{port}" if source == controller else \
            f"{TOXIPROXY_HOST}:{_controller_link_port(fabric, source, controller)}"
        advertised.append(f"{name}://{where}")
    return names, bound, advertised


def _kraft_common(fabric: Fabric, node: str, listener_names: list[str]) -> dict[str, SettingValue]:
    return {"controller.quorum.voters": kraft_voters(fabric, node),
            "controller.listener.names": ",".join(listener_names)}


def kraft_broker_settings(fabric: Fabric, broker: BrokerNode, cluster_id: str) -> MetadataSettings:
    """A KRaft broker's roles, node id and voters; a combined one is a controller too and
    binds the CONTROLLER listener."""
    combined = any(c.name == broker.name for c in fabric.topology.controllers)
    names, bound, advertised = _controller_listeners(fabric, broker.name) if combined else (
        [controller_listener(broker.name)], [], [])
    settings: dict[str, SettingValue] = {
        "process.roles": "broker,controller" if combined else "broker",
        "node.id": broker.broker_id,
        **_kraft_common(fabric, broker.name, names),
    }
    if combined:
        settings.update(fabric.topology.controller_settings)
    return MetadataSettings(settings, tuple(bound), cluster_id, tuple(names), tuple(advertised))


def controller_properties(fabric: Fabric, controller: ControllerNode,
                          extra_settings: Mapping[str, SettingValue] | None = None,
                          migrating: bool = False, advertise: bool = True) -> str:
    """``server.properties`` for a dedicated KRaft controller: its metadata log lives in
    ``KAFKA_DATA_DIR``, its peers are reached through its own proxies. ``migrating``: the
    controller of a cluster that is leaving ZooKeeper, which it reaches through proxies of
    its own, sending its controller requests to the ZooKeeper-mode brokers on the listener
    each has for it. ``advertise``: whether the release takes ``advertised.listeners`` on a
    controller (:attr:`~harness.cluster.versions.KafkaRelease.controllers_advertise`)."""
    names, bound, advertised = _controller_listeners(fabric, controller.name)
    spoken = list(names)
    migration: dict[str, SettingValue] = {}
    if migrating:
        rpc = migration_listener(controller.name)
        spoken.append(rpc)
        migration = {
            "zookeeper.metadata.migration.enable": True,
            "zookeeper.connect": zookeeper_connect(fabric, controller.name),
            **{k: v for k, v in fabric.topology.broker_settings.items() if k.startswith("zookeeper.")},
            "inter.broker.listener.name": rpc,
        }
    settings: dict[str, SettingValue] = {
        "process.roles": "controller",
        "node.id": controller.node_id,
        **_kraft_common(fabric, controller.name, names),
        "listeners": ",".join(bound),
        **({"advertised.listeners": ",".join(advertised)} if advertise else {}),
        "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in spoken),
        "log.dirs": KAFKA_DATA_DIR,
        **migration,
        **fabric.topology.controller_settings,
        **(extra_settings or {}),
    }
    return _render(settings)


def _migration_listeners(fabric: Fabric, broker: BrokerNode) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A migrating cluster's broker listeners for its KRaft controllers' requests, one per
    controller: (bound, advertised), each advertised at the proxy of that controller's
    link to the broker."""
    bound, advertised = [], []
    for controller in fabric.topology.dedicated_controllers:
        name, port = migration_listener(controller.name), migration_port(fabric.topology, controller.name)
        link = fabric.one(controller.name, broker.name, LinkKind.CONTROLLER_RPC)
        bound.append(f"{name}://0.0.0.0:{port}")
        advertised.append(f"{name}://{TOXIPROXY_HOST}:{link.listen_port}")
    return tuple(bound), tuple(advertised)


def migrating_broker_settings(fabric: Fabric, broker: BrokerNode, protocol_version: str) -> MetadataSettings:
    """A ZooKeeper-mode broker in migration mode: it keeps its ZooKeeper session and also
    registers with the KRaft quorum, and it listens for the KRaft controllers' requests.
    Kafka's migration needs ``inter.broker.protocol.version`` pinned to the release's
    (``protocol_version``, e.g. ``3.9``) for as long as it lasts."""
    own = controller_listener(broker.name)
    bound, advertised = _migration_listeners(fabric, broker)
    settings: dict[str, SettingValue] = {
        "zookeeper.connect": zookeeper_connect(fabric, broker.name),
        "zookeeper.metadata.migration.enable": True,
        "controller.quorum.voters": kraft_voters(fabric, broker.name),
        "controller.listener.names": own,
        "inter.broker.protocol.version": protocol_version,
    }
    return MetadataSettings(settings, bound, None, (own,), advertised)


def migrated_broker_settings(fabric: Fabric, broker: BrokerNode) -> MetadataSettings:
    """A broker of a migrating cluster rolled to KRaft: a KRaft broker's settings, its
    storage left as ZooKeeper mode wrote it (Kafka's migration formats no broker), and
    the controllers' listeners kept, so its endpoints do not change under a rollback."""
    kraft = kraft_broker_settings(fabric, broker, cluster_id="")
    bound, advertised = _migration_listeners(fabric, broker)
    return MetadataSettings(kraft.settings, (*kraft.listeners, *bound), None, kraft.protocol_names,
                            (*kraft.advertised, *advertised), omitted=("zookeeper.",))


def broker_properties(
    fabric: Fabric,
    broker: BrokerNode,
    host_ports: Mapping[str, int],
    metadata: MetadataSettings,
    extra_settings: Mapping[str, SettingValue] | None = None,
) -> str:
    """``server.properties`` for ``broker``; ``host_ports`` maps link name -> 127.0.0.1 port."""
    topology = fabric.topology
    listeners: list[str] = []
    advertised: list[str] = []
    for source in topology.brokers:
        name = broker_listener(source.broker_id)
        port = BROKER_LISTENER_PORT + source.broker_id
        listeners.append(f"{name}://0.0.0.0:{port}")
        if source == broker:
            advertised.append(f"{name}://{broker.name}:{port}")
        else:
            link = fabric.one(source.name, broker.name, LinkKind.REPLICATION)
            advertised.append(f"{name}://{TOXIPROXY_HOST}:{link.listen_port}")
    for index, zone in enumerate(topology.zones):
        name = zone_listener(zone)
        listeners.append(f"{name}://0.0.0.0:{ZONE_LISTENER_PORT + index}")
        link = fabric.one(client_name(zone), broker.name, LinkKind.CLIENT)
        advertised.append(f"{name}://127.0.0.1:{host_ports[link.name]}")
    listeners.append(f"OBSERVER://0.0.0.0:{OBSERVER_LISTENER_PORT}")
    observer = fabric.one(OBSERVER, broker.name, LinkKind.OBSERVER)
    advertised.append(f"OBSERVER://127.0.0.1:{host_ports[observer.name]}")
    listeners += metadata.listeners
    advertised += metadata.advertised
    names = [entry.split("://")[0] for entry in listeners] + list(metadata.protocol_names)
    settings: dict[str, SettingValue] = {
        "broker.id": broker.broker_id,
        "broker.rack": broker.zone,
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in dict.fromkeys(names)),
        "inter.broker.listener.name": broker_listener(broker.broker_id),
        **metadata.settings,
        "log.dirs": KAFKA_DATA_DIR,
        **{k: v for k, v in topology.broker_settings.items() if not k.startswith(metadata.omitted)},
        **(extra_settings or {}),
    }
    return _render(settings)


def zoo_cfg(fabric: Fabric, node: ZooKeeperNode) -> str:
    """``zoo.cfg`` for ``node``: peers are reached through this node's own proxies."""
    topology = fabric.topology
    settings: dict[str, SettingValue] = {
        "dataDir": ZK_DATA_DIR,
        "clientPort": ZK_CLIENT_PORT,
        "maxClientCnxns": 0,
        "admin.enableServer": False,
        "4lw.commands.whitelist": "*",
        # Bind quorum and election ports on every interface: this node's own server line
        # names its container, the others name proxies.
        "quorumListenOnAllIPs": True,
        "standaloneEnabled": False,
        "reconfigEnabled": False,
        **topology.zookeeper_settings,
    }
    for peer in topology.zookeepers:
        if peer == node:
            address = f"{node.name}:{ZK_QUORUM_PORT}:{ZK_ELECTION_PORT}"
        else:
            quorum = fabric.one(node.name, peer.name, LinkKind.ZK_QUORUM).listen_port
            election = fabric.one(node.name, peer.name, LinkKind.ZK_ELECTION).listen_port
            address = f"{TOXIPROXY_HOST}:{quorum}:{election}"
        settings[f"server.{peer.sid}"] = address
    return _render(settings)


def observer_address(fabric: Fabric, node: str, host_ports: Mapping[str, int]) -> str:
    """``127.0.0.1:<port>`` where the harness reaches ``node`` untouched by faults."""
    return f"127.0.0.1:{host_ports[fabric.observer_of(node).name]}"


__all__ = ["CONFIG_DIR", "OBSERVER", "MetadataSettings", "broker_properties", "controller_properties",
           "kraft_broker_settings", "kraft_voters", "migrated_broker_settings", "migrating_broker_settings",
           "observer_address", "zoo_cfg", "zookeeper_broker_settings", "zookeeper_connect"]
