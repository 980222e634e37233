"""A pipeline member's order of calls per guarantee, its crashes, aborts and fatal errors,
and the rows it writes (no broker: stand-in clients play librdkafka's part and log every
call, consumer and producer in one list, so the order between them shows)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

import harness.history as hist
from harness.workload import transactional
from harness.workload.group_member import GroupProgress, Restarts
from harness.workload.pipeline import ABANDONED, PipelineMember
from tests.unit.test_group_member import Placement, Rows

INPUT, OUTPUT = "in", "out"


class Msg:
    def __init__(self, topic: str, partition: int, offset: int, value: bytes | None) -> None:
        self._t, self._p, self._o, self._v = topic, partition, offset, value

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes | None:
        return self._v


def record(partition: int, offset: int) -> Msg:
    return Msg(INPUT, partition, offset, f"prod-{partition}-{offset}".encode())


class World:
    """The batches the consumers will be handed, in order (each incarnation's consumer
    takes the next ones), the errors the producer raises, and the log of calls."""

    def __init__(self, batches: list[list[Msg]], fail: Mapping[str, list[KafkaError]] | None = None) -> None:
        self.batches = list(batches)
        self.fail = {k: list(v) for k, v in (fail or {}).items()}
        self.calls: list[str] = []
        self.member: PipelineMember | None = None
        self.consumers = 0
        self.producers = 0
        self.producer_settings: list[dict[str, Any]] = []
        self.on_consumer: Callable[[int], None] = lambda n: None

    def raise_if(self, call: str) -> None:
        if self.fail.get(call):
            raise KafkaException(self.fail[call].pop(0))

    def consumer(self, placement: Any, zone: str, settings: Mapping[str, Any]) -> FakeConsumer:
        self.consumers += 1
        self.on_consumer(self.consumers)
        return FakeConsumer(self, settings)

    def producer(self, placement: Any, zone: str, settings: Mapping[str, Any]) -> FakeProducer:
        self.producers += 1
        self.producer_settings.append(dict(settings))
        return FakeProducer(self, settings, self.producers)


class FakeConsumer:
    def __init__(self, world: World, settings: Mapping[str, Any]) -> None:
        self.world, self.settings = world, dict(settings)

    def subscribe(self, topics: list[str], on_assign: Any, on_revoke: Any, on_lost: Any) -> None:
        self.world.calls.append("subscribe")
        on_assign(self, [TopicPartition(INPUT, 0)])

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, -1001) for tp in partitions]

    def consume(self, num_messages: int, timeout: float) -> list[Msg]:
        if self.world.batches:
            batch = self.world.batches.pop(0)
            self.world.calls.append(f"consume {len(batch)}")
            return batch
        assert self.world.member is not None
        self.world.member.finish({}, 0)  # nothing more to read: the workload stops
        return []

    def consumer_group_metadata(self) -> str:
        return "group-metadata"

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition]:
        self.world.calls.append("commit " + ",".join(f"{tp.partition}:{tp.offset}" for tp in offsets))
        self.world.raise_if("commit")
        return offsets

    def close(self) -> None:
        self.world.calls.append("close consumer")


class FakeProducer:
    """Delivers on flush and on commit_transaction only, at the next offset of each
    partition: a poll serves nothing, so outputs of a crashed batch stay unreported."""

    def __init__(self, world: World, settings: Mapping[str, Any], number: int) -> None:
        self.world, self.settings, self.number = world, dict(settings), number
        self.queued: list[tuple[int, Any]] = []
        self.next_offset: dict[int, int] = {}

    def _deliver(self) -> None:
        for partition, callback in self.queued:
            offset = self.next_offset.get(partition, 0)
            self.next_offset[partition] = offset + 1
            callback(None, Msg(OUTPUT, partition, offset, None))
        self.queued = []

    def init_transactions(self, timeout: float) -> None:
        self.world.calls.append(f"init #{self.number}")

    def begin_transaction(self) -> None:
        self.world.calls.append("begin")

    def produce(self, topic: str, value: bytes, partition: int, on_delivery: Any) -> None:
        self.world.calls.append(f"produce {value.decode()}")
        self.queued.append((partition, on_delivery))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.world.calls.append("flush")
        self._deliver()
        return 0

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: object,
                                    timeout: float) -> None:  # fmt: skip
        self.world.calls.append("send_offsets " + ",".join(f"{tp.partition}:{tp.offset}" for tp in offsets))
        if self.world.fail.get("hang"):  # librdkafka#5456: blocked for good, timeout or not
            self.world.fail["hang"].pop(0)
            threading.Event().wait()
        self.world.raise_if("send_offsets")

    def commit_transaction(self, timeout: float) -> None:
        self.world.calls.append("commit_transaction")
        self.world.raise_if("commit_transaction")
        self._deliver()

    def abort_transaction(self, timeout: float) -> None:
        self.world.calls.append("abort_transaction")
        self.queued = []

    def __len__(self) -> int:
        return len(self.queued)

    def close(self) -> None:
        self.world.calls.append("close producer")


def _member(world: World, guarantee: str, restart: str = "clean", restart_every_s: float | None = None
            ) -> tuple[PipelineMember, Rows]:  # fmt: skip
    rows = Rows()
    restarts = Restarts() if restart_every_s is None else Restarts(restart_every_s, restart)
    member = PipelineMember("p-a", "a", "etl", INPUT, OUTPUT, 2, guarantee, 50, restarts, 0.0,
                            None, {}, {}, Placement(), rows, GroupProgress())  # fmt: skip
    member.make_consumer = world.consumer  # type: ignore[assignment]
    member.make_producer = world.producer  # type: ignore[assignment]
    world.member = member
    return member, rows


def _run(member: PipelineMember) -> None:
    member.run()
    assert member.error is None, member.error


BATCH = [record(0, 10), record(1, 4)]
DUE_AT_ONCE = 1e-9  # a restart period that has passed by the first batch


def test_exactly_once_produces_sends_the_offsets_and_commits_in_one_transaction() -> None:
    world = World([BATCH])
    member, rows = _member(world, "exactly_once")
    _run(member)
    assert world.calls == ["init #1", "subscribe", "consume 2", "begin", "produce p-a-0", "produce p-a-1",
                           "send_offsets 0:11,1:5", "commit_transaction", "close consumer", "flush",
                           "close producer"]
    (txn,) = rows.of("transactions")
    assert (txn["outcome"], txn["transactional_id"]) == (hist.TXN_COMMITTED, "kafka-chaos-etl-p-a")
    commits = [(c["partition"], c["offset"], c["mode"], c["outcome"], c["transaction_id"])
               for c in rows.of("commits")]  # fmt: skip
    assert commits == [(0, 11, "txn", "committed", txn["transaction_id"]),
                       (1, 5, "txn", "committed", txn["transaction_id"])]
    columns = ("message_id", "partition", "outcome", "offset", "transaction_id", "source_group",
               "source_topic",
               "source_partition", "source_offset", "source_message_id")  # fmt: skip
    sends = [tuple(s[c] for c in columns) for s in rows.of("sends")]
    assert sends == [("p-a-0", 0, "acked", 0, txn["transaction_id"], "etl", INPUT, 0, 10, "prod-0-10"),
                     ("p-a-1", 1, "acked", 0, txn["transaction_id"], "etl", INPUT, 1, 4, "prod-1-4")]
    polls = [(p["partition"], p["offset"], p["group"]) for p in rows.of("polls")]
    assert polls == [(0, 10, "etl"), (1, 4, "etl")]
    assert member.progress.caught_up({0: 10, 1: 4}) and not member.progress.caught_up({0: 11})
    assert world.producer_settings == [{"enable.idempotence": True, "acks": "all",
                                        "transactional.id": "kafka-chaos-etl-p-a"}]  # fmt: skip


def test_at_least_once_commits_after_every_output_was_acknowledged() -> None:
    world = World([BATCH])
    member, rows = _member(world, "at_least_once")
    _run(member)
    assert world.calls[:6] == ["subscribe", "consume 2", "produce p-a-0", "produce p-a-1", "flush",
                               "commit 0:11,1:5"]  # fmt: skip
    assert [(c["mode"], c["outcome"], c.get("transaction_id")) for c in rows.of("commits")] == [
        ("sync", "committed", None)] * 2
    assert [s["transaction_id"] for s in rows.of("sends")] == [None, None]
    (settings,) = world.producer_settings
    assert "transactional.id" not in settings and settings["enable.idempotence"] is True
    assert rows.of("transactions") == []


def test_at_most_once_commits_before_it_produces() -> None:
    world = World([BATCH])
    member, _ = _member(world, "at_most_once")
    _run(member)
    assert world.calls[:6] == ["subscribe", "consume 2", "commit 0:11,1:5", "produce p-a-0", "produce p-a-1",
                               "flush"]  # fmt: skip


@pytest.mark.parametrize(
    ("guarantee", "last_call", "sends"),
    [
        ("exactly_once", "send_offsets 0:11,1:5",
         [("p-a-0", "unknown", ABANDONED), ("p-a-1", "unknown", ABANDONED), ("p-a-2", "acked", None)]),
        ("at_least_once", "flush",
         [("p-a-0", "acked", None), ("p-a-1", "acked", None), ("p-a-2", "acked", None)]),
        ("at_most_once", "commit 0:11,1:5", [("p-a-0", "acked", None)]),
    ],
)
def test_a_crash_strikes_at_the_vulnerable_point_and_the_next_incarnation_goes_on(
    guarantee: str, last_call: str, sends: list[tuple[str, str, str | None]]
) -> None:
    """The first batch is struck at its guarantee's vulnerable point: nothing more is asked
    of those clients, not even to leave the group. The next incarnation (its transactional
    producer initialised before it subscribes) reads offset 10 again and goes on with the
    next seq: exactly once loses the abandoned outputs (unknown), at least once has made
    two outputs of offset 10, at most once none of offset 4."""
    world = World([BATCH, [record(0, 10)]])
    member, rows = _member(world, guarantee, restart="crash", restart_every_s=DUE_AT_ONCE)
    world.on_consumer = lambda n: setattr(member, "restarts", Restarts()) if n == 2 else None  # one crash
    _run(member)
    crashed_at = world.calls.index(last_call)
    assert world.calls[crashed_at + 1 : crashed_at + 3] == (
        ["init #2", "subscribe"] if guarantee == "exactly_once" else ["subscribe", "consume 1"]
    )
    assert "close consumer" not in world.calls[: crashed_at + 1]
    assert member.crashes == 1
    assert [(s["message_id"], s["outcome"], s["error"]) for s in rows.of("sends")] == sends
    if guarantee == "exactly_once":
        txns = [(t["outcome"], t["error"], t["end_requested_ts"]) for t in rows.of("transactions")]
        assert txns[0] == (hist.TXN_UNKNOWN, ABANDONED, None)
        assert txns[1][0] == hist.TXN_COMMITTED
        commits = [(c["offset"], c["outcome"], c["error"]) for c in rows.of("commits")]
        assert commits == [(11, "unknown", ABANDONED), (5, "unknown", ABANDONED), (11, "committed", None)]


def test_outputs_seqs_run_on_across_incarnations() -> None:
    world = World([BATCH, [record(0, 10)], [record(0, 11)]])
    member, rows = _member(world, "exactly_once", restart="crash", restart_every_s=DUE_AT_ONCE)
    world.on_consumer = lambda n: setattr(member, "restarts", Restarts()) if n == 3 else None  # two crashes
    _run(member)
    assert [s["seq"] for s in rows.of("sends")] == [0, 1, 2, 3]
    assert member.crashes == 2 and member.incarnation == 3


def test_an_abortable_error_aborts_and_the_member_rejoins() -> None:
    world = World([BATCH, [record(0, 10)]], fail={"send_offsets": [KafkaError(KafkaError.ILLEGAL_GENERATION,
                                                                               txn_requires_abort=True)]})
    member, rows = _member(world, "exactly_once")
    _run(member)
    aborted = world.calls.index("abort_transaction")
    assert world.calls[aborted + 1 : aborted + 3] == ["close consumer", "subscribe"]
    assert [t["outcome"] for t in rows.of("transactions")] == [hist.TXN_ABORTED, hist.TXN_COMMITTED]
    assert [c["outcome"] for c in rows.of("commits")] == ["committed"]  # the aborted offsets were never sent
    assert world.producers == 1  # the producer stays


def test_a_fatal_error_starts_a_new_incarnation_and_a_third_in_a_row_kills_the_member() -> None:
    fenced = [KafkaError(KafkaError._FENCED, fatal=True) for _ in range(3)]
    world = World([BATCH, BATCH, BATCH, BATCH], fail={"commit_transaction": fenced})
    member, rows = _member(world, "exactly_once")
    member.run()
    assert member.error is not None and "3 incarnations in a row" in member.error
    assert [c for c in world.calls if c.startswith("init")] == ["init #1", "init #2", "init #3"]
    assert [t["outcome"] for t in rows.of("transactions")] == [hist.TXN_UNKNOWN] * 3
    assert {c["outcome"] for c in rows.of("commits")} == {"unknown"}


def test_a_call_that_hangs_past_its_timeout_ends_the_incarnation_and_the_next_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """send_offsets_to_transaction blocked for good (librdkafka#5456) is left blocked: the
    transaction and its offsets are recorded unknown with the hang, and a new incarnation
    (a new producer, initialised first) takes over."""
    monkeypatch.setattr(transactional, "END_CALL_TIMEOUT_S", 0.05)
    monkeypatch.setattr(transactional, "HUNG_GRACE_S", 0.2)
    world = World([BATCH, [record(0, 10)]], fail={"hang": [KafkaError(KafkaError._TIMED_OUT)]})
    member, rows = _member(world, "exactly_once")
    _run(member)
    hung = world.calls.index("send_offsets 0:11,1:5")
    assert world.calls[hung + 1 : hung + 3] == ["init #2", "subscribe"]
    (first, second) = rows.of("transactions")
    assert first["outcome"] == hist.TXN_UNKNOWN
    assert first["error"].startswith("_HUNG: send_offsets_to_transaction blocked")
    assert second["outcome"] == hist.TXN_COMMITTED
    commits = [(c["offset"], c["outcome"], (c["error"] or "")[:5]) for c in rows.of("commits")]
    assert commits == [(11, "unknown", "_HUNG"), (5, "unknown", "_HUNG"), (11, "committed", "")]
