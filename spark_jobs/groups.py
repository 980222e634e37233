"""The consumer-group kinds: how a group's members read and committed each partition.

``poll_skip``, ``nonmonotonic_poll``, ``commit_regression`` and ``commit_beyond_read`` are
defined in docs/HISTORY.md. They are judged apart from the main pass (``plan.py``), which
keys everything by message: these kinds are about positions, in the order one member
read them or the group committed them, so they are windows over (group, partition).

Why it looks the way it does:

* It only runs when the history has group data (``has_group_data`` reads Parquet footers:
  row counts of ``commits`` and ``rebalances``, null counts of ``polls.group``), so a
  history without groups costs nothing more than before.
* Group reads and committed commits are one stream, shuffled once by (group, topic,
  partition) and ordered three ways by windows whose keys all start with those: the
  running highest read before each commit (``commit_beyond_read``), each member's previous
  read in one assignment (``poll_skip``, ``nonmonotonic_poll``), the previous commit
  (``commit_regression``). Only rows that are findings, or may be, are kept (the
  *candidates*): in a sound run there are a few per assignment.
* Whether a read gap or an early commit passes over a record is a range question
  (acknowledged offsets, final-log offsets strictly inside an interval). Intervals are not
  rare (a group reading a transactional partition passes over a control record every few
  offsets), so a join on the range would be quadratic; the offsets and intervals are
  shuffled together by partition and each interval answered by sorted search
  (``spans.py``).
* The candidates are persisted for the one action that ranks and counts them, because two
  branches (direct findings and intervals) read them; the windows run once.

Public PySpark API only (SQL text, windows, joins, ``mapInArrow``), so it runs through Spark
Connect too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.history import COMMIT_COMMITTED, OUTCOME_ACKED, REBALANCE_ASSIGNED
from spark_jobs import plan, spans

POLL_SKIP, NONMONOTONIC, REGRESSION, BEYOND = (
    "poll_skip",
    "nonmonotonic_poll",
    "commit_regression",
    "commit_beyond_read",
)
# Candidate rows of the windowed stream: findings as they stand, and intervals still to be
# looked up. FIRST is a member's first read of a partition in an assignment, a poll_skip
# once its resume offset is known; GAP is a forward jump between two reads.
_NONMONO, _REGRESSION, _GAP, _FIRST, _EARLY = 0, 1, 2, 3, 4


# ------------------------------------------------------------------ is there group data?


def has_group_data(history: str | os.PathLike[str]) -> bool:
    """Whether the history holds anything the group kinds judge, from Parquet footers
    alone (cheap at any size): a row of ``commits`` or ``rebalances``, or a poll whose
    ``group`` is not null. A part without column statistics counts as having group reads:
    the pass then runs and finds what there is."""
    return (
        plan.has_rows(history, "commits")
        or plan.has_rows(history, "rebalances")
        or plan.has_values(history, "polls", "group")
    )


# ------------------------------------------------------------------------------ the pass


def _stream(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """Group reads (src 0) and committed commits (src 1) as one stream, with the columns the
    windows need: ``tp`` is the topic index and partition packed as the main pass packs
    them, so the shuffle carries no topic string."""
    tp = plan.tp_of(topics)
    common = ["`group` AS grp", "consumer_id", "assignment", f"{tp} AS tp", "offset"]
    reads = (
        tables["polls"]
        .where("`group` IS NOT NULL")
        .selectExpr(*common, "poll_seq", "poll_ts AS ts", "0 AS src")
    )
    commits = (
        tables["commits"]
        .where(f"outcome = {plan.sql_string(COMMIT_COMMITTED)}")
        .selectExpr(*common, "CAST(NULL AS BIGINT) AS poll_seq", "ts", "1 AS src")
    )
    return reads.unionByName(commits)


# The running highest read comes first: its window's keys are the shuffle's, and the two
# windows after it partition by supersets of them, so all three share one exchange.
_HIGHEST_READ = (
    "max(CASE WHEN src = 0 THEN offset END) OVER (PARTITION BY grp, tp "
    "ORDER BY ts, src, offset ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS m"
)
_PREVIOUS = (
    "lag(offset) OVER (PARTITION BY grp, tp, src, "
    "CASE WHEN src = 0 THEN consumer_id END, CASE WHEN src = 0 THEN assignment END "
    "ORDER BY poll_seq, ts, offset) AS prev"
)


# What a candidate keeps of its stream row.
_ROW = ("grp", "consumer_id", "assignment", "tp", "offset", "prev", "ts")


def candidates(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """Every row of the stream that is a finding or may be one, as (c, id, grp,
    consumer_id, assignment, tp, offset, prev, lo, hi):

    * _NONMONO: a read at or below the member's previous read in the assignment (prev);
    * _GAP: a read more than one above it: offsets lo..hi-1 were passed over;
    * _FIRST: the member's first read of the partition in the assignment (lo, hi later);
    * _REGRESSION: a commit below the group's previous commit of the partition (prev),
      in (ts, offset) order, so a tie in time is never a regression;
    * _EARLY: a commit at c above m + 1, m the group's highest read of the partition at
      or before its time (-1: none): offsets lo = m + 1 .. hi - 1 = c - 1 were not read.

    A commit can be both _REGRESSION and _EARLY, hence two rows; ``id`` tells candidates
    apart (two gaps of one member can be alike in every other column)."""
    w = _stream(tables, topics).selectExpr("*", _HIGHEST_READ).selectExpr("*", _PREVIOUS)
    # Commits of one (grp, tp) order by (ts, offset) in the window that gives prev: a
    # member's reads order by (poll_seq, ts, offset), commits have a null poll_seq.
    rows = w.selectExpr(
        *_ROW,
        f"""filter(array(
            CASE WHEN src = 0 AND prev IS NOT NULL AND offset <= prev THEN {_NONMONO} END,
            CASE WHEN src = 0 AND prev IS NOT NULL AND offset > prev + 1 THEN {_GAP} END,
            CASE WHEN src = 0 AND prev IS NULL THEN {_FIRST} END,
            CASE WHEN src = 1 AND prev IS NOT NULL AND offset < prev THEN {_REGRESSION} END,
            CASE WHEN src = 1 AND offset > coalesce(m, -1L) + 1 THEN {_EARLY} END
        ), x -> x IS NOT NULL) AS cs""",
        "coalesce(m, -1L) AS m",
    ).where("size(cs) > 0")
    return rows.selectExpr("explode(cs) AS c", *_ROW, "m").selectExpr(
        "c",
        "monotonically_increasing_id() AS id",
        "grp",
        "consumer_id",
        "assignment",
        "tp",
        "offset",
        "prev",
        "ts",
        f"CASE c WHEN {_GAP} THEN prev + 1 WHEN {_EARLY} THEN m + 1 END AS lo",
        f"CASE WHEN c IN ({_GAP}, {_EARLY}) THEN offset END AS hi",
    )


def _resume(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """Where each member's reads of a partition in an assignment must start: the resume
    offset of its 'assigned' row, 0 when it is null (nothing committed: the log start) or
    there is no row; of several rows, the lowest (the most the member may have skipped)."""
    return (
        tables["rebalances"]
        .where(f"event = {plan.sql_string(REBALANCE_ASSIGNED)}")
        .selectExpr(
            "`group` AS grp",
            "consumer_id",
            "assignment",
            f"{plan.tp_of(topics)} AS tp",
            "coalesce(resume_offset, 0L) AS r",
        )
        .groupBy("grp", "consumer_id", "assignment", "tp")
        .agg(F.expr("min(r) AS r"))
    )


_CANDIDATE = ("c", "id", "grp", "consumer_id", "assignment", "tp", "offset", "prev", "ts", "lo", "hi")


def _intervals(cands: DataFrame, resume: DataFrame) -> DataFrame:
    """The candidates that pass over offsets, with their bounds lo..hi-1: read gaps, early
    commits, and first reads above their resume offset (the rest of the first reads are
    sound and dropped here)."""
    passed = cands.where(f"c IN ({_GAP}, {_EARLY})")
    first = (
        cands.where(f"c = {_FIRST}")
        .drop("lo", "hi")
        .join(F.broadcast(resume), ["grp", "consumer_id", "assignment", "tp"], "left")
        .selectExpr(*_CANDIDATE[:-2], "coalesce(r, 0L) AS lo", "offset AS hi")
        .where("hi > lo")
    )
    return passed.unionByName(first)


def _held(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """Offsets that held a record, per packed partition: acknowledged offsets (acked true:
    sends whose *judged* outcome is acked, ``tables["sends"]``, so an aborted or in-doubt
    transaction's records are not acknowledged) and the final log's, but for records the
    read_committed drain was not given (``read_committed`` false: an aborted
    transaction's), which ``commit_beyond_read`` counts as holding nothing."""
    tp = plan.tp_of(topics)
    acked = (
        tables["sends"]
        .where(f"outcome = {plan.sql_string(OUTCOME_ACKED)} AND offset IS NOT NULL")
        .selectExpr(f"{tp} AS tp", "offset AS o", "true AS acked")
    )
    logged = (
        tables["final_log"]
        .where("read_committed IS NOT FALSE")
        .selectExpr(f"{tp} AS tp", "offset AS o", "false AS acked")
    )
    return acked.unionByName(logged)


def _counted(intervals: DataFrame, held: DataFrame) -> DataFrame:
    """(span, counted, first) per interval that passed over an offset that counts: its
    distinct acknowledged offsets in lo..hi-1 (any offset that held a record for an early
    commit) and the lowest. A range question answered by sorted search in each task
    (``spans.py``), the offsets and intervals shuffled together by partition: a join on
    the range would test every offset against every interval of its partition."""
    spans_ = intervals.selectExpr(
        "tp", "CAST(NULL AS BIGINT) AS o", f"c != {_EARLY} AS acked", "id AS span", "lo", "hi"
    )
    offsets = held.selectExpr(
        "tp", "o", "acked", "CAST(NULL AS BIGINT) AS span", "CAST(NULL AS BIGINT) AS lo",
        "CAST(NULL AS BIGINT) AS hi",
    )
    return offsets.unionByName(spans_).repartition("tp").mapInArrow(spans.count_batches, spans.OUTPUT_DDL)


def findings(
    tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int
) -> tuple[DataFrame, DataFrame]:
    """The group findings ranked: one row per finding among the first ``examples`` by
    offset of its partition and kind, carrying the kind's total count there. Returns the
    plan and the persisted candidates it reads, which the caller unpersists.

    A finding is a candidate with its count ``n`` and example offset ``at``: a
    nonmonotonic read or a regressed commit counts 1 at its own offset; a read gap or a
    first read above its resume offset counts its distinct acknowledged offsets in
    lo..hi-1 and is shown at the first of them (none: no finding); an early commit counts
    1, at its offset, if some offset in lo..hi-1 held a record."""
    cands = candidates(tables, topics).where("tp IS NOT NULL").persist()
    intervals = _intervals(cands, _resume(tables, topics))
    counted = _counted(intervals, _held(tables, topics))
    passed = (
        intervals.join(counted, intervals.id == counted.span)
        .selectExpr(
            *_CANDIDATE,
            f"CASE WHEN c = {_EARLY} THEN 1L ELSE counted END AS n",
            f"CASE WHEN c = {_EARLY} THEN offset ELSE first END AS at",
            "first",
        )
    )
    direct = cands.where(f"c IN ({_NONMONO}, {_REGRESSION})").selectExpr(
        *_CANDIDATE, "1L AS n", "offset AS at", "CAST(NULL AS BIGINT) AS first"
    )
    kind = (
        f"CASE WHEN c IN ({_GAP}, {_FIRST}) THEN {plan.sql_string(POLL_SKIP)} "
        f"WHEN c = {_NONMONO} THEN {plan.sql_string(NONMONOTONIC)} "
        f"WHEN c = {_REGRESSION} THEN {plan.sql_string(REGRESSION)} "
        f"ELSE {plan.sql_string(BEYOND)} END AS kind"
    )
    ranked = (
        direct.unionByName(passed)
        .selectExpr("*", kind)
        .selectExpr(
            "*",
            "row_number() OVER (PARTITION BY tp, kind ORDER BY at, id) AS rank",
            "sum(n) OVER (PARTITION BY tp, kind) AS total",
        )
        .where(f"rank <= {int(examples)}")
    )
    return ranked, cands


# ------------------------------------------------------------------------------ results


@dataclass(frozen=True)
class GroupExample:
    """One group finding as the verdict shows it: where (topic, partition, offset), who
    (the member's consumer id, in the detail too) and what happened."""

    kind: str
    topic: str
    partition: int
    offset: int
    consumer_id: str
    detail: str


@dataclass
class GroupFindings:
    """Counts per (topic, partition) and kind, and the first examples by offset."""

    counts: dict[tuple[str, int], dict[str, int]]
    examples: list[GroupExample]


def _decode(tp: int, topics: Sequence[str]) -> tuple[str, int]:
    return topics[tp >> plan.PARTITION_BITS], (tp & ((1 << plan.PARTITION_BITS) - 1)) - 1


def _member(row: Any) -> str:
    assignment = "" if row.assignment is None else f", assignment {row.assignment}"
    return f"{row.consumer_id} (group {row.grp}{assignment})"


def detail(row: Any) -> str:
    """The ``detail`` of a finding row: what the member did, in the definition's words."""
    who = _member(row)
    skipped = f"{row.n} acknowledged offset{'s' if row.n != 1 else ''} from {row.first}"
    if row.c == _GAP:
        return f"{who} read offset {row.offset} right after offset {row.prev}, skipping {skipped}"
    if row.c == _FIRST:
        return (
            f"{who} first read offset {row.offset}, above its resume offset {row.lo}, "
            f"skipping {skipped}"
        )
    if row.c == _NONMONO:
        return f"{who} read offset {row.offset} right after offset {row.prev}, not above it"
    if row.c == _REGRESSION:
        return (
            f"{row.consumer_id} committed offset {row.offset} for group {row.grp}, "
            f"below the offset {row.prev} committed before it"
        )
    read = "had read nothing" if row.lo == 0 else f"had read up to offset {row.lo - 1}"
    return (
        f"{row.consumer_id} committed offset {row.offset} for group {row.grp} when the group "
        f"{read} there; offset {row.first} held a record"
    )


def judge(tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int) -> GroupFindings:
    """Judge the group kinds of a history with group data (``tables`` holds sends,
    final_log, polls, commits and rebalances): one action, whose output is at most
    ``examples`` rows per partition and kind."""
    ranked, cands = findings(tables, topics, examples)
    try:
        rows = ranked.collect()
    finally:
        cands.unpersist()
    counts: dict[tuple[str, int], dict[str, int]] = {}
    shown: list[GroupExample] = []
    for row in sorted(rows, key=lambda r: (r.tp, r.kind, r.rank)):
        tp = _decode(row.tp, topics)
        counts.setdefault(tp, {})[row.kind] = int(row.total)
        shown.append(GroupExample(row.kind, *tp, int(row.at), row.consumer_id, detail(row)))
    return GroupFindings(counts, shown)
