"""The Spark plan of the reconciliation: one shuffle, no Python UDFs.

Why it looks the way it does (10M sends with their polls and final log must be judged in
seconds on two cores):

* One shuffle. Sends, final log and polls become narrow fixed-width rows keyed by message:
  (P, S) = (64-bit hash of the producer id, seq), which the history stores split (a
  send's producer_id and seq, a record's id_producer and id_seq). They are
  hash-partitioned once by (P, S >> BLOCK_BITS), so a block of consecutive seqs of one
  producer lands in one task. Positions are packed into one long each.
* The reduce side is a sweep in the JVM (``judged``; ``jvm/kafkachaos/MessageSweep.java``):
  each task sorts its rows once by message, so a message's rows are adjacent (is it on
  the final log where it was acknowledged or polled? how many log positions hold it?)
  and a block's messages come in seq order, so reordering is judged against the last
  message seen in the same final-log partition. In Spark SQL the same needed two hash
  aggregations and a sorted window: about 30 CPU-seconds at 10M sends on two cores, of a
  job that must take 20 s. Pairs that straddle two blocks are the only ones a task
  cannot see, so the first and last message of every block leave the pass and the
  driver compares them afterwards (``boundary.py``): two rows per block and partition.
* Only messages that are anomalous, or may be (a block's first or last message, an
  acknowledged offset that the final log does not give to the message), leave the pass.
  The caller materialises that small table; counts, examples, the block ends and the
  "acknowledged offset inside the log's range" test all come from it in one more job.
* Send outcomes per time bucket and the final log's offset ranges need no shuffle of
  their own: each is a map-side aggregation of one table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce

from py4j.java_gateway import JavaClass
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from harness.history import ANOMALY_KINDS, SCHEMAS, HistoryError

# Flags of an event row, OR-ed together by the aggregations.
FLAG_NAMES = ("SEND", "ACKED", "FAILED", "UNKNOWN", "LOG", "POLL", "ACK_OFF_LOG", "POLL_OFF_LOG")
SEND, ACKED, FAILED, UNKNOWN, LOG, POLL, ACK_OFF_LOG, POLL_OFF_LOG = (1 << i for i in range(8))
BLOCK_BITS = 14  # 16384 consecutive seqs of one producer per block
UNDECODABLE = -1  # seq of a record whose id is not <producer>-<seq>; keyed by a hash of the id
NO_ID = "\u0000"  # hashed with the position: records without an id match nothing
KIND_INDEX = {k: i for i, k in enumerate(ANOMALY_KINDS)}

# Packed positions: pos = tp << 40 | (offset + 1), tp = topic_index << 16 | (partition + 1).
# Offset part 0 means "no valid offset" and never equals a final-log position.
OFFSET_BITS = 40
PARTITION_BITS = 16
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
}


def spark_schema(table: str) -> T.StructType:
    """The Spark twin of a history table's schema. Giving Spark the schema skips footer
    sampling; selecting columns afterwards prunes the Parquet read to what is used."""
    return T.StructType(
        [T.StructField(f.name, _SPARK_TYPES[str(f.type)], f.nullable) for f in SCHEMAS[table]]
    )


def read(spark: SparkSession, history: str, table: str) -> DataFrame:
    return spark.read.schema(spark_schema(table)).parquet(f"{history.rstrip('/')}/{table}")


# ------------------------------------------------------------------------ positions


def topic_index(topics: Sequence[str]) -> Column:
    """topic -> its index in ``topics``, as a CASE chain (a handful of topics per run)."""
    if not topics:
        return F.lit(0)
    col = F.col("topic")
    return reduce(
        lambda acc, it: acc.when(col == it[1], it[0]),
        list(enumerate(topics))[1:],
        F.when(col == topics[0], 0),
    )


def tp_of(topics: Sequence[str]) -> Column:
    return (topic_index(topics).cast("int") * (1 << PARTITION_BITS) + F.col("partition") + 1).cast("int")


def pack(tp: Column, offset: Column) -> Column:
    valid = offset.isNotNull() & (offset >= 0) & (offset <= MAX_OFFSET)
    part = F.when(valid, offset + 1).otherwise(F.lit(0).cast("long"))
    return tp.cast("long") * (1 << OFFSET_BITS) + part


def tp_from_pos(pos: Column) -> Column:
    return F.shiftright(pos, OFFSET_BITS).cast("int")


def offset_from_pos(pos: Column) -> Column:
    raw = pos.bitwiseAND(F.lit(OFFSET_MASK))
    return F.when(raw > 0, raw - 1)


# --------------------------------------------------------------------- message keys


def message_key(pos: Column) -> tuple[Column, Column]:
    """The (P, S) key of a polled or final-log record, from the id_producer / id_seq split
    the history writer stored beside its message_id (docs/HISTORY.md).

    An id that names ``<producer>-<seq>`` gets the key its send row has; any other id is
    kept whole in id_producer with no seq, so (hash of the id, UNDECODABLE) can only match
    itself; a record without an id is keyed by its position as well, so it matches
    nothing. message_id itself is never read."""
    producer = F.col("id_producer")
    key_p = F.when(producer.isNull(), F.xxhash64(F.lit(NO_ID), pos)).otherwise(F.xxhash64(producer))
    key_s = F.coalesce(F.col("id_seq"), F.lit(UNDECODABLE).cast("long"))
    return key_p.alias("P"), key_s.alias("S")


def block_of(seq: Column) -> Column:
    return F.shiftright(seq, BLOCK_BITS).cast("int")


# ------------------------------------------------------------------------ the pass


def events(spark: SparkSession, history: str, topics: Sequence[str]) -> DataFrame:
    """Sends, final log and polls as one stream of (PB, S, pos, flags) rows.

    A send's key comes from its producer_id and seq columns, a record's from the split of
    its id the history carries: no message id string is read or parsed here."""
    tp = tp_of(topics)
    sends = read(spark, history, "sends")
    outcome = F.col("outcome")
    acked = outcome == "acked"
    send_rows = sends.select(
        F.xxhash64("producer_id").alias("P"),
        F.col("seq").alias("S"),
        pack(tp, F.when(acked, F.col("offset"))).alias("pos"),
        (F.lit(SEND) + F.when(acked, ACKED).when(outcome == "failed", FAILED).otherwise(UNKNOWN))
        .cast("int")
        .alias("f"),
    )

    def located(table: str, flag: int) -> DataFrame:
        located_at = pack(tp, F.col("offset")).alias("pos")
        df = read(spark, history, table).select("id_producer", "id_seq", located_at)
        return df.select(*message_key(F.col("pos")), "pos", F.lit(flag).alias("f"))

    rows = send_rows.unionByName(located("final_log", LOG)).unionByName(located("polls", POLL))
    return rows.select(producer_block(F.col("P"), F.col("S")).alias("PB"), "S", "pos", "f")


def producer_block(p: Column, s: Column) -> Column:
    """PB = P xor block(S): one long naming a block of one producer's seqs. (PB, S) names
    the message exactly (same S, same block, so equal PB means equal P) and P comes back
    as PB xor block(S). Two blocks of different producers share a PB only if their
    producer hashes differ in the low bits alone: odds of about 2^-40 per pair."""
    return p.bitwiseXOR(block_of(s).cast("long"))


def judged(spark: SparkSession, ev: DataFrame, partitions: int) -> DataFrame:
    """Shuffle the events by PB and judge every message; only those that leave the pass
    come back (the JVM sweep in ``jvm/kafkachaos/MessageSweep.java``, on the session's
    classpath through ``session.build_session``). Per message, exactly as its rows say:

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

    A message leaves if it is anomalous, ack_elsewhere, head or tail."""
    sweep = spark.sparkContext._jvm.kafkachaos.MessageSweep  # type: ignore[union-attr]
    if not isinstance(sweep, JavaClass):
        raise HistoryError(
            "the reconciliation kernel is not on the Spark driver's classpath: under "
            "spark-submit pass --jars \"$(python3 -m spark_jobs.jvm)\"; from Python, start "
            "the session with spark_jobs.session.build_session"
        )
    if [int(getattr(sweep, name)) for name in FLAG_NAMES] != [1 << i for i in range(len(FLAG_NAMES))]:
        raise HistoryError("the reconciliation kernel on the classpath is from another version")
    out = sweep.judge(
        spark._jsparkSession, ev._jdf, partitions, BLOCK_BITS, OFFSET_BITS, PARTITION_BITS
    )
    return DataFrame(out, spark)


# ---------------------------------------------------------------- after the pass


def range_maps(ranges: Mapping[int, tuple[int, int]]) -> tuple[Column, Column]:
    """tp -> first / last offset of the final log, as map literals. They are consulted only
    for the few acknowledged messages missing from their offset, so no join is needed."""
    if not ranges:
        empty = F.create_map().cast("map<int,bigint>")
        return empty, empty
    starts = F.create_map(*(F.lit(x) for tp, (lo, _) in ranges.items() for x in (tp, lo)))
    ends = F.create_map(*(F.lit(x) for tp, (_, hi) in ranges.items() for x in (tp, hi)))
    return starts, ends


def finish(special: DataFrame, ranges: Mapping[int, tuple[int, int]]) -> DataFrame:
    """The special messages with their truncation count final: an acknowledged offset
    inside its partition's range on the final log that the log does not give to the
    message (another message there, or nothing where the log has a gap) is a truncation.
    Reorders across block boundaries are left to the driver (``boundary.py``), which sees
    the ``head`` / ``tail`` rows ``summary`` passes on."""
    send_tp = tp_from_pos(F.col("send_pos"))
    ack_offset = offset_from_pos(F.col("send_pos"))
    starts, ends = range_maps(ranges)
    in_range = ack_offset.between(F.try_element_at(starts, send_tp), F.try_element_at(ends, send_tp))
    diverged = F.col("ack_elsewhere") & F.coalesce(in_range, F.lit(False))
    return special.withColumn("truncated", F.col("truncated") + diverged.cast("int"))


SUMMARY_COLUMNS = ("tp", "kind", "P", "S", "offset", "aux", "log_tp", "head", "at_tp", *ANOMALY_KINDS)
COUNT_ROW = -1  # "kind" of the rows that carry counts rather than an example
BLOCK_END_ROW = -2  # "kind" of the rows that carry a block's first or last message
MESSAGE_KINDS = tuple(k for k in ANOMALY_KINDS if k != "unexpected")  # counted per message


def _nulls(*names: str) -> list[Column]:
    return [F.lit(None).cast("long").alias(n) for n in names]


def _no_head() -> Column:
    return F.lit(None).cast("boolean").alias("head")


def unexpected_positions(final: DataFrame) -> DataFrame:
    """(tp, at, P, S): one row per distinct position where a never-sent record was seen,
    with tp that position's partition. However many such records were logged or read
    there, the position counts once (docs/HISTORY.md); the record it names is the final
    log's there if that is one of them, else any of those read there."""
    seen = final.where(F.col("unexpected_at").isNotNull()).select(
        "P", "S", F.explode("unexpected_at").alias("u")
    )
    first = Window.partitionBy("at").orderBy(F.col("on_log").desc(), "P", "S")
    return (
        seen.select("P", "S", F.col("u.pos").alias("at"), F.col("u.on_log").alias("on_log"))
        .select("*", F.row_number().over(first).alias("n"))
        .where(F.col("n") == 1)
        .select(tp_from_pos(F.col("at")).alias("tp"), "at", "P", "S")
    )


def _counts(final: DataFrame, unexpected: DataFrame) -> DataFrame:
    """COUNT_ROW rows: each kind per home partition, unexpected per position's partition
    (the driver adds up the rows of one partition)."""
    per_message = final.groupBy("tp").agg(
        *(F.sum(k).cast("long").alias(k) for k in MESSAGE_KINDS),
        F.lit(0).cast("long").alias("unexpected"),
    )
    per_position = unexpected.groupBy("tp").agg(
        *(F.lit(0).cast("long").alias(k) for k in MESSAGE_KINDS),
        F.count(F.lit(1)).cast("long").alias("unexpected"),
    )
    return (
        per_message.unionByName(per_position)
        .select(
            "*",
            F.lit(COUNT_ROW).cast("int").alias("kind"),
            *_nulls("P", "S", "offset", "aux", "log_tp", "at_tp"),
            _no_head(),
        )
        .select(*SUMMARY_COLUMNS)
    )


def _hits(final: DataFrame, unexpected: DataFrame) -> DataFrame:
    """Every finding that may be an example: (tp, P, S, kind, at, aux), tp the partition it
    is listed under and ``at`` where it happened (docs/HISTORY.md, verdict section)."""
    none = F.lit(None).cast("long")
    where = {
        "lost": (F.col("send_pos"), none),
        "duplicate": (F.col("log_last"), F.col("n_log")),
        "truncated": (F.coalesce(F.col("trunc_first"), F.col("send_pos")), none),
        "aborted_read": (F.col("log_first"), none),
        "reordered": (F.col("log_first"), F.col("prev_seq")),
        "unseen": (F.col("log_first"), none),
    }
    hits = F.array(
        *(
            F.when(
                F.col(k) > 0,
                F.struct(
                    F.lit(KIND_INDEX[k]).alias("kind"),
                    where[k][0].alias("at"),
                    where[k][1].cast("long").alias("aux"),
                ),
            )
            for k in MESSAGE_KINDS
        )
    )
    per_message = (
        final.select("tp", "P", "S", F.explode(hits).alias("hit"))
        .where(F.col("hit").isNotNull())
        .select("tp", "P", "S", "hit.kind", "hit.at", "hit.aux")
    )
    per_position = unexpected.select(
        "tp", "P", "S", F.lit(KIND_INDEX["unexpected"]).alias("kind"), "at", none.alias("aux")
    )
    return per_message.unionByName(per_position)


def summary(final: DataFrame, examples: int) -> DataFrame:
    """Counts per partition, up to ``examples`` findings per partition and kind ordered by
    the offset where they happened, and the blocks' end messages (``BLOCK_END_ROW``) for
    the driver to finish the reorder count with: a few thousand rows, in one job."""
    unexpected = unexpected_positions(final)
    offset = offset_from_pos(F.col("at"))
    rank = F.row_number().over(
        Window.partitionBy("tp", "kind").orderBy(offset.asc_nulls_last(), "P", "S")
    )
    picked = (
        _hits(final, unexpected)
        .select("*", rank.alias("rank"))
        .where(F.col("rank") <= examples)
        .select(
            "tp",
            "kind",
            "P",
            "S",
            offset.alias("offset"),
            "aux",
            F.coalesce(tp_from_pos(F.col("at")), F.col("tp")).cast("long").alias("at_tp"),
            *_nulls("log_tp", *ANOMALY_KINDS),
            _no_head(),
        )
        .select(*SUMMARY_COLUMNS)
    )
    ends = final.where(F.col("head") | F.col("tail")).select(
        "tp",
        F.lit(BLOCK_END_ROW).cast("int").alias("kind"),
        "P",
        "S",
        offset_from_pos(F.col("log_first")).alias("offset"),
        *_nulls("aux", "at_tp", *ANOMALY_KINDS),
        F.col("log_tp").cast("long").alias("log_tp"),
        "head",
    )
    return _counts(final, unexpected).unionByName(picked).unionByName(ends.select(*SUMMARY_COLUMNS))


def overview(spark: SparkSession, history: str, bucket_seconds: float) -> DataFrame:
    """The small facts every later step needs, in one action of map-side aggregations:
    per partition of the final log its first and last offset and record count; send
    outcomes per (partition, send-time bucket); and the topics of the polls. Together they
    name every topic, so each gets an index before the main pass."""
    log = (
        read(spark, history, "final_log")
        .groupBy("topic", "partition")
        .agg(
            F.min("offset").alias("log_start"),
            F.max("offset").alias("log_end"),
            F.count(F.lit(1)).alias("log_records"),
        )
    )
    outcome = F.col("outcome")
    sends = (
        read(spark, history, "sends")
        .groupBy("topic", "partition", F.floor(F.col("send_ts") / F.lit(bucket_seconds)).alias("bucket"))
        .agg(
            F.count(F.when(outcome == "acked", 1)).alias("acked"),
            F.count(F.when(outcome == "failed", 1)).alias("failed"),
            F.count(F.when((outcome != "acked") & (outcome != "failed"), 1)).alias("unknown"),
        )
    )
    polls = read(spark, history, "polls").select("topic").distinct()
    return log.unionByName(sends, allowMissingColumns=True).unionByName(polls, allowMissingColumns=True)


def record_id() -> Column:
    """A record's message_id rebuilt from its split (docs/HISTORY.md): a named id reads back
    as ``<id_producer>-<id_seq>`` exactly (the seq is canonical), any other id was kept
    whole in id_producer, and a record without an id has neither. A send's id is
    ``<producer_id>-<seq>`` by the schema."""
    seq = F.col("id_seq")
    return F.when(seq.isNull(), F.col("id_producer")).otherwise(
        F.concat_ws("-", "id_producer", seq.cast("string"))
    )


def packed(topics: Sequence[str], topic: str, partition: int, offset: int) -> int:
    """The driver-side twin of ``pack(tp_of(topics), offset)`` for one known position."""
    tp = topics.index(topic) * (1 << PARTITION_BITS) + partition + 1
    return tp * (1 << OFFSET_BITS) + offset + 1


def found_at(
    spark: SparkSession,
    history: str,
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
        sends = read(spark, history, "sends").where(F.col("seq").isin(list(seqs)))
        parts.append(
            sends.select(
                F.lit("sends").alias("source"),
                "topic",
                "partition",
                "offset",
                F.concat_ws("-", "producer_id", F.col("seq").cast("string")).alias("message_id"),
                F.xxhash64("producer_id").alias("P"),
                F.col("seq").alias("S"),
                "ack_ts",
            )
        )
    for table, wanted in positions.items():
        if not wanted:
            continue
        at = sorted({packed(topics, *w) for w in wanted})
        offsets = sorted({w[2] for w in wanted})
        parts.append(
            read(spark, history, table)
            # The plain offset test first: most rows fail it without their topic being read.
            .where(F.col("offset").isin(offsets) & pack(tp_of(topics), F.col("offset")).isin(at))
            .select(
                F.lit(table).alias("source"),
                "topic",
                "partition",
                "offset",
                record_id().alias("message_id"),
                *message_key(F.lit(0).cast("long")),
                F.lit(None).cast("double").alias("ack_ts"),
            )
        )
    if not parts:
        return spark.createDataFrame([], "source string")
    return reduce(DataFrame.unionByName, parts)
