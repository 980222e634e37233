"""The reduce side of the reconciliation: every message judged in one vectorised sweep.

``plan.judged`` hash-partitions the event rows (PB, S, pos, f; ``plan.events`` says what
they mean) by PB, sorts each task's rows by PB and hands them here through
``DataFrame.mapInArrow`` as Arrow record batches. Why this shape:

* Public PySpark API only, so the same job runs in a classic session and under Spark
  Connect, with nothing to compile or ship: the code is numpy and pyarrow, imported by
  the executors' Python workers like any other module of the installed package.
* Per message, the rules need all of its rows (is it on the final log where it was
  acknowledged or polled? how many log positions hold it?), and reordering needs the
  messages of one producer in seq order per final-log partition. In Spark SQL that took
  two hash aggregations and a sorted window: far more CPU than the data is worth. Here a
  chunk of rows is sorted once by (PB, S, pos) with ``np.lexsort``; then a message's rows,
  and the rows of one position of it, are adjacent runs, and every per-message fact is a
  ``ufunc.reduceat`` over those runs. The previous message of a producer in a partition
  is the previous entry after one more sort of the (much fewer) final-log entries by
  (PB, partition, S).
* Bounded memory: a task's rows are streamed. Batches are gathered until a chunk of
  ``CHUNK_ROWS`` rows holds at least one complete PB; the rows of the last PB seen may
  continue in the next batch, so they are carried over. A PB (one producer's block of
  2^BLOCK_BITS seqs, see ``plan.producer_block``) is the largest unit that must be seen
  whole, since seq-adjacent messages of different blocks are compared on the driver
  (``boundary.py``).
* Only messages that leave the pass become output rows: anomalous ones, those
  acknowledged at a position the final log does not give them, and the first and last
  message of each block in each final-log partition (the driver's boundary check).

Plain numpy and pyarrow, no Spark: the rules are unit-testable on record batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history.kinds import Family, kind, kinds_of

# Flags of an event row, OR-ed together per position and per message.
FLAG_NAMES = ("SEND", "ACKED", "FAILED", "UNKNOWN", "LOG", "POLL", "ACK_OFF_LOG", "POLL_OFF_LOG")
SEND, ACKED, FAILED, UNKNOWN, LOG, POLL, ACK_OFF_LOG, POLL_OFF_LOG = (1 << i for i in range(8))

# The packing of keys and positions (plan.py builds them): PB = P xor (S >> BLOCK_BITS);
# pos = tp << OFFSET_BITS | (offset + 1); tp = topic_index << PARTITION_BITS | (partition + 1).
BLOCK_BITS = 14  # 16384 consecutive seqs of one producer per block
OFFSET_BITS = 40
PARTITION_BITS = 16
PARTITION_MASK = (1 << PARTITION_BITS) - 1

NULL = np.iinfo(np.int64).min  # no value (SQL NULL); never a real position
_HIGH = np.iinfo(np.int64).max  # neutral element of a minimum; above every real position
CHUNK_ROWS = 1 << 18  # rows gathered before a chunk is judged

INPUT_COLUMNS = ("PB", "S", "pos", "f")
# The message kinds this sweep's rules compute, each checked against the registry on import;
# its output carries one count column per kind of the family, in the registry's order.
LOST = kind("lost").name
DUPLICATE = kind("duplicate").name
TRUNCATED = kind("truncated").name
UNEXPECTED = kind("unexpected").name
ABORTED_READ = kind("aborted_read").name
REORDERED = kind("reordered").name
UNSEEN = kind("unseen").name
COUNT_COLUMNS = kinds_of(Family.MESSAGES)
_SEEN_AT = pa.struct([pa.field("pos", pa.int64()), pa.field("on_log", pa.bool_())])
# The columns of a message that leaves the pass; plan.judged documents what each means.
OUTPUT = pa.schema(
    [
        ("PB", pa.int64()),
        ("S", pa.int64()),
        ("f", pa.int32()),
        ("send_pos", pa.int64()),
        ("n_log", pa.int64()),
        ("log_first", pa.int64()),
        ("log_last", pa.int64()),
        ("seen_first", pa.int64()),
        ("trunc_first", pa.int64()),
        ("log_tp", pa.int32()),
        ("tp", pa.int32()),
        *((k, pa.int32()) for k in COUNT_COLUMNS),
        ("prev_seq", pa.int64()),
        ("ack_elsewhere", pa.bool_()),
        ("head", pa.bool_()),
        ("tail", pa.bool_()),
        ("blk", pa.int32()),
        ("P", pa.int64()),
        ("unexpected_at", pa.list_(_SEEN_AT)),
    ]
)
_DDL_TYPES = {pa.int64(): "bigint", pa.int32(): "int", pa.bool_(): "boolean"}
OUTPUT_DDL = ", ".join(
    f"{f.name} {_DDL_TYPES.get(f.type, 'array<struct<pos: bigint, on_log: boolean>>')}" for f in OUTPUT
)


def judge_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: the messages of one task's rows that leave the pass.

    The rows must come grouped by PB (all rows of one PB consecutive, PBs ascending), as
    ``sortWithinPartitions("PB")`` leaves them; within a PB any order will do."""
    held: list[tuple[np.ndarray, ...]] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        held.append(_columns(batch))
        rows += batch.num_rows
        if rows < CHUNK_ROWS:
            continue
        chunk = tuple(np.concatenate(c) for c in zip(*held, strict=True))
        pb = chunk[0]
        cut = int(np.searchsorted(pb, pb[-1], side="left"))  # where the last PB begins
        if cut == 0:  # one PB so far: it may go on in the next batch
            held = [chunk]
            continue
        out = judge_rows(*(c[:cut] for c in chunk))
        if out.num_rows:
            yield out
        held = [tuple(c[cut:] for c in chunk)]
        rows = len(held[0][0])
    if rows:
        out = judge_rows(*(np.concatenate(c) for c in zip(*held, strict=True)))
        if out.num_rows:
            yield out


def _columns(batch: pa.RecordBatch) -> tuple[np.ndarray, ...]:
    """PB, S, pos (NULL for SQL null) and f of a batch, as numpy arrays."""
    pb, s, pos, f = (batch.column(batch.schema.get_field_index(n)) for n in INPUT_COLUMNS)
    return (
        np.asarray(pb.to_numpy(zero_copy_only=False), dtype=np.int64),
        np.asarray(s.to_numpy(zero_copy_only=False), dtype=np.int64),
        np.asarray(pc.fill_null(pos, NULL).to_numpy(zero_copy_only=False), dtype=np.int64),
        np.asarray(f.to_numpy(zero_copy_only=False), dtype=np.int32),
    )


def _starts(*keys: np.ndarray) -> np.ndarray:
    """True where a run of equal keys begins, in arrays sorted by those keys."""
    new = np.zeros(len(keys[0]), dtype=bool)
    if len(new):
        new[0] = True
        for k in keys:
            new[1:] |= k[1:] != k[:-1]
    return new


def _nullable(values: np.ndarray, null: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values.astype(type_.to_pandas_dtype()), type=type_, mask=null)


@dataclass
class _Messages:
    """Per message of a chunk (index order = (PB, S) order): the facts the rules need."""

    pb: np.ndarray
    seq: np.ndarray
    flags: np.ndarray
    sent: np.ndarray
    send_pos: np.ndarray
    n_log: np.ndarray
    log_first: np.ndarray
    log_last: np.ndarray
    trunc_polls: np.ndarray
    trunc_first: np.ndarray
    seen: np.ndarray  # positions a never-sent record was seen at (0 for a sent message)


@dataclass
class _Order:
    """Per message, its place in the seq order of its block in its first final-log
    partition (``log_tp``); ``extra_*`` are its places in further partitions holding a
    copy, as rows of their own (message index, partition, first copy there, ...)."""

    head: np.ndarray
    tail: np.ndarray
    reordered: np.ndarray
    prev_seq: np.ndarray
    extra_msg: np.ndarray
    extra_tp: np.ndarray
    extra_first: np.ndarray
    extra_head: np.ndarray
    extra_tail: np.ndarray
    extra_reordered: np.ndarray
    extra_prev_seq: np.ndarray


def judge_rows(pb: np.ndarray, s: np.ndarray, pos: np.ndarray, f: np.ndarray) -> pa.RecordBatch:
    """Judge whole PBs' rows (any order): the messages that leave the pass, as OUTPUT."""
    if len(pb) == 0:
        return pa.RecordBatch.from_pylist([], schema=OUTPUT)
    order = np.lexsort((pos, s, pb))
    pb, s, pos, f = pb[order], s[order], pos[order], f[order]

    # A message's distinct positions, each with the flags of its rows OR-ed.
    first_row = np.flatnonzero(_starts(pb, s, pos))
    g = np.bitwise_or.reduceat(f, first_row)
    at, at_pb, at_s = pos[first_row], pb[first_row], s[first_row]
    on_log = (g & LOG) != 0
    g = g | np.where(((g & ACKED) != 0) & ~on_log, ACK_OFF_LOG, 0).astype(np.int32)
    g = g | np.where(((g & POLL) != 0) & ~on_log, POLL_OFF_LOG, 0).astype(np.int32)

    new_message = _starts(at_pb, at_s)
    first_at = np.flatnonzero(new_message)
    message_of = np.cumsum(new_message) - 1  # per position, its message's index
    flags = np.bitwise_or.reduceat(g, first_at)
    sent = (flags & SEND) != 0
    poll_off = (g & POLL_OFF_LOG) != 0
    seen_at = ~sent[message_of] & ((g & (LOG | POLL)) != 0)
    log_first = np.minimum.reduceat(np.where(on_log, at, _HIGH), first_at)
    trunc_first = np.minimum.reduceat(np.where(poll_off, at, _HIGH), first_at)
    m = _Messages(
        pb=at_pb[first_at],
        seq=at_s[first_at],
        flags=flags,
        sent=sent,
        send_pos=np.maximum.reduceat(np.where(((g & SEND) != 0) & (at != NULL), at, NULL), first_at),
        n_log=np.add.reduceat(on_log.astype(np.int64), first_at),
        log_first=np.where(log_first == _HIGH, NULL, log_first),
        log_last=np.maximum.reduceat(np.where(on_log, at, NULL), first_at),
        trunc_polls=np.add.reduceat(poll_off.astype(np.int64), first_at),
        trunc_first=np.where(trunc_first == _HIGH, NULL, trunc_first),
        seen=np.add.reduceat(seen_at.astype(np.int64), first_at),
    )
    in_window = m.sent & (m.seq >= 0) & (m.n_log > 0)  # a never-sent record has no send order
    placed = _place(m, in_window, at, on_log, message_of)
    return _output(m, placed, at, on_log, seen_at, message_of)


def _place(
    m: _Messages, in_window: np.ndarray, at: np.ndarray, on_log: np.ndarray, message_of: np.ndarray
) -> _Order:
    """Each sent message on the final log takes part in the seq order of its block in
    every final-log partition holding a copy, by its first copy there (so duplicates are
    not also reorders). Compared with its predecessor there: reordered if it sits lower;
    the first and last of each (block, partition) are the head and tail."""
    candidate = np.flatnonzero(on_log & in_window[message_of])  # ascending position per message
    c_msg = message_of[candidate]
    c_tp = at[candidate] >> OFFSET_BITS
    first = _starts(c_msg, c_tp)  # a message's first copy in each partition
    e_msg, e_tp, e_at = c_msg[first], c_tp[first], at[candidate][first]
    e_seq, e_pb = m.seq[e_msg], m.pb[e_msg]
    by_seq = np.lexsort((e_seq, e_tp, e_pb))
    e_msg, e_tp, e_at, e_seq, e_pb = (a[by_seq] for a in (e_msg, e_tp, e_at, e_seq, e_pb))
    k = len(e_msg)
    head = _starts(e_pb, e_tp)
    tail = np.zeros(k, dtype=bool)
    if k:
        tail[:-1] = head[1:]
        tail[-1] = True
    prev_at = np.empty(k, dtype=np.int64)
    prev_seq_all = np.full(k, NULL, dtype=np.int64)
    if k:
        prev_at[1:], prev_at[0] = e_at[:-1], _HIGH
        prev_seq_all[1:] = e_seq[:-1]
    reordered = ~head & (e_at < prev_at)
    prev_seq = np.where(reordered, prev_seq_all, NULL)
    # The entry in the message's first partition is the message's own; the rest are extra.
    own = e_tp == (m.log_first[e_msg] >> OFFSET_BITS)
    n = len(m.pb)
    order = _Order(
        head=np.zeros(n, dtype=bool),
        tail=np.zeros(n, dtype=bool),
        reordered=np.zeros(n, dtype=bool),
        prev_seq=np.full(n, NULL, dtype=np.int64),
        extra_msg=e_msg[~own],
        extra_tp=e_tp[~own],
        extra_first=e_at[~own],
        extra_head=head[~own],
        extra_tail=tail[~own],
        extra_reordered=reordered[~own],
        extra_prev_seq=prev_seq[~own],
    )
    mine = e_msg[own]
    order.head[mine], order.tail[mine] = head[own], tail[own]
    order.reordered[mine], order.prev_seq[mine] = reordered[own], prev_seq[own]
    return order


def _output(
    m: _Messages,
    o: _Order,
    at: np.ndarray,
    on_log: np.ndarray,
    seen_at: np.ndarray,
    message_of: np.ndarray,
) -> pa.RecordBatch:
    """The rows that leave the pass: messages, then their places in further partitions."""
    acked = (m.flags & ACKED) != 0
    on = m.n_log > 0
    counts = {
        LOST: acked & ~on,
        DUPLICATE: np.maximum(m.n_log - 1, 0),
        TRUNCATED: np.where(m.sent, m.trunc_polls, 0),  # a never-sent record is unexpected
        # Positions it was seen at; plan.summary counts each position once over all records.
        UNEXPECTED: np.where(m.sent, 0, m.seen),
        ABORTED_READ: ((m.flags & FAILED) != 0) & on,
        REORDERED: o.reordered,
        UNSEEN: acked & on & ((m.flags & POLL) == 0),
    }
    ack_elsewhere = acked & ((m.flags & ACK_OFF_LOG) != 0)
    anomalous = np.zeros(len(m.pb), dtype=bool)
    for c in counts.values():
        anomalous |= c > 0
    leaves = np.flatnonzero(anomalous | ack_elsewhere | o.head | o.tail)
    extra = np.flatnonzero(o.extra_reordered | o.extra_head | o.extra_tail)

    known = (m.send_pos != NULL) & (((m.send_pos >> OFFSET_BITS) & PARTITION_MASK) > 0)
    seen_first = np.where(m.log_first != NULL, m.log_first, m.trunc_first)
    home = np.where(m.sent & known, m.send_pos, np.where(seen_first != NULL, seen_first, m.send_pos))
    log_tp = np.where(m.log_first != NULL, m.log_first >> OFFSET_BITS, NULL)

    x = o.extra_msg[extra]
    none = np.full(len(extra), NULL, dtype=np.int64)
    zero = np.zeros(len(extra), dtype=np.int64)
    seq = np.concatenate([m.seq[leaves], m.seq[x]])
    pb = np.concatenate([m.pb[leaves], m.pb[x]])
    blk = seq >> BLOCK_BITS

    def col(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        return np.concatenate([mine[leaves], theirs])

    def nullable(values: np.ndarray, type_: pa.DataType) -> pa.Array:
        return _nullable(np.where(values == NULL, 0, values), values == NULL, type_)

    def tp_of(p: np.ndarray) -> np.ndarray:
        return np.where(p == NULL, NULL, p >> OFFSET_BITS)

    columns: dict[str, pa.Array] = {
        "PB": pa.array(pb, pa.int64()),
        "S": pa.array(seq, pa.int64()),
        "f": pa.array(col(m.flags, zero).astype(np.int32), pa.int32()),
        "send_pos": nullable(col(m.send_pos, none), pa.int64()),
        "n_log": pa.array(col(m.n_log, zero), pa.int64()),
        "log_first": nullable(col(m.log_first, o.extra_first[extra]), pa.int64()),
        "log_last": nullable(col(m.log_last, o.extra_first[extra]), pa.int64()),
        "seen_first": nullable(col(seen_first, none), pa.int64()),
        "trunc_first": nullable(col(m.trunc_first, none), pa.int64()),
        "log_tp": nullable(col(log_tp, o.extra_tp[extra]), pa.int32()),
        "tp": nullable(tp_of(col(home, home[x])), pa.int32()),
    }
    for name, c in counts.items():
        theirs = o.extra_reordered[extra] if name == REORDERED else zero
        columns[name] = pa.array(col(c.astype(np.int64), theirs.astype(np.int64)).astype(np.int32))
    columns["prev_seq"] = nullable(col(o.prev_seq, o.extra_prev_seq[extra]), pa.int64())
    columns["ack_elsewhere"] = pa.array(col(ack_elsewhere, np.zeros(len(extra), dtype=bool)))
    columns["head"] = pa.array(col(o.head, o.extra_head[extra]))
    columns["tail"] = pa.array(col(o.tail, o.extra_tail[extra]))
    columns["blk"] = pa.array(blk.astype(np.int32), pa.int32())
    columns["P"] = pa.array(pb ^ blk, pa.int64())
    columns["unexpected_at"] = _seen_lists(m, leaves, len(extra), at, on_log, seen_at, message_of)
    return pa.RecordBatch.from_arrays(list(columns.values()), schema=OUTPUT)


def _seen_lists(
    m: _Messages,
    leaves: np.ndarray,
    extra: int,
    at: np.ndarray,
    on_log: np.ndarray,
    seen_at: np.ndarray,
    message_of: np.ndarray,
) -> pa.Array:
    """unexpected_at: for a never-sent record, every position it was seen at and whether
    it is the final log's record there; null for a sent message and for extra rows."""
    chosen = np.zeros(len(m.pb), dtype=bool)
    chosen[leaves] = True
    values = np.flatnonzero(seen_at & chosen[message_of])  # grouped by message, ascending
    lengths = np.concatenate([m.seen[leaves], np.zeros(extra, dtype=np.int64)])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    null = np.concatenate([m.sent[leaves], np.ones(extra, dtype=bool)])
    items = pa.StructArray.from_arrays(
        [pa.array(at[values], pa.int64()), pa.array(on_log[values], pa.bool_())], fields=list(_SEEN_AT)
    )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, mask=pa.array(null))


# ------------------------------------------------------------------ the task's summary
#
# What a task hands the driver is not its messages but a summary of them: counts per
# (home partition, kind), its first few examples per (partition, kind), the blocks' end
# messages and the positions never-sent records were seen at. That keeps the pass to one
# Spark job whose output is a few thousand rows whatever the history holds (every message
# of a run may be UNSEEN), and spares the Spark-side summary (windows and aggregations
# over the pass's output) whose planning and scheduling cost more than the data did.
#
# Besides, FATE rows: each message a send-side kind found (lost, truncated, duplicate,
# aborted_read), so that the report can draw every such send where it was sent and
# acknowledged. A clean run has none; a lossy one has as many as it lost, up to
# FATES_PER_TASK per task (the counts stay exact beyond it; the verdict says how many
# were located).

COUNT_ROW, EXAMPLE_ROW, BLOCK_END_ROW, UNEXPECTED_ROW, FATE_ROW = 0, 1, 2, 3, 4
FATE_KINDS = (LOST, TRUNCATED, DUPLICATE, ABORTED_READ)
FATES_PER_TASK = 100_000
SUMMARY = pa.schema(
    [
        ("row", pa.int32()),  # one of the *_ROW kinds above
        ("kind", pa.int32()),  # index in COUNT_COLUMNS (COUNT_ROW, EXAMPLE_ROW, FATE_ROW)
        ("tp", pa.int64()),  # home partition; for UNEXPECTED_ROW the position's partition
        ("P", pa.int64()),
        ("S", pa.int64()),
        ("at", pa.int64()),  # packed position: where it happened / first copy / seen at
        ("aux", pa.int64()),  # COUNT_ROW: the count; EXAMPLE_ROW: the kind's extra
        ("flag", pa.bool_()),  # BLOCK_END_ROW: head; UNEXPECTED_ROW: the log's record there
    ]
)
SUMMARY_DDL = ", ".join(f"{f.name} {_DDL_TYPES[f.type]}" for f in SUMMARY)
_KIND = {k: i for i, k in enumerate(COUNT_COLUMNS)}
_NO_OFFSET = np.iinfo(np.int64).max  # sorts examples without an offset last


@dataclass(frozen=True)
class Ranges:
    """tp -> first and last offset of the final log (from the job's overview), as sorted
    arrays: consulted only for acknowledged messages missing from their offset."""

    tp: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def of(cls, ranges: dict[int, tuple[int, int]]) -> Ranges:
        keys = sorted(ranges)
        return cls(
            np.array(keys, dtype=np.int64),
            np.array([ranges[k][0] for k in keys], dtype=np.int64),
            np.array([ranges[k][1] for k in keys], dtype=np.int64),
        )

    def contain(self, pos: np.ndarray) -> np.ndarray:
        """Whether each packed position lies inside its partition's range on the log."""
        tp = np.where(pos == NULL, -1, pos >> OFFSET_BITS)
        offset = offset_of(pos)
        i = np.minimum(np.searchsorted(self.tp, tp), max(len(self.tp) - 1, 0))
        if not len(self.tp):
            return np.zeros(len(pos), dtype=bool)
        return (self.tp[i] == tp) & (offset != NULL) & (offset >= self.start[i]) & (offset <= self.end[i])


def offset_of(pos: np.ndarray) -> np.ndarray:
    """The offset of packed positions; NULL for no position or no valid offset."""
    raw = pos & ((1 << OFFSET_BITS) - 1)
    return np.where((pos == NULL) | (raw == 0), NULL, raw - 1)


def first_examples(
    kind: np.ndarray, tp: np.ndarray, p: np.ndarray, s: np.ndarray, at: np.ndarray, limit: int
) -> np.ndarray:
    """Indices of the first ``limit`` findings per (kind, partition listed under), by the
    offset where they happened (none last), then P, S: the order examples are chosen and
    listed in (docs/HISTORY.md). Taking each task's first few and then the first few of
    those gives the first few overall."""
    offset = offset_of(at)
    order = np.lexsort((s, p, np.where(offset == NULL, _NO_OFFSET, offset), tp, kind))
    group = _starts(kind[order], tp[order])
    start = np.maximum.accumulate(np.where(group, np.arange(len(order)), 0))
    return order[np.arange(len(order)) - start < limit]


def _int(batch: pa.RecordBatch, name: str) -> np.ndarray:
    col = batch.column(batch.schema.get_field_index(name))
    if col.null_count:
        col = pc.fill_null(col, NULL)
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)


def _bool(batch: pa.RecordBatch, name: str) -> np.ndarray:
    col = batch.column(batch.schema.get_field_index(name))
    return np.asarray(pc.fill_null(col, False).to_numpy(zero_copy_only=False), dtype=bool)


def _summary_batch(columns: dict[str, np.ndarray], flag: np.ndarray) -> pa.RecordBatch:
    arrays = [
        pa.array(
            np.where(columns[f.name] == NULL, 0, columns[f.name]), type=f.type, mask=columns[f.name] == NULL
        )
        for f in list(SUMMARY)[:-1]
    ]
    return pa.RecordBatch.from_arrays([*arrays, pa.array(flag, pa.bool_())], schema=SUMMARY)


def _rows_of(row: int, n: int, **columns: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    out = {name: np.full(n, NULL, dtype=np.int64) for name in SUMMARY.names[:-1]}
    out["row"] = np.full(n, row, dtype=np.int64)
    for name, values in columns.items():
        if name != "flag":
            out[name] = values.astype(np.int64)
    return out, columns.get("flag", np.zeros(n, dtype=bool))


class _Tally:
    """A task's running counts per (partition, kind) and its first examples so far."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: dict[int, np.ndarray] = {}
        self.examples: dict[str, np.ndarray] = {
            n: np.empty(0, dtype=np.int64) for n in ("kind", "tp", "P", "S", "at", "aux")
        }

    def add(
        self,
        tp: np.ndarray,
        counts: dict[str, np.ndarray],
        where: Mapping[str, tuple[np.ndarray, ...]],
        p: np.ndarray,
        s: np.ndarray,
    ) -> None:
        keys, inverse = np.unique(tp, return_inverse=True)
        for key in keys.tolist():
            self.counts.setdefault(key, np.zeros(len(COUNT_COLUMNS), dtype=np.int64))
        for name, c in counts.items():
            sums = np.bincount(inverse, weights=c, minlength=len(keys)).astype(np.int64)
            for key, total in zip(keys.tolist(), sums.tolist(), strict=True):
                self.counts[key][_KIND[name]] += total
        parts = [self.examples]
        for name, c in counts.items():
            hit = np.flatnonzero(c > 0)
            if len(hit):
                at, aux = where[name]
                parts.append(
                    {
                        "kind": np.full(len(hit), _KIND[name], dtype=np.int64),
                        "tp": tp[hit],
                        "P": p[hit],
                        "S": s[hit],
                        "at": at[hit],
                        "aux": aux[hit],
                    }
                )
        if len(parts) > 1:
            merged = {n: np.concatenate([part[n] for part in parts]) for n in self.examples}
            keep = first_examples(
                merged["kind"], merged["tp"], merged["P"], merged["S"], merged["at"], self.limit
            )
            self.examples = {n: v[keep] for n, v in merged.items()}

    def batch(self) -> pa.RecordBatch:
        keys = sorted(self.counts)
        kinds = np.arange(len(COUNT_COLUMNS), dtype=np.int64)
        counts, _ = _rows_of(
            COUNT_ROW,
            len(keys) * len(kinds),
            kind=np.tile(kinds, len(keys)),
            tp=np.repeat(np.array(keys, dtype=np.int64), len(kinds)),
            aux=np.concatenate([self.counts[k] for k in keys]) if keys else np.empty(0, np.int64),
        )
        examples, _ = _rows_of(EXAMPLE_ROW, len(self.examples["kind"]), **self.examples)
        both = {n: np.concatenate([counts[n], examples[n]]) for n in counts}
        return _summary_batch(both, np.zeros(len(both["row"]), dtype=bool))


def summarise(messages: Iterable[pa.RecordBatch], ranges: Ranges, examples: int) -> Iterator[pa.RecordBatch]:
    """A task's judged messages (OUTPUT batches, as ``judge_batches`` yields them) as
    SUMMARY rows. Here the truncation count is made final: an acknowledged offset inside
    its partition's range on the final log that the log does not give to the message
    (another message there, or a gap) is a truncation. Reorders across blocks are left to
    the driver (``boundary.py``), which gets the BLOCK_END rows; unexpected positions are
    counted there too, once per position over all tasks."""
    tally = _Tally(examples)
    fates = 0  # FATE rows this task has sent
    for batch in messages:
        b = {
            n: _int(batch, n)
            for n in (
                "S",
                "send_pos",
                "n_log",
                "log_first",
                "log_last",
                "trunc_first",
                "tp",
                "prev_seq",
                "P",
                *COUNT_COLUMNS,
            )
        }
        tp = b["tp"]
        diverged = _bool(batch, "ack_elsewhere") & ranges.contain(b["send_pos"])
        counts = {k: b[k] for k in COUNT_COLUMNS if k != UNEXPECTED}
        counts[TRUNCATED] = counts[TRUNCATED] + diverged
        none = np.full(len(tp), NULL, dtype=np.int64)
        where = {
            LOST: (b["send_pos"], none),
            DUPLICATE: (b["log_last"], b["n_log"]),
            TRUNCATED: (np.where(b["trunc_first"] != NULL, b["trunc_first"], b["send_pos"]), none),
            ABORTED_READ: (b["log_first"], none),
            REORDERED: (b["log_first"], b["prev_seq"]),
            UNSEEN: (b["log_first"], none),
        }
        tally.add(tp, counts, where, b["P"], b["S"])

        ends = np.flatnonzero(_bool(batch, "head") | _bool(batch, "tail"))
        out = [
            _rows_of(
                BLOCK_END_ROW,
                len(ends),
                tp=tp[ends],
                P=b["P"][ends],
                S=b["S"][ends],
                at=b["log_first"][ends],
                flag=_bool(batch, "head")[ends],
            )
        ]
        for name in FATE_KINDS:
            hit = np.flatnonzero(counts[name] > 0)[: max(FATES_PER_TASK - fates, 0)]
            fates += len(hit)
            code = COUNT_COLUMNS.index(name)
            out.append(_rows_of(FATE_ROW, len(hit), kind=np.full(len(hit), code), tp=tp[hit],
                                P=b["P"][hit], S=b["S"][hit], at=where[name][0][hit]))  # fmt: skip
        seen = batch.column(batch.schema.get_field_index("unexpected_at"))
        if seen.null_count < len(seen):
            lengths = np.asarray(pc.fill_null(pc.list_value_length(seen), 0).to_numpy(zero_copy_only=False))
            items = pc.list_flatten(seen)
            owner = np.repeat(np.arange(len(seen)), lengths)
            at = np.asarray(items.field("pos").to_numpy(zero_copy_only=False), dtype=np.int64)
            on_log = np.asarray(items.field("on_log").to_numpy(zero_copy_only=False), dtype=bool)
            # One row per position: the log's record there if one of these, else the lowest key.
            order = np.lexsort((b["S"][owner], b["P"][owner], ~on_log, at))
            keep = order[_starts(at[order])]
            out.append(
                _rows_of(
                    UNEXPECTED_ROW,
                    len(keep),
                    tp=at[keep] >> OFFSET_BITS,
                    P=b["P"][owner][keep],
                    S=b["S"][owner][keep],
                    at=at[keep],
                    flag=on_log[keep],
                )
            )
        rows = {n: np.concatenate([o[0][n] for o in out]) for n in out[0][0]}
        flags = np.concatenate([o[1] for o in out])
        if len(flags):
            yield _summary_batch(rows, flags)
    yield tally.batch()


def summariser(
    ranges: Ranges, examples: int
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of the pass: judge a task's rows, then summarise them.
    A closure over the final log's ranges and the example limit, which Spark ships to the
    Python workers with the function."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return summarise(judge_batches(batches), ranges, examples)

    return run
