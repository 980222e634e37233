"""Edges of the JVM sweep that generated histories do not reach: a block whose seqs are too
far apart to pack (the comparison-sort path) and thousands of one-message blocks (the
grouping table grows). Judged directly on event rows, against what plan.judged says."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import Row, SparkSession

from spark_jobs import plan
from spark_jobs.session import build_session

TP = 1  # topic 0, partition 0
CLEAN = plan.SEND | plan.ACKED


def at(offset: int) -> int:
    return (TP << plan.OFFSET_BITS) | (offset + 1)


def message(pb: int, seq: int, offset: int) -> list[tuple[int, int, int, int]]:
    """A message sent and acknowledged at ``offset``, on the final log there and polled."""
    return [(pb, seq, at(offset), CLEAN), (pb, seq, at(offset), plan.LOG), (pb, seq, at(offset), plan.POLL)]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", {"spark.driver.memory": "1g"})
    yield session
    session.stop()


def judge(spark: SparkSession, rows: list[tuple[int, int, int, int]]) -> list[Row]:
    events = spark.createDataFrame(rows, "PB long, S long, pos long, f int")
    return sorted(plan.judged(spark, events, 3).collect(), key=lambda r: (r.PB, r.S))


def test_seqs_too_far_apart_to_pack_are_still_judged_in_seq_order(spark: SparkSession) -> None:
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
    rows = [*message(9, 1, 3), (9, 1, at(3), plan.POLL), (9, 1, at(8), plan.POLL)]
    (out,) = judge(spark, rows)
    assert (out.n_log, out.truncated, out.trunc_first, out.duplicate) == (1, 1, at(8), 0)
    assert out.f & plan.POLL_OFF_LOG and not out.f & plan.ACK_OFF_LOG
