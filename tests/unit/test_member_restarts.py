"""A group member's restarts: when they fall due, how a crash differs from a clean
restart, what the history records of each, and how scenario files spell them (no
broker: a stand-in consumer plays librdkafka's part)."""

from __future__ import annotations

import json
import math
import time
import weakref
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from harness.workload.driver import ConsumerSpec
from harness.workload.group_member import GroupMember, GroupProgress, Restarts
from harness.workload.pipeline import PipelineSpec
from tests.unit.test_group_member import Placement, Rows


@pytest.mark.parametrize(("restarts", "now", "due"), [
    (Restarts(), 5.0, math.inf),
    (Restarts(every_s=4.0), 5.0, 9.0),
    (Restarts(every_s=4.0, from_s=20.0), 5.0, 20.0),  # not before the window opens
    (Restarts(every_s=4.0, from_s=20.0, until_s=30.0), 25.0, 29.0),
    (Restarts(every_s=4.0, from_s=20.0, until_s=30.0), 27.0, math.inf),  # 31 s: the window has closed
])
def test_a_restart_falls_due_every_period_inside_its_window(restarts: Restarts, now: float,
                                                             due: float) -> None:
    assert restarts.next_due(now, started=0.0) == due


@pytest.mark.parametrize(("restarts", "problem"), [
    (Restarts(every_s=0.0), "restart_every_s must be positive, not 0.0"),
    (Restarts(every_s=1.0, how="kill"), "restart must be one of clean, crash, not 'kill'"),
    (Restarts(every_s=1.0, from_s=-1.0), "restart_from_s must be 0 or more, not -1.0"),
    (Restarts(every_s=1.0, from_s=10.0, until_s=5.0), "restart_until_s must come after restart_from_s (10)"),
    (Restarts(how="crash"), "'restart', 'restart_from_s' and 'restart_until_s' need 'restart_every_s'"),
    (Restarts(until_s=9.0), "need 'restart_every_s'"),
])
def test_restarts_that_cannot_happen_are_named(restarts: Restarts, problem: str) -> None:
    assert any(problem in p for p in restarts.problems()), restarts.problems()


def test_a_consumer_table_spells_its_restarts_and_reads_back_the_same() -> None:
    table = {"name": "m-a", "zone": "a", "group": "g", "commit": "sync", "restart_every_s": 3,
             "restart": "crash", "restart_from_s": 2, "restart_until_s": 14}
    spec = ConsumerSpec.from_dict(table)
    assert spec.restarts == Restarts(every_s=3.0, how="crash", from_s=2.0, until_s=14.0)
    assert ConsumerSpec.from_dict(spec.to_dict()) == spec
    pipeline = PipelineSpec.from_dict({"name": "p-a", "zone": "a", "group": "g", "output": "out",
                                       "restart_every_s": 9, "restart": "crash", "restart_until_s": 30})
    assert pipeline.restarts == Restarts(every_s=9.0, how="crash", until_s=30.0)
    assert PipelineSpec.from_dict(pipeline.to_dict()) == pipeline


@pytest.mark.parametrize(("table", "message"), [
    ({"restart_every_s": "often"}, "consumer m-a: restart_every_s must be a number, not 'often'"),
    ({"restart_every_s": 3, "restart_until_s": True},
     "consumer m-a: restart_until_s must be a number, not True"),
    ({"restart_every_s": 3, "restart": 1}, "consumer m-a: restart must be one of clean, crash, not 1"),
    ({"restart_every_s": 3, "restart_from_s": 9, "restart_until_s": 4},
     "consumer m-a: restart_until_s must come after restart_from_s (9), not 4.0"),
    ({"process_ms": "slow"}, "consumer m-a: process_ms must be a number, not 'slow'"),
])
def test_a_consumer_tables_bad_restart_is_one_message_naming_the_key(table: dict[str, Any],
                                                                     message: str) -> None:
    with pytest.raises(ValueError) as caught:
        ConsumerSpec.from_dict({"name": "m-a", "zone": "a", "group": "g", **table})
    assert str(caught.value) == message


def test_restarts_need_a_group() -> None:
    with pytest.raises(ValueError, match="need a 'group'"):
        ConsumerSpec("c-a", "a", restart_every_s=3.0, restart="crash")


class World:
    """Stand-in consumers, one per incarnation: each is assigned partition 0 at its first
    consume, as a group coordinator would hand it over, and notes whether it was closed."""

    def __init__(self) -> None:
        self.closed: list[int] = []
        self.made: list[weakref.ref[Incarnation]] = []

    def consumer(self, placement: Any, zone: str, settings: Any) -> Incarnation:
        consumer = Incarnation(self, len(self.made))
        self.made.append(weakref.ref(consumer))
        return consumer


class Incarnation:
    def __init__(self, world: World, number: int) -> None:
        self.world, self.number = world, number
        self.on_assign: Any = None

    def subscribe(self, topics: list[str], on_assign: Any, on_revoke: Any, on_lost: Any) -> None:
        self.on_assign = on_assign

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        if self.on_assign is not None:
            assign, self.on_assign = self.on_assign, None
            assign(self, [TopicPartition("t", 0)])
        time.sleep(0.005)
        return []

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, -1001) for tp in partitions]

    def close(self) -> None:
        self.world.closed.append(self.number)


UNTIL_S = 0.3


def _storm(how: str) -> tuple[GroupMember, World, Rows]:
    """A member restarting every 50 ms for its first 0.3 s, run for 0.6 s."""
    world, rows = World(), Rows()
    member = GroupMember("m-a", "a", {}, "g", "sync", Restarts(every_s=0.05, how=how, until_s=UNTIL_S), 0.0,
                         Placement(), "t", rows, GroupProgress())
    member.make_consumer = world.consumer  # type: ignore[assignment]
    member.start()  # as the workload starts it: a thread of its own
    time.sleep(2 * UNTIL_S)
    member.finish({}, timeout_s=0.0)
    member.join(10)
    assert not member.is_alive() and member.error is None, member.error
    return member, world, rows


@pytest.mark.parametrize("how", ["clean", "crash"])
def test_a_restart_is_recorded_as_a_fault_window_from_leaving_to_the_next_assignment(how: str) -> None:
    member, world, rows = _storm(how)
    faults = rows.of("faults")
    assert len(world.made) >= 3, "the member restarted at least twice"
    fault = {"clean": "member_restart", "crash": "member_crash"}[how]
    restarts = len(world.made) - 1
    assert [(r["fault"], r["action"]) for r in faults] == [(fault, "inject"), (fault, "heal")] * restarts
    assert {r["targets"] for r in faults} == {json.dumps(["m-a"])}
    assert {r["outcome"] for r in faults} == {"ok"}
    # None after the window, though the member ran on as long again.
    assert max(r["mono"] for r in faults if r["action"] == "inject") - member._began < UNTIL_S + 0.1


def test_a_crashed_consumer_is_let_go_unclosed_and_a_clean_one_closed() -> None:
    """A crash never calls close() (no LeaveGroup, no final commit) and keeps no reference
    to the old consumer, so confluent-kafka destroys it without closing it; only the
    last incarnation is closed, at the end of the workload."""
    _, world, _ = _storm("crash")
    last = len(world.made) - 1
    assert world.closed == [last]
    assert [ref() is None for ref in world.made[:last]] == [True] * last
    _, world, _ = _storm("clean")
    assert world.closed == list(range(len(world.made)))
