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
  outside any transaction never leave their task; the rest are aggregated per message
  into the few facts the kinds need (first final-log copy, readable under read_committed,
  first copy the read_committed drain was given, first poll, earliest read_committed
  poll), partially before the shuffle. Only then are they joined to the messages: one
  shuffle of records, one of messages. The facts name the consumers behind the examples,
  so the aggregation is sort-based rather than hashed; it sorts the transactional
  producers' records only, and spares a second look-up job for the names.
* A transaction's facts (how many messages, how many readable, its first message and its
  first unreadable one) are a window partitioned by transaction over the message rows,
  so each message row knows whether it is a finding or an example; no per-transaction
  table is joined back.
* Findings are ranked per (home partition, kind) by a window, and only the first
  ``examples`` of each, carrying the kind's count there, reach the driver: one action,
  whose output is small whatever the history holds. No message row is collected.

Public DataFrame API only (SQL text, windows, joins), so it runs through Spark Connect too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.history import OUTCOME_ACKED, READ_COMMITTED, TXN_ABORTED, TXN_COMMITTED, TXN_KINDS
from spark_jobs import plan

ABORTED_READ, UNCOMMITTED_READ, LOST, PARTIAL = TXN_KINDS
_LOG, _POLL = 0, 1  # the source of a record row


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
    judged = plan.transaction_outcomes(tables["transactions"]).where(
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


# Per message, what its records say. ``readable``: a copy readable under read_committed
# (read_committed true or null); ``rc_first``: the first copy the read_committed drain was
# given (true only: a null says no such drain was made); ``first_poll``: the first polled
# position, with a consumer that read it there; ``rc_poll``: the earliest poll by a
# read_committed consumer (if any such poll is early, this one is).
_FACTS = (
    f"min(CASE WHEN src = {_LOG} THEN pos END) AS log_first",
    f"bool_or(src = {_LOG} AND rc IS NOT FALSE) AS readable",
    f"min(CASE WHEN src = {_LOG} AND rc THEN pos END) AS rc_first",
    f"min(CASE WHEN src = {_POLL} THEN named_struct('pos', pos, 'who', who, 'iso', iso) END) AS first_poll",
    f"min(CASE WHEN src = {_POLL} AND iso = {plan.sql_string(READ_COMMITTED)} "
    "THEN named_struct('ts', ts, 'pos', pos, 'who', who) END) AS rc_poll",
)

# The message's home (docs/HISTORY.md): the partition its send names, unless -1; else its
# first copy's on the final log; else its first polled position's; else (topic, -1).
_HOME = (
    "CASE WHEN NOT aimless THEN send_tp ELSE coalesce("
    f"CAST(shiftright(log_first, {plan.OFFSET_BITS}) AS INT), "
    f"CAST(shiftright(first_poll.pos, {plan.OFFSET_BITS}) AS INT), send_tp) END AS home"
)

# A transaction's facts, on each of its message rows.
_TXN = "OVER (PARTITION BY tid)"
_PER_TXN = (
    f"count(1) {_TXN} AS n",
    f"count(CASE WHEN readable THEN 1 END) {_TXN} AS k",
    f"min(named_struct('s', S, 'p', P, 'home', home)) {_TXN} AS first",
    f"min(CASE WHEN NOT coalesce(readable, false) THEN named_struct('s', S, 'p', P) END) {_TXN} AS unread",
)

# The findings of a message row, as (kind, home, at): at is the example's packed position.
# A transaction's example is at its message's acknowledged offset, else in the message's
# home with no offset.
_K = {k: i for i, k in enumerate(TXN_KINDS)}
_MASK = (1 << plan.OFFSET_BITS) - 1
_ACKED_AT = (
    f"CASE WHEN (ack_pos & {_MASK}) != 0 THEN ack_pos "
    f"ELSE shiftleft(CAST(home AS BIGINT), {plan.OFFSET_BITS}) END"
)
_FOUND = f"""filter(array(
    CASE WHEN NOT committed AND (first_poll IS NOT NULL OR rc_first IS NOT NULL)
        THEN named_struct('kind', {_K[ABORTED_READ]}, 'home', home,
                          'at', coalesce(first_poll.pos, rc_first)) END,
    CASE WHEN committed AND rc_poll.ts < end_req
        THEN named_struct('kind', {_K[UNCOMMITTED_READ]}, 'home', home, 'at', rc_poll.pos) END,
    CASE WHEN committed AND k = 0 AND S = first.s AND P = first.p
        THEN named_struct('kind', {_K[LOST]}, 'home', home, 'at', {_ACKED_AT}) END,
    CASE WHEN committed AND k > 0 AND k < n AND S = unread.s AND P = unread.p
        THEN named_struct('kind', {_K[PARTIAL]}, 'home', first.home, 'at', {_ACKED_AT}) END
), x -> x IS NOT NULL) AS found"""

# What a ranked finding keeps for its example and detail.
_SHOWN = (
    "P",
    "S",
    "tid",
    "message_id",
    "producer_id",
    "ack_ts",
    "end_req",
    "n",
    "k",
    "first_poll.who AS reader",
    "first_poll.iso AS reader_iso",
    "rc_first IS NOT NULL AS drain_gave",
    "rc_poll.who AS early_reader",
    "rc_poll.ts AS early_ts",
)


def findings(tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int) -> DataFrame:
    """The transaction findings ranked: one row per finding among the first ``examples``
    by offset (nulls last) of its home partition and kind, with the kind's count there
    (``total``). ``tables`` holds sends (or ``plan.SENDS_AS_SENT``), final_log, polls and
    transactions."""
    facts = _records(tables, topics).groupBy("P", "S").agg(*(F.expr(f) for f in _FACTS))
    messages = _messages(tables, topics).join(facts, ["P", "S"], "left").selectExpr("*", _HOME)
    found = (
        messages.selectExpr("*", *_PER_TXN)
        .selectExpr(*_SHOWN, _FOUND)
        .where("size(found) > 0")
        .selectExpr("*", "explode(found) AS f")
        .selectExpr(
            "*",
            "f.kind AS kind",
            "f.home AS home",
            "f.at AS at",
            f"CASE WHEN (f.at & {_MASK}) = 0 THEN NULL ELSE (f.at & {_MASK}) - 1 END AS o",
        )
        .drop("found", "f")
    )
    return found.selectExpr(
        "*",
        "row_number() OVER (PARTITION BY home, kind ORDER BY o ASC NULLS LAST, P, S) AS rank",
        "count(1) OVER (PARTITION BY home, kind) AS total",
    ).where(f"rank <= {int(examples)}")


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


def _messages_word(n: int) -> str:
    return f"{n} message{'s' if n != 1 else ''}"


def detail(kind: str, row: Any) -> str:
    """The ``detail`` of a finding row, in the definition's words."""
    txn = f"transaction {row.tid}"
    if kind == ABORTED_READ:
        if row.reader is None:
            return f"{txn} was aborted, yet the final log's read_committed drain was given it"
        iso = row.reader_iso or "isolation not recorded"
        also = "; the final log's read_committed drain was given it too" if row.drain_gave else ""
        return f"{txn} was aborted, yet consumer {row.reader} ({iso}) polled it{also}"
    if kind == UNCOMMITTED_READ:
        before = row.end_req - row.early_ts
        return (
            f"consumer {row.early_reader} ({READ_COMMITTED}) polled it {before:.3f} s before "
            f"{txn} asked to commit"
        )
    if kind == LOST:
        return (
            f"{txn} was committed, yet none of its {_messages_word(row.n)} is readable "
            "under read_committed on the final log"
        )
    return (
        f"{txn} was committed, yet only {row.k} of its {_messages_word(row.n)} "
        f"{'is' if row.k == 1 else 'are'} readable under read_committed on the final log"
    )


def judge(tables: Mapping[str, DataFrame], topics: Sequence[str], examples: int) -> TxnFindings:
    """Judge the transaction kinds of a history with transaction data: one action, whose
    output is at most ``examples`` rows per partition and kind."""
    return homed_findings(findings(tables, topics, examples).collect(), TXN_KINDS, topics, detail)


def homed_findings(rows: Sequence[Any], kinds: Sequence[str], topics: Sequence[str],
                   explain: Callable[[str, Any], str]) -> TxnFindings:
    """Counts and examples from ranked finding rows (``home``, ``kind`` as an index into
    ``kinds``, ``rank``, ``total``, the packed position ``at`` and its offset ``o``, and
    the example's message), each example told in ``explain``'s words."""
    counts: dict[tuple[str, int], dict[str, int]] = {}
    shown: list[TxnExample] = []
    for row in sorted(rows, key=lambda r: (r.home, r.kind, r.rank)):
        kind = kinds[row.kind]
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
                detail=explain(kind, row),
            )
        )
    return TxnFindings(counts, shown)
