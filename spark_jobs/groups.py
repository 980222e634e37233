"""The consumer-group kinds: how a group's members read and committed each partition.

``poll_skip``, ``nonmonotonic_poll``, ``commit_regression`` and ``commit_beyond_read`` are
defined in docs/HISTORY.md. They are judged apart from the main pass (``plan.py``), which
keys everything by message: these kinds are about positions, in the order one member
read them or the group committed them, and every fact they need is a partition's.

Why it looks the way it does:

* It only runs when the history has group data (``has_group_data`` reads Parquet footers:
  row counts of ``commits`` and ``rebalances``, null counts of ``polls.group``), so a
  history without groups costs nothing more than before.
* One shuffle, one sweep, one action. Group reads, committed commits, 'assigned' rebalance
  rows and the offsets that held a record become one narrow stream, hash-partitioned by
  the packed partition ``tp`` (no topic string travels), and each task judges its whole
  partitions with numpy through ``mapInArrow`` (``group_sweep.py``), handing back only
  the ranked findings: per partition and kind, the first few and the kind's count there.
  An earlier plan did it with three windows over string keys, a range question answered
  in a second shuffle and a ranking window: 14 Spark jobs and about 3 s for a history of
  100k sends, against a judge's budget of one second for a typical scenario.
* Whether a read gap or an early commit passes over a record is a range question
  (acknowledged offsets, final-log offsets strictly inside an interval), answered by
  sorted search (``spans.py``), not by comparing every offset with every interval.

Public PySpark API only (SQL text, ``mapInArrow``), so it runs through Spark Connect too.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame

from harness.history import COMMIT_COMMITTED, OUTCOME_ACKED, REBALANCE_ASSIGNED, kinds
from spark_jobs import group_sweep, plan

# ------------------------------------------------------------------ is there group data?

TABLES = ("commits", "rebalances")
"""The history's tables only the group kinds read (with sends, final_log and polls)."""


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


def _stream(
    tables: Mapping[str, DataFrame], topics: Sequence[str], group_topics: Collection[str] | None = None
) -> DataFrame:
    """Everything the group kinds read, as ``group_sweep.INPUT`` rows: ``tp`` is the topic
    index and partition packed as the main pass packs them, null for a topic the history
    does not know (dropped: no finding can be shown there). With ``group_topics`` (the
    topics a group read or committed in: the overview's), the acknowledged
    and logged offsets of other topics are left out in the scan: every finding is about
    a group's reads or commits of a partition, so no other topic's offsets are asked about."""
    of_group_topics = plan.topic_in(group_topics)
    schema, tp = group_sweep.INPUT, plan.tp_of(topics)
    member = {"grp": "`group`", "consumer_id": "consumer_id", "assignment": "assignment", "tp": tp}
    reads = plan.shaped(
        tables["polls"].where("`group` IS NOT NULL"),
        schema,
        src=str(group_sweep.READ),
        **member,
        offset="offset",
        poll_seq="poll_seq",
        ts="poll_ts",
    )
    commits = plan.shaped(
        tables["commits"].where(f"outcome = {plan.sql_string(COMMIT_COMMITTED)}"),
        schema,
        src=str(group_sweep.COMMIT),
        **member,
        offset="offset",
        ts="ts",
    )
    assigned = plan.shaped(
        tables["rebalances"].where(f"event = {plan.sql_string(REBALANCE_ASSIGNED)}"),
        schema,
        src=str(group_sweep.ASSIGNED),
        **member,
        offset="coalesce(resume_offset, 0L)",
    )
    # Offsets that held a record: acknowledged ones (the sends' *judged* outcome,
    # ``tables["sends"]``, so an aborted or in-doubt transaction's are not) and the final
    # log's, but for records the read_committed drain was not given (an aborted
    # transaction's), which commit_beyond_read counts as holding nothing.
    acked = plan.shaped(
        tables["sends"].where(
            f"outcome = {plan.sql_string(OUTCOME_ACKED)} AND offset IS NOT NULL AND {of_group_topics}"
        ),
        schema,
        src=str(group_sweep.ACKED),
        tp=tp,
        offset="offset",
    )
    logged = plan.shaped(
        tables["final_log"].where(f"read_committed IS NOT FALSE AND {of_group_topics}"),
        schema,
        src=str(group_sweep.LOGGED),
        tp=tp,
        offset="offset",
    )
    return reduce(DataFrame.unionByName, (reads, commits, assigned, acked, logged)).where("tp IS NOT NULL")


def findings(
    tables: Mapping[str, DataFrame],
    topics: Sequence[str],
    examples: int,
    partitions: int,
    group_topics: Collection[str] | None = None,
) -> DataFrame:
    """The group findings ranked (``group_sweep.OUTPUT``): one row per finding among the
    first ``examples`` by offset of its partition and kind, carrying the kind's total
    count there. A nonmonotonic read or a regressed commit counts 1 at its own offset; a
    read gap or a first read above its resume offset counts its distinct acknowledged
    offsets in lo..hi-1 and is shown at the first of them (none: no finding); an early
    commit counts 1, at its offset, if some offset in lo..hi-1 held a record."""
    return (
        _stream(tables, topics, group_topics)
        .repartition(partitions, "tp")
        .mapInArrow(group_sweep.judge_batches(examples), group_sweep.OUTPUT_DDL)
    )


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


def detail(row: Any) -> str:
    """The ``detail`` of a finding row, in the registry's words for its kind."""
    return kinds.detail(row.kind, {**row.asDict(), "first_read": row.c == group_sweep.FIRST})


def judge(
    tables: Mapping[str, DataFrame],
    topics: Sequence[str],
    examples: int,
    partitions: int,
    group_topics: Collection[str] | None = None,
) -> GroupFindings:
    """Judge the group kinds of a history with group data (``tables`` holds sends,
    final_log, polls, commits and rebalances): one action, whose output is at most
    ``examples`` rows per partition and kind."""
    rows = findings(tables, topics, examples, partitions, group_topics).collect()
    counts: dict[tuple[str, int], dict[str, int]] = {}
    shown: list[GroupExample] = []
    for row in sorted(rows, key=lambda r: (r.tp, r.kind, r.rank)):
        tp = _decode(row.tp, topics)
        counts.setdefault(tp, {})[row.kind] = int(row.total)
        shown.append(GroupExample(row.kind, *tp, int(row.at), row.consumer_id, detail(row)))
    return GroupFindings(counts, shown)
