"""The history's on-disk schema: tables, columns, status and outcome words, message ids.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes meaning: the
reconciliation refuses histories of another version instead of misreading them.
docs/HISTORY.md explains every column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import ChaosError

SCHEMA_VERSION = 9
MANIFEST = "manifest.json"

# Manifest statuses. Only a "complete" history may be judged: a "running" one is still
# being written (or its writer died without closing), an "aborted" one stopped on error.
STATUS_RUNNING = "running"
STATUS_COMPLETE = "complete"
STATUS_ABORTED = "aborted"

# Send outcomes as the producer client saw them. "failed" means a definitive error code
# (the write did not happen, as far as the client was told); "unknown" means in doubt
# (timed out, connection lost): the write may or may not be on the log.
OUTCOME_ACKED = "acked"
OUTCOME_FAILED = "failed"
OUTCOME_UNKNOWN = "unknown"
OUTCOMES = (OUTCOME_ACKED, OUTCOME_FAILED, OUTCOME_UNKNOWN)

SENDS_SCHEMA = pa.schema(
    [
        pa.field("message_id", pa.string(), nullable=False),
        pa.field("producer_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("key", pa.string()),
        pa.field("zone", pa.string()),
        pa.field("send_ts", pa.float64(), nullable=False),
        pa.field("ack_ts", pa.float64()),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("offset", pa.int64()),
        pa.field("error", pa.string()),
        # Schema 6: the transaction this send was produced in (a transactions row), null
        # for a send outside any transaction.
        pa.field("transaction_id", pa.string()),
        # Schema 7: for the output of a consume-transform-produce pipeline, the input record
        # it transforms, where the pipeline member read it (group, topic, partition,
        # offset), the id it read there and that id's split (as polls split theirs). All
        # null for an ordinary send.
        pa.field("source_group", pa.string()),
        pa.field("source_topic", pa.string()),
        pa.field("source_partition", pa.int32()),
        pa.field("source_offset", pa.int64()),
        pa.field("source_message_id", pa.string()),
        pa.field("source_id_producer", pa.string()),
        pa.field("source_id_seq", pa.int64()),
    ]
)

POLLS_SCHEMA = pa.schema(
    [
        pa.field("consumer_id", pa.string(), nullable=False),
        pa.field("zone", pa.string()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("message_id", pa.string()),
        pa.field("poll_ts", pa.float64(), nullable=False),
        pa.field("id_producer", pa.string()),
        pa.field("id_seq", pa.int64()),
        # Schema 5: where the record came from in a consumer group. ``group`` is null for a
        # consumer that assign()s its partitions itself; ``assignment`` numbers the member's
        # assignments from 0 (its n-th partitions-assigned callback; librdkafka does not hand
        # the group generation to Python); ``poll_seq`` numbers the consumer's polled
        # records from 0 in the order it received them, the order its reads are judged in.
        pa.field("group", pa.string()),
        pa.field("assignment", pa.int32()),
        pa.field("poll_seq", pa.int64()),
        # Schema 6: the consumer's isolation.level, ISOLATION_LEVELS; null: not recorded.
        pa.field("isolation", pa.string()),
    ]
)

# The final drain reads every record as a read_uncommitted reader gets it (aborted
# transactions' records included; control records are never handed to a client, so they
# leave offset gaps). Schema 6: ``read_committed`` says whether a second, read_committed
# drain was given the same record; null when no such drain was made (a run without
# transactional producers, where both readers get the same records).
FINAL_LOG_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("message_id", pa.string()),
        pa.field("id_producer", pa.string()),
        pa.field("id_seq", pa.int64()),
        pa.field("read_committed", pa.bool_()),
    ]
)

FAULTS_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("mono", pa.float64(), nullable=False),
        pa.field("fault", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("targets", pa.string()),
        pa.field("outcome", pa.string()),
        pa.field("done_ts", pa.float64()),
    ]
)

# One row per failed produce attempt of a batch (librdkafka's per-batch errors, see
# harness/workload/attempts.py): the errors a final delivery report hides, and whether the attempt
# may have appended its messages although they did not end acknowledged.
ATTEMPTS_SCHEMA = pa.schema(
    [
        pa.field("producer_id", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("messages", pa.int32(), nullable=False),
        pa.field("error", pa.string(), nullable=False),
        pa.field("actions", pa.string()),
        pa.field("possibly_persisted", pa.bool_(), nullable=False),
    ]
)

# Offset commits of group consumers (schema 5): one row per partition of a commit, once its
# outcome is known (the commit callback for automatic and asynchronous commits, the return
# of a synchronous one). ``offset`` is the committed position: the next offset to read.
# Schema 7: mode "txn" is offsets sent to a transaction (send_offsets_to_transaction),
# written when the transaction ended and named by ``transaction_id``; its outcome follows
# the transaction's: committed, failed (aborted) or unknown (Kafka may have done either,
# so, like a failed one, it is never judged).
COMMIT_COMMITTED = "committed"
COMMIT_FAILED = "failed"
COMMIT_UNKNOWN = "unknown"
COMMIT_OUTCOMES = (COMMIT_COMMITTED, COMMIT_FAILED, COMMIT_UNKNOWN)
COMMIT_TXN = "txn"
COMMIT_MODES = ("auto", "sync", "async", COMMIT_TXN)
COMMITS_SCHEMA = pa.schema(
    [
        pa.field("group", pa.string(), nullable=False),
        pa.field("consumer_id", pa.string(), nullable=False),
        pa.field("assignment", pa.int32()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("mode", pa.string(), nullable=False),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("error", pa.string()),
        pa.field("transaction_id", pa.string()),  # schema 7: a "txn" row's transaction
    ]
)

# Each consumer group's committed offsets after healing (schema 7), as the final drain
# looked them up: one row per group of the scenario and partition of each topic it read.
# ``offset`` is the next offset to read, null when the group committed nothing there. The
# lookup is read_committed, which makes the broker wait out pending transactional offsets,
# so this is the truth the broker kept, as final_log is for records; commits is what the
# clients were told.
FINAL_OFFSETS_SCHEMA = pa.schema(
    [
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64()),
        pa.field("ts", pa.float64(), nullable=False),
    ]
)

# Group membership changes as each member saw them (schema 5): one row per partition
# assigned to, revoked from or lost by a member, at its rebalance callback. An assignment's
# ``resume_offset`` is the group's committed offset for the partition, looked up by the
# member in that callback: where its reads must start (null: nothing committed, so the
# member starts at the log start, auto.offset.reset=earliest).
REBALANCE_ASSIGNED = "assigned"
REBALANCE_REVOKED = "revoked"
REBALANCE_LOST = "lost"
REBALANCE_EVENTS = (REBALANCE_ASSIGNED, REBALANCE_REVOKED, REBALANCE_LOST)
REBALANCES_SCHEMA = pa.schema(
    [
        pa.field("group", pa.string(), nullable=False),
        pa.field("consumer_id", pa.string(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("event", pa.string(), nullable=False),
        pa.field("assignment", pa.int32(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("resume_offset", pa.int64()),
    ]
)

# Transactions of transactional producers (schema 6): one row per transaction begun.
# ``end_requested_ts`` is when the producer called commit_transaction() or
# abort_transaction(): no commit marker can exist before it. ``outcome`` is what the
# producer was told: committed (the commit returned), aborted (the abort returned), or
# unknown (the commit or abort failed or never ended, or the producer was fenced or
# died: Kafka may have done either).
TXN_COMMITTED = "committed"
TXN_ABORTED = "aborted"
TXN_UNKNOWN = "unknown"
TXN_OUTCOMES = (TXN_COMMITTED, TXN_ABORTED, TXN_UNKNOWN)
TRANSACTIONS_SCHEMA = pa.schema(
    [
        pa.field("transaction_id", pa.string(), nullable=False),
        pa.field("producer_id", pa.string(), nullable=False),
        pa.field("transactional_id", pa.string(), nullable=False),
        pa.field("begin_ts", pa.float64(), nullable=False),
        pa.field("end_requested_ts", pa.float64()),
        pa.field("end_ts", pa.float64()),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("error", pa.string()),
    ]
)

# A consumer's isolation.level as polls record it (schema 6).
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
ISOLATION_LEVELS = (READ_COMMITTED, READ_UNCOMMITTED)

# What ZooKeeper showed during the run (harness/cluster/sampler.py): one row per distinct
# sampled snapshot and partition of the scenario topic (one row without a partition when a
# snapshot has none), and one unreadable row (readable false, error set, state columns null)
# where a stretch of failed reads began. Rows of one snapshot share ``sample`` and both
# clocks; the state a row shows holds until the next sample. The judge does not read it.
_BROKER_IDS = pa.list_(pa.int32())
CLUSTER_STATE_SCHEMA = pa.schema(
    [
        pa.field("sample", pa.int64(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("mono", pa.float64(), nullable=False),
        pa.field("readable", pa.bool_(), nullable=False),
        pa.field("error", pa.string()),
        pa.field("controller", pa.int32()),
        pa.field("controller_epoch", pa.int32()),
        pa.field("live_brokers", _BROKER_IDS),
        pa.field("zk_modes", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("leader", pa.int32()),
        pa.field("leader_epoch", pa.int32()),
        pa.field("isr", _BROKER_IDS),
        pa.field("replicas", _BROKER_IDS),
        # Schema 8: the phase of a ZooKeeper-to-KRaft migration the snapshot was read in
        # (a migration table row's phase), null outside a migration.
        pa.field("migration_phase", pa.string()),
    ]
)

# The phases of a ZooKeeper-to-KRaft migration (schema 8; harness/cluster/migration/
# driver.py): one row per phase walked, written when it ends, with both clocks of its
# start and end, its outcome, and the steps it took ("; "-joined, in order).
MIGRATION_COMPLETED = "completed"
MIGRATION_FAILED = "failed"
MIGRATION_OUTCOMES = (MIGRATION_COMPLETED, MIGRATION_FAILED)
MIGRATION_SCHEMA = pa.schema(
    [
        pa.field("phase", pa.string(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("mono", pa.float64(), nullable=False),
        pa.field("end_ts", pa.float64(), nullable=False),
        pa.field("end_mono", pa.float64(), nullable=False),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("detail", pa.string()),
        pa.field("steps", pa.string()),
    ]
)

SCHEMAS: Mapping[str, pa.Schema] = {
    "sends": SENDS_SCHEMA,
    "polls": POLLS_SCHEMA,
    "final_log": FINAL_LOG_SCHEMA,
    "faults": FAULTS_SCHEMA,
    "attempts": ATTEMPTS_SCHEMA,
    "cluster_state": CLUSTER_STATE_SCHEMA,
    "commits": COMMITS_SCHEMA,
    "rebalances": REBALANCES_SCHEMA,
    "transactions": TRANSACTIONS_SCHEMA,
    "final_offsets": FINAL_OFFSETS_SCHEMA,
    "migration": MIGRATION_SCHEMA,
}
TABLES = tuple(SCHEMAS)

# ------------------------------------------------------------------------- message ids

# A message id is "<producer_id>-<seq>": the producer id may contain "-", the seq follows
# the last one, in canonical decimal (no sign, no leading zero, at most 18 digits so it
# fits an int64). Polled and final-log records carry their id split this way in
# id_producer / id_seq, written by HistoryWriter, so that the reconciliation matches
# records to sends on (producer, seq) without parsing millions of strings itself.
# A pipeline output's send splits the id of its source record the same way.
MESSAGE_ID_PATTERN = r"(?s)(?P<id_producer>.+)-(?P<id_seq>0|[1-9][0-9]{0,17})"
_MESSAGE_ID = re.compile(MESSAGE_ID_PATTERN)


@dataclass(frozen=True)
class IdSplit:
    """One message-id column and the two columns its split is stored in."""

    source: str
    producer: str
    seq: str


_RECORD_ID = IdSplit("message_id", "id_producer", "id_seq")
SPLIT_IDS: Mapping[str, IdSplit] = {
    "polls": _RECORD_ID,
    "final_log": _RECORD_ID,
    "sends": IdSplit("source_message_id", "source_id_producer", "source_id_seq"),
}


def split_message_id(mid: str | None) -> tuple[str | None, int | None]:
    """(id_producer, id_seq) of a record's message id: the producer and seq it names; an
    id that names none is kept whole with seq None (it can only match itself); no id gives
    (None, None)."""
    if mid is None:
        return None, None
    m = _MESSAGE_ID.fullmatch(mid)
    if m is None:
        return mid, None
    return m["id_producer"], int(m["id_seq"])


def with_split_ids(data: pa.Table, split: IdSplit = _RECORD_ID) -> pa.Table:
    """``data`` with the split columns (re)computed from ``split.source``, columnar: the
    same rule as ``split_message_id``, for bulk writers of millions of rows. A table
    without the source column gets both split columns null."""
    if split.source not in data.column_names:
        data = data.append_column(split.source, pa.nulls(data.num_rows, pa.string()))
    mid = data.column(split.source)
    parts = pc.extract_regex(mid, f"^(?:{MESSAGE_ID_PATTERN})$")  # RE2: $ is the very end
    named = pc.is_valid(parts)
    producer = pc.if_else(named, pc.struct_field(parts, "id_producer"), mid)
    seq = pc.if_else(named, pc.cast(pc.struct_field(parts, "id_seq"), pa.int64()), None)
    for name, column in ((split.producer, producer), (split.seq, seq)):
        if name in data.column_names:
            data = data.drop_columns(name)
        data = data.append_column(name, column)
    return data


class HistoryError(ChaosError):
    """A history that cannot be judged. The message is one line, meant for a human."""
