"""Counting the offsets that held a record inside many offset spans, by sorted search.

The group pass (``groups.py``) asks, for every read gap, first read above its resume
offset and early commit, how many distinct offsets strictly inside a span lo..hi-1 of one
partition held a record, and which came first. Why it is done here and not by a join:

* A span's bounds are a range, not a key. Joined on the partition with the range as a
  condition, every offset row is tested against every span of its partition: quadratic.
  A group reading a transactional partition passes over a control record every few
  offsets, so a history of 100k sends had 8,700 spans, and 10M sends would have had
  hundreds of thousands against millions of offsets: a join that never ends.
* Here the group sweep's task holds whole partitions (``group_sweep.py``), sorts their
  distinct offsets once, and answers every span with two binary searches
  (``np.searchsorted``): n log n whatever the spans' number and width.
* Plain numpy on arrays, so the rule is unit-testable without Spark.
"""

from __future__ import annotations

import numpy as np

from spark_jobs.sweep import OFFSET_BITS

_OFFSET_MASK = (1 << OFFSET_BITS) - 1


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values: a sort and a neighbour test. ``np.unique`` (numpy 2.3
    on) hashes instead, about 20 times slower on millions of distinct longs."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def count(
    held_tp: np.ndarray,
    held_offset: np.ndarray,
    held_acked: np.ndarray,
    span_tp: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    only_acked: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per span (``span_tp``, lo..hi-1; ``only_acked``: only acknowledged offsets count),
    how many distinct offsets of its partition that held a record (``held_*``: partition,
    offset, whether acknowledged) lie inside it, and the lowest of them (meaningless where
    the count is 0). An offset held by several rows counts once."""
    shift = np.int64(OFFSET_BITS)
    # Each offset as a key within its partition: (tp, o) packed so one sorted array serves
    # every partition, as the main pass packs positions (plan.pack).
    held_tp = held_tp.astype(np.int64)
    keys_all = distinct((held_tp << shift) | held_offset)
    keys_acked = distinct((held_tp[held_acked] << shift) | held_offset[held_acked])
    span_tp = span_tp.astype(np.int64)
    lo_key = (span_tp << shift) | np.clip(lo, 0, _OFFSET_MASK)
    hi_key = (span_tp << shift) | np.clip(hi, 0, _OFFSET_MASK)
    counted = np.zeros(len(lo), dtype=np.int64)
    first = np.zeros(len(lo), dtype=np.int64)
    for keys, mine in ((keys_acked, only_acked), (keys_all, ~only_acked)):
        if not mine.any() or not len(keys):
            continue
        start = np.searchsorted(keys, lo_key[mine], side="left")
        end = np.searchsorted(keys, hi_key[mine], side="left")
        counted[mine] = np.where(hi[mine] > lo[mine], end - start, 0)
        first[mine] = keys[np.minimum(start, len(keys) - 1)] & _OFFSET_MASK
    return counted, first
