"""The group sweep (spark_jobs/group_sweep.py) on record batches, as mapInArrow hands them
over: no Spark. Each case is worked out from docs/HISTORY.md's definitions; the Spark
judge runs the same code on hand-written and synthetic histories in test_group_kinds.py."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from spark_jobs import group_sweep as gs

TP = 5  # a packed partition


def _row(src: int, offset: int, **given: Any) -> dict[str, Any]:
    return {
        "src": src,
        "grp": None,
        "consumer_id": None,
        "assignment": None,
        "tp": TP,
        "offset": offset,
        "poll_seq": None,
        "ts": None,
        **given,
    }


def _read(consumer: str, seq: int, offset: int, assignment: int | None = 0) -> dict[str, Any]:
    return _row(
        gs.READ, offset, grp="g", consumer_id=consumer, assignment=assignment, poll_seq=seq, ts=float(seq)
    )


def _commit(offset: int, ts: float) -> dict[str, Any]:
    return _row(gs.COMMIT, offset, grp="g", consumer_id="a", ts=ts)


def _held(*offsets: int) -> list[dict[str, Any]]:
    return [_row(src, o) for o in offsets for src in (gs.ACKED, gs.LOGGED)]


def _judge(rows: list[dict[str, Any]], examples: int = 5) -> dict[str, list[tuple[int, int, int]]]:
    """kind -> [(offset shown, its count, the kind's total)] in rank order, through the
    mapInArrow function in two batches (a task's rows arrive in pieces)."""
    table = pa.Table.from_pylist(rows, schema=gs.INPUT)
    half = len(rows) // 2
    batches = table.slice(0, half).to_batches() + table.slice(half).to_batches()
    out: dict[str, list[tuple[int, int, int]]] = {}
    for batch in gs.judge_batches(examples)(batches):
        for r in sorted(batch.to_pylist(), key=lambda r: (r["kind"], r["rank"])):
            out.setdefault(r["kind"], []).append((r["at"], r["n"], r["total"]))
    return out


def test_gaps_backward_reads_regressions_and_early_commits() -> None:
    rows = _held(*range(10))
    rows += [_read("a", s, o) for s, o in enumerate([0, 1, 2, 5, 4])]  # skips 3-4, then goes back
    rows += [_row(gs.ASSIGNED, 0, grp="g", consumer_id="a", assignment=0)]
    # 6 right after reading up to 5: sound; then 3 (below 6: a regression); then 9 (7 and 8
    # never read, and they held records: committed beyond the read).
    rows += [_commit(6, 10.0), _commit(3, 11.0), _commit(9, 12.0)]
    assert _judge(rows) == {
        "poll_skip": [(3, 2, 2)],
        "nonmonotonic_poll": [(4, 1, 1)],
        "commit_regression": [(3, 1, 1)],
        "commit_beyond_read": [(9, 1, 1)],
    }


def test_a_first_read_is_judged_from_the_resume_offset() -> None:
    rows = _held(*range(10))
    rows += [_row(gs.ASSIGNED, 6, grp="g", consumer_id="a", assignment=1)]
    rows += [_read("a", 0, 8, assignment=1)]  # resumed at 6, first read 8: 6 and 7 skipped
    rows += [_read("b", 0, 4, assignment=0)]  # no assigned row: from the log start, 0-3 skipped
    assert _judge(rows) == {"poll_skip": [(0, 4, 6), (6, 2, 6)]}


def test_only_acknowledged_offsets_count_as_skipped_but_any_record_makes_a_commit_early() -> None:
    rows = [_row(gs.LOGGED, o) for o in (1, 2)]  # on the log, never acknowledged
    rows += [_row(gs.ACKED, 0), _row(gs.LOGGED, 0)]
    # The read gap 0 -> 3 passed over no acknowledged offset; the commit of 3 at 0.5 s,
    # when only 0 had been read, passed over two records.
    rows += [_read("a", 0, 0), _read("a", 1, 3), _commit(3, 0.5)]
    assert _judge(rows) == {"commit_beyond_read": [(3, 1, 1)]}


def test_a_read_at_the_commits_time_counts_as_read_before_it() -> None:
    rows = [*_held(*range(4)), _read("a", 0, 0), _read("a", 1, 1), _commit(2, 1.0)]
    assert _judge(rows) == {}


def test_examples_are_capped_and_the_total_kept() -> None:
    rows = _held(*range(30))
    rows += [_read("a", s, o) for s, o in enumerate(range(0, 30, 3))]  # nine gaps of two
    assert _judge(rows, examples=2) == {"poll_skip": [(1, 2, 18), (4, 2, 18)]}


def test_no_rows_give_no_batch() -> None:
    assert list(gs.judge_batches(5)([])) == []
