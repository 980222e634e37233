"""Synthetic histories with known anomalies, for the benchmark and the property tests.

A checker is only trusted if it finds exactly what was planted, so this module builds a
clean history (every send acknowledged at the offset where the final log holds it, every
record polled once) and then plants each anomaly kind in a way that touches no other
kind. The planted counts per topic-partition are the ground truth the tests compare the
reconciliation against. Everything is vectorised numpy/pyarrow, and a large history is
built in independent chunks of ``chunk_sends`` (each its own topic and producers), so
100M sends are generated in minutes within a few GB; nothing here needs Spark.

How each kind is planted (on disjoint sets of messages):

- lost: an acknowledged send removed from the final log; its acknowledged offset lies
  beyond the final log's end, so it counts as lost and not also as truncated.
- duplicate: a second copy of a message appended at the end of its partition.
- truncated: either a poll at an offset that holds another message (or lies beyond the
  log), or an acknowledgement whose offset the final log gives to another message.
- unexpected: a record of a producer that never sent it ("ghost-N"), appended and polled.
- aborted_read: a send that failed definitively, yet is on the log (and polled).
- reordered: two consecutive messages of one producer in one partition swap offsets.
- unseen: an acknowledged message on the log whose polls are dropped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import ANOMALY_KINDS, HistoryWriter

ZONES = ("a", "b", "c")
GHOST = "ghost"
BEYOND_LOST = 1_000_000  # acknowledged offsets of lost messages start this far past the end
BEYOND_POLL = 2_000_000  # and truncated polls beyond the end this far


@dataclass(frozen=True)
class SynthSpec:
    """What to generate. ``anomalies`` gives the exact number of each kind to plant."""

    sends: int
    anomalies: Mapping[str, int] = field(default_factory=dict)
    producers: int = 6
    partitions: int = 12
    consumers: int = 3
    topic: str = "chaos"
    rate: float = 10_000.0  # sends per second, sets the send_ts spacing
    failed_rate: float = 0.005
    unknown_rate: float = 0.002
    repoll_rate: float = 0.01  # consumers re-reading after a rebalance: must not matter
    part_rows: int = 1_000_000
    # Sends generated at once. Larger histories are built chunk by chunk (each chunk its
    # own topic and producers, so chunks cannot interact) to bound memory: one chunk of
    # 10M sends peaks near 2.5 GB, and 100M at once would not fit in 24 GB.
    chunk_sends: int = 10_000_000
    seed: int = 0
    t0: float = 1_700_000_000.0


@dataclass
class SynthHistory:
    """A generated history and its ground truth."""

    path: Path
    spec: SynthSpec
    # kind -> (topic, partition) -> planted count
    expected: dict[str, dict[tuple[str, int], int]]
    # kind -> message ids planted for it (what examples must be drawn from)
    planted: dict[str, set[str]]
    # send_ts bucket start (1 s buckets) -> (acked, failed, unknown)
    availability: dict[float, tuple[int, int, int]]
    rows: dict[str, int]


class _Picker:
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


def _take_pairs(starts: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    if k > len(starts):
        raise ValueError(f"cannot plant {k} reordered pairs: only {len(starts)} candidates")
    return np.sort(rng.choice(starts, size=k, replace=False)).astype(np.int64)


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """0-based position of each element among equal group values, in array order."""
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_groups)) + 1]
    counts = np.diff(np.r_[starts, len(groups)])
    rank_sorted = np.arange(len(groups)) - np.repeat(starts, counts)
    rank = np.empty(len(groups), dtype=np.int64)
    rank[order] = rank_sorted
    return rank


def _strings(names: list[str], idx: np.ndarray) -> pa.Array:
    return pc.take(pa.array(names, pa.string()), pa.array(idx))


def _message_ids(prefixes: pa.Array, seq: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefixes, pa.array(seq).cast(pa.string()), "-")


def _count_by_partition(topic: str, partitions: np.ndarray, nparts: int) -> dict[tuple[str, int], int]:
    counts = np.bincount(partitions, minlength=nparts)
    return {(topic, p): int(c) for p, c in enumerate(counts) if c}


@dataclass(frozen=True)
class _Chunk:
    """One independent slice of a history: its sends, and the names that keep its messages
    apart from every other chunk's."""

    index: int
    sends: int
    anomalies: dict[str, int]
    topic: str
    producer_base: int  # producers are numbered from here
    ghost: str  # producer name of its never-sent records
    t0: float


def _chunks(spec: SynthSpec, want: Mapping[str, int]) -> list[_Chunk]:
    """Split the sends and the planted anomalies evenly over chunks. The first chunk keeps
    the spec's own topic and names, so a history of one chunk is named as before."""
    step = max(1, spec.chunk_sends)
    count = max(1, -(-spec.sends // step))
    chunks = []
    for i in range(count):
        lo, hi = i * step, min(spec.sends, (i + 1) * step)
        share = {k: v // count + (1 if i < v % count else 0) for k, v in want.items()}
        chunks.append(
            _Chunk(
                index=i,
                sends=hi - lo,
                anomalies=share,
                topic=spec.topic if i == 0 else f"{spec.topic}-{i}",
                producer_base=i * spec.producers,
                ghost=GHOST if i == 0 else f"{GHOST}{i}",
                t0=spec.t0 + lo / spec.rate,
            )
        )
    return chunks


def generate(spec: SynthSpec, path: str | os.PathLike[str]) -> SynthHistory:
    """Write a history for ``spec`` under ``path`` and return it with its ground truth.

    A spec whose anomalies cannot be planted raises ValueError; anything already written
    is then marked aborted, so no reader takes it for a complete history."""
    unknown_kinds = set(spec.anomalies) - set(ANOMALY_KINDS)
    if unknown_kinds:
        raise ValueError(f"unknown anomaly kinds {sorted(unknown_kinds)}")
    want = {k: int(spec.anomalies.get(k, 0)) for k in ANOMALY_KINDS}
    scenario = {"name": "synthetic", "seed": spec.seed, "expectations": dict(want)}
    truth = SynthHistory(
        Path(path), spec, {k: {} for k in ANOMALY_KINDS}, {k: set() for k in ANOMALY_KINDS}, {}, {}
    )
    with HistoryWriter(path, run_id=f"synthetic-{spec.seed}", scenario=scenario) as w:
        for chunk in _chunks(spec, want):
            _merge(truth, _generate_chunk(spec, chunk, w, Path(path)))
        for ts, action in ((spec.t0, "inject"), (spec.t0 + spec.sends / spec.rate, "heal")):
            w.append(
                "faults",
                {
                    "ts": ts,
                    "mono": ts - spec.t0,
                    "fault": "synthetic",
                    "action": action,
                    "targets": "[]",
                    "outcome": "ok",
                },
            )
    return truth


def _merge(into: SynthHistory, part: SynthHistory) -> None:
    """Add one chunk's ground truth: its partitions and ids are its own, its time buckets
    may meet the neighbouring chunk's."""
    for kind in ANOMALY_KINDS:
        into.expected[kind].update(part.expected[kind])
        into.planted[kind] |= part.planted[kind]
    for start, counts in part.availability.items():
        have = into.availability.get(start, (0, 0, 0))
        into.availability[start] = (have[0] + counts[0], have[1] + counts[1], have[2] + counts[2])
    for table, rows in part.rows.items():
        into.rows[table] = into.rows.get(table, 0) + rows


def _generate_chunk(spec: SynthSpec, chunk: _Chunk, w: HistoryWriter, path: Path) -> SynthHistory:
    """Plant and write one chunk; return its ground truth."""
    want = chunk.anomalies
    rng = np.random.default_rng(spec.seed if chunk.index == 0 else (spec.seed, chunk.index))
    n, nparts = chunk.sends, spec.partitions

    # ---- sends, in global send order ------------------------------------------------
    idx = np.arange(n, dtype=np.int64)
    prod = (idx % spec.producers).astype(np.int64)
    seq = idx // spec.producers
    part = rng.integers(0, nparts, n, dtype=np.int32)
    send_ts = chunk.t0 + idx / spec.rate
    u = rng.random(n)
    outcome = np.zeros(n, dtype=np.int8)  # 0 acked, 1 failed, 2 unknown
    outcome[u < spec.failed_rate + spec.unknown_rate] = 2
    outcome[u < spec.failed_rate] = 1
    landed = rng.random(n) < 0.5  # an in-doubt send that did reach the log

    pick = _Picker(rng, n)
    acked = np.flatnonzero(outcome == 0)
    in_log = (outcome == 0) | ((outcome == 2) & landed)
    # Aborted reads join the log before reorder pairs are chosen, so that no aborted
    # message can sit between the two members of a pair and add a second descent.
    aborted = pick.take(np.flatnonzero(outcome == 1), want["aborted_read"], "aborted reads")
    in_log[aborted] = True

    # Reorder pairs first: they need two consecutive log members of one producer in one
    # partition, both acknowledged. Pairs start at sorted positions 0 mod 4 so none overlap.
    members = np.flatnonzero(in_log)
    order = np.lexsort((members, prod[members], part[members]))
    srt = members[order]
    same = (part[srt[:-1]] == part[srt[1:]]) & (prod[srt[:-1]] == prod[srt[1:]])
    both_acked = (outcome[srt[:-1]] == 0) & (outcome[srt[1:]] == 0)
    starts = np.flatnonzero(same & both_acked & (np.arange(len(srt) - 1) % 4 == 0))
    pair_starts = _take_pairs(starts, want["reordered"], rng)
    pair_a = srt[pair_starts]
    pair_b = srt[pair_starts + 1]
    pick.used[pair_a] = True
    pick.used[pair_b] = True

    lost = pick.take(acked, want["lost"], "lost")
    in_log[lost] = False
    dup = pick.take(acked, want["duplicate"], "duplicates")
    unseen = pick.take(acked, want["unseen"], "unseen")
    n_trunc_ack = want["truncated"] // 2
    trunc_ack = pick.take(acked, n_trunc_ack, "truncated acks")
    trunc_poll = pick.take(acked, want["truncated"] - n_trunc_ack, "truncated polls")

    # ---- final log: base members in send order per partition, then appended extras ---
    base = np.flatnonzero(in_log)
    offset_of = np.full(n, -1, dtype=np.int64)
    offset_of[base] = _rank_within(part[base])
    oa, ob = offset_of[pair_a].copy(), offset_of[pair_b].copy()
    offset_of[pair_a], offset_of[pair_b] = ob, oa
    hw = np.bincount(part[base], minlength=nparts).astype(np.int64)

    dup_off = hw[part[dup]] + _rank_within(part[dup])
    hw += np.bincount(part[dup], minlength=nparts)
    ghost_part = rng.integers(0, nparts, want["unexpected"], dtype=np.int32)
    ghost_seq = np.arange(want["unexpected"], dtype=np.int64)
    ghost_off = hw[ghost_part] + _rank_within(ghost_part)
    hw += np.bincount(ghost_part, minlength=nparts)

    numbers = range(chunk.producer_base, chunk.producer_base + spec.producers)
    prod_names = [f"prod-{ZONES[p % len(ZONES)]}-{p}" for p in numbers]
    mids = _message_ids(_strings(prod_names, prod), seq)
    ghost_mids = _message_ids(pa.array([chunk.ghost] * len(ghost_seq), pa.string()), ghost_seq)

    log_src = np.concatenate([base, dup])
    log_part = np.concatenate([part[log_src], ghost_part])
    log_off = np.concatenate([offset_of[base], dup_off, ghost_off])
    log_mid = pa.concat_arrays([pc.take(mids, pa.array(log_src)), ghost_mids])

    # ---- acknowledgements --------------------------------------------------------------
    ack_off = np.where(outcome == 0, offset_of, -1)
    ack_off[lost] = hw[part[lost]] + BEYOND_LOST + np.arange(len(lost))
    # Another in-range offset: the next one, wrapping; needs partitions of >= 2 records.
    if len(trunc_ack) and (hw[part[trunc_ack]] < 2).any():
        raise ValueError("truncated acks need partitions holding at least two records")
    ack_off[trunc_ack] = (offset_of[trunc_ack] + 1) % hw[part[trunc_ack]]
    ack_ts = np.where(outcome == 0, send_ts + 0.005, np.nan)

    # ---- polls: every log record once, minus unseen, plus re-polls and truncated polls -
    polled = np.ones(len(log_src) + len(ghost_seq), dtype=bool)
    polled[: len(base)][np.isin(base, unseen)] = False
    keep = np.flatnonzero(polled)
    repoll = keep[rng.random(len(keep)) < spec.repoll_rate]
    poll_rows = np.concatenate([keep, repoll])
    n_tp = len(trunc_poll)
    beyond = np.arange(n_tp) % 2 == 0
    bad_off = np.where(
        beyond,
        hw[part[trunc_poll]] + BEYOND_POLL + np.arange(n_tp),
        (offset_of[trunc_poll] + 1) % np.maximum(hw[part[trunc_poll]], 1),
    )
    if n_tp and (~beyond & (hw[part[trunc_poll]] < 2)).any():
        raise ValueError("truncated polls need partitions holding at least two records")
    p_part = np.concatenate([log_part[poll_rows], part[trunc_poll]])
    p_off = np.concatenate([log_off[poll_rows], bad_off])
    p_mid = pa.concat_arrays([pc.take(log_mid, pa.array(poll_rows)), pc.take(mids, trunc_poll)])
    p_ts = np.concatenate(
        [chunk.t0 + np.arange(len(poll_rows)) / spec.rate + 0.01, chunk.t0 + np.arange(n_tp)]
    )
    p_consumer = (p_part % spec.consumers).astype(np.int64)

    # ---- write -------------------------------------------------------------------------
    outcome_names = ["acked", "failed", "unknown"]
    errors = [None, "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT"]
    topic = chunk.topic
    step = spec.part_rows
    for lo in range(0, n, step):
        s = slice(lo, min(n, lo + step))
        oc = outcome[s]
        acked_here = oc == 0
        w.write_batch(
            "sends",
            pa.table(
                {
                    "message_id": mids[s],
                    "producer_id": _strings(prod_names, prod[s]),
                    "seq": seq[s],
                    "topic": pa.repeat(topic, s.stop - s.start),
                    "partition": part[s],
                    "key": pa.nulls(s.stop - s.start, pa.string()),
                    "zone": _strings(list(ZONES), prod[s] % len(ZONES)),
                    "send_ts": send_ts[s],
                    "ack_ts": pa.array(ack_ts[s], mask=~acked_here),
                    "outcome": _strings(outcome_names, oc),
                    "offset": pa.array(ack_off[s], mask=~acked_here),
                    "error": _strings(errors, oc),  # type: ignore[arg-type]
                }
            ),
        )
    for lo in range(0, len(log_part), step):
        s = slice(lo, min(len(log_part), lo + step))
        w.write_batch(
            "final_log",
            pa.table(
                {
                    "topic": pa.repeat(topic, s.stop - s.start),
                    "partition": log_part[s],
                    "offset": log_off[s],
                    "message_id": log_mid[s],
                }
            ),
        )
    consumer_names = [f"consumer-{ZONES[c % len(ZONES)]}-{c}" for c in range(spec.consumers)]
    for lo in range(0, len(p_part), step):
        s = slice(lo, min(len(p_part), lo + step))
        w.write_batch(
            "polls",
            pa.table(
                {
                    "consumer_id": _strings(consumer_names, p_consumer[s]),
                    "zone": _strings(list(ZONES), p_consumer[s] % len(ZONES)),
                    "topic": pa.repeat(topic, s.stop - s.start),
                    "partition": p_part[s],
                    "offset": p_off[s],
                    "message_id": p_mid[s],
                    "poll_ts": p_ts[s],
                }
            ),
        )

    # ---- ground truth --------------------------------------------------------------------
    def by_part(ix: np.ndarray) -> dict[tuple[str, int], int]:
        return _count_by_partition(topic, part[ix], nparts)

    expected: dict[str, dict[tuple[str, int], int]] = {
        "lost": by_part(lost),
        "duplicate": by_part(dup),
        "truncated": by_part(np.concatenate([trunc_ack, trunc_poll])),
        "unexpected": _count_by_partition(topic, ghost_part, nparts),
        "aborted_read": by_part(aborted),
        "reordered": by_part(pair_b),
        "unseen": by_part(unseen),
    }

    def ids(ix: np.ndarray) -> set[str]:
        return set(pc.take(mids, pa.array(ix, pa.int64())).to_pylist())

    planted = {
        "lost": ids(lost),
        "duplicate": ids(dup),
        "truncated": ids(np.concatenate([trunc_ack, trunc_poll])),
        "unexpected": set(ghost_mids.to_pylist()),
        "aborted_read": ids(aborted),
        # in seq order, the later-sent member of a swapped pair sits below the earlier one
        "reordered": ids(pair_b),
        "unseen": ids(unseen),
    }
    buckets = np.floor(send_ts).astype(np.int64)
    avail: dict[float, tuple[int, int, int]] = {}
    b0 = int(buckets.min()) if n else 0
    counts = [
        np.bincount(buckets[outcome == o] - b0, minlength=int(buckets.max()) - b0 + 1)
        if n
        else np.zeros(0, dtype=np.int64)
        for o in range(3)
    ]
    for j in range(len(counts[0])):
        avail[float(b0 + j)] = (int(counts[0][j]), int(counts[1][j]), int(counts[2][j]))
    rows: dict[str, Any] = {"sends": n, "final_log": len(log_part), "polls": len(p_part)}
    return SynthHistory(path, spec, expected, planted, avail, rows)
