"""Where the scenarios put the controller, in each metadata mode: the candidate beside a
broker, and each zone's quorum member (tests/chaos/scenarios/_controller.py)."""

from __future__ import annotations

from harness.cluster.fabric import plan_fabric
from tests.chaos.scenarios._controller import ELECTIONS, controller_beside, quorum_members, race_links
from topologies import load_topology
from topologies.model import METADATA_MODES, Topology

ZOOKEEPER = load_topology("three_az")
KRAFT = load_topology("three_az", metadata="kraft")
COMBINED = load_topology("three_az_combined")


def test_in_zookeeper_mode_the_controller_beside_a_broker_is_the_broker() -> None:
    assert [controller_beside(ZOOKEEPER, b) for b in (0, 1, 2)] == ["kafka-0", "kafka-1", "kafka-2"]
    assert ZOOKEEPER.id_of_node(controller_beside(ZOOKEEPER, 2)) == 2


def test_on_dedicated_kraft_controllers_it_is_the_voter_of_the_brokers_zone() -> None:
    assert [controller_beside(KRAFT, b) for b in (0, 1, 2)] == ["kraft-a", "kraft-b", "kraft-c"]
    assert KRAFT.id_of_node(controller_beside(KRAFT, 2)) == KRAFT.controller(102).node_id


def test_on_combined_nodes_it_is_the_broker_again() -> None:
    assert controller_beside(COMBINED, 1) == COMBINED.broker(1).name


def test_each_zone_has_one_quorum_member_in_either_mode() -> None:
    assert quorum_members(ZOOKEEPER) == {"a": "zk-a", "b": "zk-b", "c": "zk-c"}
    assert quorum_members(KRAFT) == {"a": "kraft-a", "b": "kraft-b", "c": "kraft-c"}


def test_every_metadata_mode_knows_how_to_hold_an_election() -> None:
    assert sorted(ELECTIONS) == sorted(METADATA_MODES)


def _race(topology: Topology, chosen: str) -> set[tuple[str, str]]:
    links = race_links(plan_fabric(topology), chosen, ELECTIONS[topology.metadata].race)
    return {(link.source, link.destination) for link in links}


def test_the_rivals_are_slowed_on_their_own_race_links_in_either_mode() -> None:
    zookeeper = _race(ZOOKEEPER, "kafka-0")
    assert {source for source, _ in zookeeper} == {"kafka-1", "kafka-2"}
    assert all(destination.startswith("zk-") for _, destination in zookeeper)
    assert ("kafka-1", "zk-b") in zookeeper  # the ZooKeeper node in the rival's own zone too
    assert _race(KRAFT, "kraft-a") == {("kraft-b", "kraft-a"), ("kraft-b", "kraft-c"),
                                       ("kraft-c", "kraft-a"), ("kraft-c", "kraft-b")}
