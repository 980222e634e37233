"""The Spark plan of the reconciliation: one shuffle per question, no Python UDFs.

Why it looks the way it does (10M sends must be judged in seconds on two cores):

* Every per-message question ("acked but absent?", "on the log twice?", "polled at an
  offset the log gives to someone else?") is answered from ONE shuffle. Sends, final log
  and polls become narrow event rows keyed by message id, hash-partitioned once by that
  key; two aggregations then run inside that one stage, by (message, position) and by
  message. A poll is truncated exactly when its message is not on the final log at the
  polled position, so no positional join is needed.
* A position (topic, partition, offset) is packed into one long. Spark's fast hash
  aggregate only takes fixed-width buffers; min/max of a struct or a string silently
  falls back to a sort-based aggregate that costs several times more.
* Reordering needs each producer's records in offset order: a second, narrow shuffle of
  the final log by (partition, producer), a hash aggregate that keeps each message's
  first copy (so duplicates are not also reorders) and one sorted window for descents.
* Both branches feed one aggregation by (partition, send-time bucket), in which every
  anomalous message also gets its own small group; a window then keeps the first K per
  partition and kind. Counts, availability and examples come back in one action.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from harness.history import ANOMALY_KINDS, SCHEMAS

SRC_SEND, SRC_LOG, SRC_POLL = 0, 1, 2
COUNT_ROW = -1  # "kind" of the rows that carry counts rather than an example
NO_ID_KEY = "\u0000"  # key prefix of records without a decodable message id
REORDER_KEY = "\u0001"  # key prefix of reorder examples (id filled in from the log)
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


# ------------------------------------------------------------------------ per message


def events(spark: SparkSession, history: str, topics: Sequence[str], bucket_seconds: float) -> DataFrame:
    """Sends, final log and polls as one narrow stream of events keyed by message id.

    A record without a decodable message id is keyed by its position, so such records
    neither collapse into one group nor match any send."""
    tp = tp_of(topics)
    sends = read(spark, history, "sends")
    acked = sends["outcome"] == "acked"
    send_rows = sends.select(
        F.col("message_id").alias("key"),
        pack(tp, F.when(acked, F.col("offset"))).alias("pos"),
        F.lit(SRC_SEND).cast("byte").alias("src"),
        F.when(acked, 0).when(sends["outcome"] == "failed", 1).otherwise(2).cast("byte").alias("oc"),
        "ack_ts",
        F.floor(F.col("send_ts") / F.lit(bucket_seconds)).alias("bucket"),
    )
    blank = [
        F.lit(None).cast("byte").alias("oc"),
        F.lit(None).cast("double").alias("ack_ts"),
        F.lit(None).cast("long").alias("bucket"),
    ]

    def located(table: str, src: int) -> DataFrame:
        df = read(spark, history, table)
        pos = pack(tp, F.col("offset"))
        return df.select(
            F.coalesce(F.col("message_id"), F.concat(F.lit(NO_ID_KEY), pos.cast("string"))).alias("key"),
            pos.alias("pos"),
            F.lit(src).cast("byte").alias("src"),
            *blank,
        )

    return send_rows.unionByName(located("final_log", SRC_LOG)).unionByName(located("polls", SRC_POLL))


def per_message(ev: DataFrame, partitions: int) -> DataFrame:
    """One row per message with everything needed to classify it (see module doc)."""
    is_send = F.col("src") == SRC_SEND
    at_position = (
        ev.repartition(partitions, "key")
        .groupBy("key", "pos")
        .agg(
            F.max(is_send.cast("byte")).alias("sent"),
            F.max(is_send & (F.col("oc") == 0)).alias("acked_here"),
            F.sum((F.col("src") == SRC_LOG).cast("int")).alias("n_log"),
            F.max(F.col("src") == SRC_POLL).alias("polled_here"),
            F.max("oc").alias("oc"),
            F.max("ack_ts").alias("ack_ts"),
            F.max("bucket").alias("bucket"),
        )
    )
    on_log = F.col("n_log") > 0
    trunc_poll = F.col("polled_here") & ~on_log
    pos = F.col("pos")
    return at_position.groupBy("key").agg(
        F.max("sent").alias("sent"),
        F.max("oc").alias("oc"),
        F.max("ack_ts").alias("ack_ts"),
        F.max("bucket").alias("bucket"),
        F.max(F.when(F.col("sent") == 1, pos)).alias("send_pos"),
        F.sum("n_log").alias("n_log"),
        F.min(F.when(on_log, pos)).alias("log_first"),
        F.max(F.when(on_log, pos)).alias("log_last"),
        F.max("polled_here").alias("polled"),
        F.min(F.when(F.col("polled_here"), pos)).alias("poll_first"),
        F.sum(trunc_poll.cast("int")).alias("trunc_polls"),
        F.min(F.when(trunc_poll, pos)).alias("trunc_first"),
        F.max(F.col("acked_here") & ~on_log).alias("ack_elsewhere"),
        F.sum((on_log | F.col("polled_here")).cast("int")).alias("n_positions"),
    )


def range_maps(ranges: Mapping[int, tuple[int, int]]) -> tuple[Column, Column]:
    """tp -> first / last offset of the final log, as map literals. They are consulted only
    for the rare acknowledged message missing from its offset, so no join is needed."""
    if not ranges:
        empty = F.create_map().cast("map<int,bigint>")
        return empty, empty
    starts = F.create_map(*(F.lit(x) for tp, (lo, _) in ranges.items() for x in (tp, lo)))
    ends = F.create_map(*(F.lit(x) for tp, (_, hi) in ranges.items() for x in (tp, hi)))
    return starts, ends


def classified(pm: DataFrame, ranges: Mapping[int, tuple[int, int]]) -> DataFrame:
    """Per message: its anomaly counts, attributed to one home partition, plus the
    offset that best illustrates each kind."""
    sent = F.col("sent") == 1
    acked = sent & (F.col("oc") == 0)
    on_log = F.col("n_log") > 0
    send_tp = tp_from_pos(F.col("send_pos"))
    known_partition = send_tp.bitwiseAND(F.lit((1 << PARTITION_BITS) - 1)) > 0
    # One home per message: where it was acknowledged or aimed, else where the log holds
    # it, else where it was polled, else the unknown partition (-1) it was sent to.
    home = F.coalesce(
        F.when(sent & known_partition, F.col("send_pos")),
        F.col("log_first"),
        F.col("poll_first"),
        F.col("send_pos"),
    )
    ack_offset = offset_from_pos(F.col("send_pos"))
    # The acknowledged offset is held by another message: ours is not there and (the log
    # being dense) the offset lies inside the log's range.
    starts, ends = range_maps(ranges)
    in_range = ack_offset.between(F.try_element_at(starts, send_tp), F.try_element_at(ends, send_tp))
    ack_diverged = F.when(
        acked & F.coalesce(F.col("ack_elsewhere"), F.lit(False)), F.coalesce(in_range, F.lit(False))
    ).otherwise(F.lit(False))
    trunc_polls = F.coalesce(F.col("trunc_polls"), F.lit(0))
    counts = {
        "lost": (acked & ~on_log).cast("int"),
        "duplicate": F.greatest(F.col("n_log") - 1, F.lit(0)).cast("int"),
        "truncated": (trunc_polls + ack_diverged.cast("int")).cast("int"),
        "unexpected": F.when(~sent, F.col("n_positions")).otherwise(0).cast("int"),
        "aborted_read": (sent & (F.col("oc") == 1) & on_log).cast("int"),
        "reordered": F.lit(0),
        "unseen": (acked & on_log & ~F.coalesce(F.col("polled"), F.lit(False))).cast("int"),
    }
    log_first = offset_from_pos(F.col("log_first"))
    example_offset = {
        "lost": ack_offset,
        "duplicate": offset_from_pos(F.col("log_last")),
        "truncated": F.when(trunc_polls > 0, offset_from_pos(F.col("trunc_first"))).otherwise(ack_offset),
        "unexpected": F.coalesce(log_first, offset_from_pos(F.col("poll_first"))),
        "aborted_read": log_first,
        "reordered": F.lit(None).cast("long"),
        "unseen": log_first,
    }
    return pm.select(
        tp_from_pos(home).alias("tp"),
        F.when(sent, F.col("bucket")).alias("bucket"),
        F.when(sent, F.col("oc")).alias("oc"),
        "key",
        "ack_ts",
        F.col("n_log").cast("long").alias("aux"),
        *(c.alias(k) for k, c in counts.items()),
        *(c.alias(f"ex_{k}") for k, c in example_offset.items()),
    )


def reorders(spark: SparkSession, history: str, topics: Sequence[str], partitions: int) -> DataFrame:
    """Adjacent descents of a producer's seq in offset order within a partition of the
    final log, in the same shape as ``classified``.

    Only each message's first copy counts, so a duplicate is not also a reorder. The
    producer is carried as a 64-bit hash so that the aggregate and the sort run on
    fixed-width keys; two producers of one partition colliding is not a practical risk.
    The example's message id is filled in later from the final log at its offset."""
    log = read(spark, history, "final_log")
    seq_text = F.substring_index(F.col("message_id"), "-", -1)
    producer = F.expr("substring(message_id, 1, length(message_id) - length(seq_text) - 1)")
    firsts = (
        log.select(tp_of(topics).alias("tp"), "offset", "message_id", seq_text.alias("seq_text"))
        .select(
            "tp",
            "offset",
            F.xxhash64(producer).alias("producer"),
            F.length(producer).alias("producer_len"),
            F.col("seq_text").try_cast("long").alias("seq"),
        )
        .where(F.col("seq").isNotNull() & (F.col("producer_len") > 0))
        .repartition(partitions, "tp", "producer")
        .groupBy("tp", "producer", "seq")
        .agg(F.min("offset").alias("offset"))
    )
    w = Window.partitionBy("tp", "producer").orderBy("offset")
    descents = firsts.select("*", F.lag("seq").over(w).alias("prev_seq")).where(
        F.col("seq") < F.col("prev_seq")
    )
    return descents.select(
        "tp",
        F.lit(None).cast("long").alias("bucket"),
        F.lit(None).cast("byte").alias("oc"),
        F.concat(F.lit(REORDER_KEY), pack(F.col("tp"), F.col("offset")).cast("string")).alias("key"),
        F.lit(None).cast("double").alias("ack_ts"),
        F.col("prev_seq").alias("aux"),
        *(F.lit(1 if k == "reordered" else 0).alias(k) for k in ANOMALY_KINDS),
        *(
            (F.col("offset") if k == "reordered" else F.lit(None).cast("long")).alias(f"ex_{k}")
            for k in ANOMALY_KINDS
        ),
    )


def grouped(rows: DataFrame) -> DataFrame:
    """Counts per (partition, bucket), with every anomalous message in a group of its own.

    This is where the millions of rows collapse: the output has one row per partition and
    bucket plus one per anomalous message. The caller checkpoints it, because the two
    small queries in ``summary`` read it and Spark would otherwise recompute the whole
    pass for each of them (a filter pushed below the aggregate defeats exchange reuse)."""
    anomalous = reduce(lambda a, b: a | b, (F.col(k) > 0 for k in ANOMALY_KINDS))
    return rows.groupBy("tp", "bucket", F.when(anomalous, F.col("key")).alias("ex_key")).agg(
        F.sum((F.col("oc") == 0).cast("long")).alias("acked"),
        F.sum((F.col("oc") == 1).cast("long")).alias("failed"),
        F.sum((F.col("oc") == 2).cast("long")).alias("unknown"),
        *(F.sum(k).cast("long").alias(k) for k in ANOMALY_KINDS),
        *(F.max(f"ex_{k}").alias(f"ex_{k}") for k in ANOMALY_KINDS),
        F.max("ack_ts").alias("ack_ts"),
        F.max("aux").alias("aux"),
    )


def summary(grouped: DataFrame, examples: int) -> DataFrame:
    """Counts per (partition, bucket) plus up to ``examples`` rows per partition and kind,
    ordered by offset: a few thousand rows for the driver."""
    out_cols = [
        "tp",
        "bucket",
        "kind",
        "key",
        "offset",
        "ack_ts",
        "aux",
        "acked",
        "failed",
        "unknown",
        *ANOMALY_KINDS,
    ]
    counts = (
        grouped.groupBy("tp", "bucket")
        .agg(*(F.sum(c).alias(c) for c in ("acked", "failed", "unknown", *ANOMALY_KINDS)))
        .select(
            "*",
            F.lit(COUNT_ROW).cast("byte").alias("kind"),
            F.lit(None).cast("string").alias("key"),
            F.lit(None).cast("long").alias("offset"),
            F.lit(None).cast("double").alias("ack_ts"),
            F.lit(None).cast("long").alias("aux"),
        )
        .select(*out_cols)
    )
    hits = F.array(
        *(
            F.when(
                F.col(k) > 0, F.struct(F.lit(i).cast("byte").alias("kind"), F.col(f"ex_{k}").alias("offset"))
            )
            for i, k in enumerate(ANOMALY_KINDS)
        )
    )
    rank = F.row_number().over(
        Window.partitionBy("tp", "kind").orderBy(F.col("offset").asc_nulls_last(), "key")
    )
    picked = (
        grouped.where(F.col("ex_key").isNotNull())
        .select("tp", F.col("ex_key").alias("key"), "ack_ts", "aux", F.explode(hits).alias("hit"))
        .where(F.col("hit").isNotNull())
        .select("tp", "key", "ack_ts", "aux", "hit.kind", "hit.offset")
        .select("*", rank.alias("rank"))
        .where(F.col("rank") <= examples)
        .select(
            "*",
            *(F.lit(None).cast("long").alias(c) for c in ("bucket", "acked", "failed", "unknown")),
            *(F.lit(None).cast("long").alias(k) for k in ANOMALY_KINDS),
        )
        .select(*out_cols)
    )
    return counts.unionByName(picked)


def log_ranges(spark: SparkSession, history: str) -> DataFrame:
    """Per partition of the final log: first and last offset and record count; plus the
    topics of sends and polls (partition null), so every topic gets an index."""
    log = read(spark, history, "final_log")
    ranges = log.groupBy("topic", "partition").agg(
        F.min("offset").alias("log_start"),
        F.max("offset").alias("log_end"),
        F.count(F.lit(1)).alias("log_records"),
    )
    others = [
        read(spark, history, t)
        .select("topic")
        .distinct()
        .select(
            "topic",
            F.lit(None).cast("int").alias("partition"),
            F.lit(None).cast("long").alias("log_start"),
            F.lit(None).cast("long").alias("log_end"),
            F.lit(None).cast("long").alias("log_records"),
        )
        for t in ("sends", "polls")
    ]
    return reduce(DataFrame.unionByName, others, ranges)
