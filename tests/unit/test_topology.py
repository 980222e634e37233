"""Topology declarations: placement maths and validation of malformed declarations."""

from __future__ import annotations

import pytest

from topologies import load_topology
from topologies.errors import TopologyError
from topologies.loader import build_topology


def test_default_topology_is_three_zones_with_one_zookeeper_and_one_broker_each() -> None:
    topology = load_topology()
    assert topology.zones == ("a", "b", "c")
    assert [(b.broker_id, b.zone) for b in topology.brokers] == [(0, "a"), (1, "b"), (2, "c")]
    assert [(z.name, z.sid, z.zone) for z in topology.zookeepers] == [
        ("zk-a", 1, "a"), ("zk-b", 2, "b"), ("zk-c", 3, "c")]
    assert topology.broker_settings["zookeeper.session.timeout.ms"] == 6000
    assert topology.default_replication_factor == 3


def test_larger_shapes_come_from_parameters_of_the_same_declaration() -> None:
    topology = load_topology(brokers_per_zone=2, zookeeper_nodes=5)
    assert [b.zone for b in topology.brokers] == ["a", "b", "c", "a", "b", "c"]
    assert [z.name for z in topology.zookeepers] == ["zk-a1", "zk-b1", "zk-c", "zk-a2", "zk-b2"]
    assert topology.nodes_in_zone("a") == ["kafka-0", "kafka-3", "zk-a1", "zk-a2"]


def test_settings_given_as_parameters_override_the_file() -> None:
    topology = load_topology(broker_settings={"unclean.leader.election.enable": True})
    assert topology.broker_settings["unclean.leader.election.enable"] is True
    assert topology.broker_settings["replica.lag.time.max.ms"] == 5000


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"zones": ["a", "b", "c"], "brokers": [{"id": 0, "zone": "a"}, {"id": 1, "zone": "b"}]},
         "zone 'c' of topology 'custom' has no broker"),
        ({"zones": ["a", "b"], "brokers_per_zone": 1,
          "zookeepers": [{"zone": "a"}, {"zone": "a"}, {"zone": "a"}]},
         "zone 'b' of topology 'custom' has no ZooKeeper node"),
        ({"zones": ["a", "b", "c"], "topic_defaults": {"replication.factor": 4}},
         "replication factor 4 is impossible on 3 broker(s)"),
        ({"zones": ["a", "b", "c"], "brokers": [{"id": 0, "zone": "a"}, {"id": 0, "zone": "b"},
                                                 {"id": 2, "zone": "c"}]},
         "duplicate broker id(s) [0]"),
        ({"zones": ["a", "b", "b"]}, "repeats zone(s) ['b']"),
        ({"zones": ["a"], "zookeepers": [{"zone": "a", "name": "zk-x"}, {"zone": "a", "name": "zk-x"},
                                         {"zone": "a", "name": "zk-y"}]},
         "duplicate node name(s) ['zk-x']"),
        ({"zones": ["a", "b"], "brokers": [{"id": 0, "zone": "a"}, {"id": 1, "zone": "q"}]},
         "unknown zone 'q'"),
        ({"zones": []}, "declares no zones"),
        ({"zones": ["a"], "brokers_per_zone": 0}, "brokers_per_zone = 0: must be a whole number"),
        ({"zones": ["a"], "colour": "red"}, 'colour = "red": no such topology key'),
    ],
)
def test_malformed_declarations_are_refused_with_one_clear_message(
    declaration: dict, message: str
) -> None:
    with pytest.raises(TopologyError) as err:
        build_topology(declaration)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_topology_file_that_does_not_parse_is_refused(tmp_path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("zones = [a, b\n")
    with pytest.raises(TopologyError, match="does not parse"):
        load_topology(path)


def test_unknown_topology_name_lists_the_builtin_ones() -> None:
    with pytest.raises(TopologyError, match="built-in ones: three_az"):
        load_topology("four_az")


def test_broker_disks_are_declared_in_mib_and_refused_when_too_small() -> None:
    assert load_topology().broker_disk_mb == 2048
    assert load_topology().describe()["broker_disk_mb"] == 2048
    declared = {"zones": ["a"], "broker_disk_mb": 64}
    assert build_topology(declared).broker_disk_mb == 64
    assert build_topology({"zones": ["a"]}).broker_disk_mb is None
    with pytest.raises(TopologyError, match="too small"):
        build_topology({"zones": ["a"], "broker_disk_mb": 10})
    with pytest.raises(TopologyError, match='broker_disk_mb = "big": must be a whole number'):
        build_topology({"zones": ["a"], "broker_disk_mb": "big"})


@pytest.mark.parametrize(("target", "topology", "message"), [
    ({"leader_of": ["t", 0]}, {"zones": ["a"]}, "has no broker_disk_mb"),
    ("zookeeper_leader", {"zones": ["a"], "broker_disk_mb": 64}, "not ZooKeeper leader's"),
    ({"node": "zk-a"}, {"zones": ["a"], "broker_disk_mb": 64}, "not zk-a's"),
])
def test_a_disk_is_filled_only_on_a_broker_of_a_topology_with_disks(
        target: object, topology: dict[str, object], message: str) -> None:
    from faults.errors import TargetError
    from faults.registry import build_fault

    with pytest.raises(TargetError, match=message):
        build_fault({"fault": "fill_disk", "target": target}).check(build_topology(topology))
    build_fault({"fault": "fill_disk", "target": {"broker": 0}}).check(
        build_topology({"zones": ["a"], "broker_disk_mb": 64}))


def test_a_variant_extends_a_declaration_and_names_only_what_differs() -> None:
    base, variant = load_topology(), load_topology("three_az_two_in_a")
    assert variant.name == "three_az_two_in_a"
    assert [(b.broker_id, b.zone) for b in variant.brokers] == [(0, "a"), (1, "a"), (2, "b"), (3, "c")]
    assert variant.broker_settings == base.broker_settings
    assert (variant.zookeepers, variant.broker_disk_mb) == (base.zookeepers, base.broker_disk_mb)


def test_an_extension_adds_to_the_settings_it_extends(tmp_path) -> None:
    path = tmp_path / "slow.toml"
    path.write_text('extends = "three_az"\n[broker_settings]\n"replica.lag.time.max.ms" = 30000\n')
    slow = load_topology(path)
    assert slow.name == "slow" and len(slow.brokers) == 3
    assert slow.broker_settings["replica.lag.time.max.ms"] == 30000
    assert slow.broker_settings["zookeeper.session.timeout.ms"] == 6000


def test_a_declaration_that_extends_itself_is_refused(tmp_path) -> None:
    (tmp_path / "one.toml").write_text('extends = "two.toml"\n')
    (tmp_path / "two.toml").write_text('extends = "one.toml"\n')
    with pytest.raises(TopologyError, match=r"extends 'one\.toml', which extends it back"):
        load_topology(tmp_path / "one.toml")
