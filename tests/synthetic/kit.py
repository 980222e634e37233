"""The pieces every part of a synthetic chunk shares (``tests.synthetic.core`` builds the
chunk; ``synthetic_group`` and ``synthetic_txn`` add its consumer group and its
transactions): the ground truth being planted, and the array helpers that lay rows out
the way a sound run leaves them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import ANOMALY_KINDS

ZONES = ("a", "b", "c")


class Picker:
    """Draws disjoint random subsets of candidate indices, so that kinds never overlap."""

    def __init__(self, rng: np.random.Generator, n: int) -> None:
        self.rng = rng
        self.used = np.zeros(n, dtype=bool)

    def take(self, candidates: np.ndarray, k: int, what: str) -> np.ndarray:
        free = candidates[~self.used[candidates]]
        if k > len(free):
            raise ValueError(f"cannot plant {k} {what}: only {len(free)} candidates")
        chosen = np.sort(self.rng.choice(free, size=k, replace=False)) if k else free[:0]
        self.used[chosen] = True
        return chosen


class Truth:
    """The counts and ids planted in one chunk, per kind and partition."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.counts: dict[str, Counter[int]] = {k: Counter() for k in ANOMALY_KINDS}
        self.planted: dict[str, set[str | None]] = {k: set() for k in ANOMALY_KINDS}
        self.finds: dict[str, Counter[int]] = {}

    def add(
        self, kind: str, partitions: Iterable[int], ids: Iterable[str | None] = (), times: int = 1
    ) -> None:
        for p in partitions:
            self.counts[kind][int(p)] += times
        self.planted[kind].update(ids)

    def expected(self) -> dict[str, dict[tuple[str, int], int]]:
        return {k: {(self.topic, p): c for p, c in sorted(v.items()) if c} for k, v in self.counts.items()}

    def found(self, kind: str, partitions: Iterable[int]) -> None:
        """One finding per entry of ``partitions``, for a kind whose findings are not its
        count units."""
        for p in partitions:
            self.finds.setdefault(kind, Counter())[int(p)] += 1

    def findings(self) -> dict[str, dict[tuple[str, int], int]]:
        return {k: {(self.topic, p): c for p, c in sorted(v.items())} for k, v in self.finds.items()}


def rank_within(groups: np.ndarray) -> np.ndarray:
    """0-based position of each element among equal group values, in array order."""
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_groups)) + 1]
    counts = np.diff(np.r_[starts, len(groups)])
    rank_sorted = np.arange(len(groups)) - np.repeat(starts, counts)
    rank = np.empty(len(groups), dtype=np.int64)
    rank[order] = rank_sorted
    return rank


def offsets_in_send_order(src: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Offsets of log entries laid out per partition in the order their messages were
    sent (``src`` is the send index): what a partition holds when nothing goes wrong."""
    order = np.argsort(src, kind="stable")
    offsets = np.empty(len(src), dtype=np.int64)
    offsets[order] = rank_within(parts[order])
    return offsets


def strings(names: list[str], idx: np.ndarray) -> pa.Array:
    return pc.take(pa.array(names, pa.string()), pa.array(idx))


def message_ids(prefixes: pa.Array, seq: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefixes, pa.array(seq).cast(pa.string()), "-")
