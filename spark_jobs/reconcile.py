"""The judge: reconcile what was produced against what can be consumed.

Run as ``spark-submit spark_jobs/reconcile.py <history_dir> [--out verdict.json]``, as
``python spark_jobs/reconcile.py ...`` (``--master sc://host:port`` for a Spark Connect
server), or call ``reconcile(spark, history_dir)`` with a session from
``session.build_session``: a classic session or a Spark Connect one alike.
Every anomaly kind and the verdict JSON are defined in docs/HISTORY.md; the Spark plan
and why it is shaped that way is in ``plan.py``.

The job runs in three Spark jobs: an overview (topics, each final-log partition's offset
range, send outcomes per time bucket, the topics the group and pipeline passes judge:
one aggregation), the main pass (one shuffle and a vectorised sweep whose tasks hand
back only a summary: counts, their first examples, the blocks' end messages), and a
bounded look-up of the records behind the examples. The driver merges the summaries and
finishes the reorders that straddle two blocks. A history with consumer-group data gets
one more job for the group kinds (``groups.py``), and one with transaction data one more
for the transaction kinds (``transactions.py``), its sends then carrying their judged
outcomes into every pass (``plan.tables``); a history without them pays only a read of
Parquet footers to learn that.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from harness.history import (
    ANOMALY_KINDS,
    HistoryError,
    Manifest,
    history_bytes,
    kinds,
    split_message_id,
    validate_history,
)
from harness.history.kinds import Family
from harness.history.verdict import VERDICT_FILE, Bucket, Example, Findings, PartitionFindings
from spark_jobs import fates, groups, pipelines, plan, sweep, transactions
from spark_jobs.boundary import BlockEnd, cross_block_reorders
from spark_jobs.session import build_session, parallelism

DEFAULT_BUCKET_SECONDS = 1.0
DEFAULT_EXAMPLES = 5
# Target bytes of Parquet input per shuffle partition; the union roughly triples in
# memory, and 24 MB keeps each task's hash maps comfortably inside a 4g local driver.
BYTES_PER_SHUFFLE_PARTITION = 24 * 1024 * 1024
# Rows per Arrow batch handed to the sweep. Spark's default (10k) means thousands of
# batches per task, each a JVM->Python round of fixed cost and a numpy call on too little
# data; 256k rows of the pass's four narrow columns are about 7 MB.
ARROW_BATCH_ROWS = 1 << 18
ARROW_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"


@contextlib.contextmanager
def _arrow_batches(spark: SparkSession, rows: int) -> Iterator[None]:
    """Run the pass with ``rows`` per Arrow batch, then give the session its own setting
    back: a runtime SQL conf, so it can be set on a Spark Connect session too."""
    before = spark.conf.get(ARROW_BATCH_CONF, None)
    spark.conf.set(ARROW_BATCH_CONF, str(rows))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(ARROW_BATCH_CONF)
        else:
            spark.conf.set(ARROW_BATCH_CONF, before)


def shuffle_partitions(spark: SparkSession, history: str) -> int:
    """Enough partitions that each task's rows fit in memory, and a multiple of
    the cores so the last wave is not a single straggler."""
    cores = parallelism(spark)
    size = history_bytes(history, ("sends", "polls", "final_log"))
    wanted = math.ceil(size / BYTES_PER_SHUFFLE_PARTITION)
    return max(cores, math.ceil(wanted / cores) * cores)


# --------------------------------------------------------------------------- assembly


def _producer_of(mid: str | None) -> str | None:
    producer, seq = split_message_id(mid)
    return producer if seq is not None else None


MAX_LOCATED = 200_000  # messages the fates place, over all send-side kinds (docs/HISTORY.md)


@dataclass(frozen=True)
class _Fate:
    """A FATE row: a message a send-side kind found, and where the kind found it."""

    kind: str
    P: int
    S: int
    at: tuple[str, int]
    offset: int


@dataclass(frozen=True)
class _Hit:
    """One example as the summary names it: message key, where it happened (partition and
    offset, which need not be the partition it is listed under) and the kind's extra."""

    P: int
    S: int
    at: tuple[str, int]
    offset: int | None
    aux: int | None


def _ranked(hit: tuple[tuple[str, int], str, _Hit]) -> tuple[Any, ...]:
    """Partition, kind, then the order the Spark summary ranks examples in (offset, nulls
    last; then P, S): one order for choosing examples and for listing them."""
    tp, kind, h = hit
    return (tp, kind, h.offset is None, h.offset or 0, h.P, h.S)


def _first_examples(
    raw: Sequence[tuple[tuple[str, int], str, _Hit]], limit: int
) -> list[tuple[tuple[str, int], str, _Hit]]:
    """At most ``limit`` examples per partition and kind, lowest offsets first."""
    ranked = sorted(raw, key=_ranked)
    kept: list[tuple[tuple[str, int], str, _Hit]] = []
    taken: dict[tuple[tuple[str, int], str], int] = {}
    for tp, kind, hit in ranked:
        n = taken.get((tp, kind), 0)
        if n < limit:
            kept.append((tp, kind, hit))
            taken[(tp, kind)] = n + 1
    return kept


@dataclass(frozen=True)
class _Prelude:
    topics: list[str]
    range_rows: list[Any]  # topic, partition, log_start, log_end, log_records
    availability_rows: list[Any]  # topic, partition, bucket, acked, failed, unknown
    group_topics: frozenset[str]  # topics a group read or committed in
    pipeline_sources: frozenset[str]  # topics a pipeline output names as its source


def _prelude(tables: Mapping[str, DataFrame], bucket_seconds: float) -> _Prelude:
    rows = plan.overview(tables, bucket_seconds).collect()
    named = (plan.OVERVIEW_LOG, plan.OVERVIEW_SENDS, plan.OVERVIEW_POLLS)
    topics = sorted({r.topic for r in rows if r.source in named})
    ranges = [r for r in rows if r.log_records is not None]
    if len(topics) >= plan.MAX_TOPICS:
        raise HistoryError(f"history has {len(topics)} topics; at most {plan.MAX_TOPICS - 1}")
    for r in ranges:
        if not -1 <= r.partition <= plan.MAX_PARTITION or r.log_end > plan.MAX_OFFSET:
            raise HistoryError(
                f"final log {r.topic}-{r.partition} reaches offset {r.log_end}; "
                f"partitions up to {plan.MAX_PARTITION} and offsets up to {plan.MAX_OFFSET} "
                "are supported"
            )
    grouped = frozenset(
        r.topic
        for r in rows
        if (r.source == plan.OVERVIEW_POLLS and r.grouped) or r.source == plan.OVERVIEW_GROUP
    )
    sources = frozenset(r.topic for r in rows if r.source == plan.OVERVIEW_PIPELINE_SOURCE)
    return _Prelude(topics, ranges, [r for r in rows if r.bucket is not None], grouped, sources)


def _decode_tp(tp: int | None, topics: Sequence[str]) -> tuple[str, int]:
    if tp is None:
        return ("", -1)
    return topics[tp >> plan.PARTITION_BITS], (tp & ((1 << plan.PARTITION_BITS) - 1)) - 1


@dataclass(frozen=True)
class _Found:
    """What the look-up behind the examples found: ids by message key, acknowledgement
    times, and what the final log holds at each example's position."""

    ids: dict[tuple[int, int], str | None]
    ack_ts: dict[tuple[int, int], float | None]
    holders: dict[tuple[str, int, int | None], str | None]
    sends: dict[tuple[int, int], _Sent] = field(default_factory=dict)


@dataclass(frozen=True)
class _Sent:
    """A looked-up send: its outcome as sent, where it was acknowledged (offset None: it
    was not) and when."""

    topic: str
    partition: int
    offset: int | None
    send_ts: float
    ack_ts: float | None
    outcome: str


def _look_up(
    spark: SparkSession,
    tables: Mapping[str, DataFrame],
    prelude: _Prelude,
    raw: Sequence[tuple[tuple[str, int], str, _Hit]],
    extra: Sequence[tuple[str, int, int]] = (),
    fated: Sequence[_Fate] = (),
) -> _Found:
    """Ids and acknowledgement times of the example messages, and what the final log holds
    at each example's position: one job. A sent message's id comes from its send; a
    never-sent one's from its record on the final log (where the example sits at a copy
    of it) or, for an unexpected position the log does not give to it, from the polls.
    ``extra`` are further positions (the group findings') whose final-log record is wanted;
    ``fated`` the messages whose sends the fates place."""
    if not raw and not extra and not fated:
        return _Found({}, {}, {})
    seqs = sorted({r.S for _, _, r in raw if r.S is not None and r.S >= 0} | {f.S for f in fated if f.S >= 0})
    ranges = {(r.topic, r.partition): (r.log_start, r.log_end) for r in prelude.range_rows}
    on_log: set[tuple[str, int, int]] = set()
    in_polls: set[tuple[str, int, int]] = set()
    for _, kind, r in raw:
        lo, hi = ranges.get(r.at, (0, -1))
        if r.offset is None or r.at[0] not in prelude.topics or not 0 <= r.offset <= plan.MAX_OFFSET:
            continue
        if lo <= r.offset <= hi:
            on_log.add((*r.at, r.offset))
        if kind == sweep.UNEXPECTED:  # a never-sent record read where the log may lack it
            in_polls.add((*r.at, r.offset))
    for topic, partition, offset in extra:
        lo, hi = ranges.get((topic, partition), (0, -1))
        if topic in prelude.topics and lo <= offset <= hi:
            on_log.add((topic, partition, offset))
    rows = plan.found_at(
        spark, tables, prelude.topics, seqs, {"final_log": sorted(on_log), "polls": sorted(in_polls)}
    ).collect()
    ids: dict[tuple[int, int], str | None] = {}
    ack_ts: dict[tuple[int, int], float | None] = {}
    holders: dict[tuple[str, int, int | None], str | None] = {}
    sends: dict[tuple[int, int], _Sent] = {}
    for row in rows:
        ids.setdefault((row.P, row.S), row.message_id)
        if row.source == "sends":
            ids[(row.P, row.S)] = row.message_id
            ack_ts[(row.P, row.S)] = row.ack_ts
            acked_at = None if row.offset is None or row.offset < 0 else int(row.offset)
            sends[(row.P, row.S)] = _Sent(
                row.topic, int(row.partition), acked_at, row.send_ts, row.ack_ts, row.outcome
            )
        elif row.source == "final_log":
            holders[(row.topic, row.partition, row.offset)] = row.message_id
    return _Found(ids, ack_ts, holders, sends)


def _summary(
    summary: pa.Table,
    topics: Sequence[str],
    examples: int,
    part: Callable[[tuple[str, int]], PartitionFindings],
) -> tuple[
    list[tuple[tuple[str, int], str, _Hit]],
    list[BlockEnd],
    dict[tuple[int, int], tuple[str, int]],
    list[_Fate],
]:
    """The tasks' summaries merged: counts added into ``part``, the first examples per
    partition and kind (raw), the blocks' end messages and their messages' homes, and
    the messages the send-side kinds found (the first ``MAX_LOCATED``).
    Unexpected positions are counted here, once each over all tasks, naming the final
    log's record there if it is a never-sent one, else the lowest key seen there."""
    col = {
        n: summary.column(n).cast(pa.int64()).fill_null(sweep.NULL).to_numpy()
        for n in ("row", "kind", "tp", "P", "S", "at", "aux")
    }
    flag = summary.column("flag").fill_null(False).to_numpy(zero_copy_only=False)
    row = col["row"]

    counts = np.flatnonzero(row == sweep.COUNT_ROW)
    for tp, kind, n in zip(*(col[c][counts].tolist() for c in ("tp", "kind", "aux")), strict=True):
        counted_in = _decode_tp(None if tp == sweep.NULL else tp, topics)
        part(counted_in).counts[kinds.of_code(Family.MESSAGES, kind)] += n

    seen = np.flatnonzero(row == sweep.UNEXPECTED_ROW)
    at, p, s = col["at"][seen], col["P"][seen], col["S"][seen]
    order = np.lexsort((s, p, ~flag[seen], at))
    unique = order[sweep._starts(at[order])] if len(order) else order
    u_tp = at[unique] >> plan.OFFSET_BITS
    for tp, n in zip(*(a.tolist() for a in np.unique(u_tp, return_counts=True)), strict=True):
        part(_decode_tp(tp, topics)).counts[sweep.UNEXPECTED] += n

    hits = np.flatnonzero(row == sweep.EXAMPLE_ROW)
    unexpected = np.full(len(unique), kinds.code(sweep.UNEXPECTED), dtype=np.int64)
    kind = np.concatenate([col["kind"][hits], unexpected])
    tp = np.concatenate([col["tp"][hits], u_tp])
    hp, hs = np.concatenate([col["P"][hits], p[unique]]), np.concatenate([col["S"][hits], s[unique]])
    hat = np.concatenate([col["at"][hits], at[unique]])
    aux = np.concatenate([col["aux"][hits], np.full(len(unique), sweep.NULL, dtype=np.int64)])
    raw: list[tuple[tuple[str, int], str, _Hit]] = []
    for i in sweep.first_examples(kind, tp, hp, hs, hat, examples).tolist():
        home = None if tp[i] == sweep.NULL else int(tp[i])
        where = int(hat[i]) >> plan.OFFSET_BITS if hat[i] != sweep.NULL else home
        offset = int(sweep.offset_of(hat[i : i + 1])[0])
        raw.append(
            (
                _decode_tp(home, topics),
                kinds.of_code(Family.MESSAGES, int(kind[i])),
                _Hit(
                    int(hp[i]),
                    int(hs[i]),
                    _decode_tp(where, topics),
                    None if offset == sweep.NULL else offset,
                    None if aux[i] == sweep.NULL else int(aux[i]),
                ),
            )
        )

    ends: list[BlockEnd] = []
    homes: dict[tuple[int, int], tuple[str, int]] = {}
    block = np.flatnonzero(row == sweep.BLOCK_END_ROW)
    e_at = col["at"][block]
    for t, pp, ss, a, off, head in zip(
        col["tp"][block].tolist(),
        col["P"][block].tolist(),
        col["S"][block].tolist(),
        (e_at >> plan.OFFSET_BITS).tolist(),
        sweep.offset_of(e_at).tolist(),
        flag[block].tolist(),
        strict=True,
    ):
        ends.append(BlockEnd(a, pp, ss, ss >> plan.BLOCK_BITS, off, bool(head)))
        homes[(pp, ss)] = _decode_tp(None if t == sweep.NULL else t, topics)

    fate = np.flatnonzero((row == sweep.FATE_ROW) & (col["at"] != sweep.NULL))[:MAX_LOCATED]
    f_at = col["at"][fate]
    fated = [
        _Fate(kinds.of_code(Family.MESSAGES, k), pp, ss, _decode_tp(a, topics), off)
        for k, pp, ss, a, off in zip(
            col["kind"][fate].tolist(),
            col["P"][fate].tolist(),
            col["S"][fate].tolist(),
            (f_at >> plan.OFFSET_BITS).tolist(),
            sweep.offset_of(f_at).tolist(),
            strict=True,
        )
    ]
    return raw, ends, homes, fated


def _assemble(
    spark: SparkSession,
    tables: Mapping[str, DataFrame],
    history: str,
    manifest: Manifest,
    prelude: _Prelude,
    summary: pa.Table,
    bucket_seconds: float,
    examples: int,
    grouped: groups.GroupFindings | None = None,
    txns: transactions.TxnFindings | None = None,
    piped: transactions.TxnFindings | None = None,
) -> Findings:
    parts: dict[tuple[str, int], PartitionFindings] = {}

    def part(tp: tuple[str, int]) -> PartitionFindings:
        return parts.setdefault(tp, PartitionFindings(*tp))

    for r in prelude.range_rows:
        part((r.topic, r.partition)).log = {
            "start": r.log_start,
            "end": r.log_end,
            "records": r.log_records,
            "dense": r.log_records == r.log_end - r.log_start + 1,
        }
    overall: dict[float, list[int]] = {}
    per_part: dict[tuple[str, int], list[Bucket]] = {}
    for r in prelude.availability_rows:
        tp = (r.topic, r.partition)
        counts = [int(r.acked), int(r.failed), int(r.unknown)]
        for name, c in zip(("acked", "failed", "unknown"), counts, strict=True):
            part(tp).sends[name] += c
        start = float(r.bucket) * bucket_seconds
        acc = overall.setdefault(start, [0, 0, 0])
        for i, c in enumerate(counts):
            acc[i] += c
        if counts[1] or counts[2]:
            per_part.setdefault(tp, []).append(Bucket(start, counts[0], counts[1], counts[2]))

    raw, ends, home, fated = _summary(summary, prelude.topics, examples, part)
    crossed = cross_block_reorders(ends)
    for cross in crossed:
        end = cross.end
        tp = home[(end.producer, end.seq)]
        part(tp).counts[sweep.REORDERED] += 1
        at = _decode_tp(end.log_tp, prelude.topics)
        raw.append((tp, sweep.REORDERED, _Hit(end.producer, end.seq, at, end.offset, cross.prev_seq)))
    if crossed:  # the sweep's first examples, merged with these: keep the first few again
        raw = _first_examples(raw, examples)

    shown = grouped.examples if grouped else []
    txn_shown = [*(txns.examples if txns else []), *(piped.examples if piped else [])]
    extra = [(g.topic, g.partition, g.offset) for g in shown]
    extra += [(t.topic, t.partition, t.offset) for t in txn_shown if t.offset is not None]
    found = _look_up(spark, tables, prelude, raw, extra, fated)
    raw.sort(key=_ranked)
    for tp, kind, r in raw:
        mid = found.ids.get((r.P, r.S))
        holder = found.holders.get((*r.at, r.offset))
        part(tp).examples.setdefault(kind, []).append(
            Example(
                kind=kind,
                message_id=mid,
                producer_id=_producer_of(mid),
                topic=r.at[0],
                partition=r.at[1],
                offset=r.offset,
                ack_ts=found.ack_ts.get((r.P, r.S)),
                final_message_id=holder,
                detail=kinds.detail(kind, {"offset": r.offset, "aux": r.aux, "holder": holder}),
            )
        )

    if grouped:
        for tp, by_kind in grouped.counts.items():
            for kind, n in by_kind.items():
                part(tp).counts[kind] += n
        for g in shown:  # in order of offset per partition and kind already
            part((g.topic, g.partition)).examples.setdefault(g.kind, []).append(
                Example(
                    kind=g.kind,
                    message_id=None,
                    producer_id=None,
                    topic=g.topic,
                    partition=g.partition,
                    offset=g.offset,
                    ack_ts=None,
                    final_message_id=found.holders.get((g.topic, g.partition, g.offset)),
                    detail=g.detail,
                )
            )
    for homed in (txns, piped):
        for tp, by_kind in (homed.counts if homed else {}).items():
            for kind, n in by_kind.items():
                part(tp).counts[kind] += n
    if txn_shown:
        for t in txn_shown:  # in order of offset per partition and kind already
            part(t.home).examples.setdefault(t.kind, []).append(
                Example(
                    kind=t.kind,
                    message_id=t.message_id,
                    producer_id=t.producer_id,
                    topic=t.topic,
                    partition=t.partition,
                    offset=t.offset,
                    ack_ts=t.ack_ts,
                    final_message_id=found.holders.get((t.topic, t.partition, t.offset)),
                    detail=t.detail,
                )
            )

    located = _located(fated, found.sends)
    for place, placed in fates.offset_ranges(located).items():
        part(place).ranges = {k: listed for k, (listed, _) in placed.items()}
    fated_buckets = fates.bucket_fates(located, bucket_seconds)
    for tp, buckets in per_part.items():
        part(tp).outage = sorted(buckets, key=lambda b: b.start)
    ordered = [parts[k] for k in sorted(parts)]
    totals = {name: sum(p.sends[name] for p in ordered) for name in ("acked", "failed", "unknown")}
    totals["sends"] = sum(totals.values())
    totals["final_log_records"] = sum(int(p.log.get("records", 0)) for p in ordered)
    totals.update({k: sum(p.counts[k] for p in ordered) for k in ANOMALY_KINDS})
    return Findings(
        run_id=manifest.run_id,
        history=history,
        bucket_seconds=bucket_seconds,
        partitions=ordered,
        availability=[
            Bucket(s, c[0], c[1], c[2], *fated_buckets.get(s, ({}, {}))) for s, c in sorted(overall.items())
        ],
        totals=totals,
        located={k: sum(1 for f in located if f.kind == k) for k in sweep.FATE_KINDS},
    )


def _located(fated: Sequence[_Fate], sends: Mapping[tuple[int, int], _Sent]) -> list[fates.Located]:
    """The fated messages that were sent, each at its acknowledged position if it has one,
    else where its kind found it (none: a lost send acknowledged without an offset). A
    never-sent record's copies (a duplicate of an id no producer sent) have no send to
    place."""
    out = []
    for f in fated:
        sent = sends.get((f.P, f.S))
        if sent is None:
            continue
        # No acknowledged offset (failed, in doubt, or acknowledged without one): where the
        # kind found it, if that is a position; else it has a time but no place.
        found_at = f.offset if 0 <= f.offset <= plan.MAX_OFFSET else None
        topic, partition, offset = (
            (sent.topic, sent.partition, sent.offset) if sent.offset is not None else (*f.at, found_at)
        )
        when = (sent.send_ts, sent.ack_ts, sent.outcome)
        out.append(fates.Located(f.kind, (f.P, f.S), topic, partition, offset, *when))
    return out


def reconcile(
    spark: SparkSession,
    history_dir: str | os.PathLike[str],
    bucket_seconds: float = DEFAULT_BUCKET_SECONDS,
    examples: int = DEFAULT_EXAMPLES,
    partitions: int | None = None,
) -> Findings:
    """Judge one history. Raises HistoryError (before any Spark work) if it is malformed,
    incomplete or of another schema version."""
    history = os.fspath(history_dir)
    if "://" not in history:
        history = str(Path(history).absolute())
    if bucket_seconds <= 0:
        raise ValueError("bucket_seconds must be positive")
    if examples < 1:
        raise ValueError("examples must be at least 1")
    t0 = time.perf_counter()
    manifest = validate_history(history)
    n = partitions or shuffle_partitions(spark, history)
    # Footers only: a history without transactions pays no join and no transaction pass.
    transactional = transactions.has_transaction_data(history)
    tables = plan.tables(spark, history, transactions=transactional)
    grouped_history = groups.has_group_data(history)  # footers only: without groups, nothing more
    if grouped_history:
        tables.update({t: plan.read(spark, history, t) for t in groups.TABLES})
    try:
        prelude = _prelude(tables, bucket_seconds)
        t1 = time.perf_counter()
        ranges = {
            prelude.topics.index(r.topic) * (1 << plan.PARTITION_BITS) + r.partition + 1: (
                r.log_start,
                r.log_end,
            )
            for r in prelude.range_rows
        }
        summarised = plan.summarised(plan.events(tables, prelude.topics), n, ranges, examples)
        with _arrow_batches(spark, ARROW_BATCH_ROWS):
            summary = summarised.toArrow()
        t2 = time.perf_counter()
        grouped = None
        if grouped_history:
            grouped = groups.judge(tables, prelude.topics, examples, n, prelude.group_topics)
        t3 = time.perf_counter()
        txns = transactions.judge(tables, prelude.topics, examples, n) if transactional else None
        t4 = time.perf_counter()
        piped = None
        if pipelines.has_pipeline_data(history):  # footers only: a history without pipelines pays nothing
            offsets = {"final_offsets": plan.read(spark, history, "final_offsets")}
            sources = prelude.pipeline_sources
            piped = pipelines.judge({**tables, **offsets}, prelude.topics, examples, n, sources)
        t5 = time.perf_counter()
        findings = _assemble(
            spark, tables, history, manifest, prelude, summary, bucket_seconds, examples, grouped, txns, piped
        )
    except BaseException:
        with contextlib.suppress(Exception):  # the judgement's own error is the one to tell
            plan.release(tables)
        raise
    plan.release(tables)
    t6 = time.perf_counter()
    findings.timings = {
        "prelude_s": round(t1 - t0, 3),
        "main_pass_s": round(t2 - t1, 3),
        "groups_s": round(t3 - t2, 3) if grouped else 0.0,
        "transactions_s": round(t4 - t3, 3) if txns else 0.0,
        "pipelines_s": round(t5 - t4, 3) if piped else 0.0,
        "examples_s": round(t6 - t5, 3),
        "total_s": round(t6 - t0, 3),
        "shuffle_partitions": n,
    }
    return findings


# ------------------------------------------------------------------------------- CLI


def _conf_pairs(items: Iterable[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--conf expects key=value, got {item!r}")
        conf[key] = value
    return conf


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Reconcile a kafka-chaos run history.")
    p.add_argument("history", help="history directory (local path or URI)")
    p.add_argument("--out", help="write verdict JSON here (default: <history>/verdict.json)")
    p.add_argument(
        "--master",
        help="Spark master URL, or sc://host:port for a Spark Connect server (default: "
        "$KAFKA_CHAOS_SPARK_REMOTE, else $KAFKA_CHAOS_SPARK_MASTER, else spark-submit's, else local[*])",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark conf, repeatable",
    )
    p.add_argument("--bucket-seconds", type=float, default=DEFAULT_BUCKET_SECONDS)
    p.add_argument(
        "--examples",
        type=int,
        default=DEFAULT_EXAMPLES,
        help="examples kept per kind per partition",
    )
    p.add_argument("--partitions", type=int, help="shuffle partitions (default: sized by input)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 0 if the verdict passes, 1 if it fails, 2 if the history cannot be judged."""
    args = parse_args(argv)
    try:
        # Validate before starting Spark: a bad history fails fast, with one line.
        manifest = validate_history(args.history)
    except HistoryError as exc:
        print(f"reconcile: error: {exc}", file=sys.stderr)
        return 2
    spark = build_session(args.master, _conf_pairs(args.conf))
    try:
        findings = reconcile(spark, args.history, args.bucket_seconds, args.examples, args.partitions)
    except HistoryError as exc:
        print(f"reconcile: error: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    verdict = findings.judge(manifest.expectations)
    out = args.out or (
        f"{args.history.rstrip('/')}/{VERDICT_FILE}" if "://" not in args.history else VERDICT_FILE
    )
    verdict.write(out)
    status = "PASSED" if verdict.passed else "FAILED"
    counts = ", ".join(f"{k}={v}" for k, v in findings.counts().items())
    print(f"reconcile: {status} run {manifest.run_id}: {counts} -> {out}")
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
