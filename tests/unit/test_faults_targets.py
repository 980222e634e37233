"""Targets: checked against the topology before anything runs, resolved from live state."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from faults.errors import FaultSpecError, TargetError
from faults.process import Kill
from faults.registry import build_fault
from faults.targets import (
    GROUP_METADATA_TOPIC,
    TARGET_KINDS,
    TARGETS,
    TRANSACTION_STATE_TOPIC,
    AllZooKeepers,
    BrokerId,
    Controller,
    CoordinatorOf,
    FollowerOf,
    Isolation,
    KRaftController,
    LeaderOf,
    Links,
    Node,
    Target,
    TxnCoordinatorOf,
    Zone,
    ZoneClients,
    ZoneOf,
    ZooKeeperLeader,
    coordinator_partition,
    java_string_hash,
    offsets_partition,
    parse_links,
    parse_target,
)
from harness.cluster.fabric import Fabric, LinkKind, plan_fabric
from harness.cluster.state import ClusterState, PartitionState
from topologies import Topology, load_topology

TOPOLOGY = load_topology("three_az")


def _partition(
    topic: str, p: int, leader: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (0, 1, 2)
) -> PartitionState:
    return PartitionState(topic, p, leader, 3, isr, 1, tuple(replicas))


@dataclass
class FakeCluster:
    """The live view targets resolve against, without Docker."""

    partitions: list[PartitionState] = field(default_factory=list)
    controller: int | None = 1
    modes: dict[str, str | None] = field(
        default_factory=lambda: {"zk-a": "follower", "zk-b": "leader", "zk-c": "follower"}
    )
    topology: Topology = TOPOLOGY
    fabric: Fabric = field(default_factory=lambda: plan_fabric(TOPOLOGY))

    def state(self, topics: list[str] | None = None) -> ClusterState:
        chosen = [p for p in self.partitions if topics is None or p.topic in topics]
        return ClusterState((0, 1, 2), self.controller, 5, {(p.topic, p.partition): p for p in chosen})

    def quorum_roles(self) -> dict[str, str | None]:
        return self.modes

    stopped: frozenset[str] = frozenset()

    def stopped_nodes(self) -> frozenset[str]:
        return self.stopped


LIVE = FakeCluster(
    partitions=[
        _partition("t", 0, leader=0, isr=(0, 1, 2)),
        _partition("t", 1, leader=2, isr=(2,), replicas=(2, 0, 1)),
        _partition("t", 2, leader=-1, isr=(1,), replicas=(1, 2, 0)),
    ]
)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (BrokerId(7), "has no broker 7"),
        (Node("kafka-9"), "no node 'kafka-9'"),
        (Zone("x"), "unknown zone 'x'; zones are a, b, c"),
        (ZoneClients("q"), "unknown zone 'q'"),
        (ZoneOf(BrokerId(5)), "has no broker 5"),
    ],
)
def test_targets_the_topology_cannot_have_are_refused_with_one_sentence(target: Target, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        target.check(TOPOLOGY)
    with pytest.raises(TargetError, match=message):
        target.resolve(LIVE)


def test_roles_resolve_from_the_live_state() -> None:
    live = LIVE
    assert BrokerId(1).resolve(live) == ("kafka-1",)
    assert LeaderOf("t", 0).resolve(live) == ("kafka-0",)
    assert LeaderOf("t", 1).resolve(live) == ("kafka-2",)
    # In-sync followers in replica order, never the leader.
    assert FollowerOf("t", 0).resolve(live) == ("kafka-1",)
    assert FollowerOf("t", 0, rank=1).resolve(live) == ("kafka-2",)
    assert Controller().resolve(live) == ("kafka-1",)
    assert ZooKeeperLeader().resolve(live) == ("zk-b",)
    assert Zone("c").resolve(live) == ("kafka-2", "zk-c", "client-c")
    assert ZoneClients("a").resolve(live) == ("client-a",)
    assert ZoneOf(Controller()).resolve(live) == ("kafka-1", "zk-b", "client-b")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (LeaderOf("missing", 0), "topic 'missing' does not exist"),
        (LeaderOf("t", 9), "topic 't' has no partition 9"),
        (LeaderOf("t", 2), "t-2 has no leader now"),
        (FollowerOf("t", 1), "has 0 in-sync follower"),
        (FollowerOf("t", 0, rank=2), "no follower #2"),
    ],
)
def test_roles_that_name_nothing_now_are_refused(target: Target, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        target.resolve(LIVE)


def test_controller_and_zookeeper_leader_may_be_absent() -> None:
    headless = FakeCluster(controller=None, modes={"zk-a": None, "zk-b": None, "zk-c": None})
    with pytest.raises(TargetError, match="no active controller"):
        Controller().resolve(headless)
    with pytest.raises(TargetError, match="no quorum"):
        ZooKeeperLeader().resolve(headless)


def test_isolating_a_zone_cuts_exactly_the_links_crossing_its_border() -> None:
    fabric = LIVE.fabric
    for zone in TOPOLOGY.zones:
        selected = Isolation(Zone(zone)).resolve(LIVE)
        assert set(selected) == {link.name for link in fabric.crossing_zone(zone)}
        assert f"client-{zone}->kafka-{TOPOLOGY.zones.index(zone)}" not in selected
        assert not [name for name in selected if name.startswith("observer")]


def test_isolating_a_node_cuts_every_link_touching_it_and_no_observer_link() -> None:
    selected = Isolation(Node("kafka-0")).resolve(LIVE)
    assert set(selected) == {link.name for link in LIVE.fabric.touching("kafka-0")}
    assert "client-a->kafka-0" in selected and "kafka-0->zk-a" in selected


def test_link_selections_by_role_and_kind() -> None:
    fetch = Links(FollowerOf("t", 0), LeaderOf("t", 0), LinkKind.REPLICATION)
    assert fetch.resolve(LIVE) == ("kafka-1->kafka-0",)
    both = Links(BrokerId(1), BrokerId(0), both_ways=True)
    assert both.resolve(LIVE) == ("kafka-1->kafka-0", "kafka-0->kafka-1")
    quorum = Links(Node("zk-a"), Node("zk-b"))
    assert quorum.resolve(LIVE) == ("zk-a->zk-b:quorum", "zk-a->zk-b:election")
    with pytest.raises(TargetError, match="no link from zk-a to kafka-0"):
        Links(Node("zk-a"), BrokerId(0)).resolve(LIVE)


@pytest.mark.parametrize(
    "target",
    [
        BrokerId(2),
        Node("zk-c"),
        Zone("b"),
        ZoneClients("c"),
        LeaderOf("t", 3),
        FollowerOf("t", 0),
        FollowerOf("t", 0, 1),
        Controller(),
        ZooKeeperLeader(),
        ZoneOf(Controller()),
        CoordinatorOf("orders-readers"),
        TxnCoordinatorOf("kafka-chaos-tx"),
        ZoneOf(TxnCoordinatorOf("kafka-chaos-tx")),
    ],
)
def test_targets_round_trip_through_their_spec(target: Target) -> None:
    assert parse_target(target.to_spec()) == target


def test_link_selections_round_trip_through_their_spec() -> None:
    for links in (
        Links(FollowerOf("t", 0), LeaderOf("t", 0), LinkKind.REPLICATION),
        Links(BrokerId(0), Controller(), both_ways=True),
        Isolation(ZoneOf(Controller())),
    ):
        assert parse_links(links.to_spec()) == links


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("leader", "unknown target 'leader'"),
        ({"rack": "a"}, "unknown target 'rack'"),
        ({"zone": "a", "broker": 1}, "exactly one kind"),
        ({"broker": "one"}, "must be int"),
        ({"broker": True}, "must be int"),
        ({"leader_of": ["t"]}, r"takes \[topic, partition\]"),
        ({"follower_of": ["t", 0, 1, 2]}, r"\[topic, partition, rank\]"),
        ({"txn_coordinator_of": 7}, "must be str"),
        ({"txn_coordinator_of": ["kafka-chaos-tx"]}, "must be str"),
        (7, "must be a table"),
    ],
)
def test_malformed_target_specs_are_refused(spec: object, message: str) -> None:
    with pytest.raises(FaultSpecError, match=message):
        parse_target(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"from": "controller"}, "needs 'to'"),
        ({"from": "controller", "to": {"broker": 0}, "kind": "smoke"}, "unknown link kind 'smoke'"),
        ({"from": "controller", "to": {"broker": 0}, "kind": "observer"}, "never faulted"),
        ({"isolate": "controller", "mode": "x"}, "does not take 'mode'"),
    ],
)
def test_malformed_link_specs_are_refused(spec: object, message: str) -> None:
    with pytest.raises(FaultSpecError, match=message):
        parse_links(spec)


# Java's String.hashCode and Kafka's placement, as a JDK 17 computed them (surrogate pairs
# count as two UTF-16 units; Integer.MIN_VALUE maps to partition 0 under Kafka's Utils.abs).
JAVA_HASHES = [("kafka-chaos-g1", 151413982, 32), ("orders-readers", -879800024, 24),
               ("é漢字😀", 1086978305, 5), ("polygenelubricants", -2147483648, 0), ("", 0, 0)]


@pytest.mark.parametrize(("group", "java_hash", "partition"), JAVA_HASHES)
def test_a_group_is_placed_on_the_offsets_partition_kafka_gives_it(
    group: str, java_hash: int, partition: int
) -> None:
    assert java_string_hash(group) == java_hash
    assert offsets_partition(group, 50) == partition


def test_a_group_coordinator_is_the_leader_of_its_offsets_partition() -> None:
    offsets = [_partition(GROUP_METADATA_TOPIC, p, leader=p % 3, isr=(0, 1, 2)) for p in range(50)]
    cluster = FakeCluster(partitions=offsets)
    assert CoordinatorOf("kafka-chaos-g1").resolve(cluster) == ("kafka-2",)  # partition 32
    assert CoordinatorOf("orders-readers").resolve(cluster) == ("kafka-0",)  # partition 24
    assert parse_target({"coordinator_of": "g"}) == CoordinatorOf("g")
    assert CoordinatorOf("g").to_spec() == {"coordinator_of": "g"}
    with pytest.raises(TargetError, match="no consumer group has asked"):
        CoordinatorOf("g").resolve(FakeCluster())


# Transactional ids placed as JDK 17's String.hashCode and Kafka's Utils.abs place them,
# on the default 50 partitions and on the 6 that topologies/three_az.toml gives
# __transaction_state ("transaction.state.log.num.partitions").
TRANSACTIONAL_IDS = [("kafka-chaos-tx", 151414456, 6, 4), ("kafka-chaos-t1-0", -519662636, 36, 2),
                     ("orders-writer", 819761243, 43, 5)]


@pytest.mark.parametrize(("transactional_id", "java_hash", "of_50", "of_6"), TRANSACTIONAL_IDS)
def test_a_transactional_id_is_placed_on_the_transaction_state_partition_kafka_gives_it(
    transactional_id: str, java_hash: int, of_50: int, of_6: int
) -> None:
    assert java_string_hash(transactional_id) == java_hash
    assert coordinator_partition(transactional_id, 50) == of_50
    assert coordinator_partition(transactional_id, 6) == of_6


def _transaction_state(partitions: int, leader: Callable[[int], int]) -> list[PartitionState]:
    return [_partition(TRANSACTION_STATE_TOPIC, p, leader=leader(p), isr=(0, 1, 2))
            for p in range(partitions)]


def test_a_transaction_coordinator_is_the_leader_of_its_transaction_state_partition() -> None:
    six = FakeCluster(partitions=_transaction_state(6, lambda p: p % 3))
    assert TxnCoordinatorOf("kafka-chaos-tx").resolve(six) == ("kafka-1",)  # partition 4 of 6
    assert TxnCoordinatorOf("orders-writer").resolve(six) == ("kafka-2",)  # partition 5 of 6
    # The partition count is the topic's own, not a default: of 50, kafka-chaos-tx is on 6.
    fifty = FakeCluster(partitions=_transaction_state(50, lambda p: 0 if p == 6 else 2))
    assert TxnCoordinatorOf("kafka-chaos-tx").resolve(fifty) == ("kafka-0",)
    assert TxnCoordinatorOf("kafka-chaos-tx").describe() == "transaction coordinator of kafka-chaos-tx"


def test_a_transaction_coordinator_is_not_read_from_the_group_coordinators_topic() -> None:
    # A key hashes alike for both coordinators; each reads the leader of its own topic.
    offsets = [_partition(GROUP_METADATA_TOPIC, p, leader=0, isr=(0, 1, 2)) for p in range(6)]
    both = FakeCluster(partitions=offsets + _transaction_state(6, lambda p: 2))
    assert CoordinatorOf("kafka-chaos-tx").resolve(both) == ("kafka-0",)
    assert TxnCoordinatorOf("kafka-chaos-tx").resolve(both) == ("kafka-2",)


def test_a_transaction_coordinator_is_refused_before_any_producer_initialised_transactions() -> None:
    groups_only = FakeCluster(partitions=[_partition(GROUP_METADATA_TOPIC, p, leader=0, isr=(0, 1, 2))
                                          for p in range(6)])
    with pytest.raises(TargetError) as refused:
        TxnCoordinatorOf("kafka-chaos-tx").resolve(groups_only)
    assert str(refused.value) == ("__transaction_state does not exist yet: no transactional producer has "
                                  "called init_transactions, so transactional.id 'kafka-chaos-tx' has no "
                                  "coordinator")


def test_a_transaction_coordinator_is_refused_while_its_partition_has_no_leader() -> None:
    headless = FakeCluster(partitions=_transaction_state(6, lambda p: -1 if p == 4 else 0))
    with pytest.raises(TargetError, match="__transaction_state-4 has no leader now"):
        TxnCoordinatorOf("kafka-chaos-tx").resolve(headless)
    assert TxnCoordinatorOf("orders-writer").resolve(headless) == ("kafka-0",)


def test_a_kill_spec_can_aim_at_a_transaction_coordinator() -> None:
    # T1's schedule entry, as the registry builds it: the role resolves when the kill strikes.
    kill = build_fault({"fault": "kill", "target": {"txn_coordinator_of": "kafka-chaos-t1-2"}})
    assert isinstance(kill, Kill) and kill.target == TxnCoordinatorOf("kafka-chaos-t1-2")
    assert kill.describe() == "kill transaction coordinator of kafka-chaos-t1-2"
    assert kill.to_spec() == {"fault": "kill", "target": {"txn_coordinator_of": "kafka-chaos-t1-2"}}
    # kafka-chaos-t1-2 hashes to partition 0 of 6.
    live = FakeCluster(partitions=_transaction_state(6, lambda p: 1 if p == 0 else 2))
    assert kill.target.resolve(live) == ("kafka-1",)


class _Untouchable:
    """A cluster no call may reach."""

    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"the fault asked the cluster for {name!r}")


@pytest.mark.parametrize("target", [{"broker": 1}, {"node": "kafka-1"}])
def test_a_hard_bounce_of_a_fixed_broker_does_not_wait_for_it_to_move(target: dict[str, object]) -> None:
    """Broker 1 stays broker 1: waiting for it to move off kafka-1 could only time out."""
    bounce = build_fault({"fault": "bounce", "target": target, "times": 1})
    bounce._wait_role_moved(_Untouchable(), "kafka-1")  # type: ignore[attr-defined]


def test_only_roles_move() -> None:
    fixed = [build_fault({"fault": "kill", "target": t}).target  # type: ignore[attr-defined]
             for t in ({"broker": 1}, {"node": "kafka-1"}, {"zone": "a"})]
    roles = [build_fault({"fault": "kill", "target": t}).target  # type: ignore[attr-defined]
             for t in ("controller", {"leader_of": ["t", 0]}, {"follower_of": ["t", 0]}, "zookeeper_leader")]
    assert [t.moves for t in fixed] == [False] * 3 and all(t.moves for t in roles)


@dataclass(frozen=True)
class _State:
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int = 0


@pytest.mark.parametrize(("isr", "code", "excused"), [
    ((1, 2), "PREFERRED_LEADER_NOT_AVAILABLE", True),   # preferred replica 0 is out of sync: Kafka is right
    ((0, 1, 2), "PREFERRED_LEADER_NOT_AVAILABLE", False),  # it is in sync: ask again
    ((0, 1, 2), "ELECTION_NOT_NEEDED", True),
    ((1, 2), "NOT_CONTROLLER", False),
])
def test_a_preferred_election_is_excused_only_where_kafka_must_refuse(
        monkeypatch: pytest.MonkeyPatch, isr: tuple[int, ...], code: str, excused: bool) -> None:
    from confluent_kafka import KafkaError

    from faults import zookeeper

    monkeypatch.setattr(zookeeper, "partition_state", lambda _c, _t, p: _State(p, (0, 1, 2), isr))
    assert zookeeper._excused(None, "t", 0, KafkaError(getattr(KafkaError, code))) is excused  # type: ignore[arg-type]


def test_all_brokers_names_every_broker_and_no_zookeeper_node() -> None:
    target = parse_target("all_brokers")
    assert target.resolve(LIVE) == ("kafka-0", "kafka-1", "kafka-2")
    assert target.to_spec() == "all_brokers" and not target.moves


def test_a_stopped_follower_is_passed_over_while_it_is_still_in_the_isr() -> None:
    """A paused broker stays in the ISR for seconds; a second fault aimed at 'a follower'
    takes one that runs (a controlled shutdown of the paused one would wait on its pause)."""
    paused = dataclasses.replace(LIVE, stopped=frozenset({"kafka-1"}))
    assert FollowerOf("t", 0).resolve(paused) == ("kafka-2",)
    with pytest.raises(TargetError, match=r"stopped \['kafka-1'\]\); no follower #1"):
        FollowerOf("t", 0, rank=1).resolve(paused)
    assert LeaderOf("t", 0).resolve(dataclasses.replace(LIVE, stopped=frozenset({"kafka-0"}))) == ("kafka-0",)


def test_every_target_form_is_a_registered_kind_listed_in_the_documentations_order() -> None:
    """Each target class registers itself (faults.targets.TARGETS); the list in every
    refusal is the registry's, and a role without argument still reads as a table (recorded
    schedules hold ``{ all_zookeepers = true }``)."""
    assert tuple(TARGETS.kinds()) == TARGET_KINDS
    assert TARGET_KINDS[:4] == ("broker", "node", "zone", "zone_clients")
    assert parse_target({"all_zookeepers": True}) == parse_target("all_zookeepers") == AllZooKeepers()
    assert parse_target({"controller": 101}) == KRaftController(101)
    assert parse_target("controller") == Controller()
    with pytest.raises(FaultSpecError, match=r"^target 'leader_of' needs parameters, as in \{ leader_of = "):
        parse_target("leader_of")
    every = ", ".join(TARGET_KINDS)
    with pytest.raises(FaultSpecError, match=rf"^unknown target 'rack'; targets are {every}$"):
        parse_target({"rack": "a"})
