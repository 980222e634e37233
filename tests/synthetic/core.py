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

With ``SynthSpec.groups`` (or any group kind or group edge planted) the chunk also has a
consumer group (``tests.synthetic.group`` says how, and how its kinds are planted);
with ``SynthSpec.transactions`` (or any transaction kind or edge planted) transactional
producers (``tests.synthetic.txn``).

With ``SynthSpec.pipelines`` (or any pipeline kind planted) a pipeline group also read
the chunk's final log and wrote outputs to a topic of its own (schema 7;
``tests.synthetic.pipeline`` says how, and how its kinds are planted).

Besides, ``SynthSpec.edges`` plants the edge cases of docs/HISTORY.md's rules, each with
the fixed counts listed in ``EDGE_CASES`` (several records read at one offset, a message
read at several positions, copies in several partitions, undecodable records, offset
gaps, homes that are not where a finding happened). The final log is laid out in send
order per partition *after* every message has its copies, so a copy in another partition
sits in its producer's seq order there and disturbs no reorder count; only the planted
swaps break that order, and each swapped pair of neighbours makes exactly one descent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import (
    ANOMALY_KINDS,
    GROUP_KINDS,
    PIPELINE_KINDS,
    READ_COMMITTED,
    TXN_KINDS,
    HistoryWriter,
)
from harness.history.kinds import kind as registry_kind
from tests.synthetic import pipeline as synthetic_pipeline
from tests.synthetic.group import ConsumerGroup
from tests.synthetic.kit import (
    ZONES,
    Picker,
    Truth,
    message_ids,
    offsets_in_send_order,
    rank_within,
    strings,
)
from tests.synthetic.txn import Transactions

GHOST = "ghost"
BEYOND_LOST = 1_000_000  # acknowledged offsets of lost messages start this far past the end
BEYOND_POLL = 2_000_000  # and truncated polls beyond the end this far

# Edge cases of the checker's rules (docs/HISTORY.md), and what each plant adds per kind.
EDGE_CASES: Mapping[str, Mapping[str, int]] = {
    # A never-sent record on the log, read there as itself, as another never-sent id and
    # undecodable: several messages read at one offset are one unexpected position.
    "shared_unexpected": {"unexpected": 1},
    # A record without an id on the log (read there), and one read where the log holds a
    # sent message: two unexpected positions, and the sent message is not truncated.
    "undecodable": {"unexpected": 2},
    # An acknowledged message also read at two positions that do not hold it (one inside
    # its partition's range, one beyond it): truncated once per polled position.
    "read_many": {"truncated": 2},
    # Two acknowledged messages read at one position that holds a third: one each.
    "shared_read": {"truncated": 2},
    # An acknowledged message also read in another partition: counted at home, its
    # example reports the other partition.
    "read_elsewhere": {"truncated": 1},
    # An acknowledged, polled message whose record left a gap inside its partition's
    # log: lost, truncated by its acknowledged offset and by its read.
    "gap": {"lost": 1, "truncated": 2},
    # An acknowledged message with a second copy in another partition, in send order
    # there: one duplicate, counted at home; its last copy may be in the other partition.
    "cross_copy": {"duplicate": 1},
    # The same, but the copy lands below the producer's message sent just before it,
    # which sits in the copy's partition: reordered there, counted at home.
    "cross_reorder": {"duplicate": 1, "reordered": 1},
    # An in-doubt send of unknown partition (-1) on the log in two partitions: its home
    # is its first copy's partition.
    "homeless_copies": {"duplicate": 1},
    # A never-sent record (an id that names no seq) in two partitions: a duplicate at its
    # first copy, and unexpected at each position.
    "ghost_copies": {"duplicate": 1, "unexpected": 2},
    # A send that failed, aimed at one partition and found on the log in another.
    "aborted_elsewhere": {"aborted_read": 1},
    # A group member's reads jump over one or two offsets where no send was acknowledged
    # (an in-doubt send's record, a never-sent one, a second copy; in Kafka a control
    # record or an aborted batch): no poll_skip, and nothing else either.
    "unacked_gap": {},
    # Transactions (schema 6); none of these counts anything.
    # A committed transaction's message read before its commit was asked for by a
    # read_uncommitted consumer and by one whose isolation was not recorded, and by a
    # read_committed one exactly when it was asked for.
    "txn_early_reads": {},
    # A message of a transaction with outcome unknown that Kafka aborted (the
    # read_committed drain was not given it), read by a read_uncommitted and a
    # read_committed consumer: unknown transactions are judged by no kind.
    "txn_unknown_read": {},
    # An acknowledged send of an aborted transaction whose record is not on the final log
    # (its offset a gap): judged unknown, so neither lost nor truncated.
    "txn_aborted_gone": {},
    # A send of an aborted transaction that failed, yet is on the final log: judged
    # unknown, so not aborted_read.
    "txn_failed_logged": {},
    # A committed transaction without its transactions row: its acknowledged sends are
    # judged unknown; its first record is not on the final log (not lost), the others
    # are and are polled by nobody (not unseen; a member skips them: no poll_skip).
    "txn_orphan": {},
    # A committed transaction with no message: nothing to lose.
    "txn_empty": {},
    # A committed transaction whose row is written twice, the second time aborted: judged
    # as unknown, so neither its first message's read at read_committed before the commit
    # was asked for, nor the other reads of its records, count.
    "txn_doubled_row": {},
    # A member commits the offset of its next read right after a read, where everything in
    # between is aborted records and commit markers: no commit_beyond_read.
    "txn_skip_commit": {},
}
GROUP_EDGES = frozenset({"unacked_gap", "txn_skip_commit"})  # edge cases that need the consumer group
TXN_EDGES = frozenset(e for e in EDGE_CASES if e.startswith("txn_"))  # and the transactions


@dataclass(frozen=True)
class SynthSpec:
    """What to generate. ``anomalies`` gives the exact number of each kind to plant, and
    ``edges`` the number of each edge case of ``EDGE_CASES``."""

    sends: int
    anomalies: Mapping[str, int] = field(default_factory=dict)
    edges: Mapping[str, int] = field(default_factory=dict)
    producers: int = 6
    partitions: int = 12
    consumers: int = 3
    topic: str = "chaos"
    rate: float = 10_000.0  # sends per second, sets the send_ts spacing
    failed_rate: float = 0.005
    unknown_rate: float = 0.002
    repoll_rate: float = 0.01  # consumers re-reading after a rebalance: must not matter
    part_rows: int = 1_000_000
    # A consumer group reads (most of) each partition; implied by a group kind or edge.
    groups: bool = False
    commit_every: int = 40  # a member commits after this many reads of a partition
    # Transactional producers besides the others; implied by a transaction kind or edge.
    transactions: bool = False
    txn_producers: int = 1
    txn_max_messages: int = 4  # a transaction has 1..this many messages
    txn_aborted_rate: float = 0.2  # of transactions
    txn_unknown_rate: float = 0.2
    # A consume-transform-produce pipeline read the final log; implied by a pipeline kind.
    pipelines: bool = False
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
    # kind -> message ids planted for it (what examples must be drawn from; None: no id)
    planted: dict[str, set[str | None]]
    # send_ts bucket start (1 s buckets) -> (acked, failed, unknown)
    availability: dict[float, tuple[int, int, int]]
    rows: dict[str, int]
    # kind -> (topic, partition) -> planted findings, i.e. examples the verdict can show,
    # for the kinds where that differs from the count (poll_skip: runs, not offsets)
    findings: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)


def planted_totals(anomalies: Mapping[str, int], edges: Mapping[str, int]) -> dict[str, int]:
    """What a spec plants per kind in all: the anomalies, plus each edge case's counts."""
    totals = {k: int(anomalies.get(k, 0)) for k in ANOMALY_KINDS}
    for edge, times in edges.items():
        for kind, count in EDGE_CASES[edge].items():
            totals[kind] += count * int(times)
    return totals


def _take_pairs(starts: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    if k > len(starts):
        raise ValueError(f"cannot plant {k} reordered pairs: only {len(starts)} candidates")
    return np.sort(rng.choice(starts, size=k, replace=False)).astype(np.int64)


@dataclass(frozen=True)
class _Chunk:
    """One independent slice of a history: its sends, and the names that keep its messages
    apart from every other chunk's."""

    index: int
    sends: int
    anomalies: dict[str, int]
    edges: dict[str, int]
    topic: str
    producer_base: int  # producers are numbered from here
    ghost: str  # producer name of its never-sent records
    t0: float
    groups: bool  # whether a consumer group reads it
    txns: bool  # whether it has transactional producers
    pipes: bool = False  # whether a pipeline group read it


def _share(want: Mapping[str, int], i: int, count: int) -> dict[str, int]:
    """Chunk i's even share of ``want`` over ``count`` chunks."""
    return {k: v // count + (1 if i < v % count else 0) for k, v in want.items()}


def uses_groups(spec: SynthSpec) -> bool:
    """Whether ``spec``'s chunks have a consumer group: asked for, or needed by a plant."""
    return (
        spec.groups
        or any(spec.anomalies.get(k, 0) for k in GROUP_KINDS)
        or any(spec.edges.get(e, 0) for e in GROUP_EDGES)
    )


def uses_transactions(spec: SynthSpec) -> bool:
    """Whether ``spec``'s chunks have transactional producers: asked for, or needed by a plant."""
    return (
        spec.transactions
        or any(spec.anomalies.get(k, 0) for k in TXN_KINDS)
        or any(spec.edges.get(e, 0) for e in TXN_EDGES)
    )


def uses_pipelines(spec: SynthSpec) -> bool:
    """Whether ``spec``'s chunks have a pipeline: asked for, or needed by a plant."""
    return spec.pipelines or any(spec.anomalies.get(k, 0) for k in PIPELINE_KINDS)


def _chunks(spec: SynthSpec, want: Mapping[str, int], edges: Mapping[str, int]) -> list[_Chunk]:
    """Split the sends and the planted anomalies evenly over chunks. The first chunk keeps
    the spec's own topic and names, so a history of one chunk is named as before."""
    step = max(1, spec.chunk_sends)
    count = max(1, -(-spec.sends // step))
    chunks = []
    for i in range(count):
        lo, hi = i * step, min(spec.sends, (i + 1) * step)
        chunks.append(
            _Chunk(
                index=i,
                sends=hi - lo,
                anomalies=_share(want, i, count),
                edges=_share(edges, i, count),
                topic=spec.topic if i == 0 else f"{spec.topic}-{i}",
                producer_base=i * spec.producers,
                ghost=GHOST if i == 0 else f"{GHOST}{i}",
                t0=spec.t0 + lo / spec.rate,
                groups=uses_groups(spec),
                txns=uses_transactions(spec),
                pipes=uses_pipelines(spec),
            )
        )
    return chunks


# The kinds this generator knows how to plant, each named here and in registry order: a
# kind new to the registry is not plantable until its planter is written, so the tests
# that plant "every kind" plant these and keep passing meanwhile.
_PLANTERS = frozenset(registry_kind(name).name for name in (
    "lost", "duplicate", "truncated", "unexpected", "aborted_read", "reordered", "unseen",
    "poll_skip", "nonmonotonic_poll", "commit_regression", "commit_beyond_read",
    "txn_aborted_read", "txn_uncommitted_read", "txn_lost", "txn_partial",
    "pipeline_duplicate", "pipeline_lost", "pipeline_orphan",
))
PLANTABLE_KINDS: tuple[str, ...] = tuple(k for k in ANOMALY_KINDS if k in _PLANTERS)


def generate(spec: SynthSpec, path: str | os.PathLike[str]) -> SynthHistory:
    """Write a history for ``spec`` under ``path`` and return it with its ground truth.

    A spec whose anomalies cannot be planted raises ValueError; anything already written
    is then marked aborted, so no reader takes it for a complete history."""
    unknown_kinds = {k for k, n in spec.anomalies.items() if n} - set(PLANTABLE_KINDS)
    if unknown_kinds:
        raise ValueError(f"anomaly kinds this generator cannot plant: {sorted(unknown_kinds)}")
    unknown_edges = set(spec.edges) - set(EDGE_CASES)
    if unknown_edges:
        raise ValueError(f"unknown edge cases {sorted(unknown_edges)}")
    want = {k: int(spec.anomalies.get(k, 0)) for k in ANOMALY_KINDS}
    edges = {e: int(spec.edges.get(e, 0)) for e in EDGE_CASES}
    totals = planted_totals(want, edges)
    scenario = {"name": "synthetic", "seed": spec.seed, "expectations": dict(totals)}
    truth = SynthHistory(
        Path(path), spec, {k: {} for k in ANOMALY_KINDS}, {k: set() for k in ANOMALY_KINDS}, {}, {}
    )
    with HistoryWriter(path, run_id=f"synthetic-{spec.seed}", scenario=scenario) as w:
        for chunk in _chunks(spec, want, edges):
            _merge(truth, ChunkBuilder(spec, chunk).build(w, Path(path)))
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
    planted = {k: sum(v.values()) for k, v in truth.expected.items()}
    if planted != totals:  # the plants below and EDGE_CASES must tell one story
        raise AssertionError(f"planted {planted}, meant to plant {totals}")
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
    for kind, found in part.findings.items():
        into.findings.setdefault(kind, {}).update(found)


@dataclass
class _Rows:
    """Final-log or poll rows assembled from pieces: partition, offset, message id and the
    send a row is a copy of (-1: none), which decides later whether a final-log row is
    polled (not for an unseen message) and written (not for a gap's)."""

    parts: list[np.ndarray] = field(default_factory=list)
    offsets: list[np.ndarray] = field(default_factory=list)
    ids: list[pa.Array] = field(default_factory=list)
    src: list[np.ndarray] = field(default_factory=list)

    def add(self, parts: Any, offsets: Any, ids: pa.Array, src: Any = None) -> None:
        parts = np.asarray(parts, dtype=np.int32).reshape(-1)
        self.parts.append(parts)
        self.offsets.append(np.asarray(offsets, dtype=np.int64).reshape(-1))
        self.ids.append(ids.cast(pa.string()))
        self.src.append(np.full(len(parts), -1, np.int64) if src is None else np.asarray(src, np.int64))

    def columns(self) -> tuple[np.ndarray, np.ndarray, pa.Array, np.ndarray]:
        return (
            np.concatenate(self.parts) if self.parts else np.zeros(0, np.int32),
            np.concatenate(self.offsets) if self.offsets else np.zeros(0, np.int64),
            pa.concat_arrays(self.ids) if self.ids else pa.array([], pa.string()),
            np.concatenate(self.src) if self.src else np.zeros(0, np.int64),
        )


def _nulls(k: int) -> pa.Array:
    return pa.nulls(k, pa.string())


def _named(names: list[str]) -> pa.Array:
    return pa.array(names, pa.string())


class ChunkBuilder:
    """Plants and writes one chunk. The steps run in order: sends; the messages whose
    place on the log is special (failed yet logged, copies in other partitions, lost);
    the log laid out in send order; the swaps that reorder; the remaining plants on
    untouched acknowledged messages; records appended at the partitions' ends; then
    acknowledgements, polls and the ground truth."""

    def __init__(self, spec: SynthSpec, chunk: _Chunk) -> None:
        self.spec, self.chunk = spec, chunk
        self.want, self.edges = chunk.anomalies, chunk.edges
        self.rng = np.random.default_rng(spec.seed if chunk.index == 0 else (spec.seed, chunk.index))
        self.n, self.nparts = chunk.sends, spec.partitions
        self.truth = Truth(chunk.topic)

    # ---- sends ------------------------------------------------------------------------

    def _sends(self) -> None:
        rng, n, spec = self.rng, self.n, self.spec
        self.idx = np.arange(n, dtype=np.int64)
        # transactional producers, if any, are numbered after the others
        self.nprod = spec.producers + (spec.txn_producers if self.chunk.txns else 0)
        self.prod = (self.idx % self.nprod).astype(np.int64)
        self.seq = self.idx // self.nprod
        self.part = rng.integers(0, self.nparts, n, dtype=np.int32)
        self.send_ts = self.chunk.t0 + self.idx / spec.rate
        u = rng.random(n)
        self.outcome = np.zeros(n, dtype=np.int8)  # 0 acked, 1 failed, 2 unknown
        self.outcome[u < spec.failed_rate + spec.unknown_rate] = 2
        self.outcome[u < spec.failed_rate] = 1
        landed = rng.random(n) < 0.5  # an in-doubt send that did reach the log
        # Transactions set their sends' outcomes, and the judged outcomes (docs/HISTORY.md):
        # unknown for a send of a transaction that was not committed.
        self.txn = Transactions(self) if self.chunk.txns else None
        self.in_log = (self.outcome == 0) | ((self.outcome == 2) & landed)
        self.judged = self.outcome
        if self.txn is not None:
            self.in_log |= self.txn.logged_anyway
            self.judged = self.txn.judged(self.outcome)
        self.send_part = self.part.copy()  # the partition its send row names (-1: unknown)
        self.log_part = self.part.copy()  # the partition of its own copy on the final log
        self.pick = Picker(rng, n)
        if self.txn is not None:  # no other plant touches a transaction's message
            self.pick.used[self.txn.sends] = True
        self.acked = np.flatnonzero(self.outcome == 0)
        numbers = range(self.chunk.producer_base, self.chunk.producer_base + spec.producers)
        self.prod_names = [f"prod-{ZONES[p % len(ZONES)]}-{p}" for p in numbers]
        if self.txn is not None:
            self.prod_names += self.txn.producer_names()
        self.mids = message_ids(strings(self.prod_names, self.prod), self.seq)

    def ids(self, ix: Iterable[int]) -> set[str | None]:
        return set(pc.take(self.mids, pa.array(np.asarray(list(ix), np.int64), pa.int64())).to_pylist())

    def _other_partition(self, parts: np.ndarray, what: str) -> np.ndarray:
        """A partition other than each of ``parts``, at random."""
        if len(parts) and self.nparts < 2:
            raise ValueError(f"cannot plant {what}: needs at least two partitions")
        if not len(parts):
            return parts
        shift = self.rng.integers(1, self.nparts, len(parts))
        return ((parts + shift) % self.nparts).astype(np.int32)

    # ---- messages whose place on the final log is special -------------------------------

    def _special_messages(self) -> None:
        pick, want, edges = self.pick, self.want, self.edges
        failed = np.flatnonzero(self.outcome == 1)
        # Aborted reads join the log before reorder pairs are chosen, so that no aborted
        # message can sit between the two members of a pair and add a second descent.
        self.aborted = pick.take(failed, want["aborted_read"], "aborted reads")
        self.far = pick.take(failed, edges["aborted_elsewhere"], "aborted reads elsewhere")
        self.in_log[self.aborted] = True
        self.in_log[self.far] = True
        self.log_part[self.far] = self._other_partition(self.part[self.far], "aborted reads elsewhere")
        doubt = np.flatnonzero(self.outcome == 2)
        self.homeless = pick.take(doubt, edges["homeless_copies"], "homeless copies")
        self.in_log[self.homeless] = True
        self.send_part[self.homeless] = -1
        self.homeless_copy = self._other_partition(self.part[self.homeless], "homeless copies")
        self.cross_prev, self.cross_m = self._cross_pairs(edges["cross_reorder"])
        self.cross = pick.take(self.acked, edges["cross_copy"], "cross copies")
        self.cross_copy = self._other_partition(self.part[self.cross], "cross copies")
        self.lost = pick.take(self.acked, want["lost"], "lost")
        self.in_log[self.lost] = False

    def _cross_pairs(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """k pairs (prev, m) of one producer's consecutive seqs, both acknowledged, in
        different partitions: m gets a copy in prev's partition, right after prev in the
        producer's order there, which the swap step then puts below prev."""
        step = self.nprod
        chosen: list[tuple[int, int]] = []
        for _ in range(k):
            m = self.acked[self.acked >= step]
            prev = m - step
            ok = (
                (self.outcome[prev] == 0)
                & (self.part[prev] != self.part[m])
                & ~self.pick.used[m]
                & ~self.pick.used[prev]
            )
            if not ok.any():
                raise ValueError("cannot plant a cross-partition reorder: no candidate pair")
            j = self.rng.choice(np.flatnonzero(ok))
            self.pick.used[[m[j], prev[j]]] = True
            chosen.append((int(prev[j]), int(m[j])))
        pairs = np.array(chosen, dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    # ---- the final log in send order, then the swaps ------------------------------------

    def _lay_out(self) -> None:
        """Entries: each logged message's own copy, then copies in other partitions, all
        at offsets in send order per partition."""
        self.base = np.flatnonzero(self.in_log)
        copy_src = np.concatenate([self.homeless, self.cross_m, self.cross])
        copy_part = np.concatenate([self.homeless_copy, self.part[self.cross_prev], self.cross_copy])
        self.e_src = np.concatenate([self.base, copy_src])
        self.e_part = np.concatenate([self.log_part[self.base], copy_part]).astype(np.int32)
        self.e_own = np.r_[np.ones(len(self.base), bool), np.zeros(len(copy_src), bool)]
        if self.txn is None:
            self.e_off = offsets_in_send_order(self.e_src, self.e_part)
        else:  # commit and abort markers take offsets too
            self.e_off = self.txn.lay_out(self.e_src, self.e_part)

    def _swap(self, a: np.ndarray, b: np.ndarray) -> None:
        self.e_off[a], self.e_off[b] = self.e_off[b].copy(), self.e_off[a].copy()

    def _reorder(self) -> None:
        """Swap pairs of neighbours in a producer's order within a partition: each swap is
        exactly one message below the one before it. Planted pairs are own copies of two
        untouched acknowledged messages at sorted positions 0 mod 4, so none overlap."""
        order = np.lexsort((self.e_src, self.prod[self.e_src], self.e_part))
        src = self.e_src[order]
        parts = self.e_part[order]
        same = (parts[:-1] == parts[1:]) & (self.prod[src][:-1] == self.prod[src][1:])
        ok = self.e_own[order] & (self.outcome[src] == 0) & ~self.pick.used[src]
        starts = np.flatnonzero(same & ok[:-1] & ok[1:] & (np.arange(len(src) - 1) % 4 == 0))
        pair_starts = _take_pairs(starts, self.want["reordered"], self.rng)
        a, b = order[pair_starts], order[pair_starts + 1]
        self._swap(a, b)
        self.pair_b = self.e_src[b]
        self.pick.used[self.e_src[a]] = True
        self.pick.used[self.pair_b] = True
        # Each cross pair: prev's own copy and m's copy, neighbours in prev's partition.
        own_prev = np.searchsorted(self.base, self.cross_prev)
        copy_m = len(self.base) + len(self.homeless) + np.arange(len(self.cross_m))
        self._swap(own_prev, copy_m)
        self.offset_of = np.full(self.n, -1, dtype=np.int64)
        self.offset_of[self.base] = self.e_off[: len(self.base)]
        self.hw = np.bincount(self.e_part, minlength=self.nparts).astype(np.int64)
        if self.txn is not None:
            self.hw += self.txn.markers_per_partition()

    # ---- plants on untouched acknowledged messages --------------------------------------

    def _picks(self) -> None:
        pick, want, edges, acked = self.pick, self.want, self.edges, self.acked
        self.dup = pick.take(acked, want["duplicate"], "duplicates")
        self.unseen = pick.take(acked, want["unseen"], "unseen")
        n_trunc_ack = want["truncated"] // 2
        self.trunc_ack = pick.take(acked, n_trunc_ack, "truncated acks")
        self.trunc_poll = pick.take(acked, want["truncated"] - n_trunc_ack, "truncated polls")
        span = self.hw[self.part[acked]]
        self.read_many = pick.take(acked[span >= 2], edges["read_many"], "reads at many positions")
        self.read_far = pick.take(acked, edges["read_elsewhere"], "reads elsewhere")
        self.read_far_at = self._other_partition(self.part[self.read_far], "reads elsewhere")
        if (self.hw[self.read_far_at] == 0).any():
            raise ValueError("cannot plant reads elsewhere: a partition with no records")
        off = self.offset_of[acked]
        if self.txn is None:
            interior = (off >= 1) & (off <= span - 2)
        else:  # a record on the final log below and above it (markers and holes are not)
            first, last = self.txn.written_range()
            interior = (off > first[self.part[acked]]) & (off < last[self.part[acked]])
        self.gap = pick.take(acked[interior], edges["gap"], "gaps")
        self.shared = [self._shared_pair(acked, span) for _ in range(edges["shared_read"])]

    def _shared_pair(self, acked: np.ndarray, span: np.ndarray) -> tuple[int, int, int]:
        """Two untouched acknowledged messages of one partition and an offset there that
        holds neither: (m1, m2, offset)."""
        (m1,) = self.pick.take(acked[span >= 3], 1, "shared reads")
        mates = acked[self.part[acked] == self.part[m1]]
        (m2,) = self.pick.take(mates, 1, "shared reads")
        others = np.setdiff1d(np.arange(self.hw[self.part[m1]]), self.offset_of[[m1, m2]])
        return int(m1), int(m2), int(self.rng.choice(others))

    # ---- the final log's rows -------------------------------------------------------------

    def _append_at(self, parts: np.ndarray) -> np.ndarray:
        """Offsets for records appended at the ends of ``parts``."""
        parts = np.asarray(parts, dtype=np.int32)
        offsets = self.hw[parts] + rank_within(parts) if len(parts) else np.zeros(0, np.int64)
        self.hw += np.bincount(parts, minlength=self.nparts)
        return offsets

    def _final_log(self) -> None:
        ghost, edges, rng = self.chunk.ghost, self.edges, self.rng
        log = _Rows()
        log.add(self.e_part, self.e_off, pc.take(self.mids, pa.array(self.e_src)), self.e_src)
        dup_part = self.part[self.dup]
        log.add(dup_part, self._append_at(dup_part), pc.take(self.mids, pa.array(self.dup)), self.dup)
        self.ghost_part = rng.integers(0, self.nparts, self.want["unexpected"], dtype=np.int32)
        n_ghosts = len(self.ghost_part)
        self.ghost_mids = message_ids(_named([ghost] * n_ghosts), np.arange(n_ghosts))
        log.add(self.ghost_part, self._append_at(self.ghost_part), self.ghost_mids)
        k = edges["shared_unexpected"]
        self.shared_ghost_part = rng.integers(0, self.nparts, k, dtype=np.int32)
        self.shared_ghost_off = self._append_at(self.shared_ghost_part)
        self.shared_ghost_ids = [f"{ghost}-shared-{i}" for i in range(k)]
        log.add(self.shared_ghost_part, self.shared_ghost_off, _named(self.shared_ghost_ids))
        k = edges["undecodable"]
        self.null_part = rng.integers(0, self.nparts, k, dtype=np.int32)
        log.add(self.null_part, self._append_at(self.null_part), _nulls(k))
        k = edges["ghost_copies"]
        first = rng.integers(0, self.nparts, k, dtype=np.int32)
        self.copies_part = np.stack([first, self._other_partition(first, "ghost copies")], axis=1)
        self.copies_ids = [f"{ghost}-copies-x{i}" for i in range(k)]  # names no seq
        flat = self.copies_part.reshape(-1)
        log.add(flat, self._append_at(flat), _named([i for i in self.copies_ids for _ in (0, 1)]))
        self.log = log

    # ---- acknowledgements and polls -------------------------------------------------------

    def _acks(self) -> None:
        hw = self.hw
        self.ack_off = np.where(self.outcome == 0, self.offset_of, -1)
        self.ack_off[self.lost] = hw[self.part[self.lost]] + BEYOND_LOST + np.arange(len(self.lost))
        # Another in-range offset: the next one, wrapping; needs partitions of >= 2 records.
        ta = self.trunc_ack
        if len(ta) and (hw[self.part[ta]] < 2).any():
            raise ValueError("truncated acks need partitions holding at least two records")
        if self.txn is None:
            self.ack_off[ta] = (self.offset_of[ta] + 1) % hw[self.part[ta]]
        else:  # not a marker's offset (maybe past the last record) nor a record members skip
            self.ack_off[ta] = self.txn.next_read_offset(self.part[ta], self.offset_of[ta])
        self.ack_ts = np.where(self.outcome == 0, self.send_ts + 0.005, np.nan)

    def _polls(self) -> None:
        """Every final-log row once (a gap's record too: it was read before it went), minus
        unseen messages, plus re-polls; then the planted reads."""
        spec, rng = self.spec, self.rng
        l_part, l_off, l_mid, l_src = self.log.columns()
        self.log_cols = (l_part, l_off, l_mid, l_src)
        dropped = np.isin(l_src, self.unseen)
        if self.txn is not None:  # aborted records, and what a plant keeps from readers
            dropped |= self.txn.unread(l_src)
        keep = np.flatnonzero(~dropped)
        repoll = keep[rng.random(len(keep)) < spec.repoll_rate]
        self.group: ConsumerGroup | None = None
        if self.chunk.groups:  # the group reads what it reads instead of the assign()-er
            self.group = ConsumerGroup(self, keep)
            keep = np.setdiff1d(keep, self.group.rows, assume_unique=True)
        rows = np.concatenate([keep, repoll])
        polls = _Rows()
        polls.add(l_part[rows], l_off[rows], pc.take(l_mid, pa.array(rows)), l_src[rows])
        self._planted_reads(polls)
        self.polls = polls

    def _read(self, polls: _Rows, m: np.ndarray, parts: Any, offsets: Any) -> None:
        polls.add(parts, offsets, pc.take(self.mids, pa.array(np.asarray(m, np.int64))))

    def _planted_reads(self, polls: _Rows) -> None:
        hw, part, off = self.hw, self.part, self.offset_of
        tp = self.trunc_poll
        beyond = np.arange(len(tp)) % 2 == 0
        if len(tp) and (~beyond & (hw[part[tp]] < 2)).any():
            raise ValueError("truncated polls need partitions holding at least two records")
        span = hw[part[tp]]
        bad = np.where(beyond, span + BEYOND_POLL + np.arange(len(tp)), (off[tp] + 1) % np.maximum(span, 1))
        self._read(polls, tp, part[tp], bad)
        rm = self.read_many
        self._read(polls, rm, part[rm], (off[rm] + 1) % hw[part[rm]])
        self._read(polls, rm, part[rm], hw[part[rm]] + BEYOND_POLL + np.arange(len(rm)))
        for m1, m2, at in self.shared:
            self._read(polls, np.array([m1, m2]), [part[m1]] * 2, [at, at])
        far = self.read_far
        self._read(polls, far, self.read_far_at, self.rng.integers(0, hw[self.read_far_at]))
        k = len(self.shared_ghost_ids)
        self.shared_others = [f"{self.chunk.ghost}-other-{i}" for i in range(k)]
        polls.add(self.shared_ghost_part, self.shared_ghost_off, _named(self.shared_others))
        polls.add(self.shared_ghost_part, self.shared_ghost_off, _nulls(k))
        # An undecodable read where the log holds a sent message (distinct positions).
        own = np.flatnonzero(self.e_own)
        k = len(self.null_part)
        self.null_read = own[self.rng.choice(len(own), k, replace=False)] if len(own) >= k else own
        if len(self.null_read) < len(self.null_part):
            raise ValueError("cannot plant undecodable reads: the log holds no sent message")
        polls.add(self.e_part[self.null_read], self.e_off[self.null_read], _nulls(len(self.null_read)))

    # ---- writing ---------------------------------------------------------------------------

    def _write(self, w: HistoryWriter) -> None:
        spec, n, topic, step = self.spec, self.n, self.chunk.topic, self.spec.part_rows
        outcome_names = ["acked", "failed", "unknown"]
        errors = [None, "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT"]
        for lo in range(0, n, step):
            s = slice(lo, min(n, lo + step))
            oc = self.outcome[s]
            acked_here = oc == 0
            w.write_batch(
                "sends",
                pa.table(
                    {
                        "message_id": self.mids[s],
                        "producer_id": strings(self.prod_names, self.prod[s]),
                        "seq": self.seq[s],
                        "topic": pa.repeat(topic, s.stop - s.start),
                        "partition": self.send_part[s],
                        "key": pa.nulls(s.stop - s.start, pa.string()),
                        "zone": strings(list(ZONES), self.prod[s] % len(ZONES)),
                        "send_ts": self.send_ts[s],
                        "ack_ts": pa.array(self.ack_ts[s], mask=~acked_here),
                        "outcome": strings(outcome_names, oc),
                        "offset": pa.array(self.ack_off[s], mask=~acked_here),
                        "error": strings(errors, oc),  # type: ignore[arg-type]
                        "transaction_id": (
                            pa.nulls(s.stop - s.start, pa.string()) if self.txn is None else self.txn.ids(s)
                        ),
                    }
                ),
            )
        l_part, l_off, l_mid, l_src = self.log_cols
        on_log = np.flatnonzero(~np.isin(l_src, self.gap))
        if self.txn is not None:
            on_log = on_log[~self.txn.gone_from_log(l_src[on_log])]
            given = pa.array(self.txn.given_to_read_committed(l_src))
        else:
            given = pa.nulls(len(l_src), pa.bool_())
        for lo in range(0, len(on_log), step):
            rows = pa.array(on_log[lo : lo + step])
            w.write_batch(
                "final_log",
                pa.table(
                    {
                        "topic": pa.repeat(topic, len(rows)),
                        "partition": pc.take(pa.array(l_part), rows),
                        "offset": pc.take(pa.array(l_off), rows),
                        "message_id": pc.take(l_mid, rows),
                        "read_committed": pc.take(given, rows),
                    }
                ),
            )
        self.log_rows = len(on_log)
        self.written_log = synthetic_pipeline.InputLog(
            topic,
            self.nparts,
            l_part[on_log],
            l_off[on_log],
            pc.take(l_mid, pa.array(on_log)),
            pc.fill_null(pc.take(given, pa.array(on_log)), True).to_numpy(zero_copy_only=False),
        )
        p_part, p_off, p_mid, p_src = self.polls.columns()
        self.poll_rows = len(p_part)
        p_ts = self.chunk.t0 + np.arange(len(p_part)) / spec.rate + 0.01
        isolation = pa.scalar(None if self.txn is None else READ_COMMITTED, pa.string())
        if self.txn is not None:  # a read_committed consumer reads a transaction's record once
            p_ts = self.txn.after_commit_asked(p_src, p_ts)  # its commit was asked for
            self.poll_rows += self.txn.write(w, topic)
        p_consumer = (p_part % spec.consumers).astype(np.int64)
        consumer_names = [f"consumer-{ZONES[c % len(ZONES)]}-{c}" for c in range(spec.consumers)]
        if self.group is not None:
            self.poll_rows += self.group.write(w, topic, step)
        for lo in range(0, len(p_part), step):
            s = slice(lo, min(len(p_part), lo + step))
            w.write_batch(
                "polls",
                pa.table(
                    {
                        "consumer_id": strings(consumer_names, p_consumer[s]),
                        "zone": strings(list(ZONES), p_consumer[s] % len(ZONES)),
                        "topic": pa.repeat(topic, s.stop - s.start),
                        "partition": p_part[s],
                        "offset": p_off[s],
                        "message_id": p_mid[s],
                        "poll_ts": p_ts[s],
                        "group": pa.nulls(s.stop - s.start, pa.string()),
                        "assignment": pa.nulls(s.stop - s.start, pa.int32()),
                        "poll_seq": pa.nulls(s.stop - s.start, pa.int64()),
                        "isolation": pa.repeat(isolation, s.stop - s.start),
                    }
                ),
            )

    # ---- ground truth ----------------------------------------------------------------------

    def _record_truth(self) -> None:
        t, part = self.truth, self.part
        t.add("lost", part[self.lost], self.ids(self.lost))
        t.add("lost", part[self.gap], self.ids(self.gap))
        t.add("duplicate", part[self.dup], self.ids(self.dup))
        t.add("duplicate", part[self.cross], self.ids(self.cross))
        t.add("duplicate", part[self.cross_m], self.ids(self.cross_m))
        t.add("duplicate", np.minimum(part[self.homeless], self.homeless_copy), self.ids(self.homeless))
        t.add("duplicate", self.copies_part.min(axis=1), self.copies_ids)
        shared = np.array([m for pair in self.shared for m in pair[:2]], np.int64)
        once = np.concatenate([self.trunc_ack, self.trunc_poll, self.read_far, shared])
        t.add("truncated", part[once], self.ids(once))
        twice = np.concatenate([self.read_many, self.gap])
        t.add("truncated", part[twice], self.ids(twice), times=2)
        t.add("unexpected", self.ghost_part, self.ghost_mids.to_pylist())
        t.add("unexpected", self.shared_ghost_part, [*self.shared_ghost_ids, *self.shared_others, None])
        t.add("unexpected", np.concatenate([self.null_part, self.e_part[self.null_read]]), [None])
        t.add("unexpected", self.copies_part.reshape(-1), self.copies_ids)
        aborted = np.concatenate([self.aborted, self.far])
        t.add("aborted_read", part[aborted], self.ids(aborted))
        # in seq order, the later-sent member of a swapped pair sits below the earlier one
        t.add("reordered", part[self.pair_b], self.ids(self.pair_b))
        t.add("reordered", part[self.cross_m], self.ids(self.cross_m))
        t.add("unseen", part[self.unseen], self.ids(self.unseen))
        if self.group is not None:
            self.group.record(t)
        if self.txn is not None:
            self.txn.record(t)

    def _availability(self) -> dict[float, tuple[int, int, int]]:
        n = self.n
        buckets = np.floor(self.send_ts).astype(np.int64)
        avail: dict[float, tuple[int, int, int]] = {}
        b0 = int(buckets.min()) if n else 0
        counts = [
            np.bincount(buckets[self.outcome == o] - b0, minlength=int(buckets.max()) - b0 + 1)
            if n
            else np.zeros(0, dtype=np.int64)
            for o in range(3)
        ]
        for j in range(len(counts[0])):
            avail[float(b0 + j)] = (int(counts[0][j]), int(counts[1][j]), int(counts[2][j]))
        return avail

    def build(self, w: HistoryWriter, path: Path) -> SynthHistory:
        """Plant and write the chunk; return its ground truth."""
        self._sends()
        self._special_messages()
        self._lay_out()
        self._reorder()
        self._picks()
        self._final_log()
        self._acks()
        if self.txn is not None:
            self.txn.plant()
        self._polls()
        self._write(w)
        self._record_truth()
        rows = {"sends": self.n, "final_log": self.log_rows, "polls": self.poll_rows}
        availability = self._availability()
        if self.chunk.pipes:
            self._pipeline(w, rows, availability)
        if self.group is not None:
            rows.update(self.group.rows_written)
        if self.txn is not None:
            rows["transactions"] = self.txn.rows_written
        truth = self.truth
        expected, findings = truth.expected(), truth.findings()
        return SynthHistory(path, self.spec, expected, truth.planted, availability, rows, findings)

    def _pipeline(
        self, w: HistoryWriter, rows: dict[str, int], availability: dict[float, tuple[int, int, int]]
    ) -> None:
        """Plant and write the chunk's pipeline: its tables, its truth, its outputs' sends
        in the availability buckets (all acknowledged)."""
        rng = np.random.default_rng([self.spec.seed, self.chunk.index, 7])  # its own stream
        want = {k: int(self.want.get(k, 0)) for k in PIPELINE_KINDS}
        planted = synthetic_pipeline.plant(
            self.written_log, want, rng, self.chunk.t0, self.txn is not None, self.chunk.topic
        )
        for table, data in planted.tables.items():
            w.write_batch(table, data)
            rows[table] = rows.get(table, 0) + data.num_rows
        for kind, parts, ids, times in planted.truth:
            self.truth.add(kind, parts, ids, times=times)
            if kind == "pipeline_duplicate":  # one finding per source, whatever it weighs
                self.truth.found(kind, parts)
        buckets, counts = np.unique(np.floor(planted.send_ts), return_counts=True)
        for start, acked in zip(buckets.tolist(), counts.tolist(), strict=True):
            have = availability.get(float(start), (0, 0, 0))
            availability[float(start)] = (have[0] + acked, have[1], have[2])
