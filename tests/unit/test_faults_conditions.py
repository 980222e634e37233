"""Schedule conditions: parsed from data with one-line refusals, checked against the
topology, and judged on a cluster state relative to the state when the wait began."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from faults.conditions import (
    CONDITION_KINDS,
    AllOf,
    AnyOf,
    BrokerGone,
    BrokerRegistered,
    Condition,
    ControllerChanged,
    ControllerIs,
    IsrFull,
    IsrIs,
    JoinsIsr,
    LeaderChanged,
    LeaderIs,
    LeavesIsr,
    MigrationPhaseIs,
    NewLeaderFromIsr,
    Not,
    Offline,
    QuorumServing,
    parse_condition,
    topics_to_read,
)
from faults.errors import FaultSpecError, TargetError
from harness.cluster.sampler import StateSampler
from harness.cluster.state import ClusterState, PartitionState
from topologies import load_topology
from topologies.model import migration_topology


def _part(partition: int = 0, leader: int = 0, isr: tuple[int, ...] = (0, 1, 2), epoch: int = 1,
          replicas: tuple[int, ...] = (0, 1, 2), topic: str = "t") -> PartitionState:
    return PartitionState(topic=topic, partition=partition, leader=leader, leader_epoch=epoch, isr=isr,
                          controller_epoch=1, replicas=replicas)


def _state(*parts: PartitionState, live: tuple[int, ...] = (0, 1, 2), controller: int = 0,
           controller_epoch: int = 1) -> ClusterState:
    chosen = parts or (_part(),)
    return ClusterState(live_brokers=live, controller=controller, controller_epoch=controller_epoch,
                        partitions={(p.topic, p.partition): p for p in chosen})


EVERY_FORM: list[tuple[Any, Condition]] = [
    ("isr_full", IsrFull()),
    ("controller_changed", ControllerChanged()),
    ({"leaves_isr": {"broker": 1, "topic": "t", "partition": 0}},
     LeavesIsr(topic="t", partition=0, broker=1)),
    ({"joins_isr": {"broker": 2, "topic": "t", "partition": 3}}, JoinsIsr(topic="t", partition=3, broker=2)),
    ({"leader_changed": {"topic": "t", "partition": 1}}, LeaderChanged("t", 1)),
    ({"broker_gone": 1}, BrokerGone(1)),
    ({"broker_registered": 0}, BrokerRegistered(0)),
    ({"controller_is": 2}, ControllerIs(2)),
    ({"offline": {"topic": "t", "partition": 1}}, Offline("t", 1)),
    ({"leader_is": {"broker": 2, "topic": "t", "partition": 0}}, LeaderIs("t", 0, broker=2)),
    ({"isr_is": {"brokers": [0, 2], "topic": "t", "partition": 0}}, IsrIs("t", 0, brokers=(0, 2))),
    ({"new_leader_from_isr": {"topic": "t", "partition": 2}}, NewLeaderFromIsr("t", 2)),
    ({"quorum_serving": "zk-a"}, QuorumServing("zk-a")),
    ({"migration_phase": "dual_write"}, MigrationPhaseIs("dual_write")),
    ({"not": "controller_changed"}, Not(ControllerChanged())),
    ({"all": [{"offline": {"topic": "t", "partition": 0}}, {"isr_is": {"brokers": [1], "topic": "t",
                                                                         "partition": 0}}]},
     AllOf((Offline("t", 0), IsrIs("t", 0, brokers=(1,))))),
    ({"any": ["controller_changed", {"broker_gone": 1}]}, AnyOf((ControllerChanged(), BrokerGone(1)))),
]


@pytest.mark.parametrize(("spec", "condition"), EVERY_FORM, ids=[c.kind for _, c in EVERY_FORM])
def test_every_form_parses_and_writes_back_what_it_read(spec: Any, condition: Condition) -> None:
    assert parse_condition(spec) == condition
    assert condition.to_spec() == spec
    condition.check(MIGRATING if isinstance(condition, MigrationPhaseIs) else load_topology("three_az"))


def test_the_older_zk_serving_spelling_reads_as_quorum_serving() -> None:
    assert parse_condition({"zk_serving": "zk-a"}) == QuorumServing("zk-a")
    assert "zk_serving" not in CONDITION_KINDS


def test_every_kind_has_a_form() -> None:
    assert sorted(CONDITION_KINDS) == sorted(c.kind for _, c in EVERY_FORM)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sunny", r"^'when': unknown condition 'sunny'; conditions are: isr_full, controller_changed, "),
        ({"sunny": 1}, r"^'when': unknown condition 'sunny'"),
        ("leaves_isr", r"^'when': leaves_isr needs parameters"),
        ({"isr_full": {}}, r"^'when': isr_full takes no parameters; write when = \"isr_full\""),
        ({"broker_gone": 1, "broker_registered": 1}, r"^'when' must be a condition name or a table with "
                                                     r"exactly one key"),
        (3, r"^'when' must be a condition name"),
        ({"leaves_isr": {"broker": 1, "topic": "t"}}, r"^'when': leaves_isr needs 'partition'"),
        ({"leaves_isr": {"broker": 1, "topic": "t", "partition": 0, "rank": 1}},
         r"^'when': leaves_isr does not take 'rank'; it takes: broker, partition, topic"),
        ({"joins_isr": [1, "t", 0]}, r"^'when': joins_isr \(broker, topic, partition\) must be a table"),
        ({"leader_changed": {"topic": 5, "partition": 0}}, r"^'when': leader_changed: 'topic' must be str"),
        ({"broker_registered": "kafka-1"}, r"^'when': broker_registered must be int"),
    ],
)
def test_malformed_conditions_are_refused_in_one_line(spec: Any, message: str) -> None:
    with pytest.raises(FaultSpecError, match=message) as caught:
        parse_condition(spec)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "condition",
    [BrokerGone(3), BrokerRegistered(-1), LeavesIsr(topic="t", partition=0, broker=9),
     JoinsIsr(topic="t", partition=0, broker=3)],
    ids=str,
)
def test_brokers_the_topology_lacks_are_refused(condition: Condition) -> None:
    with pytest.raises(TargetError, match=r"topology 'three_az' has no broker"):
        condition.check(load_topology("three_az"))


def test_isr_full_needs_every_partition_led_and_every_replica_in_sync() -> None:
    full = _state(_part(0), _part(1, leader=1))
    assert IsrFull().evaluate(full, full) == (True, "")
    behind = _state(_part(0), _part(1, isr=(1,), leader=1), _part(2, leader=-1, isr=(2,)))
    held, why = IsrFull().evaluate(behind, full)
    assert not held
    assert why == "t-1 isr [1] of replicas [0, 1, 2]; t-2 has no leader"
    many = _state(*[_part(p, isr=(0,)) for p in range(5)])
    assert IsrFull().evaluate(many, many)[1].endswith("t-2 isr [0] of replicas [0, 1, 2] and 2 more")


def test_isr_full_is_not_judged_without_partitions_or_replica_sets() -> None:
    empty = ClusterState(live_brokers=(0, 1, 2), controller=0, controller_epoch=1)
    assert IsrFull().evaluate(empty, empty) == (False, "no partition observed")
    unknown = _state(_part(replicas=()))
    assert IsrFull().evaluate(unknown, unknown) == (False, "t-0 has no known replica set")


def test_nothing_holds_on_a_state_that_could_not_be_read() -> None:
    for _, condition in EVERY_FORM:
        assert condition.evaluate(None, _state()) == (False, "the cluster state could not be read")


def test_controller_changed_compares_epochs_with_the_baseline() -> None:
    before = _state(controller=1, controller_epoch=4)
    same_broker_new_epoch = _state(controller=1, controller_epoch=5)
    assert ControllerChanged().evaluate(same_broker_new_epoch, before) == (True, "")
    assert ControllerChanged().evaluate(before, before) == (
        False, "controller 1 at epoch 4, as when the wait began")
    # without a baseline the state is its own: nothing changed yet
    assert not ControllerChanged().evaluate(same_broker_new_epoch, None)[0]


def test_leader_changed_compares_leader_epochs_with_the_baseline() -> None:
    condition = LeaderChanged("t", 0)
    before = _state(_part(leader=0, epoch=3))
    assert condition.evaluate(_state(_part(leader=0, epoch=4)), before) == (True, "")
    assert condition.evaluate(before, before) == (
        False, "t-0 led by 0 at leader epoch 3, as when the wait began")
    assert condition.evaluate(before, _state(_part(1))) == (
        False, "t-0 was not in the state when the wait began")
    other = _state(_part(topic="u"))
    assert condition.evaluate(other, before) == (
        False, "t-0 is not in the observed state (topics observed: u)")


def test_isr_membership() -> None:
    shrunk = _state(_part(isr=(0, 2)))
    leaves, joins = LeavesIsr(topic="t", partition=0, broker=1), JoinsIsr(topic="t", partition=0, broker=1)
    assert leaves.evaluate(shrunk, None) == (True, "")
    assert joins.evaluate(shrunk, None) == (False, "broker 1 is not in the isr [0, 2] of t-0")
    assert joins.evaluate(_state(), None) == (True, "")
    assert leaves.evaluate(_state(), None) == (False, "broker 1 is in the isr [0, 1, 2] of t-0")
    assert not LeavesIsr(topic="t", partition=7, broker=1).evaluate(shrunk, None)[0]


def test_broker_registration() -> None:
    without_1 = _state(live=(0, 2))
    assert BrokerGone(1).evaluate(without_1, None) == (True, "")
    assert BrokerGone(0).evaluate(without_1, None) == (False, "broker 0 is registered (live brokers [0, 2])")
    assert BrokerRegistered(1).evaluate(without_1, None) == (
        False, "broker 1 is not registered (live brokers [0, 2])")
    assert BrokerRegistered(2).evaluate(without_1, None) == (True, "")


def test_the_topics_to_read_are_those_named_or_all_when_a_condition_reads_every_partition() -> None:
    leaves = LeavesIsr(topic="b", partition=0, broker=1)
    assert topics_to_read([leaves, LeaderChanged("a", 0), BrokerGone(1)]) == ["a", "b"]
    assert topics_to_read([IsrFull(), leaves]) == ["b"]
    assert topics_to_read([IsrFull(), ControllerChanged()]) is None
    assert topics_to_read([ControllerChanged()]) == []


def test_the_samplers_latest_state_is_the_last_read_and_none_in_a_gap() -> None:
    sampler = StateSampler(None, ["t"])
    assert sampler.latest() is None
    first, second = _state(), _state(_part(isr=(0, 2)))
    sampler.sample(lambda topics: first)
    sampler.sample(lambda topics: first)
    assert sampler.latest() == first
    sampler.sample(lambda topics: second)
    assert sampler.latest() == second

    def lost(topics: list[str]) -> ClusterState:
        raise ConnectionError("connection loss")

    sampler.sample(lost)
    assert sampler.latest() is None


def test_the_samplers_latest_state_can_be_asked_to_be_read_after_a_moment() -> None:
    sampler = StateSampler(None, ["t"])
    state = _state()
    sampler.sample(lambda topics: state, now=lambda: 100.0)
    assert sampler.latest(since=100.0) == state
    assert sampler.latest(since=101.0) is None  # read before that moment: maybe stale
    sampler.sample(lambda topics: state, now=lambda: 102.0)  # the same state, read again
    assert sampler.latest(since=101.0) == state


def test_offline_leader_and_isr_equality() -> None:
    dark = _state(_part(leader=-1, isr=(2,)))
    led = _state(_part(leader=1, isr=(1, 2)))
    assert Offline("t", 0).evaluate(dark, dark)[0]
    assert Offline("t", 0).evaluate(led, led) == (False, "t-0 led by 1 (isr [1, 2])")
    assert LeaderIs("t", 0, broker=1).evaluate(led, led)[0]
    assert not LeaderIs("t", 0, broker=2).evaluate(led, led)[0]
    assert IsrIs("t", 0, brokers=(2, 1)).evaluate(led, led)[0]  # any order
    assert not IsrIs("t", 0, brokers=(1,)).evaluate(led, led)[0]  # exactly, not a subset
    assert not Offline("t", 9).evaluate(led, led)[0]  # a partition not observed never holds


def test_controller_is_not_and_all() -> None:
    before = _state(controller=0, controller_epoch=1)
    after = _state(controller=2, controller_epoch=2)
    assert ControllerIs(2).evaluate(after, before)[0] and not ControllerIs(2).evaluate(before, before)[0]
    assert Not(ControllerChanged()).evaluate(before, before)[0]
    assert Not(ControllerChanged()).evaluate(after, before) == (False, "the controller changed")
    both = AllOf((ControllerIs(2), ControllerChanged()))
    assert both.evaluate(after, before)[0]
    assert both.evaluate(before, before) == (False, "the controller is 0, not 2")
    assert not Not(IsrFull()).evaluate(None, None)[0]  # unreadable: nothing holds, negations neither
    either = AnyOf((ControllerIs(2), ControllerIs(1)))
    assert either.evaluate(after, before)[0]  # one of them holds
    assert either.evaluate(before, before) == (
        False, "the controller is 0, not 2; the controller is 0, not 1")
    assert not AnyOf((IsrFull(),)).evaluate(None, None)[0]


def test_combinators_are_checked_against_the_topology_and_refuse_empty_lists() -> None:
    with pytest.raises(TargetError):
        Not(ControllerIs(7)).check(load_topology("three_az"))
    with pytest.raises(TargetError):
        AllOf((IsrIs("t", 0, brokers=(0, 9)),)).check(load_topology("three_az"))
    with pytest.raises(FaultSpecError, match="all needs at least one condition"):
        parse_condition({"all": []})
    with pytest.raises(FaultSpecError, match="any needs at least one condition"):
        parse_condition({"any": []})
    with pytest.raises(TargetError):
        AnyOf((ControllerIs(7),)).check(load_topology("three_az"))


def test_a_new_leader_from_the_isr_is_another_broker_that_was_in_sync_when_the_wait_began() -> None:
    before = _state(_part(leader=0, isr=(0, 1), epoch=3))
    assert NewLeaderFromIsr("t", 0).evaluate(_state(_part(leader=1, isr=(1,), epoch=4)), before)[0]
    assert not NewLeaderFromIsr("t", 0).evaluate(before, before)[0]  # the same leader
    unclean = _state(_part(leader=2, isr=(2,), epoch=4))  # broker 2 was out of the ISR
    assert NewLeaderFromIsr("t", 0).evaluate(unclean, before) == (False,
                                                                  "t-0 led by 2 (before: 0, isr [0, 1])")
    assert not NewLeaderFromIsr("t", 0).evaluate(_state(_part(leader=-1, isr=(0,), epoch=4)), before)[0]


def test_a_zookeeper_node_serves_when_its_recorded_mode_is_leader_or_follower() -> None:
    import dataclasses

    state = _state()
    unread = (False, "no quorum roles were read with this state")
    assert QuorumServing("zk-a").evaluate(state, state) == unread
    modes = dataclasses.replace(state, zk_modes={"zk-a": None, "zk-b": "leader", "zk-c": "follower"})
    assert QuorumServing("zk-b").evaluate(modes, modes)[0] and QuorumServing("zk-c").evaluate(modes, modes)[0]
    assert QuorumServing("zk-a").evaluate(modes, modes) == (False, "zk-a is not serving")
    assert modes == state, "the modes are not part of a snapshot's identity"
    with pytest.raises(TargetError, match="no metadata-quorum member 'zk-q'; its members are zk-a, zk-b"):
        QuorumServing("zk-q").check(load_topology("three_az"))


MIGRATING = migration_topology(load_topology("three_az"), load_topology("three_az", metadata="kraft"))


def test_a_migration_phase_holds_only_while_the_driver_records_that_phase() -> None:
    copy = MigrationPhaseIs("copy")
    state = ClusterState(live_brokers=(0, 1, 2), controller=100, controller_epoch=3)
    assert copy.evaluate(dataclasses.replace(state, migration_phase="copy"), None) == (True, "")
    assert copy.evaluate(dataclasses.replace(state, migration_phase="dual_write"), None) == (
        False, "the migration is in its dual_write phase")
    assert copy.evaluate(state, None) == (False, "no migration phase is under way")


def test_a_migration_phase_that_does_not_exist_or_a_cluster_that_is_not_migrating_is_one_sentence() -> None:
    with pytest.raises(FaultSpecError, match=r"^'when': migration_phase 'dual-write' is not a phase of the "
                                             r"migration; phases: provision, enter_migration, copy, "):
        parse_condition({"migration_phase": "dual-write"})
    with pytest.raises(TargetError, match=r"^migration_phase = 'copy': topology 'three_az' is not migrating"):
        MigrationPhaseIs("copy").check(load_topology("three_az"))
