"""KRaft topologies: the controller quorum's placement, the two layouts, and what a KRaft
declaration may not say."""

from __future__ import annotations

from pathlib import Path

import pytest

from topologies import load_topology
from topologies.errors import TopologyError
from topologies.loader import build_topology

KRAFT = {"zones": ["a", "b", "c"], "metadata": "kraft"}


def test_a_kraft_cluster_has_one_dedicated_controller_per_zone_by_default() -> None:
    topology = build_topology(dict(KRAFT))
    assert topology.zookeepers == ()
    assert [(c.node_id, c.zone, c.name) for c in topology.controllers] == [
        (100, "a", "kraft-a"), (101, "b", "kraft-b"), (102, "c", "kraft-c")]
    assert topology.node_names == ["kraft-a", "kraft-b", "kraft-c", "kafka-0", "kafka-1", "kafka-2"]
    assert topology.nodes_in_zone("b") == ["kafka-1", "kraft-b"]
    assert topology.zone_of("kraft-c") == "c"


def test_five_controllers_come_from_more_zones_and_more_per_zone_from_controllers_per_zone() -> None:
    five = build_topology({"zones": ["a", "b", "c", "d", "e"], "metadata": "kraft"})
    assert len(five.controllers) == 5
    six = build_topology({**KRAFT, "controllers_per_zone": 2})
    assert [c.name for c in six.controllers] == ["kraft-a1", "kraft-b1", "kraft-c1", "kraft-a2", "kraft-b2",
                                                 "kraft-c2"]


def test_combined_controllers_are_the_brokers_themselves() -> None:
    topology = build_topology({**KRAFT, "controllers": "combined"})
    assert [(c.node_id, c.name) for c in topology.controllers] == [
        (0, "kafka-0"), (1, "kafka-1"), (2, "kafka-2")]
    assert topology.dedicated_controllers == ()
    assert topology.node_names == ["kafka-0", "kafka-1", "kafka-2"]


def test_a_kraft_variant_of_a_zookeeper_declaration_leaves_zookeeper_behind(tmp_path: Path) -> None:
    variant = tmp_path / "kraft.toml"
    variant.write_text('extends = "three_az"\nmetadata = "kraft"\n[broker_settings]\n'
                       '"broker.session.timeout.ms" = 6000\n')
    topology = load_topology(variant)
    assert topology.metadata == "kraft" and topology.zookeepers == () and len(topology.controllers) == 3
    assert not [k for k in topology.broker_settings if k.startswith("zookeeper.")]
    assert topology.broker_settings["broker.session.timeout.ms"] == 6000
    assert topology.broker_settings["replica.lag.time.max.ms"] == 5000, "the rest is kept"
    described = topology.describe()["controllers"]
    assert isinstance(described, list) and described[0] == {"id": 100, "name": "kraft-a", "zone": "a"}


def test_a_zookeeper_topology_asked_for_in_kraft_mode_is_its_kraft_variant() -> None:
    """``--metadata kraft`` on three_az is three_az_kraft: the ZooKeeper session (6 s)
    becomes the broker session the controllers fence after, heartbeating six times in it."""
    variant = load_topology("three_az", metadata="kraft")
    shipped = load_topology("three_az_kraft")
    assert variant.name == "three_az_kraft" and variant.metadata == "kraft"
    assert variant.controller_settings == {"broker.session.timeout.ms": 6000}
    assert variant.broker_settings["broker.heartbeat.interval.ms"] == 1000
    assert variant.describe() == shipped.describe()
    assert load_topology("three_az", metadata="zookeeper") == load_topology("three_az")


def test_a_declared_broker_session_is_kept_over_the_derived_one(tmp_path: Path) -> None:
    variant = tmp_path / "kraft.toml"
    variant.write_text('extends = "three_az"\nmetadata = "kraft"\n[controller_settings]\n'
                       '"broker.session.timeout.ms" = 9000\n')
    topology = load_topology(variant)
    assert topology.controller_settings["broker.session.timeout.ms"] == 9000
    assert topology.broker_settings["broker.heartbeat.interval.ms"] == 1500


def test_a_kraft_topology_has_no_zookeeper_variant() -> None:
    with pytest.raises(TopologyError, match="'three_az_kraft' is a KRaft topology and has no ZooKeeper"):
        load_topology("three_az_kraft", metadata="zookeeper")
    with pytest.raises(TopologyError, match='metadata = "raft": must be one of zookeeper, kraft'):
        load_topology("three_az", metadata="raft")


@pytest.mark.parametrize(("declaration", "message"), [
    ({**KRAFT, "metadata": "raft"}, 'metadata = "raft": must be one of zookeeper, kraft'),
    ({**KRAFT, "controllers": "shared"}, 'controllers = "shared": must be one of dedicated, combined'),
    ({**KRAFT, "zookeeper_nodes": 3}, 'zookeeper_nodes = 3: has no meaning with metadata = "kraft"'),
    ({"zones": ["a", "b", "c"], "controllers_per_zone": 1},
     'controllers_per_zone = 1: needs metadata = "kraft"'),
    ({**KRAFT, "controllers": "combined", "controllers_per_zone": 2},
     'controllers_per_zone = 2: has no meaning with controllers = "combined"'),
    ({**KRAFT, "controllers_per_zone": 0}, "controllers_per_zone = 0: must be a whole number of at least 1"),
    ({**KRAFT, "broker_settings": {"zookeeper.session.timeout.ms": 6000}},
     "is a KRaft cluster: zookeeper.session.timeout.ms has no meaning there"),
    ({**KRAFT, "controller_heap_mb": 64}, "a controller heap below 128 MiB cannot run"),
    ({**KRAFT, "brokers": [{"id": 100, "zone": "a"}, {"id": 1, "zone": "b"}, {"id": 2, "zone": "c"}]},
     "dedicated controller id(s) [100] are broker ids too"),
])
def test_what_a_kraft_declaration_may_not_say_is_one_sentence(declaration: dict[str, object],
                                                               message: str) -> None:
    with pytest.raises(TopologyError) as caught:
        build_topology(declaration)
    assert message in str(caught.value)
