"""Edges of the sweep (spark_jobs/sweep.py) that generated histories do not reach: seqs
too far apart to share a block, thousands of one-message blocks, rows of one message
merged by position, and a task's rows arriving in many Arrow batches, with a block cut
between two of them. Judged directly on event rows, against what plan.judged says; the
batching tests need no Spark at all."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import Row, SparkSession

from spark_jobs import plan, sweep

TP = 1  # topic 0, partition 0
CLEAN = sweep.SEND | sweep.ACKED
Event = tuple[int, int, int | None, int]


def at(offset: int, tp: int = TP) -> int:
    return (tp << sweep.OFFSET_BITS) | (offset + 1)


def message(pb: int, seq: int, offset: int, tp: int = TP) -> list[Event]:
    """A message sent and acknowledged at ``offset``, on the final log there and polled."""
    where = at(offset, tp)
    return [(pb, seq, where, CLEAN), (pb, seq, where, sweep.LOG), (pb, seq, where, sweep.POLL)]


def judge(spark: SparkSession, rows: list[Event]) -> list[Row]:
    events = spark.createDataFrame(rows, "PB long, S long, pos long, f int")
    return sorted(plan.judged(events, 3).collect(), key=lambda r: (r.PB, r.S))


def test_seqs_far_apart_are_judged_in_seq_order(spark: SparkSession) -> None:
    far = 1 << 40
    rows = message(5, 0, 10) + message(5, 7, 11) + message(5, far, 4)
    out = judge(spark, rows)
    assert [(r.S, r.head, r.tail, r.reordered, r.prev_seq) for r in out] == [
        (0, True, False, 0, None),
        (far, False, True, 1, 7),  # at offset 4, below seq 7 at offset 11
    ]


def test_thousands_of_one_message_blocks_each_head_and_tail(spark: SparkSession) -> None:
    rows = [row for pb in range(5000) for row in message(pb * 7919, 3, pb)]
    out = judge(spark, rows)
    assert len(out) == 5000
    assert all(r.head and r.tail and r.n_log == 1 and r.reordered == 0 for r in out)
    assert sum(r.lost + r.duplicate + r.unseen for r in out) == 0


def test_rows_of_one_message_merge_by_position(spark: SparkSession) -> None:
    # Polled at its position twice, plus once at a position the log does not give it.
    rows = [*message(9, 1, 3), (9, 1, at(3), sweep.POLL), (9, 1, at(8), sweep.POLL)]
    (out,) = judge(spark, rows)
    assert (out.n_log, out.truncated, out.trunc_first, out.duplicate) == (1, 1, at(8), 0)
    assert out.f & sweep.POLL_OFF_LOG and not out.f & sweep.ACK_OFF_LOG


def test_a_copy_in_another_partition_takes_part_in_its_order(spark: SparkSession) -> None:
    # Seq 2's copy in partition 1 sits below seq 1 there: one reorder, in that partition,
    # as an extra row with no counts of its own; the message itself is one duplicate.
    other = TP + 1
    rows = message(3, 0, 0) + message(3, 1, 5, other) + message(3, 2, 1) + [(3, 2, at(4, other), sweep.LOG)]
    out = judge(spark, rows)
    extra = [r for r in out if r.n_log == 0]
    assert [(r.S, r.log_tp, r.reordered, r.prev_seq, r.f) for r in extra] == [(2, other, 1, 1, 0)]
    (own,) = [r for r in out if r.S == 2 and r.n_log]
    assert (own.duplicate, own.reordered, own.log_tp, own.tp) == (1, 0, TP, TP)


def _batches(rows: list[Event], size: int) -> list[pa.RecordBatch]:
    ordered = sorted(rows, key=lambda r: r[0])  # as sortWithinPartitions("PB") leaves them
    batches = []
    for i in range(0, len(ordered), size):
        part = ordered[i : i + size]
        batches.append(
            pa.RecordBatch.from_arrays(
                [pa.array([r[k] for r in part], t) for k, t in enumerate(sweep_types())],
                names=list(sweep.INPUT_COLUMNS),
            )
        )
    return batches


def sweep_types() -> list[pa.DataType]:
    return [pa.int64(), pa.int64(), pa.int64(), pa.int32()]


def _rows(batches: Iterator[pa.RecordBatch]) -> list[dict[str, object]]:
    table = pa.Table.from_batches(list(batches), schema=sweep.OUTPUT)
    return sorted(table.to_pylist(), key=lambda r: (r["PB"], r["S"], r["log_tp"]))


def test_batches_cut_inside_a_block_judge_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """However a task's rows are cut into batches and chunks, a block is judged whole:
    the reorders, heads and tails are those of one call on all the rows."""
    rng = np.random.default_rng(7)
    rows: list[Event] = []
    for pb in range(6):
        offsets = rng.permutation(40)  # every block heavily reordered
        for seq, offset in enumerate(offsets):
            rows += message(pb, seq, int(offset), TP + seq % 2)
    rows.append((2, 99, None, sweep.SEND | sweep.UNKNOWN))  # a null position
    whole = _rows(iter([sweep.judge_rows(*sweep._columns(_batches(rows, len(rows))[0]))]))
    assert sum(int(str(r["reordered"])) for r in whole) > 20
    for chunk, size in ((50, 7), (1, 1), (200, 64)):
        monkeypatch.setattr(sweep, "CHUNK_ROWS", chunk)
        assert _rows(sweep.judge_batches(_batches(rows, size))) == whole, (chunk, size)


def test_never_sent_records_list_where_they_were_seen() -> None:
    ghost: list[Event] = [
        (77, -1, at(4), sweep.LOG), (77, -1, at(4), sweep.POLL), (77, -1, at(9), sweep.POLL)
    ]
    (row,) = _rows(sweep.judge_batches(_batches(ghost, 2)))
    assert row["unexpected"] == 2 and row["truncated"] == 0 and row["head"] is False
    assert row["unexpected_at"] == [{"pos": at(4), "on_log": True}, {"pos": at(9), "on_log": False}]
    assert row["P"] == 77 ^ -1 and row["blk"] == -1


def test_no_rows_give_no_batches() -> None:
    assert list(sweep.judge_batches([])) == []
    assert sweep.judge_rows(*(np.empty(0, np.int64) for _ in range(4))).num_rows == 0
