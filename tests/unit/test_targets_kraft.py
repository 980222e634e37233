"""Roles of a KRaft cluster's controllers, and what each metadata mode refuses before
anything runs: a ZooKeeper fault on a KRaft topology, a controller role on a ZooKeeper one."""

from __future__ import annotations

import dataclasses

import pytest

from faults.conditions import parse_condition
from faults.errors import FaultSpecError, TargetError
from faults.registry import build_fault
from faults.targets import (
    ActiveController,
    AllControllers,
    Controller,
    ControllerMajority,
    KRaftController,
    parse_target,
)
from harness.cluster.fabric import plan_fabric
from tests.unit.test_faults_targets import FakeCluster
from topologies import load_topology
from topologies.loader import build_topology

KRAFT = load_topology("three_az_kraft")
ZOOKEEPER = load_topology("three_az")


def _kraft_cluster(controller: int | None = 101) -> FakeCluster:
    return dataclasses.replace(FakeCluster(), topology=KRAFT, fabric=plan_fabric(KRAFT),
                               controller=controller,
                               modes={"kraft-a": "follower", "kraft-b": "leader", "kraft-c": "follower"})


def test_the_active_controller_is_the_quorum_leader_on_kraft_and_the_controller_broker_in_zk() -> None:
    assert ActiveController().resolve(_kraft_cluster(101)) == ("kraft-b",)
    assert Controller().resolve(_kraft_cluster(102)) == ("kraft-c",), "the bare word means the same"
    assert ActiveController().resolve(FakeCluster(controller=2)) == ("kafka-2",)
    with pytest.raises(TargetError, match="no active controller now"):
        ActiveController().resolve(_kraft_cluster(None))


def test_a_controller_majority_takes_the_leader_first_then_the_lowest_ids() -> None:
    assert ControllerMajority().resolve(_kraft_cluster(102)) == ("kraft-c", "kraft-a")
    assert ControllerMajority().resolve(_kraft_cluster(100)) == ("kraft-a", "kraft-b")
    assert ControllerMajority().resolve(_kraft_cluster(None)) == ("kraft-a", "kraft-b")
    five = build_topology({"zones": ["a", "b", "c", "d", "e"], "metadata": "kraft"})
    cluster = dataclasses.replace(_kraft_cluster(103), topology=five)
    assert ControllerMajority().resolve(cluster) == ("kraft-d", "kraft-a", "kraft-b"), "3 of 5"


def test_controller_targets_by_id_and_all_of_them() -> None:
    assert parse_target({"controller": 101}) == KRaftController(101)
    assert KRaftController(100).resolve(_kraft_cluster()) == ("kraft-a",)
    assert AllControllers().resolve(_kraft_cluster()) == ("kraft-a", "kraft-b", "kraft-c")
    with pytest.raises(TargetError, match="no KRaft controller 7; its controllers are 100, 101, 102"):
        KRaftController(7).check(KRAFT)
    with pytest.raises(FaultSpecError):
        parse_target({"controller": "kraft-a"})


@pytest.mark.parametrize(("spec", "message"), [
    ({"fault": "kill", "target": "controller_majority"},
     "target 'controller_majority' names KRaft controllers, and topology 'three_az' has none"),
    ({"fault": "power_loss", "target": "all_controllers"}, 'in ZooKeeper mode: "all_zookeepers"'),
    ({"fault": "kill", "target": {"controller": 100}},
     'in ZooKeeper mode: "controller" (the broker holding /controller)'),
])
def test_a_controller_role_on_a_zookeeper_topology_is_refused_naming_its_counterpart(
        spec: dict[str, object], message: str) -> None:
    with pytest.raises(TargetError, match="has none") as caught:
        build_fault(spec).check(ZOOKEEPER)
    assert message in str(caught.value)


@pytest.mark.parametrize(("spec", "counterpart"), [
    ({"fault": "expire_session", "target": {"broker": 1}},
     'to = "all_controllers", kind = "kraft-broker"'),
    ({"fault": "delete_controller"}, 'target = "active_controller"'),
    ({"fault": "kill", "target": "zookeeper_leader"}, '"active_controller"'),
    ({"fault": "power_loss", "target": "all_zookeepers"}, '"all_controllers"'),
])
def test_a_zookeeper_fault_on_a_kraft_topology_is_refused_naming_its_counterpart(
        spec: dict[str, object], counterpart: str) -> None:
    with pytest.raises(TargetError) as caught:
        build_fault(spec).check(KRAFT)
    said = str(caught.value)
    assert "acts on ZooKeeper, and topology 'three_az_kraft' has none" in said and counterpart in said, said
    build_fault(spec).check(ZOOKEEPER)  # the same spec is fine where there is a ZooKeeper


def test_mode_neutral_faults_pass_both_checks() -> None:
    for spec in ({"fault": "kill", "target": "active_controller"}, {"fault": "kill", "target": "controller"},
                 {"fault": "isolate", "target": {"zone_of": "active_controller"}},
                 {"fault": "reassign", "topic": "t", "partition": 0, "replicas": [2, 1]}):
        for topology in (ZOOKEEPER, KRAFT):
            build_fault(spec).check(topology)


def test_controller_is_takes_the_ids_that_can_be_controller_in_each_mode() -> None:
    parse_condition({"controller_is": 101}).check(KRAFT)
    parse_condition({"controller_is": 1}).check(ZOOKEEPER)
    with pytest.raises(TargetError, match="the ones that can are 100, 101, 102"):
        parse_condition({"controller_is": 1}).check(KRAFT)
    with pytest.raises(TargetError, match="the ones that can are 0, 1, 2"):
        parse_condition({"controller_is": 101}).check(ZOOKEEPER)
    parse_condition({"quorum_serving": "kraft-a"}).check(KRAFT)
    with pytest.raises(TargetError, match="no metadata-quorum member 'zk-a'; its members are kraft-a"):
        parse_condition({"zk_serving": "zk-a"}).check(KRAFT)


def test_fill_disk_refuses_a_dedicated_controller() -> None:
    for target in ("all_controllers", {"controller": 100}, {"node": "kraft-a"}):
        with pytest.raises(TargetError, match="fills a broker's disk"):
            build_fault({"fault": "fill_disk", "target": target}).check(KRAFT)
    build_fault({"fault": "fill_disk", "target": {"broker": 1}}).check(KRAFT)


def test_the_quorum_leader_is_the_voter_leading_by_its_own_account_even_when_a_broker_controls() -> None:
    from faults.targets import QuorumLeader

    assert parse_target("quorum_leader") == QuorumLeader()
    assert QuorumLeader().resolve(_kraft_cluster(101)) == ("kraft-b",)
    # A migrating cluster before the copy: /controller names broker 2, the quorum is led by kraft-c.
    migrating = dataclasses.replace(_kraft_cluster(2), modes={"zk-a": "leader", "kraft-a": "follower",
                                                              "kraft-b": None, "kraft-c": "leader"})
    assert QuorumLeader().resolve(migrating) == ("kraft-c",)
    with pytest.raises(TargetError, match="no KRaft controller leads the quorum now"):
        QuorumLeader().resolve(dataclasses.replace(migrating, modes={"zk-a": "leader", "kraft-a": None}))
    with pytest.raises(TargetError, match='in ZooKeeper mode: "active_controller"'):
        build_fault({"fault": "kill", "target": "quorum_leader"}).check(ZOOKEEPER)
