"""A transactional producer's bookkeeping, over a stand-in for librdkafka's producer: which
outcome each transaction is recorded with, which acknowledged offsets become read targets,
and the producer specs that declare it. The real thing runs against Kafka in the chaos
suite; these pin the rules that decide what the history says."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness import history as hist
from harness.workload.driver import ProducerSpec
from harness.workload.transactional import Transactions, TransactionsEnded


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
