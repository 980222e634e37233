"""The span counts of the group pass (spark_jobs/spans.py), on plain arrays: no Spark.

Each is checked against the definition written out the slow way: per span, the distinct
offsets of its partition strictly inside lo..hi-1 that count (acknowledged ones only, or
any that held a record), and the lowest of them."""

from __future__ import annotations

import random

import numpy as np

from spark_jobs.spans import count

Offset = tuple[int, int, bool]  # tp, offset, acknowledged
Span = tuple[int, int, int, int, bool]  # id, tp, lo, hi, acknowledged only


def _columns(rows: list[tuple[int, ...]], width: int) -> list[np.ndarray]:
    cols = list(zip(*rows, strict=True)) if rows else [()] * width
    return [np.array(c, dtype=np.int64) for c in cols]


def _slow(offsets: list[Offset], spans: list[Span]) -> dict[int, tuple[int, int]]:
    out = {}
    for i, tp, lo, hi, only_acked in spans:
        inside = {o for t, o, a in offsets if t == tp and lo <= o < hi and (a or not only_acked)}
        if inside:
            out[i] = (len(inside), min(inside))
    return out


def _fast(offsets: list[Offset], spans: list[Span]) -> dict[int, tuple[int, int]]:
    tp, o, acked = _columns(list(offsets), 3)
    ids, s_tp, lo, hi, only_acked = _columns(list(spans), 5)
    counted, first = count(tp, o, acked.astype(bool), s_tp, lo, hi, only_acked.astype(bool))
    return {int(i): (int(n), int(f)) for i, n, f in zip(ids, counted, first, strict=True) if n}


def test_a_span_counts_distinct_offsets_strictly_inside_it() -> None:
    offsets = [(1, 3, True), (1, 3, True), (1, 4, True), (1, 7, True), (2, 5, True)]
    spans = [(0, 1, 3, 7, True), (1, 1, 4, 5, True), (2, 1, 5, 7, True), (3, 2, 0, 5, True)]
    # 3 and 4 (7 is hi, outside; 3 held twice counts once); 4 alone; nothing; nothing in tp 2 below 5
    assert _fast(offsets, spans) == {0: (2, 3), 1: (1, 4)}


def test_only_acknowledged_offsets_count_unless_the_span_takes_any() -> None:
    offsets = [(1, 2, False), (1, 4, True)]
    spans = [(0, 1, 0, 9, True), (1, 1, 0, 9, False), (2, 1, 0, 3, True)]
    assert _fast(offsets, spans) == {0: (1, 4), 1: (2, 2)}


def test_no_offsets_or_no_spans_give_nothing() -> None:
    assert _fast([], [(0, 1, 0, 9, True)]) == {}
    assert _fast([(1, 2, True)], []) == {}
    assert _fast([(1, 2, True)], [(0, 1, 5, 2, True)]) == {}  # an empty span (hi below lo)


def test_random_spans_agree_with_the_definition() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(0, 60)
        offsets = [(rng.randint(1, 3), rng.randint(0, 40), rng.random() < 0.7) for _ in range(n)]
        spans = []
        for i in range(rng.randint(0, 20)):
            lo = rng.randint(0, 45)
            spans.append((i, rng.randint(1, 3), lo, lo + rng.randint(-2, 15), rng.random() < 0.5))
        assert _fast(offsets, spans) == _slow(offsets, spans)
