"""The transaction sweep (spark_jobs/txn_sweep.py) on record batches, as mapInArrow hands
them over, and the driver's merge of the tasks' findings: no Spark. Each case is worked
out from docs/HISTORY.md's definitions; the Spark judge runs the same code on
hand-written and synthetic histories in test_txn_kinds.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")  # transactions.py builds its plan with pyspark's API

from spark_jobs import txn_sweep as ts
from spark_jobs.sweep import OFFSET_BITS
from spark_jobs.transactions import merged

P = 77  # the transactional producer's hash
TP = 4  # the partition its sends name, packed


def _pos(offset: int, tp: int = TP) -> int:
    return (tp << OFFSET_BITS) | (offset + 1)


def _row(src: int, seq: int, **given: Any) -> dict[str, Any]:
    return {name: None for name in ts.INPUT.names} | {"src": src, "P": P, "S": seq} | given


def _message(seq: int, tid: str, committed: bool = True, end_req: float = 10.0) -> dict[str, Any]:
    return _row(
        ts.MESSAGE,
        seq,
        tid=tid,
        committed=committed,
        end_req=end_req,
        producer_id="tx",
        aimless=False,
        send_tp=TP,
        ack_pos=_pos(seq),
        ack_ts=1.0,
    )


def _log(seq: int, rc: bool | None = True) -> dict[str, Any]:
    return _row(ts.LOG, seq, pos=_pos(seq), rc=rc)


def _poll(seq: int, who: str, iso: str, at: float) -> dict[str, Any]:
    return _row(ts.POLL, seq, pos=_pos(seq), who=who, iso=iso, ts=at)


def _judge(rows: list[dict[str, Any]], examples: int = 5) -> dict[int, list[tuple[Any, ...]]]:
    """kind -> [(offset, message, task's count, reader, early reader)] by offset."""
    table = pa.Table.from_pylist(rows, schema=ts.INPUT)
    out: dict[int, list[tuple[Any, ...]]] = {}
    for batch in ts.judge_batches(examples)(table.to_batches(max_chunksize=2)):
        for r in batch.to_pylist():
            out.setdefault(r["kind"], []).append(
                (r["o"], r["message_id"], r["total"], r["reader"], r["early_reader"])
            )
    return {k: sorted(v, key=lambda x: (x[0] is None, x[0] or 0)) for k, v in out.items()}


def test_each_kind_on_its_message() -> None:
    rows = [_message(0, "t1"), _message(1, "t1"), _log(0), _log(1, rc=False)]  # 1 of 2 readable
    rows += [_message(2, "t2", committed=False), _poll(2, "c", "read_uncommitted", 3.0)]  # aborted, read
    rows += [_message(3, "t3"), _log(3), _poll(3, "d", "read_committed", 5.0)]  # read before commit asked
    rows += [_message(4, "t4")]  # committed, nothing of it on the log
    rows += [_message(5, "t5"), _log(5), _poll(5, "d", "read_committed", 11.0)]  # sound
    assert _judge(rows) == {
        ts.PARTIAL: [(1, "tx-1", 1, None, None)],
        ts.ABORTED_READ: [(2, "tx-2", 1, "c", None)],
        ts.UNCOMMITTED_READ: [(3, "tx-3", 1, "d", "d")],
        ts.LOST: [(4, "tx-4", 1, None, None)],
    }


def test_a_null_read_committed_flag_counts_as_readable_and_an_aborted_drain_copy_is_a_read() -> None:
    rows = [_message(0, "t1"), _log(0, rc=None)]  # no read_committed drain: readable
    rows += [_message(1, "t2", committed=False), _log(1, rc=True)]  # the drain was given it
    assert _judge(rows) == {ts.ABORTED_READ: [(1, "tx-1", 1, None, None)]}


def test_a_transaction_counts_once_however_many_of_its_messages_are_missing() -> None:
    rows = [_message(s, "t1") for s in range(3)]
    assert _judge(rows) == {ts.LOST: [(0, "tx-0", 1, None, None)]}


def test_the_driver_sums_the_tasks_counts_and_keeps_the_first_examples() -> None:
    def row(task: int, o: int | None, s: int, total: int) -> SimpleNamespace:
        fields = {"home": TP, "kind": ts.LOST, "task": task, "total": total, "o": o, "P": P, "S": s}
        return SimpleNamespace(asDict=lambda f=fields: dict(f), **fields)

    rows = [row(1, 5, 0, 2), row(1, None, 1, 2), row(2, 3, 2, 3), row(2, 9, 3, 3), row(2, 4, 4, 3)]
    got = merged(rows, examples=3)
    assert [(r.o, r.rank, r.total) for r in got] == [(3, 1, 5), (4, 2, 5), (5, 3, 5)]


def test_no_rows_give_no_batch() -> None:
    assert list(ts.judge_batches(5)([])) == []
