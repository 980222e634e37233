"""The fabric plan and the node configuration rendered from it (pure, no Docker)."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.cluster.fabric import LinkKind, plan_fabric
from harness.cluster.node_config import broker_properties, zoo_cfg, zookeeper_broker_settings
from topologies import load_topology


@pytest.fixture
def fabric():
    return plan_fabric(load_topology())


def _host_ports(fabric) -> dict[str, int]:
    return {link.name: 40000 + i for i, link in enumerate(fabric.links) if link.published}


def _properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_every_directed_link_has_its_own_proxy_and_port(fabric) -> None:
    kinds = Counter(link.kind for link in fabric.links)
    assert kinds[LinkKind.REPLICATION] == 6  # 3 brokers x 2 others
    assert kinds[LinkKind.ZK_SESSION] == 9  # 3 brokers x 3 ZooKeeper nodes
    assert kinds[LinkKind.ZK_QUORUM] == kinds[LinkKind.ZK_ELECTION] == 6
    assert kinds[LinkKind.CLIENT] == 9  # 3 zones x 3 brokers
    assert kinds[LinkKind.OBSERVER] == 6
    ports = [link.listen_port for link in fabric.links]
    names = [link.name for link in fabric.links]
    assert len(set(ports)) == len(ports)
    assert len(set(names)) == len(names)
    one = fabric.one("kafka-1", "kafka-0", LinkKind.REPLICATION)
    assert one.name == "kafka-1->kafka-0"
    assert one.upstream == "kafka-0:9101"
    assert fabric.one("kafka-0", "kafka-1", LinkKind.REPLICATION).upstream == "kafka-1:9100"


def test_isolating_a_zone_cuts_every_link_crossing_its_border_and_nothing_else(fabric) -> None:
    crossing = fabric.crossing_zone("a")
    for link in crossing:
        zones = {fabric.endpoint_zone(link.source), fabric.endpoint_zone(link.destination)}
        assert "a" in zones and len(zones) == 2
    names = {link.name for link in crossing}
    assert "kafka-1->kafka-0" in names and "kafka-0->kafka-1" in names
    assert "kafka-0->zk-b" in names and "zk-a->zk-b:quorum" in names
    assert "client-a->kafka-1" in names and "client-b->kafka-0" in names
    assert "client-a->kafka-0" not in names  # a zone's clients still reach its own broker
    assert "kafka-1->kafka-2" not in names
    assert not any(link.kind is LinkKind.OBSERVER for link in crossing)
    # 4 broker links, 4 session links, 8 ZooKeeper peer links, 2 client links each way
    assert len(crossing) == 4 + 4 + 8 + 2 + 2


def test_broker_advertises_one_listener_per_source_broker_and_per_zone(fabric) -> None:
    ports = _host_ports(fabric)
    broker = fabric.topology.broker(0)
    props = _properties(broker_properties(fabric, broker, ports, zookeeper_broker_settings(fabric, broker)))
    assert props["broker.id"] == "0" and props["broker.rack"] == "a"
    assert props["inter.broker.listener.name"] == "FROM_BROKER_0"
    advertised = dict(entry.split("://") for entry in props["advertised.listeners"].split(","))
    link_1_to_0 = fabric.one("kafka-1", "kafka-0", LinkKind.REPLICATION)
    assert advertised["FROM_BROKER_1"] == f"toxiproxy:{link_1_to_0.listen_port}"
    assert advertised["FROM_BROKER_0"] == "kafka-0:9100"
    assert advertised["ZONE_B"] == f"127.0.0.1:{ports['client-b->kafka-0']}"
    zk_ports = [int(a.split(":")[1]) for a in props["zookeeper.connect"].split(",")]
    assert zk_ports == [fabric.one("kafka-0", z, LinkKind.ZK_SESSION).listen_port
                        for z in ("zk-a", "zk-b", "zk-c")]
    assert props["replica.lag.time.max.ms"] == "5000"
    assert props["unclean.leader.election.enable"] == "false"


def test_zookeeper_node_reaches_its_peers_through_its_own_proxies(fabric) -> None:
    props = _properties(zoo_cfg(fabric, fabric.topology.zookeeper("zk-b")))
    assert props["server.2"] == "zk-b:2888:3888"
    quorum = fabric.one("zk-b", "zk-a", LinkKind.ZK_QUORUM).listen_port
    election = fabric.one("zk-b", "zk-a", LinkKind.ZK_ELECTION).listen_port
    assert props["server.1"] == f"toxiproxy:{quorum}:{election}"
    assert props["quorumListenOnAllIPs"] == "true"
    assert props["tickTime"] == "500"


def test_six_brokers_and_five_zookeepers_scale_the_plan(fabric) -> None:
    big = plan_fabric(load_topology(brokers_per_zone=2, zookeeper_nodes=5))
    kinds = Counter(link.kind for link in big.links)
    assert kinds[LinkKind.REPLICATION] == 30
    assert kinds[LinkKind.ZK_QUORUM] == 20
    assert kinds[LinkKind.ZK_SESSION] == 30
    assert kinds[LinkKind.CLIENT] == 18
