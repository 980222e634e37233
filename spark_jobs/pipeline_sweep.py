"""The pipeline kinds as one vectorised sweep over whole source partitions' rows.

``pipelines.py`` works out, per pipeline output, whether it is visible and whether it was
promised (its own record is found by message key, which no partition holds), then
shuffles the outputs by the partition of the input record they name, with that
partition's final-log records and its pipeline groups' final offsets, into one task
(hash-partitioned by ``tp``). Here each task judges its partitions with numpy and hands
back only the ranked findings. Why a sweep and not windows and joins: the outputs are
most of the sends in a pipeline run, and the windows by (group, source) sorted by
producer string, the join of the outputs with the final log by position and the
anti-join of the covered records cost 14 s at 1M sends and seconds at 20k; here each is a
sort and a binary search.

Input (``INPUT``), one row per fact, ``src`` saying which:

* ``OUTPUT``: a pipeline output at its source position ``pos`` (offset ``o``) of
  partition ``tp``: its group, key (P, S), producer id (its message id is
  ``<producer_id>-<S>``, built for the few shown), acknowledgement time, the source record's
  id as its producer's hash ``id_hash`` and seq ``id_seq``, and ``promised`` / ``visible``;
* ``LOG``: a final-log record of ``tp`` at ``pos`` (offset ``o``): its id as stored, split
  (``producer_id`` the id_producer, ``id_seq``; ``id_hash`` the producer's hash, to
  compare), and ``rc``, whether a read_committed reader can read it. Its message_id is
  rebuilt for the few that are shown (``plan.RECORD_ID``), not for every record;
* ``FINAL``: a pipeline group's final committed offset ``o`` for ``tp``.

The rules are docs/HISTORY.md's; pure numpy and pyarrow, so it runs wherever
``mapInArrow`` does and is unit-testable on record batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history.kinds import code
from spark_jobs.sweep import OFFSET_BITS
from spark_jobs.sweep_kit import ddl, numpy_of, per_task, run_starts

OUTPUT_ROW, LOG, FINAL = 0, 1, 2
DUPLICATE = code("pipeline_duplicate")
LOST = code("pipeline_lost")
ORPHAN = code("pipeline_orphan")

INPUT = pa.schema(
    [
        ("src", pa.int32()),
        ("tp", pa.int32()),
        ("pos", pa.int64()),
        ("o", pa.int64()),
        ("grp", pa.string()),
        ("P", pa.int64()),
        ("S", pa.int64()),
        ("producer_id", pa.string()),
        ("ack_ts", pa.float64()),
        ("source_message_id", pa.string()),
        ("id_hash", pa.int64()),
        ("id_seq", pa.int64()),
        ("rc", pa.bool_()),
        ("promised", pa.bool_()),
        ("visible", pa.bool_()),
    ]
)
# A finding: the columns pipelines.detail and transactions.homed_findings read.
FINDING = pa.schema(
    [
        ("kind", pa.int32()),
        ("home", pa.int32()),
        ("at", pa.int64()),
        ("o", pa.int64()),
        ("weight", pa.int64()),
        ("grp", pa.string()),
        ("P", pa.int64()),
        ("S", pa.int64()),
        ("message_id", pa.string()),
        ("producer_id", pa.string()),
        ("ack_ts", pa.float64()),
        ("k", pa.int64()),
        ("first_out", pa.string()),
        ("holder", pa.string()),
        ("held", pa.string()),
        ("source_message_id", pa.string()),
        ("committed", pa.int64()),
    ]
)
OUTPUT = FINDING.append(pa.field("rank", pa.int64())).append(pa.field("total", pa.int64()))
OUTPUT_DDL = ddl(OUTPUT)


def _null_long(n: int) -> pa.Array:
    return pa.nulls(n, pa.int64())


def _send_ids(outputs: pa.Table, take: pa.Array) -> pa.Array:
    """The message ids of the outputs at ``take``: a send's id is ``<producer_id>-<seq>``
    by the schema, so only the few shown are built, not shipped for every output."""
    producer = outputs.column("producer_id").take(take)
    return pc.binary_join_element_wise(producer, pc.cast(outputs.column("S").take(take), pa.string()), "-")


def _record_ids(logs: pa.Table, take: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(message_id, producer_id) of the final-log records at ``take``, from their split
    id as plan.RECORD_ID rebuilds it: ``<id_producer>-<id_seq>``, or the id kept whole in
    id_producer when it had no seq (then it names no producer)."""
    producer = logs.column("producer_id").take(take)
    seq = logs.column("id_seq").take(take)
    no_seq = pc.is_null(seq)
    joined = pc.binary_join_element_wise(producer, pc.cast(seq, pa.string()), "-")
    return pc.if_else(no_seq, producer, joined), pc.if_else(
        no_seq, pa.nulls(len(take), pa.string()), producer
    )


def judge_table(table: pa.Table, examples: int) -> pa.RecordBatch:
    """The ranked pipeline findings of whole source partitions' rows (any order): per
    (source partition, kind) the first ``examples`` by (source offset, group, key), each
    carrying the kind's total weight there."""
    src = numpy_of(table.column("src"), -1)
    outputs = table.filter(pa.array(src == OUTPUT_ROW))
    logs = table.filter(pa.array(src == LOG))
    finals = table.filter(pa.array(src == FINAL))
    # The final log by position (one record per position: sorted, searched by binary search).
    logs = logs.take(pc.sort_indices(logs, [("pos", "ascending")]))
    log_pos = numpy_of(logs.column("pos"), -1).astype(np.int64)
    found = [_visible_findings(outputs, logs, log_pos), _lost(outputs, logs, log_pos, finals)]
    return _ranked(pa.concat_tables(found), examples)


def _visible_findings(outputs: pa.Table, logs: pa.Table, log_pos: np.ndarray) -> pa.Table:
    """``pipeline_duplicate`` (the second visible output of a source, weighing the source's
    extra outputs) and ``pipeline_orphan`` (a visible output whose source position holds
    no record, one not readable under read_committed, or another message)."""
    vis = outputs.filter(pc.fill_null(outputs.column("visible"), False))
    # Outputs of one (group, source) in (producer, seq) order: the first is the one kept.
    vis = vis.take(
        pc.sort_indices(
            vis,
            [("grp", "ascending"), ("pos", "ascending"), ("producer_id", "ascending"), ("S", "ascending")],
        )
    )
    n = vis.num_rows
    grp_codes = numpy_of(
        pc.dictionary_encode(vis.column("grp").combine_chunks(), null_encoding="encode").indices, -1
    )
    pos = numpy_of(vis.column("pos"), -1).astype(np.int64)
    start = run_starts(grp_codes, pos)
    run = np.cumsum(start) - 1
    firsts = np.flatnonzero(start)
    k = np.diff(np.append(firsts, n))[run] if n else np.zeros(0, np.int64)
    nth = np.arange(n) - firsts[run] + 1 if n else np.zeros(0, np.int64)
    first = firsts[run] if n else np.zeros(0, np.int64)

    # What the final log holds at each visible output's source position.
    i = np.searchsorted(log_pos, pos)
    i_ok = np.minimum(i, max(len(log_pos) - 1, 0))
    there = (i < len(log_pos)) & (log_pos[i_ok] == pos) if len(log_pos) else np.zeros(n, dtype=bool)
    rc = numpy_of(logs.column("rc"), True).astype(bool)[i_ok] if len(log_pos) else np.zeros(n, dtype=bool)
    h_hash = logs.column("id_hash").take(pa.array(i_ok)) if len(log_pos) else pa.nulls(n, pa.int64())
    h_seq = logs.column("id_seq").take(pa.array(i_ok)) if len(log_pos) else pa.nulls(n, pa.int64())
    s_hash, s_seq = vis.column("id_hash"), vis.column("id_seq")
    same_producer = numpy_of(pc.fill_null(pc.equal(h_hash, s_hash), False), False).astype(bool)
    both_null = numpy_of(pc.and_(pc.is_null(h_seq), pc.is_null(s_seq)), False).astype(bool)
    same_seq = numpy_of(pc.fill_null(pc.equal(h_seq, s_seq), False), False).astype(bool) | both_null
    held = np.where(
        ~there, "nothing", np.where(~rc, "unreadable", np.where(same_producer & same_seq, "", "another"))
    )
    holder = _record_ids(logs, pa.array(i_ok))[0] if len(log_pos) else pa.nulls(n, pa.string())
    holder = pc.if_else(pa.array(there), holder, pa.nulls(n, pa.string()))

    def rows(which: np.ndarray, kind: int, weight: np.ndarray) -> pa.Table:
        take = pa.array(np.flatnonzero(which))
        m = len(take)
        return pa.table(
            {
                "kind": pa.array(np.full(m, kind, np.int32)),
                "home": vis.column("tp").take(take),
                "at": vis.column("pos").take(take),
                "o": vis.column("o").take(take),
                "weight": pa.array(weight[which].astype(np.int64)),
                "grp": vis.column("grp").take(take),
                "P": vis.column("P").take(take),
                "S": vis.column("S").take(take),
                "message_id": _send_ids(vis, take),
                "producer_id": vis.column("producer_id").take(take),
                "ack_ts": vis.column("ack_ts").take(take),
                "k": pa.array(k[which].astype(np.int64)),
                "first_out": _send_ids(vis, pa.array(first[which])),
                "holder": holder.take(take),
                "held": pa.array(held[which], mask=held[which] == ""),
                "source_message_id": vis.column("source_message_id").take(take),
                "committed": _null_long(m),
            },
            schema=FINDING,
        )

    return pa.concat_tables([rows(nth == 2, DUPLICATE, k - 1), rows(held != "", ORPHAN, np.ones(n))])


def _lost(outputs: pa.Table, logs: pa.Table, log_pos: np.ndarray, finals: pa.Table) -> pa.Table:
    """``pipeline_lost``: records readable under read_committed below a pipeline group's
    final offset for their partition, with no visible or promised output of that group at
    their position (``finals`` holds pipeline groups only)."""
    answered = outputs.filter(
        pc.or_(
            pc.fill_null(outputs.column("visible"), False), pc.fill_null(outputs.column("promised"), False)
        )
    )
    encoded = pc.dictionary_encode(answered.column("grp").combine_chunks())
    codes = numpy_of(encoded.indices, -1).astype(np.int64)
    answered_pos = numpy_of(answered.column("pos"), -1).astype(np.int64)
    by_group = {g: np.sort(answered_pos[codes == i]) for i, g in enumerate(encoded.dictionary.to_pylist())}
    log_tp = log_pos >> np.int64(OFFSET_BITS)
    log_o = numpy_of(logs.column("o"), -1).astype(np.int64)
    log_rc = numpy_of(logs.column("rc"), True).astype(bool)
    parts: list[pa.Table] = []
    for grp, tp, committed in zip(
        finals.column("grp").to_pylist(),
        finals.column("tp").to_pylist(),
        finals.column("o").to_pylist(),
        strict=True,
    ):
        if committed is None or tp is None:
            continue
        lo, hi = np.searchsorted(log_tp, [tp, tp + 1])
        rows = np.arange(lo, hi)
        rows = rows[log_rc[rows] & (log_o[rows] < committed)]
        rows = rows[~_sorted_contains(by_group.get(grp, np.zeros(0, np.int64)), log_pos[rows])]
        take, m = pa.array(rows), len(rows)
        message_id, producer_id = _record_ids(logs, take)
        parts.append(
            pa.table(
                {
                    "kind": pa.array(np.full(m, LOST, np.int32)),
                    "home": pa.array(np.full(m, tp, np.int32)),
                    "at": logs.column("pos").take(take),
                    "o": logs.column("o").take(take),
                    "weight": pa.array(np.ones(m, np.int64)),
                    "grp": pa.array([grp] * m, pa.string()),
                    "P": _null_long(m),
                    "S": logs.column("o").take(take),
                    "message_id": message_id,
                    "producer_id": producer_id,
                    "ack_ts": pa.nulls(m, pa.float64()),
                    "k": _null_long(m),
                    "first_out": pa.nulls(m, pa.string()),
                    "holder": message_id,
                    "held": pa.nulls(m, pa.string()),
                    "source_message_id": pa.nulls(m, pa.string()),
                    "committed": pa.array(np.full(m, committed, np.int64)),
                },
                schema=FINDING,
            )
        )
    return pa.concat_tables(parts) if parts else FINDING.empty_table()


def _sorted_contains(sorted_values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each of ``wanted`` is in ``sorted_values``: a binary search each (np.isin
    hashes both sides, several times slower on millions of positions)."""
    if not len(sorted_values):
        return np.zeros(len(wanted), dtype=bool)
    i = np.minimum(np.searchsorted(sorted_values, wanted), len(sorted_values) - 1)
    return sorted_values[i] == wanted


def _ranked(found: pa.Table, examples: int) -> pa.RecordBatch:
    """Per (home, kind): the total weight, and the first ``examples`` findings by (source
    offset, group, key)."""
    keys = [
        ("home", "ascending"),
        ("kind", "ascending"),
        ("o", "ascending"),
        ("grp", "ascending"),
        ("P", "ascending"),
        ("S", "ascending"),
    ]
    # Spark's ascending order puts a null group first; a present flag ahead of the group
    # does the same on any pyarrow (per-key null placement is recent). P is null only on
    # lost records, whose (group, offset) is already unique.
    found = found.append_column("has_grp", pc.is_valid(found.column("grp")))
    keys.insert(3, ("has_grp", "ascending"))
    found = found.take(pc.sort_indices(found, keys)).drop_columns(["has_grp"])
    n = found.num_rows
    home = numpy_of(found.column("home"), -1).astype(np.int64)
    kind = numpy_of(found.column("kind"), -1).astype(np.int64)
    start = run_starts(home, kind)
    run = np.cumsum(start) - 1
    firsts = np.flatnonzero(start)
    rank = np.arange(n) - firsts[run] + 1 if n else np.zeros(0, np.int64)
    weight = numpy_of(found.column("weight"), 0).astype(np.int64)
    totals = np.add.reduceat(weight, firsts)[run] if n else np.zeros(0, np.int64)
    keep = pa.array(np.flatnonzero(rank <= examples))
    out = found.take(keep)
    out = out.append_column("rank", pa.array(rank[rank <= examples].astype(np.int64)))
    out = out.append_column("total", pa.array(totals[rank <= examples].astype(np.int64)))
    return pa.RecordBatch.from_arrays([out.column(f.name).combine_chunks() for f in OUTPUT], schema=OUTPUT)


def judge_batches(examples: int) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow``'s function: a task's rows, whole source partitions of them, in any order."""
    return per_task(judge_table, examples)
