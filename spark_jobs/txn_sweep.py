"""The transaction kinds as one vectorised sweep over whole producers' rows.

``transactions.py`` shuffles the messages of committed and aborted transactions, and the
final-log and polled records of the producers that sent them, by producer hash ``P``
into one task: a transaction is one producer's (the transactions table names it), so a
task holds every message of each of its transactions and every record of those messages.
Here each task works out with numpy what the records say of each message, what each
transaction's messages say of it, and hands back only its first findings per (home
partition, kind) with its own count there; the driver merges the tasks' (``merged``).
Why a sweep: the SQL plan (a per-message aggregation of structs, a join, a window per
transaction, a ranking window) cost about 2 s on a history of 100k records, nearly all of
it planning and scheduling, against a judge's budget of one second for a scenario.

Input (``INPUT``), one row per fact, ``src`` saying which:

* ``MESSAGE``: a send naming a committed or aborted transaction: key (P, S), ``tid``,
  ``committed``, ``end_req``, ``producer_id`` (the message id is ``<producer_id>-<S>``),
  ``aimless`` (sent to partition -1), ``send_tp``, ``ack_pos`` (offset part 0 when not
  acknowledged), ``ack_ts``;
* ``LOG``: a final-log copy of (P, S) at ``pos``, ``rc`` its read_committed flag;
* ``POLL``: a polled copy of (P, S) at ``pos``, by ``who`` at ``ts`` with isolation ``iso``.

Pure numpy and pyarrow: unit-testable on record batches, run wherever mapInArrow runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import READ_COMMITTED
from harness.history.kinds import code
from spark_jobs.sweep import OFFSET_BITS
from spark_jobs.sweep_kit import ddl, numpy_of, per_task, run_starts

MESSAGE, LOG, POLL = 0, 1, 2
ABORTED_READ = code("txn_aborted_read")
UNCOMMITTED_READ = code("txn_uncommitted_read")
LOST = code("txn_lost")
PARTIAL = code("txn_partial")
_MASK = (1 << OFFSET_BITS) - 1
_NO_POS = np.iinfo(np.int64).max  # "no position" in a minimum

INPUT = pa.schema(
    [
        ("src", pa.int32()),
        ("P", pa.int64()),
        ("S", pa.int64()),
        ("pos", pa.int64()),
        ("rc", pa.bool_()),
        ("ts", pa.float64()),
        ("who", pa.string()),
        ("iso", pa.string()),
        ("tid", pa.string()),
        ("committed", pa.bool_()),
        ("end_req", pa.float64()),
        ("producer_id", pa.string()),
        ("aimless", pa.bool_()),
        ("send_tp", pa.int32()),
        ("ack_pos", pa.int64()),
        ("ack_ts", pa.float64()),
    ]
)
# A finding as transactions.detail and transactions.homed_findings read it; ``task`` tells
# the tasks' partial counts apart when the driver merges them.
OUTPUT = pa.schema(
    [
        ("kind", pa.int32()),
        ("home", pa.int32()),
        ("at", pa.int64()),
        ("o", pa.int64()),
        ("P", pa.int64()),
        ("S", pa.int64()),
        ("tid", pa.string()),
        ("message_id", pa.string()),
        ("producer_id", pa.string()),
        ("ack_ts", pa.float64()),
        ("end_req", pa.float64()),
        ("n", pa.int64()),
        ("k", pa.int64()),
        ("reader", pa.string()),
        ("reader_iso", pa.string()),
        ("drain_gave", pa.bool_()),
        ("early_reader", pa.string()),
        ("early_ts", pa.float64()),
        ("task", pa.int64()),
        ("total", pa.int64()),
    ]
)
OUTPUT_DDL = ddl(OUTPUT)


def _first_of_each(table: pa.Table, group: np.ndarray, keys: list[str], groups: int) -> np.ndarray:
    """Per group id (0..groups-1), the row of ``table`` that is least by ``keys`` (strings
    in Spark's byte order), -1 for a group with no row."""
    out = np.full(groups, -1, dtype=np.int64)
    if not table.num_rows:
        return out
    keyed = table.select(keys).append_column("_g", pa.array(group))
    order = numpy_of(pc.sort_indices(keyed, [("_g", "ascending"), *((k, "ascending") for k in keys)]), 0)
    g = group[order]
    first = run_starts(g)
    out[g[first]] = order[first]
    return out


def judge_table(table: pa.Table, examples: int) -> pa.RecordBatch:
    """The findings of whole producers' rows (any order): per (home, kind) this task's first
    ``examples`` by (offset, nulls last; P; S), each with this task's count there."""
    src = numpy_of(table.column("src"), -1)
    msgs = table.filter(pa.array(src == MESSAGE))
    recs = table.filter(pa.array(src != MESSAGE))
    m, r = msgs.num_rows, recs.num_rows
    if not m:
        return _empty()

    # Each message and record gets the id of its key (P, S): one sort of both.
    p = np.concatenate([numpy_of(msgs.column("P"), 0), numpy_of(recs.column("P"), 0)]).astype(np.int64)
    s = np.concatenate([numpy_of(msgs.column("S"), 0), numpy_of(recs.column("S"), 0)]).astype(np.int64)
    order = np.lexsort((s, p))
    key = np.empty(m + r, dtype=np.int64)
    key[order] = np.cumsum(run_starts(p[order], s[order])) - 1
    keys = int(key.max()) + 1
    m_key, r_key = key[:m], key[m:]

    # What the records say of each key (docs/HISTORY.md, transactions.py's _FACTS).
    r_src = numpy_of(recs.column("src"), -1)
    r_pos = numpy_of(recs.column("pos"), 0).astype(np.int64)
    rc = recs.column("rc")
    rc_true = numpy_of(rc, False).astype(bool)
    rc_not_false = numpy_of(rc, True).astype(bool)
    is_log, is_poll = r_src == LOG, r_src == POLL
    log_first = np.full(keys, _NO_POS)
    np.minimum.at(log_first, r_key[is_log], r_pos[is_log])
    rc_first = np.full(keys, _NO_POS)
    np.minimum.at(rc_first, r_key[is_log & rc_true], r_pos[is_log & rc_true])
    readable = np.zeros(keys, dtype=bool)
    readable[r_key[is_log & rc_not_false]] = True
    polls = np.flatnonzero(is_poll)
    first_poll = _first_of_each(recs.take(pa.array(polls)), r_key[polls], ["pos", "who", "iso"], keys)
    first_poll = np.where(first_poll >= 0, polls[np.maximum(first_poll, 0)] if len(polls) else -1, -1)
    iso = recs.column("iso")
    rc_polls = np.flatnonzero(
        is_poll & numpy_of(pc.fill_null(pc.equal(iso, READ_COMMITTED), False), False).astype(bool)
    )
    rc_poll = _first_of_each(recs.take(pa.array(rc_polls)), r_key[rc_polls], ["ts", "pos", "who"], keys)
    rc_poll = np.where(rc_poll >= 0, rc_polls[np.maximum(rc_poll, 0)] if len(rc_polls) else -1, -1)

    # Each message's facts and home: the partition its send names unless -1; else its
    # first copy's on the final log; else its first polled position's; else the send's.
    fp, rp = first_poll[m_key], rc_poll[m_key]
    m_log_first, m_rc_first, m_readable = log_first[m_key], rc_first[m_key], readable[m_key]
    fp_pos = np.where(fp >= 0, r_pos[np.maximum(fp, 0)] if r else 0, _NO_POS)
    send_tp = numpy_of(msgs.column("send_tp"), -1).astype(np.int64)
    aimless = numpy_of(msgs.column("aimless"), False).astype(bool)
    home = np.where(
        ~aimless | ((m_log_first == _NO_POS) & (fp_pos == _NO_POS)),
        send_tp,
        np.where(m_log_first != _NO_POS, m_log_first >> OFFSET_BITS, fp_pos >> OFFSET_BITS),
    )

    # A transaction's facts: how many messages, how many readable, its first message and
    # its first unreadable one, by (S, P).
    tid = pc.dictionary_encode(msgs.column("tid").combine_chunks(), null_encoding="encode")
    t = numpy_of(tid.indices, -1).astype(np.int64)
    txns = len(tid.dictionary)
    n = np.bincount(t, minlength=txns)[t]
    k = np.bincount(t, weights=m_readable, minlength=txns).astype(np.int64)[t]
    m_p, m_s = p[:m], s[:m]
    by_txn = np.lexsort((m_p, m_s, t))
    first = np.full(txns, -1, dtype=np.int64)
    starts = run_starts(t[by_txn])
    first[t[by_txn][starts]] = by_txn[starts]
    unread_rows = by_txn[~m_readable[by_txn]]
    unread = np.full(txns, -1, dtype=np.int64)
    u_starts = run_starts(t[unread_rows]) if len(unread_rows) else np.zeros(0, dtype=bool)
    unread[t[unread_rows][u_starts]] = unread_rows[u_starts]
    me = np.arange(m)

    committed = numpy_of(msgs.column("committed"), False).astype(bool)
    end_req = numpy_of(msgs.column("end_req"), np.nan).astype(np.float64)
    rc_ts = np.where(rp >= 0, numpy_of(recs.column("ts"), np.nan)[np.maximum(rp, 0)] if r else np.nan, np.nan)
    ack_pos = numpy_of(msgs.column("ack_pos"), 0).astype(np.int64)
    acked_at = np.where((ack_pos & _MASK) != 0, ack_pos, home << OFFSET_BITS)
    with np.errstate(invalid="ignore"):
        early = committed & (rc_ts < end_req)
    found = [
        (
            ABORTED_READ,
            ~committed & ((fp >= 0) | (m_rc_first != _NO_POS)),
            home,
            np.where(fp >= 0, fp_pos, m_rc_first),
        ),
        (UNCOMMITTED_READ, early, home, np.where(rp >= 0, r_pos[np.maximum(rp, 0)] if r else 0, 0)),
        (LOST, committed & (k == 0) & (first[t] == me), home, acked_at),
        (PARTIAL, committed & (k > 0) & (k < n) & (unread[t] == me), home[first[t]], acked_at),
    ]
    return _ranked(msgs, recs, found, examples, n, k, fp, rp, m_rc_first, rc_ts)


def _empty() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=OUTPUT)


def _ranked(
    msgs: pa.Table,
    recs: pa.Table,
    found: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
    examples: int,
    n: np.ndarray,
    k: np.ndarray,
    fp: np.ndarray,
    rp: np.ndarray,
    rc_first: np.ndarray,
    rc_ts: np.ndarray,
) -> pa.RecordBatch:
    """This task's first ``examples`` findings per (home, kind) by (offset, nulls last; P;
    S), with this task's count there."""
    rows = np.concatenate([np.flatnonzero(w) for _, w, _, _ in found])
    kind = np.concatenate([np.full(int(w.sum()), c, np.int64) for c, w, _, _ in found])
    home = np.concatenate([h[w] for _, w, h, _ in found]).astype(np.int64)
    at = np.concatenate([a[w] for _, w, _, a in found]).astype(np.int64)
    off = at & _MASK
    p = numpy_of(msgs.column("P"), 0).astype(np.int64)[rows]
    s = numpy_of(msgs.column("S"), 0).astype(np.int64)[rows]
    order = np.lexsort((s, p, np.where(off == 0, _NO_POS, off), kind, home))
    start = run_starts(home[order], kind[order])
    run = np.cumsum(start) - 1
    firsts = np.flatnonzero(start)
    rank = np.arange(len(order)) - firsts[run] + 1 if len(order) else np.zeros(0, np.int64)
    totals = np.diff(np.append(firsts, len(order)))[run] if len(order) else np.zeros(0, np.int64)
    keep = order[rank <= examples]
    total = totals[rank <= examples]
    i = rows[keep]
    take = pa.array(i)
    fp_i, rp_i = fp[i], rp[i]
    who, iso, ts = recs.column("who"), recs.column("iso"), rc_ts[i]
    producer = msgs.column("producer_id").take(take)
    task = int.from_bytes(os.urandom(7), "big")
    return pa.RecordBatch.from_arrays(
        [
            pa.array(kind[keep].astype(np.int32)),
            pa.array(home[keep].astype(np.int32)),
            pa.array(at[keep]),
            pa.array(off[keep] - 1, mask=off[keep] == 0),
            pa.array(p[keep]),
            pa.array(s[keep]),
            msgs.column("tid").take(take).combine_chunks(),
            pc.binary_join_element_wise(
                producer, pc.cast(pa.array(s[keep]), pa.string()), "-"
            ).combine_chunks(),
            producer.combine_chunks(),
            msgs.column("ack_ts").take(take).combine_chunks(),
            msgs.column("end_req").take(take).combine_chunks(),
            pa.array(n[i].astype(np.int64)),
            pa.array(k[i].astype(np.int64)),
            _at_rows(who, fp_i),
            _at_rows(iso, fp_i),
            pa.array(rc_first[i] != _NO_POS),
            _at_rows(who, rp_i),
            pa.array(ts, mask=np.isnan(ts)),
            pa.array(np.full(len(i), task, np.int64)),
            pa.array(total.astype(np.int64)),
        ],
        schema=OUTPUT,
    )


def _at_rows(column: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``column`` at ``rows``, null where a row is -1 (no such record)."""
    if not len(column):
        return pa.nulls(len(rows), column.type)
    picked = column.take(pa.array(np.maximum(rows, 0))).combine_chunks()
    return pc.if_else(pa.array(rows >= 0), picked, pa.nulls(len(rows), column.type))


def judge_batches(examples: int) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow``'s function: a task's rows, whole producers of them, in any order."""
    return per_task(judge_table, examples)
