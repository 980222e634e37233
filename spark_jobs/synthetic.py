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
consumer group (``spark_jobs.groups``; docs/HISTORY.md): each partition's reads up to its
first unseen message are a group's, in two assignments (generation 0 reads the first half
from the log start, generation 1 the rest from where generation 0 committed), with
periodic commits, failed commits below them (which must not count) and rebalance rows;
the rest of the reads stay an assign()-ing consumer's. Group plants, each exact:

- poll_skip: a run of one or two reads of acknowledged offsets handed to the assign()-ing
  consumer (still polled, so nothing is unseen), inside a member's reads or at the start
  of its assignment (then above its resume offset); one finding per run, one count per
  offset.
- nonmonotonic_poll: a member reads offsets j..k again right after k (k - j < 3).
- commit_regression: an extra commit of the previous commit's offset, right after a commit.
- commit_beyond_read: an extra commit of the next commit's offset, made before the member
  read the record below it.

With ``SynthSpec.transactions`` (or any transaction kind or edge planted) the chunk also has
``txn_producers`` transactional producers (schema 6; ``_Txns``): each of their sends is in
a transaction of 1..``txn_max_messages`` consecutive sends, committed, aborted or of
unknown outcome. Their data is what a sound run records: a committed transaction's sends are
acknowledged, its records are on the final log and given to the read_committed drain;
an aborted one's records are on the final log, not given to that drain, and polled by
nobody (no consumer group member, no assign()-ing consumer); an unknown one was settled
either way by Kafka (its records then are like a committed or an aborted one's). A commit
or abort marker takes the offset after the transaction's records in each partition it
touched, so the final log has gaps. The assign()-ing consumers read at read_committed,
each record of a transaction once its commit was asked for; the group members read at
read_uncommitted (and still never an aborted record). None of this counts: the sends of
aborted or unknown transactions are judged unknown, so their records are neither lost,
unseen nor acknowledged offsets a member skips; the old plants never pick a
transactional send. Transaction plants, each exact:

- txn_aborted_read: a message of an aborted transaction polled at its own position (by a
  read_committed, a read_uncommitted or an isolation-less consumer), given to the
  read_committed drain (read_committed true), or both: one count per message.
- txn_uncommitted_read: a message of a committed transaction polled at its own position
  by a read_committed consumer before its commit was asked for, once or twice.
- txn_lost: a committed transaction whose records the read_committed drain was not given.
- txn_partial: the same for some, not all, of a committed transaction's records.

With ``SynthSpec.pipelines`` (or any pipeline kind planted) a pipeline group also read
the chunk's final log and wrote outputs to a topic of its own (schema 7;
``spark_jobs.synthetic_pipeline`` says how, and how its kinds are planted).

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
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import (
    ANOMALY_KINDS,
    COMMIT_COMMITTED,
    COMMIT_FAILED,
    GROUP_KINDS,
    PIPELINE_KINDS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REBALANCES_SCHEMA,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_KINDS,
    TXN_UNKNOWN,
    HistoryWriter,
)
from spark_jobs import synthetic_pipeline

ZONES = ("a", "b", "c")
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
GROUP = "synthetic-group"


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


def _offsets_in_send_order(src: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Offsets of log entries laid out per partition in the order their messages were
    sent (``src`` is the send index): what a partition holds when nothing goes wrong."""
    order = np.argsort(src, kind="stable")
    offsets = np.empty(len(src), dtype=np.int64)
    offsets[order] = _rank_within(parts[order])
    return offsets


def _strings(names: list[str], idx: np.ndarray) -> pa.Array:
    return pc.take(pa.array(names, pa.string()), pa.array(idx))


def _message_ids(prefixes: pa.Array, seq: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefixes, pa.array(seq).cast(pa.string()), "-")


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


def generate(spec: SynthSpec, path: str | os.PathLike[str]) -> SynthHistory:
    """Write a history for ``spec`` under ``path`` and return it with its ground truth.

    A spec whose anomalies cannot be planted raises ValueError; anything already written
    is then marked aborted, so no reader takes it for a complete history."""
    unknown_kinds = set(spec.anomalies) - set(ANOMALY_KINDS)
    if unknown_kinds:
        raise ValueError(f"unknown anomaly kinds {sorted(unknown_kinds)}")
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
            _merge(truth, _ChunkBuilder(spec, chunk).build(w, Path(path)))
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


class _Truth:
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


class _ChunkBuilder:
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
        self.truth = _Truth(chunk.topic)

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
        self.txn = _Txns(self) if self.chunk.txns else None
        self.in_log = (self.outcome == 0) | ((self.outcome == 2) & landed)
        self.judged = self.outcome
        if self.txn is not None:
            self.in_log |= self.txn.logged_anyway
            self.judged = self.txn.judged(self.outcome)
        self.send_part = self.part.copy()  # the partition its send row names (-1: unknown)
        self.log_part = self.part.copy()  # the partition of its own copy on the final log
        self.pick = _Picker(rng, n)
        if self.txn is not None:  # no other plant touches a transaction's message
            self.pick.used[self.txn.sends] = True
        self.acked = np.flatnonzero(self.outcome == 0)
        numbers = range(self.chunk.producer_base, self.chunk.producer_base + spec.producers)
        self.prod_names = [f"prod-{ZONES[p % len(ZONES)]}-{p}" for p in numbers]
        if self.txn is not None:
            self.prod_names += self.txn.producer_names()
        self.mids = _message_ids(_strings(self.prod_names, self.prod), self.seq)

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
            self.e_off = _offsets_in_send_order(self.e_src, self.e_part)
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
        offsets = self.hw[parts] + _rank_within(parts) if len(parts) else np.zeros(0, np.int64)
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
        self.ghost_mids = _message_ids(_named([ghost] * n_ghosts), np.arange(n_ghosts))
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
        self.group: _Group | None = None
        if self.chunk.groups:  # the group reads what it reads instead of the assign()-er
            self.group = _Group(self, keep)
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
                        "producer_id": _strings(self.prod_names, self.prod[s]),
                        "seq": self.seq[s],
                        "topic": pa.repeat(topic, s.stop - s.start),
                        "partition": self.send_part[s],
                        "key": pa.nulls(s.stop - s.start, pa.string()),
                        "zone": _strings(list(ZONES), self.prod[s] % len(ZONES)),
                        "send_ts": self.send_ts[s],
                        "ack_ts": pa.array(self.ack_ts[s], mask=~acked_here),
                        "outcome": _strings(outcome_names, oc),
                        "offset": pa.array(self.ack_off[s], mask=~acked_here),
                        "error": _strings(errors, oc),  # type: ignore[arg-type]
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
                        "consumer_id": _strings(consumer_names, p_consumer[s]),
                        "zone": _strings(list(ZONES), p_consumer[s] % len(ZONES)),
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


# ------------------------------------------------------------------------ consumer group


def _windows_clear(busy: np.ndarray, lo: int, hi: int) -> bool:
    return not busy[max(lo, 0) : hi + 1].any()


class _Pool:
    """Candidates in a random order, handed out one by one (an array and a cursor: a list
    of ten million numbers would cost more than the plants)."""

    def __init__(self, order: np.ndarray) -> None:
        self.order, self.at = order, 0

    def next(self) -> int | None:
        if self.at >= len(self.order):
            return None
        self.at += 1
        return int(self.order[self.at - 1])


class _Group:
    """The consumer group of one chunk (see the module docstring): which rows of the final
    log its members read and in what order, the plants, and the commits and rebalances.

    Reads are kept in time order: generation, partition, offset (a re-read sorts right
    after the read it repeats). Generation 0 of partition p reads offsets [0, x_p) as
    member p mod C, generation 1 reads [x_p, stop_p) as member p + 1 mod C, where stop_p
    is the first unseen message's offset (the group must not read it, and a gap below it
    would be a skip) and x_p = stop_p // 2. A member's assignment number is its
    generation. Commits follow every ``commit_every`` reads of a segment and its last one,
    at the offset after that read; a plant never moves such a read, so every regular
    commit is at most one above what the group had read."""

    def __init__(self, b: _ChunkBuilder, keep: np.ndarray) -> None:
        self.b = b
        spec, nparts = b.spec, b.nparts
        self.rng = np.random.default_rng((spec.seed, b.chunk.index, 7))  # old plants unmoved
        l_part, l_off, l_mid, _ = b.log_cols
        stop = b.hw.copy()
        np.minimum.at(stop, b.part[b.unseen], b.offset_of[b.unseen])
        self.stop, self.x = stop, stop // 2
        rows = keep[l_off[keep] < stop[l_part[keep]]]
        gen = (l_off[rows] >= self.x[l_part[rows]]).astype(np.int64)
        order = np.lexsort((l_off[rows], l_part[rows], gen))
        self.rows = rows[order]
        self.part = l_part[self.rows].astype(np.int64)
        self.off = l_off[self.rows]
        self.mid = pc.take(l_mid, pa.array(self.rows))
        self.gen = gen[order]
        self.member = (self.part + self.gen) % spec.consumers
        n = len(self.rows)
        seg = self.gen * nparts + self.part
        self.first = np.r_[True, seg[1:] != seg[:-1]] if n else np.zeros(0, bool)
        self.last = np.r_[seg[1:] != seg[:-1], True] if n else np.zeros(0, bool)
        self.seg_start = np.maximum.accumulate(np.where(self.first, np.arange(n), 0)) if n else self.first
        rel = np.arange(n) - self.seg_start
        self.anchor = ((rel + 1) % max(1, spec.commit_every) == 0) | self.last
        acked = (b.judged == 0) & (b.ack_off >= 0)
        keys = b.send_part[acked].astype(np.int64) * (1 << 40) + b.ack_off[acked]
        self.acked = np.isin(self.part * (1 << 40) + self.off, keys)
        # reads a plant may hand to the assign()-ing consumer: not a transaction's (that
        # consumer reads at read_committed, and only after the commit was asked for)
        self.plain = np.ones(n, bool) if b.txn is None else ~b.txn.transactional(b.log_cols[3][self.rows])
        self.grouped = np.ones(n, bool)
        self.busy = np.zeros(n, bool)
        # Extra rows: re-reads (index of the read repeated, sort key) and commits (row the
        # commit follows, fraction of a read interval after it, offset, mode, outcome).
        self.reread: list[tuple[int, float]] = []
        self.commits: list[tuple[int, float, int, str, str]] = []
        self.skips: list[tuple[int, int]] = []  # (partition, acknowledged offsets passed over)
        self.early: list[tuple[int, int]] = []  # early commits: (read made after, regular commit's read)
        self.planted: dict[str, list[int]] = {k: [] for k in GROUP_KINDS}
        self._regular_commits()
        self._skips(b.want["poll_skip"], acked_runs=True)
        self._skips(b.edges["unacked_gap"], acked_runs=False)
        self._rereads(b.want["nonmonotonic_poll"])
        self._regressions(b.want["commit_regression"])
        self._early_commits(b.want["commit_beyond_read"])
        self._skip_commits(b.edges["txn_skip_commit"])
        self._timeline()

    # ---- plants ---------------------------------------------------------------------------

    def _regular_commits(self) -> None:
        every = max(1, self.b.spec.commit_every)
        rel = np.arange(len(self.rows)) - self.seg_start
        for i in np.flatnonzero(self.anchor).tolist():
            mode = "sync" if self.last[i] else "auto"
            self.commits.append((i, 0.2, int(self.off[i]) + 1, mode, COMMIT_COMMITTED))
            if (rel[i] + 1) % (3 * every) == 0:  # a failed commit far below: never counts
                self.commits.append((i, 0.25, max(0, int(self.off[i]) + 1 - every), "async", COMMIT_FAILED))

    def _skips(self, want: int, acked_runs: bool) -> None:
        """Runs of one or two reads handed to the assign()-ing consumer, all at acknowledged
        offsets (``acked_runs``: each offset counts) or none (nothing counts). A run starts
        inside a segment (neither its first nor last read nor a commit's read) or, for
        acknowledged runs, at a segment's start (the member then starts above its resume
        offset)."""
        n = len(self.rows)
        free = ~self.last & ~self.anchor & (self.acked if acked_runs else ~self.acked) & self.plain
        inside = free & ~self.first
        nxt = np.r_[inside[1:], False]
        same = np.r_[~self.first[1:], False]  # row i + 1 is in row i's segment
        lead = self.first & free & same if acked_runs else np.zeros(n, bool)  # one left after
        starts = {
            (False, 1): np.flatnonzero(inside),
            (False, 2): np.flatnonzero(inside & nxt & same),
            (True, 1): np.flatnonzero(lead),
            (True, 2): np.flatnonzero(lead & np.r_[(free & same)[1:], False]),
        }
        pools = {k: _Pool(self.rng.permutation(v)) for k, v in starts.items()}
        left = want
        while left > 0:
            width = 1 if left == 1 else int(self.rng.integers(1, 3))
            at_start = bool(self.rng.random() < 1 / 3)
            for key in ((at_start, width), (not at_start, width), (at_start, 1), (not at_start, 1)):
                i = self._draw(pools[key], key)
                if i is not None:
                    break
            else:
                raise ValueError(f"cannot plant {left} more read gaps: no candidate reads left")
            start, width = i, key[1]
            self.grouped[start : start + width] = False
            self.busy[max(start - 1, 0) : start + width + 1] = True
            if acked_runs:
                self.skips.append((int(self.part[start]), width))
                left -= width
            else:
                left -= 1

    def _draw(self, pool: _Pool, key: tuple[bool, int]) -> int | None:
        at_start, width = key
        while (i := pool.next()) is not None:
            lo = i if at_start else i - 1
            if _windows_clear(self.busy, lo, i + width):
                return i
        return None

    def _rereads(self, want: int) -> None:
        """A member reads j..k again right after k: one step back, then on by one."""
        pool = _Pool(self.rng.permutation(len(self.rows)))
        for _ in range(want):
            while True:
                if (k := pool.next()) is None:
                    raise ValueError("cannot plant nonmonotonic reads: no candidate reads left")
                back = min(int(self.rng.integers(0, 3)), k - int(self.seg_start[k]))
                j = k - back
                if self.grouped[j : k + 1].all() and _windows_clear(self.busy, j - 1, k + 1):
                    break
            self.busy[max(j - 1, 0) : k + 2] = True
            self.reread.extend((r, float(self.off[k]) + 0.1 * (t + 1)) for t, r in enumerate(range(j, k + 1)))
            self.planted["nonmonotonic_poll"].append(int(self.part[k]))

    def _anchors(self) -> tuple[np.ndarray, np.ndarray]:
        """Regular commits' reads in time order, and the previous one of the same partition
        (-1: none), in whatever generation."""
        a = np.flatnonzero(self.anchor)
        order = np.lexsort((a, self.part[a]))
        prev = np.full(len(a), -1, np.int64)
        same = self.part[a[order]][1:] == self.part[a[order]][:-1]
        prev[order[1:][same]] = a[order[:-1][same]]
        return a, prev

    def _regressions(self, want: int) -> None:
        """Right after a regular commit, another of the previous commit's offset."""
        a, prev = self._anchors()
        ok = np.flatnonzero(prev >= 0)
        if want > len(ok):
            raise ValueError(f"cannot plant {want} commit regressions: only {len(ok)} candidates")
        for c in np.sort(self.rng.choice(ok, want, replace=False)).tolist():
            i = int(a[c])
            self.commits.append((i, 0.3, int(self.off[prev[c]]) + 1, "async", COMMIT_COMMITTED))
            self.planted["commit_regression"].append(int(self.part[i]))

    def _early_commits(self, want: int) -> None:
        """Before a regular commit, one of its offset made while the member had read only up
        to a read k at or after the previous commit's, at least two below it: the offsets
        in between were on the log and not read yet. k may have been handed away (a skip):
        then the group had read even less."""
        a, _ = self._anchors()
        same_seg = np.r_[False, self.seg_start[a][1:] == self.seg_start[a][:-1]]
        lb = np.where(same_seg, np.r_[0, a[:-1]], self.seg_start[a])
        ok = np.flatnonzero(a > lb)
        if want > len(ok):
            raise ValueError(f"cannot plant {want} early commits: only {len(ok)} candidates")
        for c in np.sort(self.rng.choice(ok, want, replace=False)).tolist():
            i = int(a[c])
            k = int(self.rng.integers(lb[c], i))
            self.commits.append((k, 0.5, int(self.off[i]) + 1, "async", COMMIT_COMMITTED))
            self.early.append((k, i))
            self.planted["commit_beyond_read"].append(int(self.part[i]))

    def _skip_commits(self, want: int) -> None:
        """Right after a member's read i (0.45 of a read interval after it), a commit of the
        offset of its next read i + 1, where everything between the two reads is aborted
        records and markers: no record the read_committed drain was given and no
        acknowledged offset. The group had read i, so it committed nothing it had not read.
        The commit is above every commit before it (regular ones are at most one above a
        read, and i is outside every early commit's stretch k < i < its regular commit's
        read) and below every commit after it (the next regular one is above read i + 1)."""
        if not want:
            return
        assert self.b.txn is not None  # the edge implies transactions
        held = self.b.txn.held_offsets()
        i = np.flatnonzero(~self.last)
        i = i[self.grouped[i] & self.grouped[i + 1] & (self.off[i + 1] - self.off[i] >= 2)]
        base = self.part[i] * (1 << 40)
        between = np.searchsorted(held, base + self.off[i + 1]) - np.searchsorted(
            held, base + self.off[i], side="right"
        )
        i = i[between == 0]
        for read, anchor in self.early:
            i = i[(i <= read) | (i >= anchor)]
        pool = _Pool(self.rng.permutation(i))
        for _ in range(want):
            while True:
                if (k := pool.next()) is None:
                    raise ValueError("cannot plant commits over aborted records: no candidate reads")
                if _windows_clear(self.busy, k, k + 1):
                    break
            self.busy[k : k + 2] = True
            self.commits.append((k, 0.45, int(self.off[k + 1]), "async", COMMIT_COMMITTED))

    # ---- time, rows and truth -----------------------------------------------------------

    def _timeline(self) -> None:
        """Poll times in time order, one read interval apart; poll_seq per member."""
        n = len(self.rows)
        src = np.r_[np.arange(n), np.array([r for r, _ in self.reread], np.int64)].astype(np.int64)
        key = np.r_[self.off.astype(np.float64), np.array([k for _, k in self.reread], np.float64)]
        order = np.lexsort((key, self.part[src], self.gen[src]))
        self.src = src[order]
        self.dt = 1.0 / self.b.spec.rate
        self.ts = self.b.chunk.t0 + 0.01 + np.arange(len(order)) * self.dt
        self.grouped_row = np.r_[self.grouped, np.ones(len(self.reread), bool)][order]
        self.ts_of = np.empty(n, np.float64)
        original = np.r_[np.ones(n, bool), np.zeros(len(self.reread), bool)][order]
        self.ts_of[self.src[original]] = self.ts[original]
        seq = np.full(len(order), -1, np.int64)
        g = np.flatnonzero(self.grouped_row)
        seq[g] = _rank_within(self.member[self.src[g]])
        self.seq = seq

    def write(self, w: HistoryWriter, topic: str, step: int) -> int:
        """Write the group's reads, commits and rebalances; return the reads written."""
        spec, src, grouped = self.b.spec, self.src, self.grouped_row
        members = [f"member-{ZONES[c % len(ZONES)]}-{c}" for c in range(spec.consumers)]
        readers = [f"consumer-{ZONES[c % len(ZONES)]}-{c}" for c in range(spec.consumers)]
        names = np.where(grouped, self.member[src], spec.consumers + self.part[src] % spec.consumers)
        # members read at read_uncommitted (never an aborted record, still), the assign()-ing
        # consumer at read_committed, when the history has transactions
        txns = self.b.txn is not None
        isolation = pa.scalar(READ_UNCOMMITTED if txns else None, pa.string())
        reader_isolation = pa.scalar(READ_COMMITTED if txns else None, pa.string())
        for lo in range(0, len(src), step):
            s = slice(lo, min(len(src), lo + step))
            k, g = s.stop - s.start, grouped[s]
            w.write_batch(
                "polls",
                pa.table(
                    {
                        "consumer_id": _strings(members + readers, names[s]),
                        "zone": _strings(list(ZONES), names[s] % len(ZONES)),
                        "topic": pa.repeat(topic, k),
                        "partition": self.part[src[s]].astype(np.int32),
                        "offset": self.off[src[s]],
                        "message_id": pc.take(self.mid, pa.array(src[s])),
                        "poll_ts": self.ts[s],
                        "group": pc.if_else(pa.array(g), GROUP, pa.scalar(None, pa.string())),
                        "assignment": pa.array(self.gen[src[s]].astype(np.int32), mask=~g),
                        "poll_seq": pa.array(self.seq[s], mask=~g),
                        "isolation": pc.if_else(pa.array(g), isolation, reader_isolation),
                    }
                ),
            )
        rows, at, offset, modes, outcomes = (
            np.array([c[0] for c in self.commits], np.int64),
            np.array([c[1] for c in self.commits], np.float64),
            np.array([c[2] for c in self.commits], np.int64),
            [c[3] for c in self.commits],
            [c[4] for c in self.commits],
        )
        failed = np.array([o == COMMIT_FAILED for o in outcomes], bool)
        w.write_batch(
            "commits",
            pa.table(
                {
                    "group": pa.repeat(GROUP, len(rows)),
                    "consumer_id": _strings(members, self.member[rows]),
                    "assignment": self.gen[rows].astype(np.int32),
                    "topic": pa.repeat(topic, len(rows)),
                    "partition": self.part[rows].astype(np.int32),
                    "offset": offset,
                    "ts": self.ts_of[rows] + at * self.dt,
                    "mode": pa.array(modes, pa.string()),
                    "outcome": pa.array(outcomes, pa.string()),
                    "error": pc.if_else(
                        pa.array(failed, pa.bool_()), "REBALANCE_IN_PROGRESS", pa.scalar(None, pa.string())
                    ),
                }
            ),
        )
        self.rows_written = {"commits": len(rows), "rebalances": self._rebalances(w, topic, members)}
        return len(src)

    def _rebalances(self, w: HistoryWriter, topic: str, members: list[str]) -> int:
        """Per partition the group read: generation 0 assigned from the log start (nothing
        committed), revoked, generation 1 assigned from where generation 0 committed."""
        b = self.b
        parts = np.flatnonzero(self.stop > 0)
        gen1 = np.flatnonzero(self.gen[self.src] == 1)
        t0 = b.chunk.t0
        turn = float(self.ts[gen1[0]]) - 0.5 * self.dt if len(gen1) else t0
        resume = [int(self.x[p]) if self.x[p] > 0 else None for p in parts]
        rows: list[dict[str, Any]] = []
        for p, r in zip(parts.tolist(), resume, strict=True):
            base = {"group": GROUP, "topic": topic, "partition": p}
            first, second = members[p % len(members)], members[(p + 1) % len(members)]
            rows += [
                {**base, "consumer_id": first, "ts": t0, "event": "assigned", "assignment": 0,
                 "resume_offset": None},
                {**base, "consumer_id": first, "ts": turn, "event": "revoked", "assignment": 0,
                 "resume_offset": None},
                {**base, "consumer_id": second, "ts": turn, "event": "assigned", "assignment": 1,
                 "resume_offset": r},
            ]  # fmt: skip
        if rows:
            w.write_batch("rebalances", pa.Table.from_pylist(rows, schema=REBALANCES_SCHEMA))
        return len(rows)

    def record(self, t: _Truth) -> None:
        for p, width in self.skips:
            t.add("poll_skip", [p], [None], times=width)
        t.found("poll_skip", [p for p, _ in self.skips])
        for kind, parts in self.planted.items():
            t.add(kind, parts, [None] if parts else [])


# --------------------------------------------------------------------------- transactions

# A transaction's kind: orphans have no row, doubled ones two (committed, then aborted);
# both are otherwise committed ones.
COMMITTED, ABORTED, UNKNOWN, ORPHAN, DOUBLED = 0, 1, 2, 3, 4
TXN_OUTCOME_NAMES = [TXN_COMMITTED, TXN_ABORTED, TXN_UNKNOWN]
# Who reads a transaction's record in a plant: the partition's assign()-ing consumer, or
# one of two consumers of their own; and at which isolation level each reads.
ASSIGNER, DIRTY, PLAIN = 0, 1, 2
READER_NAMES = ("dirty-reader", "plain-reader")  # DIRTY's and PLAIN's
READER_LEVELS = [READ_COMMITTED, READ_UNCOMMITTED, None]  # by reader; None: not recorded
TXN_ERRORS = [None, "PRODUCER_FENCED", "_TIMED_OUT"]  # an unknown one's: died before asking, or
# the commit or abort call failed or never returned


class _Txns:
    """The transactions of one chunk (see the module docstring).

    Each transactional producer's sends are cut into transactions of 1..txn_max_messages
    consecutive sends. Per transaction: its kind (committed, aborted, unknown, or a
    committed orphan whose row is not written), for an unknown one whether Kafka settled it
    as committed, and its times: begun just before its first send, its end asked for just
    after its last one (never, for some unknown ones), returned a little later (never, for
    some unknown ones). Per send: whether its record is gone from the final log (a hole),
    read by no regular consumer, or not given to the read_committed drain. The transaction
    plants (``plant``) change only those flags and add reads of their own."""

    def __init__(self, b: _ChunkBuilder) -> None:
        self.b = b
        spec = b.spec
        self.rng = np.random.default_rng((spec.seed, b.chunk.index, 11))  # other plants unmoved
        self.dt = 1.0 / spec.rate
        self._assign()
        self._outcomes()
        self._edges_on_sends()
        self._times()
        self.rows_written = 0

    # ---- who is in which transaction, and how it ended --------------------------------

    def _assign(self) -> None:
        b, spec = self.b, self.b.spec
        self.txn_of = np.full(b.n, -1, np.int64)
        firsts, lasts, producers = [], [], []
        count = 0
        for j in range(spec.txn_producers):
            mine = np.flatnonzero(b.prod == spec.producers + j)  # in seq order
            if not len(mine):
                continue
            ends = np.cumsum(self.rng.integers(1, max(1, spec.txn_max_messages) + 1, len(mine)))
            local = np.searchsorted(ends, np.arange(len(mine)), side="right")
            self.txn_of[mine] = count + local
            starts = np.r_[0, np.flatnonzero(np.diff(local)) + 1]
            firsts.append(mine[starts])
            lasts.append(mine[np.r_[starts[1:] - 1, len(mine) - 1]])
            producers.append(np.full(len(starts), spec.producers + j, np.int64))
            count += len(starts)
        self.count = count
        self.first = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
        self.last = np.concatenate(lasts) if lasts else np.zeros(0, np.int64)
        self.producer = np.concatenate(producers) if producers else np.zeros(0, np.int64)
        self.sends = np.flatnonzero(self.txn_of >= 0)
        self.by_txn = self.sends[np.argsort(self.txn_of[self.sends], kind="stable")]
        self.size = np.bincount(self.txn_of[self.sends], minlength=count)
        self.start = np.r_[0, np.cumsum(self.size)]
        self.send_used = np.zeros(b.n, bool)  # transaction plants never share a message
        self.txn_used = np.zeros(count, bool)  # nor a transaction

    def messages(self, t: int) -> np.ndarray:
        """The sends of transaction ``t``, in seq order."""
        return self.by_txn[self.start[t] : self.start[t + 1]]

    def _per_send(self, per_txn: np.ndarray) -> np.ndarray:
        out = np.zeros(self.b.n, per_txn.dtype)
        out[self.sends] = per_txn[self.txn_of[self.sends]]
        return out

    def _outcomes(self) -> None:
        """Transactions' kinds; their sends are acknowledged, except that some of an unknown
        transaction's are in doubt themselves (their records landed or not, as drawn)."""
        spec, b = self.b.spec, self.b
        u = self.rng.random(self.count)
        self.kind = np.full(self.count, COMMITTED, np.int8)
        self.kind[u < spec.txn_aborted_rate + spec.txn_unknown_rate] = UNKNOWN
        self.kind[u < spec.txn_aborted_rate] = ABORTED
        self.settled = (self.kind == UNKNOWN) & (self.rng.random(self.count) < 0.5)  # committed
        doubt = (self.kind[self.txn_of[self.sends]] == UNKNOWN) & (self.rng.random(len(self.sends)) < 0.3)
        b.outcome[self.sends] = np.where(doubt, 2, 0)

    def _edges_on_sends(self) -> None:
        """The edge cases that change sends or rows: orphans, aborted records gone from the
        final log, failed sends of aborted transactions on it, empty transactions."""
        b, edges = self.b, self.b.edges
        self.orphans = self._take_txns(np.flatnonzero(self.kind == COMMITTED), edges["txn_orphan"], "orphans")
        self.kind[self.orphans] = ORPHAN
        committed = np.flatnonzero(self.kind == COMMITTED)
        self.doubled = self._take_txns(committed, edges["txn_doubled_row"], "doubled rows")
        self.kind[self.doubled] = DOUBLED
        aborted = self.sends[(self.kind[self.txn_of[self.sends]] == ABORTED)]
        gone = self._take_sends(aborted, edges["txn_aborted_gone"], "aborted records gone")
        self.failed = self._take_sends(aborted, edges["txn_failed_logged"], "failed sends on the log")
        b.outcome[self.failed] = 1
        self.logged_anyway = np.zeros(b.n, bool)
        self.logged_anyway[self.failed] = True
        self.gone = np.zeros(b.n, bool)
        self.gone[gone] = True
        self.gone[self.first[self.orphans]] = True
        self.empty = int(edges["txn_empty"])
        # Records the read_committed drain is not given (an aborted transaction's, or an
        # unknown one's that Kafka aborted), and records no regular consumer reads.
        aborted_like = (self.kind == ABORTED) | ((self.kind == UNKNOWN) & ~self.settled)
        self.rc_false = self._per_send(aborted_like)
        self.hidden = self._per_send(aborted_like | (self.kind == ORPHAN)) | self.gone

    def _times(self) -> None:
        ts, dt, count = self.b.send_ts, self.dt, self.count
        unknown = self.kind == UNKNOWN
        never = unknown & ~self.settled & (self.rng.random(count) < 0.5)  # died before asking
        hung = unknown & ~never & (self.rng.random(count) < 0.5)  # the call never returned
        self.begin = ts[self.first] - 0.3 * dt
        self.asked = np.where(never, np.nan, ts[self.last] + 0.5 * dt)
        self.ended = np.where(never | hung, np.nan, self.asked + 0.3 * dt)
        self.error = np.where(unknown, np.where(never, 1, 2), 0)  # indices into TXN_ERRORS

    def judged(self, outcome: np.ndarray) -> np.ndarray:
        """The judged outcomes: unknown for a send of a transaction not committed (an orphan's
        too: it has no row)."""
        judged = outcome.copy()
        judged[self.sends[self.kind[self.txn_of[self.sends]] != COMMITTED]] = 2
        return judged

    def producer_names(self) -> list[str]:
        spec, index = self.b.spec, self.b.chunk.index
        numbers = range(index * spec.txn_producers, (index + 1) * spec.txn_producers)
        return [f"txn-{ZONES[p % len(ZONES)]}-{p}" for p in numbers]

    # ---- the final log ----------------------------------------------------------------

    def lay_out(self, e_src: np.ndarray, e_part: np.ndarray) -> np.ndarray:
        """Offsets of the log entries in send order per partition, with a marker after each
        transaction's records in each partition it has one in, placed when its last send was
        made (so other producers' records sent before then come first)."""
        b = self.b
        logged = self.sends[b.in_log[self.sends]]
        pairs = np.unique(self.txn_of[logged] * b.nparts + b.part[logged])
        self.marker_part = (pairs % b.nparts).astype(np.int32)
        key = np.r_[2 * e_src, 2 * self.last[pairs // b.nparts] + 1]
        return _offsets_in_send_order(key, np.r_[e_part, self.marker_part])[: len(e_src)]

    def markers_per_partition(self) -> np.ndarray:
        return np.bincount(self.marker_part, minlength=self.b.nparts).astype(np.int64)

    def written_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Per partition, the first and last offset of a log entry that is on the final log."""
        b = self.b
        on = ~self.gone[b.e_src]
        first = np.full(b.nparts, np.iinfo(np.int64).max, np.int64)
        last = np.full(b.nparts, -1, np.int64)
        np.minimum.at(first, b.e_part[on], b.e_off[on])
        np.maximum.at(last, b.e_part[on], b.e_off[on])
        return first, last

    def _at(self, flags: np.ndarray, src: np.ndarray) -> np.ndarray:
        """``flags`` of the sends rows are copies of (False for rows of no send)."""
        return np.where(src >= 0, flags[np.maximum(src, 0)], False)

    def unread(self, src: np.ndarray) -> np.ndarray:
        return self._at(self.hidden, src)

    def gone_from_log(self, src: np.ndarray) -> np.ndarray:
        return self._at(self.gone, src)

    def given_to_read_committed(self, src: np.ndarray) -> np.ndarray:
        return ~self._at(self.rc_false, src)

    def transactional(self, src: np.ndarray) -> np.ndarray:
        return self._at(self.txn_of >= 0, src)

    def next_read_offset(self, parts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """For truncated acknowledgements: per (partition, offset), the next offset, wrapping,
        of a record the regular consumers read (never a marker's, or an aborted record's that
        a member would skip over)."""
        if not len(parts):
            return offsets
        l_part, l_off, _, l_src = self.b.log.columns()
        ok = ~self.unread(l_src)
        keys = np.sort(l_part[ok].astype(np.int64) * (1 << 40) + l_off[ok])
        base = parts.astype(np.int64) * (1 << 40)
        at = np.searchsorted(keys, base + offsets, side="right")
        after = keys[np.minimum(at, len(keys) - 1)]
        wrap = (at >= len(keys)) | (after >= base + (1 << 40))
        target = np.where(wrap, keys[np.searchsorted(keys, base)], after) - base
        if (target == offsets).any():
            raise ValueError("truncated acks need partitions holding at least two read records")
        return target

    def held_offsets(self) -> np.ndarray:
        """Sorted (partition << 40) + offset of every offset that held a record for
        commit_beyond_read: on the final log and given to read_committed, or acknowledged."""
        b = self.b
        l_part, l_off, _, l_src = b.log_cols
        on = ~np.isin(l_src, b.gap) & ~self.gone_from_log(l_src) & self.given_to_read_committed(l_src)
        acked = (b.judged == 0) & (b.ack_off >= 0)
        return np.unique(
            np.r_[
                l_part[on].astype(np.int64) * (1 << 40) + l_off[on],
                b.send_part[acked].astype(np.int64) * (1 << 40) + b.ack_off[acked],
            ]
        )

    # ---- plants -------------------------------------------------------------------------

    def _take_sends(self, candidates: np.ndarray, k: int, what: str) -> np.ndarray:
        free = candidates[~self.send_used[candidates]]
        if k > len(free):
            raise ValueError(f"cannot plant {k} {what}: only {len(free)} candidates")
        chosen = np.sort(self.rng.choice(free, size=k, replace=False)) if k else free[:0]
        self.send_used[chosen] = True
        return chosen

    def _take_txns(self, candidates: np.ndarray, k: int, what: str) -> np.ndarray:
        free = candidates[~self.txn_used[candidates]]
        if k > len(free):
            raise ValueError(f"cannot plant {k} {what}: only {len(free)} candidate transactions")
        chosen = np.sort(self.rng.choice(free, size=k, replace=False)) if k else free[:0]
        self.txn_used[chosen] = True
        for t in chosen.tolist():
            self.send_used[self.messages(t)] = True
        return chosen

    def plant(self) -> None:
        """The transaction kinds and the edge cases that are reads (after the acknowledgements,
        before the polls and the group, which read the flags set here)."""
        b, want, edges, rng, dt = self.b, self.b.want, self.b.edges, self.rng, self.dt
        self.reads: list[tuple[int, int, float]] = []  # (send, reader, poll_ts)
        written = self.sends[b.in_log[self.sends] & ~self.gone[self.sends]]
        kind = self.kind[self.txn_of[written]]
        # read by someone, given to the read_committed drain, or both: one count each
        aborted = written[(kind == ABORTED) & ~self.logged_anyway[written]]
        self.aborted_read = self._take_sends(aborted, want["txn_aborted_read"], "aborted reads")
        how = rng.integers(0, 3, len(self.aborted_read))
        self.rc_false[self.aborted_read[how >= 1]] = False
        for m in self.aborted_read[how != 1].tolist():
            self.reads.append((m, int(rng.integers(0, 3)), float(b.send_ts[m]) + 0.2 * dt))
        # before the commit was asked for, by a read_committed consumer, once or twice
        committed = written[kind == COMMITTED]
        self.uncommitted = self._take_sends(committed, want["txn_uncommitted_read"], "uncommitted reads")
        for m in self.uncommitted.tolist():
            asked = float(self.asked[self.txn_of[m]])
            for _ in range(int(rng.integers(1, 3))):
                self.reads.append((m, ASSIGNER, asked - (0.1 + 0.3 * float(rng.random())) * dt))
        # transactions the read_committed drain was given none, or some, of
        txns = np.flatnonzero(self.kind == COMMITTED)
        self.lost = self._take_txns(txns, want["txn_lost"], "lost transactions")
        for t in self.lost.tolist():
            self.rc_false[self.messages(t)] = True
        several = txns[self.size[txns] >= 2]
        self.partial = self._take_txns(several, want["txn_partial"], "partial transactions")
        self.partial_first = np.zeros(len(self.partial), np.int64)  # its first message not given
        for i, t in enumerate(self.partial.tolist()):
            mine = self.messages(t)
            hit = rng.choice(mine, int(rng.integers(1, len(mine))), replace=False)
            self.rc_false[hit] = True
            self.partial_first[i] = hit.min()
        # edge cases: reads that must not count
        for m in self._take_sends(committed, edges["txn_early_reads"], "early reads").tolist():
            asked = float(self.asked[self.txn_of[m]])
            self.reads += [(m, DIRTY, asked - 0.3 * dt), (m, PLAIN, asked - 0.2 * dt), (m, ASSIGNER, asked)]
        settled_aborted = written[(kind == UNKNOWN) & self.rc_false[written]]
        for m in self._take_sends(settled_aborted, edges["txn_unknown_read"], "unknown reads").tolist():
            sent = float(b.send_ts[m])
            self.reads += [(m, DIRTY, sent + 0.2 * dt), (m, ASSIGNER, sent + 0.3 * dt)]
        for t in self.doubled.tolist():
            self.reads.append((int(self.first[t]), ASSIGNER, float(self.asked[t]) - 0.3 * dt))

    # ---- polls, rows and truth ----------------------------------------------------------

    def after_commit_asked(self, src: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Poll times of the regular (read_committed) consumers: a transaction's record no
        earlier than just after its commit was asked for."""
        t = np.where(src >= 0, self.txn_of[np.maximum(src, 0)], -1)
        floor = np.full(len(ts), -np.inf)
        floor[t >= 0] = self.asked[t[t >= 0]] + 0.1 * self.dt  # nan (never asked): not read
        return np.fmax(ts, floor)

    def ids(self, s: slice) -> pa.Array:
        """The sends' transaction_id column for rows ``s``."""
        t = self.txn_of[s]
        return pc.take(self._names(), pa.array(t, mask=t < 0))

    def _names(self) -> pa.Array:
        if not hasattr(self, "names"):
            prefix = f"{self.b.chunk.topic}/tx"
            self.names = _message_ids(pa.repeat(pa.scalar(prefix), self.count), np.arange(self.count))
        return self.names

    def write(self, w: HistoryWriter, topic: str) -> int:
        """Write the transactions rows and the plants' reads; return the reads written."""
        b, spec = self.b, self.b.spec
        rows = np.r_[np.flatnonzero(self.kind != ORPHAN), self.doubled]  # doubled: twice
        outcome = np.where(self.kind[rows] == ABORTED, 1, np.where(self.kind[rows] == UNKNOWN, 2, 0))
        outcome[len(rows) - len(self.doubled) :] = 1  # the second time aborted
        producers = _strings(b.prod_names, self.producer[rows])
        for lo in range(0, len(rows), spec.part_rows):
            s = slice(lo, min(len(rows), lo + spec.part_rows))
            r = rows[s]
            w.write_batch(
                "transactions",
                pa.table(
                    {
                        "transaction_id": pc.take(self._names(), pa.array(r)),
                        "producer_id": producers[s],
                        "transactional_id": pc.binary_join_element_wise(producers[s], "tx", "."),
                        "begin_ts": self.begin[r],
                        "end_requested_ts": pa.array(self.asked[r], mask=np.isnan(self.asked[r])),
                        "end_ts": pa.array(self.ended[r], mask=np.isnan(self.ended[r])),
                        "outcome": _strings(TXN_OUTCOME_NAMES, outcome[s]),
                        "error": _strings(TXN_ERRORS, self.error[r]),  # type: ignore[arg-type]
                    }
                ),
            )
        name = b.prod_names[spec.producers]
        at = b.chunk.t0 + np.arange(self.empty) * self.dt
        empty = [
            {"transaction_id": f"{topic}/tx-empty-{i}", "producer_id": name, "transactional_id": f"{name}.tx",
             "begin_ts": float(t), "end_requested_ts": float(t) + 0.5 * self.dt,
             "end_ts": float(t) + 0.8 * self.dt, "outcome": TXN_COMMITTED, "error": None}
            for i, t in enumerate(at.tolist())
        ]  # fmt: skip
        if empty:
            w.write_batch("transactions", pa.Table.from_pylist(empty))
        self.rows_written = len(rows) + len(empty)
        return self._write_reads(w, topic)

    def _write_reads(self, w: HistoryWriter, topic: str) -> int:
        b, spec = self.b, self.b.spec
        if not self.reads:
            return 0
        m = np.array([r[0] for r in self.reads], np.int64)
        reader = np.array([r[1] for r in self.reads], np.int64)
        part = b.part[m]
        c = part % spec.consumers
        assigners = [f"consumer-{ZONES[i % len(ZONES)]}-{i}" for i in range(spec.consumers)]
        names = [*assigners, *READER_NAMES]
        who = np.where(reader == ASSIGNER, c, spec.consumers + reader - 1)
        k = len(m)
        w.write_batch(
            "polls",
            pa.table(
                {
                    "consumer_id": _strings(names, who),
                    "zone": _strings(list(ZONES), who % len(ZONES)),
                    "topic": pa.repeat(topic, k),
                    "partition": part.astype(np.int32),
                    "offset": b.offset_of[m],
                    "message_id": pc.take(b.mids, pa.array(m)),
                    "poll_ts": np.array([r[2] for r in self.reads], np.float64),
                    "group": pa.nulls(k, pa.string()),
                    "assignment": pa.nulls(k, pa.int32()),
                    "poll_seq": pa.nulls(k, pa.int64()),
                    "isolation": _strings(READER_LEVELS, reader),  # type: ignore[arg-type]
                }
            ),
        )
        return k

    def record(self, t: _Truth) -> None:
        b = self.b
        t.add("txn_aborted_read", b.part[self.aborted_read], b.ids(self.aborted_read))
        t.add("txn_uncommitted_read", b.part[self.uncommitted], b.ids(self.uncommitted))
        first = self.first[self.lost]
        t.add("txn_lost", b.part[first], b.ids(first))
        t.add("txn_partial", b.part[self.first[self.partial]], b.ids(self.partial_first))
