"""A transactional producer's bookkeeping, over a stand-in for librdkafka's producer: which
outcome each transaction is recorded with, which acknowledged offsets become read targets,
and the producer specs that declare it. The real thing runs against Kafka in the chaos
suite; these pin the rules that decide what the history says."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness import history as hist
from harness.workload import driver
from harness.workload.driver import ProducerSpec
from harness.workload.transactional import Hold, Transactions, TransactionsEnded


def _error(code: int, **flags: bool) -> KafkaException:
    return KafkaException(KafkaError(code, "stand-in", **flags))


class StandInProducer:
    """Answers commit and abort calls from scripted lists of errors (None: success)."""

    def __init__(self, commits: list[KafkaException | None] | None = None,
                 aborts: list[KafkaException | None] | None = None) -> None:
        self.commits = list(commits or [])
        self.aborts = list(aborts or [])
        self.calls: list[str] = []
        self.on_flush: list[Callable[[], None]] = []  # delivery reports served by the next flush

    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init")

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def _answer(self, name: str, script: list[KafkaException | None]) -> None:
        self.calls.append(name)
        error = script.pop(0) if script else None
        if error is not None:
            raise error

    def commit_transaction(self, timeout: float) -> None:
        self._serve_reports()  # librdkafka flushes before it commits
        self._answer("commit", self.commits)

    def _serve_reports(self) -> None:
        reports, self.on_flush = self.on_flush, []
        for report in reports:
            report()

    def abort_transaction(self, timeout: float) -> None:
        self._answer("abort", self.aborts)

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        self._serve_reports()
        return 0


class Recorded:
    def __init__(self) -> None:
        self.rows: list[tuple[str, Mapping[str, Any]]] = []
        self.targets: list[dict[int, int]] = []

    def row(self, table: str, row: Mapping[str, Any]) -> None:
        self.rows.append((table, dict(row)))

    def committed(self, acked: Mapping[int, int]) -> None:
        self.targets.append(dict(acked))

    def outcomes(self) -> list[str]:
        return [row["outcome"] for table, row in self.rows if table == "transactions"]


def _transactions(producer: StandInProducer, size: int = 2, abort_ratio: float = 0.0,
                  name: str = "tx") -> tuple[Transactions, Recorded]:
    seen = Recorded()
    txn = Transactions(producer, name, f"id-{name}", size, abort_ratio, seen.row, seen.committed)  # type: ignore[arg-type]
    return txn, seen


class Clock:
    """Monotonic seconds a test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waited: float | None = None

    def __call__(self) -> float:
        return self.now


def _holding(producer: StandInProducer, hold: Hold, size: int = 2,
             abort_ratio: float = 0.0) -> tuple[Transactions, Recorded, Clock]:
    """Transactions that hold one open; the hold's wait is noted among the producer's calls,
    and the wall-clock moment it ended as ``clock.waited``."""
    seen, clock = Recorded(), Clock()

    def wait(seconds: float) -> None:
        producer.calls.append(f"wait {seconds:g}")
        time.sleep(0.005)  # a hold takes time: a moment taken before it is measurably earlier
        clock.waited = time.time()

    txn = Transactions(producer, "zombie", "id-shared", size, abort_ratio, seen.row, seen.committed,  # type: ignore[arg-type]
                       hold, wait=wait, clock=clock)
    txn.init()
    return txn, seen, clock


def _send(txn: Transactions, partition: int = 0, offset: int | None = None) -> str:
    tid = txn.before_send()
    if offset is not None:
        txn.acked(tid, partition, offset)
    txn.after_send()
    return tid


def test_a_transaction_of_size_messages_commits_and_its_offsets_become_read_targets() -> None:
    producer = StandInProducer()
    txn, seen = _transactions(producer, size=2)
    first = _send(txn, 0, 10)
    assert _send(txn, 1, 4) == first
    assert producer.calls == ["begin", "commit"]
    assert seen.outcomes() == [hist.TXN_COMMITTED]
    row = seen.rows[0][1]
    assert row["transaction_id"] == "tx.t1" and row["transactional_id"] == "id-tx"
    assert row["begin_ts"] <= row["end_requested_ts"] <= row["end_ts"]
    assert seen.targets == [{0: 10, 1: 4}]
    assert _send(txn) == "tx.t2"  # the next message opens the next transaction


def test_a_late_delivery_report_counts_only_for_a_committed_transaction() -> None:
    producer = StandInProducer(commits=[None])
    txn, seen = _transactions(producer, size=1, abort_ratio=0.0)
    tid = _send(txn)  # committed before its delivery report was served
    txn.acked(tid, 2, 7)
    assert seen.targets == [{}, {2: 7}]
    drawn = StandInProducer()
    aborting, seen_aborted = _transactions(drawn, size=1, abort_ratio=1.0)
    tid = _send(aborting)
    assert drawn.calls == ["begin", "flush", "abort"]  # delivered first: see Transactions._abort
    aborting.acked(tid, 2, 9)
    assert seen_aborted.outcomes() == [hist.TXN_ABORTED]
    assert seen_aborted.targets == []  # an aborted transaction's records are never read targets


def test_delivery_reports_served_while_the_commit_flushes_are_read_targets() -> None:
    producer = StandInProducer()
    txn, seen = _transactions(producer, size=2)
    first = _send(txn, 0, 10)
    producer.on_flush.append(lambda: txn.acked(first, 1, 11))
    _send(txn)  # the second message's report comes while commit_transaction flushes
    assert seen.outcomes() == [hist.TXN_COMMITTED]
    assert seen.targets == [{0: 10, 1: 11}]
    aborted = StandInProducer()
    txn, seen = _transactions(aborted, size=1, abort_ratio=1.0)
    tid = txn.before_send()
    aborted.on_flush.append(lambda: txn.acked(tid, 0, 3))
    txn.after_send()
    assert seen.outcomes() == [hist.TXN_ABORTED] and seen.targets == []


def test_drawn_aborts_follow_the_ratio_and_repeat_for_the_same_producer() -> None:
    def outcomes(name: str) -> list[str]:
        txn, seen = _transactions(StandInProducer(), size=1, abort_ratio=0.3, name=name)
        for _ in range(400):
            _send(txn)
        return seen.outcomes()

    drawn = outcomes("tx")
    aborted = drawn.count(hist.TXN_ABORTED)
    assert 80 <= aborted <= 160, aborted  # 120 expected
    assert outcomes("tx") == drawn
    assert outcomes("other") != drawn


def test_a_retriable_commit_error_is_retried_and_an_abortable_one_aborts() -> None:
    retried = StandInProducer(commits=[_error(KafkaError._TIMED_OUT, retriable=True), None])
    txn, seen = _transactions(retried, size=1)
    _send(txn)
    assert retried.calls == ["begin", "commit", "commit"]
    assert seen.outcomes() == [hist.TXN_COMMITTED]

    refused = StandInProducer(commits=[_error(KafkaError.INVALID_TXN_STATE, txn_requires_abort=True)])
    txn, seen = _transactions(refused, size=1)
    _send(txn, 0, 3)
    assert refused.calls == ["begin", "commit", "abort"]  # no flush: the failed sends end the wait
    assert seen.outcomes() == [hist.TXN_ABORTED]
    assert "INVALID_TXN_STATE" in seen.rows[0][1]["error"]
    assert seen.targets == []


def test_a_fenced_producer_records_unknown_and_stops_transacting() -> None:
    fenced = StandInProducer(commits=[_error(KafkaError.PRODUCER_FENCED, fatal=True)])
    txn, seen = _transactions(fenced, size=1)
    with pytest.raises(TransactionsEnded, match="PRODUCER_FENCED"):
        _send(txn, 0, 5)
    assert seen.outcomes() == [hist.TXN_UNKNOWN]
    row = seen.rows[0][1]
    assert row["end_ts"] is None and row["end_requested_ts"] is not None
    assert seen.targets == []


def test_a_send_refused_as_fenced_closes_the_open_transaction_as_unknown() -> None:
    txn, seen = _transactions(StandInProducer(), size=5)
    txn.before_send()
    with pytest.raises(TransactionsEnded):
        txn.send_failed(_error(KafkaError._FENCED, fatal=True))
    assert seen.outcomes() == [hist.TXN_UNKNOWN]
    assert seen.rows[0][1]["end_requested_ts"] is None

    abortable, seen = _transactions(StandInProducer(), size=5)
    abortable.before_send()
    abortable.send_failed(_error(KafkaError._STATE, txn_requires_abort=True))
    assert seen.outcomes() == [hist.TXN_ABORTED]


def test_a_transactional_producer_spec_round_trips_and_bad_ones_are_refused() -> None:
    spec = ProducerSpec.from_dict({"name": "tx", "zone": "a", "transaction_size": 20, "abort_ratio": 0.25,
                                   "settings": {"transactional.id": "orders"}})
    assert spec.transactional_id == "orders"
    assert ProducerSpec.from_dict(spec.to_dict()) == spec
    assert ProducerSpec("p", "a", transaction_size=3).transactional_id == "kafka-chaos-p"
    assert ProducerSpec("p", "a").transactional_id is None
    for bad, message in (
        ({"abort_ratio": 0.5}, "need a 'transaction_size'"),
        ({"settings": {"transactional.id": "x"}}, "need a 'transaction_size'"),
        ({"transaction_size": 0}, "at least 1"),
        ({"transaction_size": 5, "abort_ratio": 1.5}, "between 0 and 1"),
        ({"rate_per_s": 0}, "positive"),
        ({"transactions": 5}, "unknown key"),
    ):
        with pytest.raises(ValueError, match=message):
            ProducerSpec.from_dict({"name": "p", "zone": "a", **bad})


def test_a_hold_flushes_the_first_full_transaction_due_then_waits_then_commits_it() -> None:
    producer = StandInProducer()
    txn, seen, clock = _holding(producer, Hold(at_s=3.0, for_s=15.0))
    clock.now += 1.0
    _send(txn)
    _send(txn)  # full before the hold is due: committed at once
    clock.now += 2.5  # 3.5 s after init
    held = _send(txn, 0, 20)
    producer.on_flush.append(lambda: txn.acked(held, 1, 21))  # acknowledged by the hold's flush
    producer.on_flush.append(lambda: producer.calls.append("acked"))
    _send(txn)
    assert producer.calls == ["init", "begin", "commit", "begin", "flush", "acked", "wait 15", "commit"]
    assert txn.held == held == "zombie.t2"
    assert seen.outcomes() == [hist.TXN_COMMITTED, hist.TXN_COMMITTED]
    # The commit was asked for after the hold: txn_uncommitted_read judges polls against it.
    assert clock.waited is not None and seen.rows[1][1]["end_requested_ts"] >= clock.waited
    assert seen.targets == [{}, {0: 20, 1: 21}]
    _send(txn)
    _send(txn)  # one hold only
    assert producer.calls[-2:] == ["begin", "commit"]


def test_a_held_zombie_is_fenced_at_its_commit_and_records_it_unknown() -> None:
    fenced = StandInProducer(commits=[_error(KafkaError._FENCED, fatal=True)])
    txn, seen, _ = _holding(fenced, Hold(at_s=0.0, for_s=20.0))
    _send(txn, 0, 5)
    with pytest.raises(TransactionsEnded, match="_FENCED"):
        _send(txn, 1, 6)
    assert fenced.calls == ["init", "begin", "flush", "wait 20", "commit"]
    row = seen.rows[0][1]
    assert row["outcome"] == hist.TXN_UNKNOWN and row["error"].startswith("_FENCED")
    assert row["end_ts"] is None and seen.targets == []


def test_only_a_full_transaction_about_to_be_committed_is_held() -> None:
    aborting = StandInProducer()
    txn, _, _ = _holding(aborting, Hold(at_s=0.0, for_s=20.0), size=1, abort_ratio=1.0)
    _send(txn)
    assert aborting.calls == ["init", "begin", "flush", "abort"] and txn.held is None
    stopping = StandInProducer()
    txn, seen, _ = _holding(stopping, Hold(at_s=0.0, for_s=20.0), size=5)
    _send(txn)
    txn.end()  # the workload stopped with the transaction one message in
    assert stopping.calls == ["init", "begin", "commit"] and txn.held is None
    assert seen.outcomes() == [hist.TXN_COMMITTED]


class StandInClient(StandInProducer):
    """A stand-in the producer loop can run: produce() is noted, poll() only waits, and
    the moment init_transactions was called is kept."""

    def __init__(self) -> None:
        super().__init__()
        self.initialised_at: float | None = None

    def init_transactions(self, timeout: float) -> None:
        self.initialised_at = time.monotonic()
        super().init_transactions(timeout)

    def produce(self, topic: str, **kwargs: Any) -> None:
        self.calls.append("produce")

    def poll(self, timeout: float = 0.0) -> int:
        time.sleep(min(timeout, 0.01))
        return 0

    def __len__(self) -> int:
        return 0

    def close(self) -> None:
        self.calls.append("close")


class _Writer:
    def append(self, table: str, row: Mapping[str, Any]) -> None:
        pass


class _Placement:
    def bootstrap_servers(self, zone: str) -> str:
        return "127.0.0.1:1"


def _loop(spec: ProducerSpec, client: StandInClient, monkeypatch: pytest.MonkeyPatch,
          stop: threading.Event) -> Any:
    monkeypatch.setattr(driver, "make_producer", lambda placement, zone, settings: client)
    return driver._ProducerLoop(spec, _Placement(), "t", [0, 1, 2], driver._Recorder(_Writer()), stop)  # type: ignore[arg-type]


def _until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_late_producer_calls_init_transactions_only_after_start_after_s(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client, stop = StandInClient(), threading.Event()
    loop = _loop(ProducerSpec("fresh", "b", transaction_size=2, start_after_s=0.5), client, monkeypatch, stop)
    started = time.monotonic()
    loop.start()
    try:
        assert _until(lambda: client.initialised_at is not None), client.calls
        assert client.initialised_at is not None and client.initialised_at - started >= 0.5
        assert _until(lambda: "commit" in client.calls), client.calls  # then it transacts as any other
    finally:
        stop.set()
        loop.join(10)
    assert not loop.is_alive() and loop.error is None


def test_a_stop_ends_the_wait_before_start_and_the_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    never, stop = StandInClient(), threading.Event()
    late = _loop(ProducerSpec("fresh", "b", transaction_size=2, start_after_s=600), never, monkeypatch, stop)
    late.start()
    stop.set()
    late.join(10)
    assert not late.is_alive() and never.calls == []  # stopped before it began: nothing called

    held, stop = StandInClient(), threading.Event()
    holding = ProducerSpec("zombie", "a", transaction_size=2, hold_at_s=0, hold_s=600)
    zombie = _loop(holding, held, monkeypatch, stop)
    zombie.start()
    try:
        assert _until(lambda: "flush" in held.calls), held.calls
        time.sleep(0.2)
        assert held.calls[-1] == "flush"  # holding: nothing more is called on the client
    finally:
        stop.set()
        zombie.join(10)
    assert not zombie.is_alive() and zombie.error is None
    assert held.calls[-1] == "commit"  # the stop ended the hold, and the commit went ahead


def test_the_late_start_and_hold_knobs_round_trip_and_wrong_ones_are_refused() -> None:
    zombie = ProducerSpec.from_dict({"name": "zombie", "zone": "a", "transaction_size": 10, "hold_at_s": 3,
                                     "hold_s": 20.5, "settings": {"transactional.id": "shared"}})
    assert zombie.hold == Hold(3.0, 20.5) and zombie.start_after_s is None
    fresh = ProducerSpec("fresh", "b", {"transactional.id": "shared"}, transaction_size=10,
                         start_after_s=12.0)
    for spec in (zombie, fresh, ProducerSpec("late", "c", start_after_s=1.5)):
        assert ProducerSpec.from_dict(spec.to_dict()) == spec
    assert "hold_s" not in fresh.to_dict() and fresh.hold is None
    for bad, message in (
        ({"transaction_size": 5, "hold_at_s": 3}, "'hold_at_s' and 'hold_s' go together"),
        ({"transaction_size": 5, "hold_s": 3}, "'hold_at_s' and 'hold_s' go together"),
        ({"hold_at_s": 3, "hold_s": 10}, "hold a transaction open and need a 'transaction_size'"),
        ({"transaction_size": 5, "hold_at_s": -1, "hold_s": 10},
         "hold_at_s must be a number of seconds, 0 or more"),
        ({"transaction_size": 5, "hold_at_s": 1, "hold_s": 0}, "hold_s must be a positive number"),
        ({"start_after_s": 0}, "start_after_s must be a positive number"),
        ({"start_after_s": float("inf")}, "start_after_s must be a positive number"),
        ({"start_after_s": "soon"}, "start_after_s must be a number of seconds, not 'soon'"),
        ({"start_after_s": True}, "start_after_s must be a number of seconds, not True"),
    ):
        with pytest.raises(ValueError, match=message):
            ProducerSpec.from_dict({"name": "p", "zone": "a", **bad})


class _FlushRaises:
    """A producer whose flush raises ``error`` (librdkafka raises a fatal error, such as
    being fenced, from every flush after it), then holds nothing."""

    def __init__(self, error: KafkaException) -> None:
        self.error = error
        self.closed = False

    def flush(self, timeout: float) -> int:
        raise self.error

    def __len__(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


def _drained(error: KafkaException, transactional: bool) -> _FlushRaises:
    producer = _FlushRaises(error)
    txn = object() if transactional else None
    loop = type("Loop", (), {"closed": False, "producer": producer, "txn": txn})()
    driver._ProducerLoop.drain(loop, 1.0)
    return producer


def test_a_fenced_transactional_producer_drains_and_closes_though_its_flush_raises() -> None:
    producer = _drained(_error(KafkaError._FENCED, fatal=True), transactional=True)
    assert producer.closed


@pytest.mark.parametrize(("fatal", "transactional"), [(False, True), (True, False)])
def test_any_other_error_from_a_drains_flush_is_raised(fatal: bool, transactional: bool) -> None:
    with pytest.raises(KafkaException):
        _drained(_error(KafkaError._FENCED, fatal=fatal), transactional=transactional)
