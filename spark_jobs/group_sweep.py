"""The consumer-group kinds as one vectorised sweep over whole partitions' rows.

``groups.py`` shuffles a partition's group reads, committed commits, 'assigned' rebalance
rows and the offsets that held a record into one task (hash-partitioned by ``tp``); this
module judges them there with numpy and hands back only the ranked findings. Why a sweep
and not windows: the windows over (group, partition) sorted by string keys, three of them,
then a shuffle for the span counts and a window to rank, cost seconds of planning and
sorting on a history of 100k records (the judge's budget for a typical scenario is one
second); here each is a sort by integer codes and a few array passes.

Input (``INPUT``), one row per fact, ``src`` saying which:

* ``READ``: a group member's read (grp, consumer_id, assignment, tp, offset, poll_seq, ts);
* ``COMMIT``: a committed offset (grp, tp, offset, ts; consumer_id and assignment for the
  examples only);
* ``ASSIGNED``: an 'assigned' rebalance row, its resume offset in ``offset`` (0 when null:
  nothing committed, the member starts at the log start);
* ``ACKED`` / ``LOGGED``: an offset of ``tp`` that held an acknowledged record / a record
  the read_committed drain was given.

The rules are docs/HISTORY.md's, in the order ``groups.py`` documents them. Pure numpy and
pyarrow, so it is unit-testable on record batches and runs wherever ``mapInArrow`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history.kinds import Family, code, kinds_of, of_code
from spark_jobs import spans
from spark_jobs.sweep_kit import ddl, numpy_of, per_task, run_starts

READ, COMMIT, ASSIGNED, ACKED, LOGGED = 0, 1, 2, 3, 4
# Candidate codes: each kind's registry code, and FIRST, poll_skip's second form (a member's
# first read of a partition in an assignment above its resume offset; GAP is a forward jump
# between two of its reads), on a code of its own past the family's.
GAP = code("poll_skip")
NONMONO = code("nonmonotonic_poll")
REGRESSION = code("commit_regression")
EARLY = code("commit_beyond_read")
FIRST = len(kinds_of(Family.GROUPS))
KIND_OF = {**{code(k): k for k in kinds_of(Family.GROUPS)}, FIRST: of_code(Family.GROUPS, GAP)}

INPUT = pa.schema(
    [
        ("src", pa.int32()),
        ("grp", pa.string()),
        ("consumer_id", pa.string()),
        ("assignment", pa.int64()),
        ("tp", pa.int32()),
        ("offset", pa.int64()),
        ("poll_seq", pa.int64()),
        ("ts", pa.float64()),
    ]
)
OUTPUT = pa.schema(
    [
        ("c", pa.int32()),
        ("kind", pa.string()),
        ("grp", pa.string()),
        ("consumer_id", pa.string()),
        ("assignment", pa.int64()),
        ("tp", pa.int32()),
        ("offset", pa.int64()),
        ("prev", pa.int64()),
        ("lo", pa.int64()),
        ("first", pa.int64()),
        ("n", pa.int64()),
        ("at", pa.int64()),
        ("rank", pa.int64()),
        ("total", pa.int64()),
    ]
)
OUTPUT_DDL = ddl(OUTPUT)

_LOWEST = np.iinfo(np.int64).min  # a null sorts first, as Spark's ascending order puts it
_NONE = -1  # "no value" in prev / lo / first: offsets are never negative


def _ints(table: pa.Table, name: str, null: int) -> np.ndarray:
    return numpy_of(table.column(name), null).astype(np.int64)


def _codes(table: pa.Table, name: str) -> tuple[np.ndarray, pa.Array]:
    """Dense integer codes of a string column (null its own code), and the dictionary to
    turn codes back into strings: sorting codes is what sorting the strings' groups needs."""
    encoded = pc.dictionary_encode(table.column(name).combine_chunks(), null_encoding="encode")
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False)).astype(np.int64), encoded.dictionary


def _previous(offset: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Each sorted row's predecessor's offset within its run (``_NONE`` for a run's first)."""
    prev = np.empty_like(offset)
    prev[0:1] = _NONE
    prev[1:] = offset[:-1]
    prev[start] = _NONE
    return prev


def _running_max(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Cumulative maximum of non-negative ``values`` (or -1) restarting at each run: each
    run is lifted above all earlier ones, so one ``maximum.accumulate`` serves them all."""
    run = np.cumsum(start) - 1
    lift = run.astype(np.int64) << np.int64(41)  # offsets are below 2**40 (plan.OFFSET_BITS)
    return np.maximum.accumulate(lift + values + 1) - lift - 1


def judge_table(table: pa.Table, examples: int) -> pa.RecordBatch:
    """The ranked group findings of whole partitions' rows (any order): per (tp, kind) the
    first ``examples`` by (offset shown, then who), each carrying the kind's total there."""
    src = _ints(table, "src", -1)
    tp = _ints(table, "tp", -1)
    offset = _ints(table, "offset", _NONE)
    grp, grp_names = _codes(table, "grp")
    consumer, consumer_names = _codes(table, "consumer_id")
    assignment = _ints(table, "assignment", _LOWEST)
    poll_seq = _ints(table, "poll_seq", _LOWEST)
    ts = table.column("ts").fill_null(-np.inf).to_numpy()

    found: list[dict[str, np.ndarray]] = []
    spans_in: list[dict[str, np.ndarray]] = []

    # A member's reads of a partition in one assignment, in the order it received them.
    r = np.flatnonzero(src == READ)
    r = r[np.lexsort((offset[r], ts[r], poll_seq[r], assignment[r], consumer[r], tp[r], grp[r]))]
    start = run_starts(grp[r], tp[r], consumer[r], assignment[r])
    prev = _previous(offset[r], start)
    has_prev = prev != _NONE
    nonmono = has_prev & (offset[r] <= prev)
    found.append(_rows(NONMONO, r[nonmono], prev[nonmono], None, offset[r][nonmono]))
    gap = has_prev & (offset[r] > prev + 1)
    spans_in.append(_rows(GAP, r[gap], prev[gap], prev[gap] + 1))
    first = r[start]
    resume = _resume(first, src, grp, consumer, assignment, tp, offset)
    spans_in.append(_rows(FIRST, first, np.full(len(first), _NONE), resume))

    # The group's commits of a partition in (ts, offset) order, and the group's highest
    # read at or before each (a read at the same time counts: it came first).
    both = np.flatnonzero((src == READ) | (src == COMMIT))
    both = both[np.lexsort((offset[both], src[both], ts[both], tp[both], grp[both]))]
    run = run_starts(grp[both], tp[both])
    highest = _running_max(np.where(src[both] == READ, offset[both], -1), run)
    is_commit = src[both] == COMMIT
    c = both[is_commit]
    m = highest[is_commit]
    c_start = run_starts(grp[c], tp[c])
    c_prev = _previous(offset[c], c_start)
    regression = (c_prev != _NONE) & (offset[c] < c_prev)
    found.append(_rows(REGRESSION, c[regression], c_prev[regression], None, offset[c][regression]))
    early = offset[c] > m + 1
    spans_in.append(_rows(EARLY, c[early], c_prev[early], m[early] + 1))

    # Read gaps, first reads above their resume offset and early commits count the offsets
    # they passed over (two binary searches each, spans.py); those that passed none go.
    cand = {k: np.concatenate([s[k] for s in spans_in]) for k in spans_in[0]}
    hi = offset[cand["row"]]
    wide = hi > cand["lo"]
    cand = {k: v[wide] for k, v in cand.items()}
    held = (src == ACKED) | (src == LOGGED)
    counted, lowest = spans.count(
        tp[held],
        offset[held],
        src[held] == ACKED,
        tp[cand["row"]],
        cand["lo"],
        offset[cand["row"]],
        cand["c"] != EARLY,
    )
    passed = counted > 0
    cand = {k: v[passed] for k, v in cand.items()}
    cand["n"] = np.where(cand["c"] == EARLY, 1, counted[passed])
    cand["first"] = lowest[passed]
    cand["at"] = np.where(cand["c"] == EARLY, offset[cand["row"]], lowest[passed])
    for f in found:
        f["n"] = np.ones(len(f["row"]), dtype=np.int64)
        f["first"] = np.full(len(f["row"]), _NONE)
    out = {k: np.concatenate([f[k] for f in found] + [cand[k]]) for k in cand}
    return _ranked(out, examples, tp, offset, grp, grp_names, consumer, consumer_names, assignment)


def _rows(
    code: int, rows: np.ndarray, prev: np.ndarray, lo: np.ndarray | None, at: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Candidates of one code: their input rows, the offset before them (``_NONE``: none),
    where the span they passed over starts (``None``: no span) and the offset a finding
    is shown at (a span's is known once it is counted)."""
    none = np.full(len(rows), _NONE, dtype=np.int64)
    return {
        "c": np.full(len(rows), code, dtype=np.int64),
        "row": rows,
        "prev": prev.astype(np.int64),
        "lo": none if lo is None else lo.astype(np.int64),
        "at": none if at is None else at.astype(np.int64),
    }


def _resume(
    first: np.ndarray,
    src: np.ndarray,
    grp: np.ndarray,
    consumer: np.ndarray,
    assignment: np.ndarray,
    tp: np.ndarray,
    offset: np.ndarray,
) -> np.ndarray:
    """Where each first read's member had to start: the lowest resume offset of its
    'assigned' rows for the partition and assignment (the most it may have skipped), 0
    with none. Rebalance rows are few: a dict does."""
    lowest: dict[tuple[int, int, int, int], int] = {}
    for i in np.flatnonzero(src == ASSIGNED):
        key = (int(grp[i]), int(consumer[i]), int(assignment[i]), int(tp[i]))
        value = max(int(offset[i]), 0)
        lowest[key] = min(lowest.get(key, value), value)
    return np.array(
        [lowest.get((int(grp[i]), int(consumer[i]), int(assignment[i]), int(tp[i])), 0) for i in first],
        dtype=np.int64,
    )


def _ranked(
    out: dict[str, np.ndarray],
    examples: int,
    tp: np.ndarray,
    offset: np.ndarray,
    grp: np.ndarray,
    grp_names: pa.Array,
    consumer: np.ndarray,
    consumer_names: pa.Array,
    assignment: np.ndarray,
) -> pa.RecordBatch:
    """Per (tp, kind): the findings' total count, and the first ``examples`` by the offset
    shown, ties broken by who (group, member, assignment) and where they read."""
    row = out["row"]
    kind = np.where(np.isin(out["c"], (GAP, FIRST)), GAP, out["c"])  # poll_skip's two codes
    order = np.lexsort((offset[row], assignment[row], consumer[row], grp[row], out["at"], kind, tp[row]))
    start = run_starts(tp[row][order], kind[order])
    run = np.cumsum(start) - 1
    rank = np.arange(len(order)) - np.flatnonzero(start)[run] + 1 if len(order) else np.zeros(0, np.int64)
    totals = np.add.reduceat(out["n"][order], np.flatnonzero(start)) if len(order) else np.zeros(0, np.int64)
    keep = order[rank <= examples]
    kept_rank = rank[rank <= examples]
    kept_total = totals[run[rank <= examples]] if len(order) else np.zeros(0, np.int64)
    rows = row[keep]
    nullable = {"prev": out["prev"][keep], "lo": out["lo"][keep], "first": out["first"][keep]}
    codes = out["c"][keep]
    a = assignment[rows]
    return pa.RecordBatch.from_arrays(
        [
            pa.array(codes.astype(np.int32)),
            pa.array([KIND_OF[int(k)] for k in codes], pa.string()),
            grp_names.take(pa.array(grp[rows])),
            consumer_names.take(pa.array(consumer[rows])),
            pa.array(a, mask=a == _LOWEST),
            pa.array(tp[rows].astype(np.int32)),
            pa.array(offset[rows]),
            *(pa.array(v, mask=v == _NONE) for v in nullable.values()),
            pa.array(out["n"][keep]),
            pa.array(out["at"][keep]),
            pa.array(kept_rank.astype(np.int64)),
            pa.array(kept_total.astype(np.int64)),
        ],
        schema=OUTPUT,
    )


def judge_batches(examples: int) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow``'s function: a task's rows, whole partitions of them, in any order."""
    return per_task(judge_table, examples)
