"""What the timeline's further panels draw, read from a scenario's history: produce
latency quantiles per send bucket, under-replicated and offline partitions per sampled
snapshot, and the client's failed produce attempts.

Each reader takes only the columns it needs and returns None, with a problem, when its
table cannot be read: a page then draws without that panel rather than not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.history import OUTCOME_ACKED, part_files
from harness.report.model import (
    AckedOffsets,
    ClientError,
    GroupActivity,
    LatencyBucket,
    LeaderSpan,
    MemberChange,
    PartitionHealth,
    TransactionSpan,
)


def _read(hdir: Path, table: str, columns: list[str], problems: list[str]) -> pa.Table | None:
    try:
        parts = [pq.read_table(f, columns=columns) for f in part_files(hdir, table)]
    except (OSError, pa.ArrowException) as exc:
        problems.append(f"the history's {table} table cannot be read for the timeline: {exc}")
        return None
    return pa.concat_tables(parts) if parts else None


def _of(table: pa.Table, topic: str, partition: int) -> pa.Table:
    """The rows of one partition."""
    return table.filter(pc.and_(pc.equal(table["topic"], topic), pc.equal(table["partition"], partition)))


def latency_buckets(hdir: Path, width: float, problems: list[str]) -> list[LatencyBucket] | None:
    """p50, p99 and the maximum of ack_ts - send_ts over the acknowledged sends of each
    ``width``-second bucket by send time (the buckets the send plot draws)."""
    sends = _read(hdir, "sends", ["send_ts", "ack_ts", "outcome"], problems)
    if sends is None or width <= 0:
        return None
    acked = sends.filter(pc.and_(pc.equal(sends["outcome"], OUTCOME_ACKED), pc.is_valid(sends["ack_ts"])))
    if acked.num_rows == 0:
        return []
    sent = acked["send_ts"].to_numpy()
    latency = np.maximum(acked["ack_ts"].to_numpy() - sent, 0.0)
    bucket = np.floor(sent / width).astype(np.int64)
    order = np.lexsort((latency, bucket))
    bucket, latency = bucket[order], latency[order]
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    out = []
    for lo, hi in zip(starts, [*starts[1:], len(bucket)], strict=True):
        values = latency[lo:hi]  # sorted
        out.append(LatencyBucket(float(bucket[lo]) * width, float(np.quantile(values, 0.5)),
                                 float(np.quantile(values, 0.99)), float(values[-1])))  # fmt: skip
    return out


def partition_health(hdir: Path, problems: list[str]) -> list[PartitionHealth] | None:
    """Per cluster_state snapshot, in time order: its under-replicated and offline
    partitions (an unreadable stretch as None, None)."""
    state = _read(hdir, "cluster_state", ["sample", "ts", "readable", "topic", "leader", "isr", "replicas"],
                  problems)  # fmt: skip
    if state is None:
        return None
    samples: dict[int, list[dict[str, object]]] = {}
    for row in state.to_pylist():
        samples.setdefault(int(row["sample"]), []).append(row)
    out = []
    for _, rows in sorted(samples.items()):
        first = rows[0]
        if not first["readable"]:
            out.append(PartitionHealth(float(first["ts"]), None, None))  # type: ignore[arg-type]
            continue
        parts = [r for r in rows if r["topic"] is not None]
        under = sum(len(r["isr"] or []) < len(r["replicas"] or []) for r in parts)  # type: ignore[arg-type]
        offline = sum(r["leader"] == -1 for r in parts)
        out.append(PartitionHealth(float(first["ts"]), under, offline))  # type: ignore[arg-type]
    return out


def client_errors(hdir: Path, problems: list[str]) -> list[ClientError] | None:
    """The producers' failed attempts, in time order (none for a history before schema 3)."""
    attempts = _read(hdir, "attempts", ["ts", "error", "messages"], problems)
    if attempts is None:
        return None
    rows = attempts.to_pylist()
    return sorted((ClientError(float(r["ts"]), str(r["error"]), int(r["messages"])) for r in rows),
                  key=lambda e: e.ts)  # fmt: skip


MAX_OFFSET_POINTS = 4000  # per partition on the offset map


def acked_offsets(hdir: Path, partitions: set[tuple[str, int]], problems: list[str]
                  ) -> dict[tuple[str, int], AckedOffsets] | None:  # fmt: skip
    """The acknowledged sends of ``partitions`` as (ack_ts, offset), each partition's
    thinned evenly to MAX_OFFSET_POINTS in ack order."""
    if not partitions:
        return {}
    sends = _read(hdir, "sends", ["topic", "partition", "ack_ts", "offset", "outcome"], problems)
    if sends is None:
        return None
    acked = sends.filter(pc.and_(pc.equal(sends["outcome"], OUTCOME_ACKED), pc.is_valid(sends["offset"])))
    out = {}
    for topic, partition in sorted(partitions):
        mine = _of(acked, topic, partition)
        ts = mine["ack_ts"].to_numpy(zero_copy_only=False)
        offsets = mine["offset"].to_numpy(zero_copy_only=False)
        order = np.argsort(ts, kind="stable")
        keep = order[:: max(1, -(-len(order) // MAX_OFFSET_POINTS))]
        out[(topic, partition)] = AckedOffsets([float(t) for t in ts[keep]], [int(o) for o in offsets[keep]],
                                               len(order))  # fmt: skip
    return out


def leader_spans(hdir: Path, partitions: set[tuple[str, int]], end: float, problems: list[str]
                 ) -> dict[tuple[str, int], list[LeaderSpan]] | None:  # fmt: skip
    """Each partition's leaders over time from the cluster_state snapshots (a snapshot
    holds until the next; an unreadable stretch keeps the last leader seen), until ``end``."""
    if not partitions:
        return {}
    state = _read(hdir, "cluster_state", ["ts", "topic", "partition", "leader", "leader_epoch"], problems)
    if state is None:
        return None
    out: dict[tuple[str, int], list[LeaderSpan]] = {tp: [] for tp in partitions}
    for row in sorted(state.to_pylist(), key=lambda r: r["ts"]):
        tp = (row["topic"], row["partition"])
        if tp not in out or row["leader"] is None:
            continue
        spans = out[tp]
        if spans and (spans[-1].leader, spans[-1].epoch) == (row["leader"], row["leader_epoch"]):
            continue
        if spans:
            spans[-1] = LeaderSpan(spans[-1].start, row["ts"], spans[-1].leader, spans[-1].epoch)
        spans.append(LeaderSpan(row["ts"], end, row["leader"], row["leader_epoch"]))
    return out


MAX_REREAD_MARKS = 300  # per group on the timeline; the count is exact
COMMIT_COLUMNS = ["group", "consumer_id", "ts", "topic", "partition", "offset", "outcome"]
Ends = dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]


def group_activity(hdir: Path, problems: list[str]) -> list[GroupActivity] | None:
    """Each consumer group's rebalances, commits, re-reads and lag, from the rebalances,
    commits, polls and sends tables (none for a history without groups)."""
    rebalances = _read(hdir, "rebalances", ["group", "consumer_id", "ts", "event"], problems)
    commits = _read(hdir, "commits", COMMIT_COLUMNS, problems)
    if rebalances is None or commits is None:
        return None
    groups = sorted(set(rebalances["group"].to_pylist()) | set(commits["group"].to_pylist()))
    if not groups:
        return []
    polls = _read(hdir, "polls", ["group", "topic", "partition", "offset", "poll_ts"], problems)
    ends = _acked_ends(_read(hdir, "sends", ["topic", "partition", "offset", "ack_ts", "outcome"], problems))
    out = []
    for group in groups:
        changed = rebalances.filter(pc.equal(rebalances["group"], group)).to_pylist()
        changes = sorted({MemberChange(r["ts"], r["consumer_id"], r["event"]) for r in changed},
                         key=lambda c: (c.ts, c.consumer_id, c.event))  # fmt: skip
        mine = commits.filter(pc.equal(commits["group"], group)).sort_by("ts").to_pylist()
        calls = sorted({(r["ts"], r["consumer_id"], r["outcome"] == "committed") for r in mine})
        rereads, reread_ts = _rereads(polls, group)
        lag = _lag([r for r in mine if r["outcome"] == "committed"], ends)
        out.append(GroupActivity(group, changes, [(ts, ok) for ts, _, ok in calls], rereads, reread_ts, lag))
    return out


def _rereads(polls: pa.Table | None, group: str) -> tuple[int, list[float]]:
    """Reads of a (topic, partition, offset) the group had read before, and their times."""
    if polls is None:
        return 0, []
    mine = polls.filter(pc.equal(polls["group"], group)).sort_by("poll_ts").to_pylist()
    seen: set[tuple[str, int, int]] = set()
    times = []
    for r in mine:
        where = (r["topic"], r["partition"], r["offset"])
        if where in seen:
            times.append(float(r["poll_ts"]))
        seen.add(where)
    return len(times), times[:: max(1, -(-len(times) // MAX_REREAD_MARKS))]


def _acked_ends(sends: pa.Table | None) -> Ends:
    """Per partition: acknowledgement times in order, and the log end acknowledged by each
    (the highest acknowledged offset so far, plus one)."""
    if sends is None:
        return {}
    acked = sends.filter(pc.and_(pc.equal(sends["outcome"], OUTCOME_ACKED), pc.is_valid(sends["offset"])))
    out: Ends = {}
    for place in set(zip(acked["topic"].to_pylist(), acked["partition"].to_pylist(), strict=True)):
        mine = _of(acked, *place)
        ts = mine["ack_ts"].to_numpy(zero_copy_only=False)
        order = np.argsort(ts, kind="stable")
        offsets = mine["offset"].to_numpy(zero_copy_only=False)[order]
        out[place] = (ts[order], np.maximum.accumulate(offsets) + 1)
    return out


def _lag(committed: list[dict[str, Any]], ends: Ends) -> list[tuple[float, int]]:
    """At each successful commit (in time order): records acknowledged by then but not
    committed, over the partitions the group has committed in so far."""
    positions: dict[tuple[str, int], int] = {}
    out: list[tuple[float, int]] = []
    for r in committed:
        positions[(r["topic"], r["partition"])] = r["offset"]
        ts = float(r["ts"])
        lag = 0
        for place, offset in positions.items():
            times, end = ends.get(place, (np.empty(0), np.empty(0, dtype=np.int64)))
            i = int(np.searchsorted(times, ts, side="right"))
            lag += max(int(end[i - 1]) - offset, 0) if i else 0
        if out and out[-1][0] == ts:
            out[-1] = (ts, lag)
        else:
            out.append((ts, lag))
    return out


def transaction_spans(hdir: Path, problems: list[str]) -> list[TransactionSpan] | None:
    """Every transaction a transactional producer began, in begin order (none for a
    history without transactions)."""
    rows = _read(hdir, "transactions", ["producer_id", "begin_ts", "end_ts", "outcome"], problems)
    if rows is None:
        return None
    return sorted((TransactionSpan(r["producer_id"], r["begin_ts"], r["end_ts"], r["outcome"])
                   for r in rows.to_pylist()), key=lambda t: t.begin)  # fmt: skip
