"""Rendering each node's configuration file from the topology and the fabric.

Pure functions: given where every proxy listens (and, for links published to the host,
which 127.0.0.1 port Docker gave it), produce ``server.properties`` for a broker and
``zoo.cfg`` for a ZooKeeper node. See :mod:`harness.cluster.fabric` for why each node's file
names its own proxies.
"""

from __future__ import annotations

from collections.abc import Mapping

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
    zone_listener,
)
from topologies.model import BrokerNode, SettingValue, ZooKeeperNode

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


def broker_properties(
    fabric: Fabric,
    broker: BrokerNode,
    host_ports: Mapping[str, int],
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
    names = [entry.split("://")[0] for entry in listeners]
    zk_connect = ",".join(
        f"{TOXIPROXY_HOST}:{fabric.one(broker.name, zk.name, LinkKind.ZK_SESSION).listen_port}"
        for zk in topology.zookeepers
    )
    settings: dict[str, SettingValue] = {
        "broker.id": broker.broker_id,
        "broker.rack": broker.zone,
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in names),
        "inter.broker.listener.name": broker_listener(broker.broker_id),
        "zookeeper.connect": zk_connect,
        "log.dirs": KAFKA_DATA_DIR,
        **topology.broker_settings,
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


__all__ = ["CONFIG_DIR", "OBSERVER", "broker_properties", "observer_address", "zoo_cfg"]
