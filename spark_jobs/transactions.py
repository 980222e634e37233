"""The transaction kinds: what readers were given of each transaction, against its outcome.

``txn_aborted_read``, ``txn_uncommitted_read``, ``txn_lost`` and ``txn_partial`` are
defined in docs/HISTORY.md. They are judged apart from the main pass (``plan.py``): they
need what the main pass has no column for (the transaction a send names, a poll's time
and isolation level, whether the read_committed drain was given a record), and two of
them are about transactions, not messages.

Why it looks the way it does:

* It only runs when the history has transaction data (``has_transaction_data`` reads
  Parquet footers: a row of ``transactions``, or a send naming a transaction), so a
  history without transactions costs nothing more than before.
* A transaction's messages are the sends that name it, joined to the transactions by a
  broadcast (one row per transaction, few beside the sends), keeping only transactions
  that were committed or aborted: ``unknown`` ones are judged by none of the kinds.
* Their records are found by message key (P, S), as the main pass matches them. Polls
  and the final log are filtered in their scan by a broadcast semi-join on the producer
  hash of the transactional sends (a handful of producers), so the records of producers
  outside any transaction never leave their task.
* One shuffle, one sweep, one action. Messages and records are hash-partitioned by
  producer: a transaction is one producer's, so each task holds whole transactions and
  every record of their messages, and judges them with numpy through ``mapInArrow``
  (``txn_sweep.py``): what the records say of each message, what each transaction's
  messages say of it, the findings. Each task hands back its first few findings per
  (home partition, kind) with its own count there, and the driver merges the tasks'
  (``merged``): an exact top-N, since each task's first N hold the history's. An earlier
  plan (a per-message aggregation of structs, a join, a window per transaction, a
  ranking window) took about 2 s on 100k records, nearly all planning and scheduling.

Public PySpark API only (SQL text, joins, ``mapInArrow``), so it runs through Spark Connect too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.history import OUTCOME_ACKED, TXN_ABORTED, TXN_COMMITTED, kinds
from harness.history.kinds import Family
from spark_jobs import plan, txn_sweep

_LOG, _POLL = txn_sweep.LOG, txn_sweep.POLL  # the source of a record row


# ------------------------------------------------------------ is there transaction data?


def has_transaction_data(history: str | os.PathLike[str]) -> bool:
    """Whether the history holds anything the transaction kinds or the judged outcomes
    read, from Parquet footers alone (cheap at any size): a row of ``transactions``, or a
    send whose ``transaction_id`` is not null (a send naming a transaction that has no row
    is judged ``unknown`` all the same). A part without column statistics counts as
    having such sends."""
    return plan.has_rows(history, "transactions") or plan.has_values(history, "sends", "transaction_id")


# ------------------------------------------------------------------------------ the pass


def _messages(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """One row per message of a committed or aborted transaction: its key (P, S), its
    transaction (tid, committed, end_req), its send's partition (send_tp; aimless: sent to
    partition -1) and acknowledged position (ack_pos, offset part 0 when it was not
    acknowledged), and what its examples show of it. The sends' own outcomes: a message
    of a committed transaction is judged by its own anyway."""
    tp = plan.tp_of(topics)
    judged = tables[plan.OUTCOMES].where(
        f"t_outcome IN ({plan.sql_string(TXN_COMMITTED)}, {plan.sql_string(TXN_ABORTED)})"
    )
    acked_offset = f"CASE WHEN outcome = {plan.sql_string(OUTCOME_ACKED)} THEN offset END"
    return (
        plan.sends_as_sent(tables)
        .where("transaction_id IS NOT NULL")
        .join(F.broadcast(judged), "transaction_id")
        .selectExpr(
            "xxhash64(producer_id) AS P",
            "seq AS S",
            "transaction_id AS tid",
            f"t_outcome = {plan.sql_string(TXN_COMMITTED)} AS committed",
            "end_req",
            "message_id",
            "producer_id",
            "partition < 0 AS aimless",
            f"{tp} AS send_tp",
            f"{plan.pack(tp, acked_offset)} AS ack_pos",
            "ack_ts",
        )
    )


def _records(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """Final-log (src _LOG) and polled (src _POLL) records of the producers that sent in a
    transaction, by message key. A record whose id names no (producer, seq) matches no
    send and is left out at once."""
    tp = plan.tp_of(topics)
    named = "id_producer IS NOT NULL AND id_seq IS NOT NULL"
    key = ("xxhash64(id_producer) AS P", "id_seq AS S", f"{plan.pack(tp, 'offset')} AS pos")
    log = (
        tables["final_log"]
        .where(named)
        .selectExpr(
            *key,
            f"{_LOG} AS src",
            "read_committed AS rc",
            "CAST(NULL AS DOUBLE) AS ts",
            "CAST(NULL AS STRING) AS who",
            "CAST(NULL AS STRING) AS iso",
        )
    )
    polls = (
        tables["polls"]
        .where(named)
        .selectExpr(
            *key,
            f"{_POLL} AS src",
            "CAST(NULL AS BOOLEAN) AS rc",
            "poll_ts AS ts",
            "consumer_id AS who",
            "isolation AS iso",
        )
    )
    producers = (
        plan.sends_as_sent(tables)
        .where("transaction_id IS NOT NULL")
        .selectExpr("xxhash64(producer_id) AS P")
        .distinct()
    )
    return log.unionByName(polls).join(F.broadcast(producers), "P", "left_semi")


def _stream(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """The messages of committed and aborted transactions and their producers' records,
    as ``txn_sweep.INPUT`` rows."""
    schema = txn_sweep.INPUT
    messages = plan.shaped(
        _messages(tables, topics),
        schema,
        src=str(txn_sweep.MESSAGE),
        P="P",
        S="S",
        tid="tid",
        committed="committed",
        end_req="end_req",
        producer_id="producer_id",
        aimless="aimless",
        send_tp="send_tp",
        ack_pos="ack_pos",
        ack_ts="ack_ts",
    )
    records = plan.shaped(
        _records(tables, topics),
        schema,
        src="src",
        P="P",
        S="S",
        pos="pos",
        rc="rc",
        ts="ts",
        who="who",
        iso="iso",
    )
    return messages.unionByName(records)


def findings(
    tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int, partitions: int
) -> DataFrame:
    """Each task's first ``examples`` transaction findings per (home partition, kind) by
    offset (nulls last), with the task's count there (``txn_sweep.OUTPUT``; ``merged``
    makes them the history's). ``tables`` holds sends (or ``plan.SENDS_AS_SENT``),
    final_log, polls and ``plan.OUTCOMES``. Shuffled by producer: a transaction is one
    producer's, so each task holds whole transactions and all their records."""
    return (
        _stream(tables, topics)
        .repartition(partitions, "P")
        .mapInArrow(txn_sweep.judge_batches(examples), txn_sweep.OUTPUT_DDL)
    )


def merged(rows: Sequence[Any], examples: int) -> list[SimpleNamespace]:
    """The tasks' findings as the history's: per (home, kind) the sum of the tasks' counts
    and the first ``examples`` of their examples by (offset, nulls last; P; S), ranked."""
    by_place: dict[tuple[int, int], list[Any]] = {}
    for row in rows:
        by_place.setdefault((row.home, row.kind), []).append(row)
    out: list[SimpleNamespace] = []
    for place in by_place.values():
        total = sum({row.task: row.total for row in place}.values())
        first = sorted(place, key=lambda r: (r.o is None, r.o or 0, r.P, r.S))[:examples]
        for rank, row in enumerate(first, start=1):
            out.append(SimpleNamespace(**{**row.asDict(), "rank": rank, "total": total}))
    return out


# ------------------------------------------------------------------------------ results


@dataclass(frozen=True)
class TxnExample:
    """One transaction finding as the verdict shows it: the partition it is counted in
    (``home``), the message, and where it happened (topic, partition, offset)."""

    kind: str
    home: tuple[str, int]
    message_id: str | None
    producer_id: str | None
    topic: str
    partition: int
    offset: int | None
    ack_ts: float | None
    detail: str


@dataclass
class TxnFindings:
    """Counts per (topic, partition) and kind, and the first examples by offset."""

    counts: dict[tuple[str, int], dict[str, int]]
    examples: list[TxnExample]


def judge(
    tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int, partitions: int
) -> TxnFindings:
    """Judge the transaction kinds of a history with transaction data: one action, whose
    output is at most ``examples`` rows per task, partition and kind."""
    rows = merged(findings(tables, topics, examples, partitions).collect(), examples)
    return homed_findings(rows, Family.TRANSACTIONS, topics)


def homed_findings(rows: Sequence[Any], family: Family, topics: Sequence[str]) -> TxnFindings:
    """Counts and examples from ranked finding rows (``home``, ``kind`` as ``family``'s
    code, ``rank``, ``total``, the packed position ``at`` and its offset ``o``, and the
    example's message), each example told in the registry's words for its kind."""
    counts: dict[tuple[str, int], dict[str, int]] = {}
    shown: list[TxnExample] = []
    for row in sorted(rows, key=lambda r: (r.home, r.kind, r.rank)):
        kind = kinds.of_code(family, row.kind)
        home = plan.partition_of(row.home, topics)
        counts.setdefault(home, {})[kind] = int(row.total)
        topic, partition = plan.partition_of(row.at >> plan.OFFSET_BITS, topics)
        shown.append(
            TxnExample(
                kind=kind,
                home=home,
                message_id=row.message_id,
                producer_id=row.producer_id,
                topic=topic,
                partition=partition,
                offset=None if row.o is None else int(row.o),
                ack_ts=row.ack_ts,
                detail=kinds.detail(kind, row.asDict() if hasattr(row, "asDict") else vars(row)),
            )
        )
    return TxnFindings(counts, shown)
