"""Counting the offsets that held a record inside many offset spans, by sorted search.

The group pass (``groups.py``) asks, for every read gap, first read above its resume
offset and early commit, how many distinct offsets strictly inside a span lo..hi-1 of one
partition held a record, and which came first. Why it is done here and not by a join:

* A span's bounds are a range, not a key. Joined on the partition with the range as a
  condition, every offset row is tested against every span of its partition: quadratic.
  A group reading a transactional partition passes over a control record every few
  offsets, so a history of 100k sends had 8,700 spans, and 10M sends would have had
  hundreds of thousands against millions of offsets: a join that never ends.
* Here each task holds whole partitions (the rows are hash-partitioned by ``tp``), sorts
  each partition's distinct offsets once, and answers every span with two binary searches
  (``np.searchsorted``): n log n whatever the spans' number and width.
* Public PySpark API only (``mapInArrow``) and plain numpy, like the main pass's sweep, so
  it runs under Spark Connect too and the rule is unit-testable on record batches.

Input rows (``INPUT``): an offset that held a record (``span`` null; ``acked`` says
whether it was an acknowledged one), or a span (``span`` its id, lo, hi, and ``acked``
true when only acknowledged offsets count). Output: per span with at least one counted
offset, its id, how many distinct offsets counted and the lowest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from spark_jobs.sweep import OFFSET_BITS

_OFFSET_MASK = (1 << OFFSET_BITS) - 1

INPUT = pa.schema(
    [("tp", pa.int32()), ("o", pa.int64()), ("acked", pa.bool_()), ("span", pa.int64()), ("lo", pa.int64()),
     ("hi", pa.int64())]
)
OUTPUT = pa.schema([("span", pa.int64()), ("counted", pa.int64()), ("first", pa.int64())])
OUTPUT_DDL = "span bigint, counted bigint, first bigint"


def _column(table: pa.Table, name: str, fill: int) -> np.ndarray:
    col = table.column(name)
    if col.null_count:
        col = col.fill_null(fill)
    return np.asarray(col.to_numpy(zero_copy_only=False))


def count_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function: a task's rows, whole partitions of them, in any order."""
    table = pa.Table.from_batches(list(batches), schema=INPUT)
    if table.num_rows:
        yield count(
            _column(table, "tp", -1).astype(np.int64),
            _column(table, "o", 0),
            _column(table, "acked", False).astype(bool),
            _column(table, "span", -1),
            _column(table, "lo", 0),
            _column(table, "hi", 0),
        )


def count(
    tp: np.ndarray, o: np.ndarray, acked: np.ndarray, span: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> pa.RecordBatch:
    """The spans' counts: ``span`` -1 marks an offset row (tp, o, acked), any other value a
    span (tp, lo, hi, acked: only acknowledged offsets count). Offsets and spans of one
    partition are answered together; distinct offsets are counted once however many rows
    held them."""
    is_span = span >= 0
    # Each offset as a key within its partition: (tp, o) packed so one sorted array serves
    # every partition, as the main pass packs positions (plan.pack).
    shift = np.int64(OFFSET_BITS)
    held = ~is_span
    keys_all = np.unique((tp[held] << shift) | o[held])
    keys_acked = np.unique((tp[held & acked] << shift) | o[held & acked])
    s_tp, s_lo, s_hi, s_acked = tp[is_span], lo[is_span], hi[is_span], acked[is_span]
    out_span = span[is_span]
    lo_key = (s_tp << shift) | np.clip(s_lo, 0, _OFFSET_MASK)
    hi_key = (s_tp << shift) | np.clip(s_hi, 0, _OFFSET_MASK)
    counted = np.zeros(len(out_span), dtype=np.int64)
    first = np.zeros(len(out_span), dtype=np.int64)
    for keys, mine in ((keys_acked, s_acked), (keys_all, ~s_acked)):
        if not mine.any() or not len(keys):
            continue
        start = np.searchsorted(keys, lo_key[mine], side="left")
        end = np.searchsorted(keys, hi_key[mine], side="left")
        n = np.where(s_hi[mine] > s_lo[mine], end - start, 0)
        counted[mine] = n
        first[mine] = keys[np.minimum(start, len(keys) - 1)] & _OFFSET_MASK
    found = counted > 0
    return pa.RecordBatch.from_arrays(
        [pa.array(out_span[found]), pa.array(counted[found]), pa.array(first[found])], schema=OUTPUT
    )
