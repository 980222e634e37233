"""A group member's records of its commits and rebalances (no broker: the callbacks are
called as librdkafka would call them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

import harness.history as hist
from harness.workload import group_member
from harness.workload.group_member import GroupMember, GroupProgress, Restarts, member_settings


class Rows:
    def __init__(self) -> None:
        self.rows: list[tuple[str, dict[str, Any]]] = []

    def row(self, table: str, row: Mapping[str, Any]) -> None:
        self.rows.append((table, dict(row)))

    def of(self, table: str) -> list[dict[str, Any]]:
        return [r for t, r in self.rows if t == table]


class Placement:
    def bootstrap_servers(self, zone: str) -> str:
        return "127.0.0.1:1"


class Committed:
    """A consumer whose committed() answers from a table (partition -> offset, -1001 none)."""

    def __init__(self, offsets: dict[int, int]) -> None:
        self.offsets = offsets

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.offsets[tp.partition]) for tp in partitions]


@dataclass
class Answer:
    """A commit callback's partition with a per-partition error (TopicPartition's is read-only)."""

    topic: str
    partition: int
    offset: int
    error: KafkaError | None


def _member(commit: str, rows: Rows) -> GroupMember:
    return GroupMember("m1", "a", {}, "g", commit, Restarts(), 0.0, Placement(), "t", rows, GroupProgress())


def test_assignments_are_numbered_and_record_where_the_member_resumes() -> None:
    rows = Rows()
    member = _member("sync", rows)
    consumer: Any = Committed({0: 42, 1: -1001})
    member._on_assign(consumer, [TopicPartition("t", 0), TopicPartition("t", 1)])
    member._on_revoke(consumer, [TopicPartition("t", 0)])
    member._on_assign(consumer, [TopicPartition("t", 1)])
    got = [(r["event"], r["assignment"], r["partition"], r["resume_offset"]) for r in rows.of("rebalances")]
    assert got == [("assigned", 0, 0, 42), ("assigned", 0, 1, None), ("revoked", 0, 0, None),
                   ("assigned", 1, 1, None)]


def test_commit_answers_are_recorded_per_partition_with_their_outcome() -> None:
    rows = Rows()
    member = _member("async", rows)
    failed: Any = Answer("t", 1, 7, KafkaError(KafkaError.REBALANCE_IN_PROGRESS))
    member._on_commit(None, [TopicPartition("t", 0, 10), failed, TopicPartition("t", 2, -1001)])
    member._on_commit(KafkaError(KafkaError._NO_OFFSET), [TopicPartition("t", 0, 10)])
    got = [(r["partition"], r["offset"], r["mode"], r["outcome"], r["error"]) for r in rows.of("commits")]
    assert got == [(0, 10, "async", hist.COMMIT_COMMITTED, None),
                   (1, 7, "async", hist.COMMIT_FAILED, "REBALANCE_IN_PROGRESS")]


def test_a_synchronous_members_commit_callbacks_are_not_recorded_twice() -> None:
    rows = Rows()
    _member("sync", rows)._on_commit(None, [TopicPartition("t", 0, 10)])
    assert rows.of("commits") == []


def test_the_group_has_caught_up_when_its_members_together_read_every_target() -> None:
    progress = GroupProgress()
    progress.read(0, 9)
    assert not progress.caught_up({0: 9, 1: 3})
    progress.read(1, 3)
    assert progress.caught_up({0: 9, 1: 3})


def test_only_automatic_commits_turn_librdkafkas_auto_commit_on() -> None:
    assert member_settings("g", "auto", {}) == {"group.id": "g", "enable.auto.commit": True,
                                                "auto.commit.interval.ms": 1000}
    assert member_settings("g", "sync", {"auto.commit.interval.ms": 50}) == {"group.id": "g",
                                                                           "enable.auto.commit": False}


def test_the_workload_knows_which_groups_have_yet_to_commit() -> None:
    """Members committing offsets and pipeline members count; a group that never commits
    (commit "none") is not waited for; only commits that went through count."""
    from harness.workload.driver import ConsumerSpec, ProducerSpec, Workload
    from harness.workload.pipeline import PipelineSpec

    class Placement:
        def bootstrap_servers(self, zone: str) -> str:
            return "127.0.0.1:1"

    class Writer:
        def append(self, table: str, row: Any) -> None:
            pass

    workload = Workload(Placement(), "t", [0, 1], Writer(), [ProducerSpec("pa", "a")],  # type: ignore[arg-type]
                        [ConsumerSpec("m-a", "a", group="g-sync", commit="sync"),
                         ConsumerSpec("m-b", "b", group="g-none", commit="none")],
                        [PipelineSpec("p-a", "a", "g-pipe", "out")], topics={"out": ("t-out", [0])})
    assert workload.committing_groups == ["g-pipe", "g-sync"]
    workload.recorder.row("commits", {"group": "g-pipe", "outcome": "failed"})
    workload.recorder.row("commits", {"group": "g-sync", "outcome": "committed"})
    assert workload.groups_yet_to_commit() == ["g-pipe"]
    workload.recorder.row("commits", {"group": "g-pipe", "outcome": "committed"})
    assert workload.groups_yet_to_commit() == []


class Closing:
    """A consumer whose close() delivers one more assignment, as librdkafka can, and whose
    handle, being destroyed, answers a look-up of committed offsets only with _DESTROY."""

    def __init__(self, member: GroupMember) -> None:
        self.member = member
        self.closed = False

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        raise KafkaException(KafkaError(KafkaError._DESTROY))

    def close(self) -> None:
        self.member._on_assign(self, [TopicPartition("t", 0)])  # type: ignore[arg-type]
        self.closed = True


def test_an_assignment_delivered_by_close_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_member, "RESUME_LOOKUP_TIMEOUT_S", 0.0)  # a look-up gives up at once
    rows = Rows()
    member = _member("sync", rows)
    consumer = Closing(member)
    member._close(consumer)  # type: ignore[arg-type]
    assert consumer.closed and rows.of("rebalances") == [] and member.assignment == -1
    member._on_assign(Committed({0: 7}), [TopicPartition("t", 0)])  # type: ignore[arg-type]
    assert [r["resume_offset"] for r in rows.of("rebalances")] == [7]  # open again after the close
