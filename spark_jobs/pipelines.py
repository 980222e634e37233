"""The pipeline kinds: each input record a consume-transform-produce group read, against
the outputs it made of it and the offsets the group finally committed.

``pipeline_duplicate``, ``pipeline_lost`` and ``pipeline_orphan`` are defined in
docs/HISTORY.md. They need what no other pass reads: the source a pipeline output names
(schema 7's ``sends.source_*``) and each group's committed offsets after healing
(``final_offsets``).

Why it looks the way it does:

* It only runs when some send names a source (``has_pipeline_data``, from Parquet
  footers), so a history without pipelines costs nothing more.
* The outputs are few beside the final log, so everything is keyed on them: the final-log
  records that could be outputs are cut down by a broadcast semi-join on the output
  producers' hashes before they are aggregated per message; the covered input records
  are found by a broadcast join with the pipeline groups' final offsets (a row per group
  and partition); only the orphan test joins the outputs to the final log by position.
* The duplicates' facts (how many visible outputs a source has, which came first) are a
  window partitioned by (group, source), so no per-source table is joined back.
* Findings are ranked per (source partition, kind) by a window and only the first
  ``examples`` of each reach the driver, carrying the kind's count there: one action.

Public DataFrame API only (SQL text, windows, joins), so it runs through Spark Connect too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.history import OUTCOME_ACKED, PIPELINE_KINDS, TXN_ABORTED, TXN_COMMITTED, HistoryError
from spark_jobs import plan
from spark_jobs.transactions import TxnFindings, homed_findings

DUPLICATE, LOST, ORPHAN = PIPELINE_KINDS
_K = {k: i for i, k in enumerate(PIPELINE_KINDS)}


def has_pipeline_data(history: str | os.PathLike[str]) -> bool:
    """Whether some send names the input record it transforms, from Parquet footers alone."""
    return plan.has_values(history, "sends", "source_offset")


# ------------------------------------------------------------------------------ the pass


def _outputs(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """One row per pipeline output: its group and source (packed position, the source
    record's split id), its own key (P, S) and id, whether it was promised (judged
    outcome acked) and whether its transaction was aborted, and whether it is visible:
    not aborted, with a record on the final log readable under read_committed."""
    sends = plan.sends_as_sent(tables).where("source_offset IS NOT NULL")
    t_outcome = "CAST(NULL AS STRING)"
    if "transactions" in tables:
        outcomes = plan.transaction_outcomes(tables["transactions"]).select("transaction_id", "t_outcome")
        sends = sends.join(F.broadcast(outcomes), "transaction_id", "left")
        t_outcome = "t_outcome"
    src_tp = plan.tp_of(topics, topic="source_topic", partition="source_partition")
    outputs = sends.selectExpr(
        "source_group AS grp",
        f"{src_tp} AS src_tp",
        "source_offset AS o",
        f"{plan.pack(src_tp, 'source_offset')} AS src_pos",
        "source_message_id",
        "source_id_producer",
        "source_id_seq",
        "xxhash64(producer_id) AS P",
        "seq AS S",
        "producer_id",
        "message_id",
        "ack_ts",
        f"outcome = {plan.sql_string(OUTCOME_ACKED)} AND (transaction_id IS NULL "
        f"OR coalesce({t_outcome}, '') = {plan.sql_string(TXN_COMMITTED)}) AS promised",
        f"transaction_id IS NOT NULL AND coalesce({t_outcome}, '') = {plan.sql_string(TXN_ABORTED)} "
        "AS aborted",
    )
    readable = (
        tables["final_log"]
        .where("id_producer IS NOT NULL AND id_seq IS NOT NULL")
        .selectExpr("xxhash64(id_producer) AS P", "id_seq AS S", "read_committed IS NOT FALSE AS rc")
        .join(F.broadcast(outputs.select("P").distinct()), "P", "left_semi")
        .groupBy("P", "S")
        .agg(F.expr("bool_or(rc) AS readable"))
    )
    return outputs.join(readable, ["P", "S"], "left").selectExpr(
        "*", "NOT aborted AND coalesce(readable, false) AS visible"
    )


# The columns every finding row carries, whatever its kind.
_ROW = (
    "kind",
    "src_tp AS home",
    "src_pos AS at",
    "o",
    "weight",
    "grp",
    "P",
    "S",
    "message_id",
    "producer_id",
    "ack_ts",
    "k",
    "first_out",
    "holder",
    "held",
    "source_message_id",
    "committed",
)


def _visible_findings(
    outputs: DataFrame, tables: Mapping[str, DataFrame], topics: Sequence[str]
) -> DataFrame:
    """``pipeline_duplicate`` (the second visible output of a source, weighing the source's
    extra outputs) and ``pipeline_orphan`` (a visible output whose source position holds
    no record, one not readable under read_committed, or another message)."""
    held = tables["final_log"].selectExpr(
        f"{plan.pack(plan.tp_of(topics), 'offset')} AS src_pos",
        f"{plan.RECORD_ID} AS holder",
        "id_producer AS h_producer",
        "id_seq AS h_seq",
        "read_committed IS NOT FALSE AS h_rc",
    )
    source = "PARTITION BY grp, src_pos"
    visible = (
        outputs.where("visible")
        .join(held, "src_pos", "left")
        .selectExpr(
            "*",
            f"row_number() OVER ({source} ORDER BY producer_id, S) AS nth",
            f"count(1) OVER ({source}) AS k",
            f"first_value(message_id) OVER ({source} ORDER BY producer_id, S) AS first_out",
            "CASE WHEN h_rc IS NULL THEN 'nothing' WHEN NOT h_rc THEN 'unreadable' "
            "WHEN source_id_producer IS NULL OR h_producer IS NULL "
            "OR NOT (h_producer = source_id_producer AND h_seq <=> source_id_seq) THEN 'another' END AS held",
            "CAST(NULL AS BIGINT) AS committed",
        )
    )
    duplicates = visible.where("nth = 2").selectExpr(f"{_K[DUPLICATE]} AS kind", "k - 1 AS weight", "*")
    orphans = visible.where("held IS NOT NULL").selectExpr(f"{_K[ORPHAN]} AS kind", "1L AS weight", "*")
    return duplicates.selectExpr(*_ROW).unionByName(orphans.selectExpr(*_ROW))


def _lost(outputs: DataFrame, tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """``pipeline_lost``: input records readable under read_committed below a pipeline
    group's final offset with no visible or promised output of that group. A pipeline
    group is one some output names; other groups' final offsets are not its business."""
    groups = outputs.selectExpr("grp AS group").distinct()
    final = (
        tables["final_offsets"]
        .where("offset IS NOT NULL")
        .join(F.broadcast(groups), "group", "left_semi")
        .selectExpr("group AS grp", f"{plan.tp_of(topics)} AS src_tp", "offset AS committed")
    )
    covered = (
        tables["final_log"]
        .where("read_committed IS NOT FALSE")
        .selectExpr(
            f"{plan.tp_of(topics)} AS src_tp",
            "offset AS o",
            f"{plan.pack(plan.tp_of(topics), 'offset')} AS src_pos",
            f"{plan.RECORD_ID} AS message_id",
            "CASE WHEN id_seq IS NULL THEN NULL ELSE id_producer END AS producer_id",
        )
        .join(F.broadcast(final), "src_tp")
        .where("o < committed")
    )
    answered = outputs.where("visible OR promised").select("grp", "src_pos").distinct()
    return covered.join(answered, ["grp", "src_pos"], "left_anti").selectExpr(
        f"{_K[LOST]} AS kind",
        "src_tp AS home",
        "src_pos AS at",
        "o",
        "1L AS weight",
        "grp",
        "xxhash64(grp) AS P",
        "o AS S",
        "message_id",
        "producer_id",
        "CAST(NULL AS DOUBLE) AS ack_ts",
        "CAST(NULL AS BIGINT) AS k",
        "CAST(NULL AS STRING) AS first_out",
        "message_id AS holder",
        "CAST(NULL AS STRING) AS held",
        "CAST(NULL AS STRING) AS source_message_id",
        "committed",
    )


def findings(tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int) -> DataFrame:
    """The pipeline findings ranked: one row per finding among the first ``examples`` by
    source offset of its source partition and kind, with the kind's count there
    (``total``). ``tables`` holds sends (or ``plan.SENDS_AS_SENT``), final_log,
    final_offsets and, with transaction data, transactions."""
    outputs = _outputs(tables, topics)
    found = _visible_findings(outputs, tables, topics).unionByName(_lost(outputs, tables, topics))
    return found.selectExpr(
        "*",
        "row_number() OVER (PARTITION BY home, kind ORDER BY o, grp, P, S) AS rank",
        "sum(weight) OVER (PARTITION BY home, kind) AS total",
    ).where(f"rank <= {int(examples)}")


# ------------------------------------------------------------------------------ results


def detail(kind: str, row: Any) -> str:
    """The ``detail`` of a finding row, in the definition's words."""
    group = f"group {row.grp}"
    if kind == DUPLICATE:
        return (
            f"{group} turned the input record at offset {row.o} into {row.k} visible outputs; "
            f"the first is {row.first_out}"
        )
    if kind == LOST:
        return (
            f"{group} committed past it (final offset {row.committed}), yet none of its outputs "
            "is visible or acknowledged"
        )
    what = {
        "nothing": "no record",
        "unreadable": f"{row.holder}, not readable under read_committed",
        "another": f"{row.holder}, not {row.source_message_id}",
    }[row.held]
    return f"a visible output of {group}; at its source offset {row.o} the final log holds {what}"


def judge(tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int) -> TxnFindings:
    """Judge the pipeline kinds of a history with pipeline outputs: one action, whose
    output is at most ``examples`` rows per partition and kind. Each example sits at the
    source position and is counted in the source's partition."""
    rows = findings(tables, topics, examples).collect()
    if any(row.home is None for row in rows):
        raise HistoryError("a pipeline output names a source topic no send, poll or final-log record has")
    return homed_findings(rows, PIPELINE_KINDS, topics, detail)
