"""The Spark plan of the reconciliation: one shuffle, one vectorised Arrow sweep.

Why it looks the way it does (10M sends with their polls and final log must be judged in
seconds on two cores):

* One shuffle. Sends, final log and polls become narrow fixed-width rows keyed by message:
  (P, S) = (64-bit hash of the producer id, seq), which the history stores split (a
  send's producer_id and seq, a record's id_producer and id_seq). They are
  hash-partitioned once by (P, S >> BLOCK_BITS), so a block of consecutive seqs of one
  producer lands in one task. Positions are packed into one long each.
* The reduce side is a vectorised sweep over Arrow batches (``judged``; ``sweep.py``),
  through ``mapInArrow``: public API only, so it runs in a classic session and under
  Spark Connect alike. Each chunk of a task's rows is sorted once by message, so a
  message's rows are adjacent (is it on the final log where it was acknowledged or
  polled? how many log positions hold it?) and a block's messages come in seq order, so
  reordering is judged against the previous message in the same final-log partition.
  In Spark SQL the same needed two hash aggregations and a sorted window: about 30
  CPU-seconds at 10M sends on two cores. Pairs that straddle two blocks are the only ones a task
  cannot see, so the first and last message of every block leave the pass and the
  driver compares them afterwards (``boundary.py``): two rows per block and partition.
* Only messages that are anomalous, or may be (a block's first or last message, an
  acknowledged offset that the final log does not give to the message), leave the sweep,
  and not even they leave the task: each task summarises them (``summarised``; counts per
  partition and kind, its first few examples, the block ends, unexpected positions) so
  the pass is one Spark job that hands the driver a few thousand rows. An earlier version
  summarised in Spark SQL (windows and aggregations over the pass's output): five more
  jobs whose planning and scheduling cost more than the data did.
* Expressions are SQL text (one round trip each) and each table is read once per
  reconciliation: building the plan of a small history Column by Column took longer
  than running it.
* Send outcomes per time bucket, the final log's offset ranges and the topics come from
  one aggregation over the three tables (``overview``) before the pass.
* Every kind reads a send's judged outcome (docs/HISTORY.md: a send of a transaction that
  was not committed is in doubt, whatever its own outcome). Only a history with
  transaction data pays for it, with a broadcast join of the sends with the transactions'
  outcomes (``judged_sends``), computed once per judgement and held in Spark's cache for
  its passes; the overview keeps counting the sends' own outcomes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from functools import reduce

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from harness.history import (
    ANOMALY_KINDS,
    OUTCOME_UNKNOWN,
    SCHEMAS,
    SENDS_SCHEMA,
    TXN_COMMITTED,
    part_files,
)
from spark_jobs import sweep
from spark_jobs.sweep import ACKED, FAILED, LOG, POLL, SEND, UNKNOWN

BLOCK_BITS = sweep.BLOCK_BITS  # 16384 consecutive seqs of one producer per block
UNDECODABLE = -1  # seq of a record whose id is not <producer>-<seq>; keyed by a hash of the id
NO_ID = "\u0000"  # hashed with the position: records without an id match nothing
KIND_INDEX = {k: i for i, k in enumerate(ANOMALY_KINDS)}

# Packed positions: pos = tp << 40 | (offset + 1), tp = topic_index << 16 | (partition + 1).
# Offset part 0 means "no valid offset" and never equals a final-log position.
OFFSET_BITS = sweep.OFFSET_BITS
PARTITION_BITS = sweep.PARTITION_BITS
MAX_TOPICS = 1 << (63 - OFFSET_BITS - PARTITION_BITS)
MAX_PARTITION = (1 << PARTITION_BITS) - 2
MAX_OFFSET = (1 << OFFSET_BITS) - 2
OFFSET_MASK = (1 << OFFSET_BITS) - 1


# ----------------------------------------------------------------------------- reading


_SPARK_TYPES = {
    "string": T.StringType(),
    "int64": T.LongType(),
    "int32": T.IntegerType(),
    "double": T.DoubleType(),
    "bool": T.BooleanType(),
}


def spark_schema(table: str) -> T.StructType:
    """The Spark twin of a history table's schema. Giving Spark the schema skips footer
    sampling; selecting columns afterwards prunes the Parquet read to what is used."""
    return T.StructType(
        [T.StructField(f.name, _SPARK_TYPES[str(f.type)], f.nullable) for f in SCHEMAS[table]]
    )


def shaped(df: DataFrame, schema: pa.Schema, **given: str) -> DataFrame:
    """``df`` as rows of ``schema`` (an Arrow sweep's input): each column the SQL
    expression ``given`` for it, or a typed null. Streams of unlike facts become one union
    this way, each naming only the columns it has."""
    unknown = set(given) - set(schema.names)
    if unknown:
        raise ValueError(f"not columns of the sweep's input: {sorted(unknown)}")
    return df.selectExpr(
        *(
            f"CAST({given.get(f.name, 'NULL')} AS {_SPARK_TYPES[str(f.type)].simpleString()}) AS `{f.name}`"
            for f in schema
        )
    )


def read(spark: SparkSession, history: str, table: str) -> DataFrame:
    return spark.read.schema(spark_schema(table)).parquet(f"{history.rstrip('/')}/{table}")


TABLES = ("sends", "final_log", "polls")
SENDS_AS_SENT = "sends_as_sent"
"""The key under which ``tables`` keeps the sends with their own outcomes."""
OUTCOMES = "transaction_outcomes"
"""The key under which ``tables`` keeps each transaction's judged outcome, held in the
session's cache for the judgement (``transaction_outcomes``)."""


def tables(spark: SparkSession, history: str, transactions: bool = False) -> dict[str, DataFrame]:
    """The three tables the job reads, each read once per reconciliation and shared by
    its steps: every ``spark.read`` lists the table's files and resolves the relation
    again, which on a small history is a good part of a step's time.

    ``sends`` carries each send's *judged* outcome (docs/HISTORY.md), the one every
    anomaly kind reads; ``SENDS_AS_SENT`` the sends as the producers saw them, which the
    overview counts (totals, availability) and the example look-up reads. They are one
    and the same DataFrame unless ``transactions`` (the history has transaction data,
    ``transactions.has_transaction_data``): then ``OUTCOMES`` holds the transactions'
    outcomes and ``sends`` is ``judged_sends`` of them, so a history without transactions
    pays no join.

    The outcomes are marked for Spark's cache (public API, classic and Spark Connect
    alike): every pass reads them, and a broadcast is reused only within one query, so
    uncached each pass aggregated the transactions again (two jobs, and about a tenth of
    a 1M-send judgement). ``release`` drops them when the judgement ends."""
    read_ = {t: read(spark, history, t) for t in TABLES}
    out = {**read_, SENDS_AS_SENT: read_["sends"]}
    if transactions:
        out[OUTCOMES] = transaction_outcomes(read(spark, history, "transactions")).cache()
        out["sends"] = judged_sends(read_["sends"], out[OUTCOMES])
    return out


def release(tables: Mapping[str, DataFrame]) -> None:
    """Drop what ``tables`` put in the session's cache: a session judges many histories
    (the judge's warm one judges every run), and each would otherwise keep its outcomes."""
    if OUTCOMES in tables:
        tables[OUTCOMES].unpersist()


def sends_as_sent(tables: Mapping[str, DataFrame]) -> DataFrame:
    return tables.get(SENDS_AS_SENT, tables["sends"])


def transaction_outcomes(transactions: DataFrame) -> DataFrame:
    """(transaction_id, t_outcome, end_req): one row per transaction id. Ids are unique
    in a run; an id on several rows is judged ``unknown`` rather than allowed to
    multiply the sends that name it in a join."""
    return transactions.groupBy("transaction_id").agg(
        F.expr(
            f"CASE WHEN count(1) = 1 THEN min(outcome) ELSE {sql_string(OUTCOME_UNKNOWN)} END AS t_outcome"
        ),
        F.expr("min(end_requested_ts) AS end_req"),
    )


def judged_sends(sends: DataFrame, outcomes: DataFrame) -> DataFrame:
    """``sends`` with each send's judged outcome in ``outcome``: ``unknown`` for a send
    naming a transaction whose outcome is not committed, or that has no row; its own
    outcome otherwise. ``outcomes`` are ``transaction_outcomes``. A broadcast join:
    transactions are few (one row per transaction, not per message), and sends outside
    any transaction (a null id) match nothing and pass through the probe at the cost of
    a null test."""
    judged = (
        f"CASE WHEN transaction_id IS NOT NULL AND coalesce(t_outcome, '') != {sql_string(TXN_COMMITTED)} "
        f"THEN {sql_string(OUTCOME_UNKNOWN)} ELSE outcome END AS outcome"
    )
    return sends.join(
        F.broadcast(outcomes.select("transaction_id", "t_outcome")), "transaction_id", "left"
    ).selectExpr(*(judged if f.name == "outcome" else f"`{f.name}`" for f in SENDS_SCHEMA))


# ----------------------------------------------------------------- Parquet footers


def _filesystem(history: str) -> pafs.FileSystem:
    if "://" in history:
        fs, _ = pafs.FileSystem.from_uri(history)
        return fs
    return pafs.LocalFileSystem()


def has_rows(history: str | os.PathLike[str], table: str) -> bool:
    """Whether a table of the history has a row, from its Parquet footers alone."""
    text = os.fspath(history)
    fs = _filesystem(text)
    return any(pq.ParquetFile(part, filesystem=fs).metadata.num_rows for part in part_files(text, table))


def has_values(history: str | os.PathLike[str], table: str, column: str) -> bool:
    """Whether some row of a table has ``column`` not null, from the row groups' null
    counts in the Parquet footers (cheap at any size). A row group without statistics
    counts as having values: the caller then runs its pass and finds what there is."""
    text = os.fspath(history)
    fs = _filesystem(text)
    for part in part_files(text, table):
        meta = pq.ParquetFile(part, filesystem=fs).metadata
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        if column not in names:
            continue
        index = names.index(column)
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            stats = rg.column(index).statistics
            if rg.num_rows and (stats is None or not stats.has_null_count or stats.null_count < rg.num_rows):
                return True
    return False


# ------------------------------------------------------------------------ positions
#
# Expressions are SQL text, not Column trees: a classic session builds a Column with one
# Py4J round trip per operator and literal, and the plan of a small history took longer
# to build that way (about 3,700 round trips) than to run. A string is one round trip,
# parsed in the JVM, and is sent as it is to a Spark Connect server.


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslash escapes, the parser's default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def topic_index(topics: Sequence[str], topic: str = "topic") -> str:
    """The column ``topic`` -> its index in ``topics``, as a CASE (a handful of topics per
    run); null for a topic not among them."""
    if not topics:
        return "0"
    cases = " ".join(f"WHEN {sql_string(t)} THEN {i}" for i, t in enumerate(topics))
    return f"CASE {topic} {cases} END"


def tp_of(topics: Sequence[str], topic: str = "topic", partition: str = "partition") -> str:
    """The packed topic-partition of the columns ``topic`` and ``partition``."""
    return f"CAST(({topic_index(topics, topic)}) * {1 << PARTITION_BITS} + {partition} + 1 AS INT)"


def pack(tp: str, offset: str) -> str:
    """The packed position of (tp, offset); offset part 0 where the offset is not valid."""
    valid = f"({offset}) IS NOT NULL AND ({offset}) >= 0 AND ({offset}) <= {MAX_OFFSET}"
    return f"CAST({tp} AS BIGINT) * {1 << OFFSET_BITS} + CASE WHEN {valid} THEN ({offset}) + 1 ELSE 0L END"


# --------------------------------------------------------------------- message keys


def message_key(pos: str) -> tuple[str, str]:
    """The (P, S) key of a polled or final-log record, from the id_producer / id_seq split
    the history writer stored beside its message_id (docs/HISTORY.md).

    An id that names ``<producer>-<seq>`` gets the key its send row has; any other id is
    kept whole in id_producer with no seq, so (hash of the id, UNDECODABLE) can only match
    itself; a record without an id is keyed by its position as well (hashed with NO_ID,
    the character 0), so it matches nothing. message_id itself is never read."""
    key_p = f"CASE WHEN id_producer IS NULL THEN xxhash64(chr(0), {pos}) ELSE xxhash64(id_producer) END AS P"
    key_s = f"coalesce(id_seq, CAST({UNDECODABLE} AS BIGINT)) AS S"
    return key_p, key_s


# ------------------------------------------------------------------------ the pass


def events(tables: Mapping[str, DataFrame], topics: Sequence[str]) -> DataFrame:
    """Sends, final log and polls as one stream of (PB, S, pos, flags) rows.

    A send's key comes from its producer_id and seq columns, a record's from the split of
    its id the history carries: no message id string is read or parsed here. A send's
    flags and acknowledged position follow ``tables["sends"]``'s outcome, its judged one
    (``tables``)."""
    tp = tp_of(topics)
    flag = (
        f"CAST({SEND} + CASE outcome WHEN 'acked' THEN {ACKED} WHEN 'failed' THEN {FAILED} "
        f"ELSE {UNKNOWN} END AS INT) AS f"
    )
    send_rows = tables["sends"].selectExpr(
        "xxhash64(producer_id) AS P",
        "seq AS S",
        pack(tp, "CASE WHEN outcome = 'acked' THEN offset END") + " AS pos",
        flag,
    )

    def located(table: str, flag: int) -> DataFrame:
        df = tables[table].selectExpr("id_producer", "id_seq", pack(tp, "offset") + " AS pos")
        return df.selectExpr(*message_key("pos"), "pos", f"{flag} AS f")

    rows = send_rows.unionByName(located("final_log", LOG)).unionByName(located("polls", POLL))
    return rows.selectExpr(f"{producer_block('P', 'S')} AS PB", "S", "pos", "f")


def producer_block(p: str, s: str) -> str:
    """PB = P xor block(S): one long naming a block of one producer's seqs. (PB, S) names
    the message exactly (same S, same block, so equal PB means equal P) and P comes back
    as PB xor block(S). Two blocks of different producers share a PB only if their
    producer hashes differ in the low bits alone: odds of about 2^-40 per pair."""
    return f"{p} ^ shiftright({s}, {BLOCK_BITS})"


def judged(ev: DataFrame, partitions: int) -> DataFrame:
    """Shuffle the events by PB and judge every message; only those that leave the pass
    come back (the vectorised sweep in ``sweep.py``, run by ``mapInArrow`` on each task's
    rows sorted by PB). Per message, exactly as its rows say:

    * f: the flags of all its rows, plus ACK_OFF_LOG / POLL_OFF_LOG when it was
      acknowledged / polled at a position where the final log does not hold it;
    * send_pos: its send's position; n_log, log_first, log_last: how many final-log
      positions hold it, the lowest and highest; trunc_first: the lowest position it was
      polled at that the log does not give to it; seen_first: log_first, else trunc_first;
    * tp: its home partition (where it was acknowledged or aimed, else where the log holds
      its first copy, else where it was first polled, else the unknown partition it was
      sent to); log_tp: the partition of log_first;
    * one count per anomaly kind (truncation by acknowledged offset and reorders across
      blocks are finished later; ``unexpected`` is the number of positions a never-sent
      record was seen at, which ``summary`` recounts per distinct position over all
      records); prev_seq: for a reorder, the seq it falls below;
    * unexpected_at: for a never-sent record, each position it was seen at and whether it
      is the final log's record there (null for a sent message);
    * ack_elsewhere: acknowledged at a position the log does not give to it; head / tail:
      the first / last message in seq order of its block within log_tp; blk and P.

    Only sent messages take part in the seq order of a partition. A sent message with
    copies in further partitions of the final log also comes back once per further
    partition it leaves the pass in: a row with the same key and home, log_tp that
    partition, log_first its first copy there, no counts but ``reordered`` (and n_log 0).

    A message leaves if it is anomalous, ack_elsewhere, head or tail. Sorting by PB alone
    is enough: the sweep needs a PB's rows together and orders them itself, and one long
    sort key lets Spark radix-sort on its prefix."""
    return (
        ev.repartition(partitions, "PB")
        .sortWithinPartitions("PB")
        .mapInArrow(sweep.judge_batches, sweep.OUTPUT_DDL)
    )


# ---------------------------------------------------------------- after the pass


def summarised(
    ev: DataFrame, partitions: int, ranges: Mapping[int, tuple[int, int]], examples: int
) -> DataFrame:
    """The pass as the driver takes it: ``judged``'s messages summarised in the task that
    judged them (``sweep.summarise``): counts per home partition and kind, each task's
    first ``examples`` findings per partition and kind, the blocks' end messages and the
    positions never-sent records were seen at. One job, whose output is small whatever
    the history holds; ``ranges`` (tp -> first / last offset of the final log) finish the
    truncation count there."""
    return (
        ev.repartition(partitions, "PB")
        .sortWithinPartitions("PB")
        .mapInArrow(sweep.summariser(sweep.Ranges.of(dict(ranges)), examples), sweep.SUMMARY_DDL)
    )


OVERVIEW_LOG, OVERVIEW_SENDS, OVERVIEW_POLLS, OVERVIEW_PIPELINE_SOURCE, OVERVIEW_GROUP = range(5)
"""The overview's ``source`` codes: a final-log partition, sends per bucket, a polled
topic (``grouped``: some read of a group), a topic a pipeline output names as its
source, a topic a group committed in (``commits``)."""


def overview(tables: Mapping[str, DataFrame], bucket_seconds: float) -> DataFrame:
    """The small facts every later step needs, in one aggregation (one shuffle, so one
    map stage and one action): per partition of the final log its first and last offset
    and record count (``log_records`` not null); send outcomes per (partition, send-time
    bucket) (``bucket`` not null), the sends' own outcomes, not their judged ones
    (docs/HISTORY.md: totals and availability say what the producers saw); the topics
    of the polls, ``grouped`` if a group member read there. Together they name every
    topic, so each gets an index before the main pass.

    Besides, the topics the group and pipeline passes judge, so each shuffles the final
    log (and the group pass the acknowledged sends) of those topics only, cut in the
    scan: a pipeline output's source topic, and the topics a group read or, when
    ``tables`` holds ``commits`` (the history has group data), committed in. No other
    topic holds a finding of those kinds (an assignment alone is judged only by the reads
    under it). At 10M sends with every kind planted the pipeline's output topic is 42% of
    the final log."""
    null_long, null_int = "CAST(NULL AS BIGINT)", "CAST(NULL AS INT)"

    def topics_only(df: DataFrame, source: int, topic: str = "topic", grouped: str = "false") -> DataFrame:
        return df.selectExpr(
            f"{source} AS source", f"{topic} AS topic", f"{null_int} AS partition", f"{null_long} AS bucket",
            f"{null_long} AS offset", "NULL AS outcome", f"{grouped} AS grouped",
        )

    log = tables["final_log"].selectExpr(
        f"{OVERVIEW_LOG} AS source",
        "topic",
        "partition",
        f"{null_long} AS bucket",
        "offset",
        "NULL AS outcome",
        "false AS grouped",
    )
    sends = sends_as_sent(tables).selectExpr(
        f"{OVERVIEW_SENDS} AS source",
        "topic",
        "partition",
        f"CAST(floor(send_ts / CAST('{float(bucket_seconds)!r}' AS DOUBLE)) AS BIGINT) AS bucket",
        f"{null_long} AS offset",
        "outcome",
        "false AS grouped",
    )
    parts = [
        log,
        sends,
        topics_only(tables["polls"], OVERVIEW_POLLS, grouped="`group` IS NOT NULL"),
        topics_only(
            sends_as_sent(tables).where("source_offset IS NOT NULL AND source_topic IS NOT NULL"),
            OVERVIEW_PIPELINE_SOURCE,
            topic="source_topic",
        ),
    ]
    if "commits" in tables:
        parts.append(topics_only(tables["commits"], OVERVIEW_GROUP))
    return (
        reduce(DataFrame.unionByName, parts)
        .groupBy("source", "topic", "partition", "bucket")
        .agg(
            F.expr("min(offset) AS log_start"),
            F.expr("max(offset) AS log_end"),
            F.expr(f"CASE WHEN source = {OVERVIEW_LOG} THEN count(1) END AS log_records"),
            F.expr("count(CASE WHEN outcome = 'acked' THEN 1 END) AS acked"),
            F.expr("count(CASE WHEN outcome = 'failed' THEN 1 END) AS failed"),
            F.expr("count(CASE WHEN outcome != 'acked' AND outcome != 'failed' THEN 1 END) AS unknown"),
            F.expr("bool_or(grouped) AS grouped"),
        )
    )


def topic_in(topics: Iterable[str] | None) -> str:
    """The SQL condition that a row's ``topic`` is one of ``topics`` (false for none; true
    for ``None``, no cut)."""
    if topics is None:
        return "true"
    names = sorted(set(topics))
    return f"topic IN ({', '.join(sql_string(t) for t in names)})" if names else "false"


RECORD_ID = (
    "CASE WHEN id_seq IS NULL THEN id_producer ELSE concat_ws('-', id_producer, CAST(id_seq AS STRING)) END"
)
"""A record's message_id rebuilt from its split (docs/HISTORY.md): a named id reads back
as ``<id_producer>-<id_seq>`` exactly (the seq is canonical), any other id was kept whole
in id_producer, and a record without an id has neither. A send's id is
``<producer_id>-<seq>`` by the schema."""


def packed(topics: Sequence[str], topic: str, partition: int, offset: int) -> int:
    """The driver-side twin of ``pack(tp_of(topics), offset)`` for one known position."""
    tp = topics.index(topic) * (1 << PARTITION_BITS) + partition + 1
    return tp * (1 << OFFSET_BITS) + offset + 1


def partition_of(tp: int, topics: Sequence[str]) -> tuple[str, int]:
    """The driver-side inverse of ``tp_of(topics)``: (topic, partition) of a packed one."""
    return topics[tp >> PARTITION_BITS], (tp & ((1 << PARTITION_BITS) - 1)) - 1


def _in(column: str, values: Sequence[int]) -> str:
    return f"{column} IN ({', '.join(str(int(v)) for v in values)})"


def found_at(
    spark: SparkSession,
    tables: Mapping[str, DataFrame],
    topics: Sequence[str],
    seqs: Sequence[int],
    positions: Mapping[str, Sequence[tuple[str, int, int]]],
) -> DataFrame:
    """The records behind a few examples: sends with one of ``seqs`` (for their id and
    acknowledgement time) and final-log / poll records at the given (topic, partition,
    offset) positions (what the log holds there, and the ids of messages never sent).
    Each filter is one hash-set probe of a long per row, and ids are rebuilt from their
    dictionary-encoded split rather than read: decoding the unique message_id strings of
    every row cost more than the whole look-up does now."""
    parts: list[DataFrame] = []
    if seqs:
        parts.append(
            sends_as_sent(tables)
            .where(_in("seq", seqs))
            .selectExpr(
                "'sends' AS source",
                "topic",
                "partition",
                "offset",
                "concat_ws('-', producer_id, CAST(seq AS STRING)) AS message_id",
                "xxhash64(producer_id) AS P",
                "seq AS S",
                "ack_ts",
                "send_ts",
                "outcome",
            )
        )
    for table, wanted in positions.items():
        if not wanted:
            continue
        at = sorted({packed(topics, *w) for w in wanted})
        offsets = sorted({w[2] for w in wanted})
        parts.append(
            tables[table]
            # The plain offset test first: most rows fail it without their topic being read.
            .where(f"{_in('offset', offsets)} AND {_in(pack(tp_of(topics), 'offset'), at)}")
            .selectExpr(
                f"{sql_string(table)} AS source",
                "topic",
                "partition",
                "offset",
                f"{RECORD_ID} AS message_id",
                *message_key("0L"),
                "CAST(NULL AS DOUBLE) AS ack_ts",
                "CAST(NULL AS DOUBLE) AS send_ts",
                "CAST(NULL AS STRING) AS outcome",
            )
        )
    if not parts:
        return spark.createDataFrame([], "source string")
    return reduce(DataFrame.unionByName, parts)
