"""A consume-transform-produce pipeline member, and what it recorded of every step.

A pipeline member is a consumer-group member (:class:`~harness.workload.group_member.GroupMember`:
it subscribes, rebalances and records its reads, assignments and commits the same way)
that turns each input record it reads into one output record on another topic. How it
ties the output to the input's offset is its ``guarantee``, one batch being one unit of
work:

- ``exactly_once``: begin a transaction, produce the batch's outputs, add the batch's next
  offsets to the transaction (``send_offsets_to_transaction``), commit. Outputs and
  offsets become visible together or not at all (KIP-447's fencing by group generation
  keeps a member that lost its partitions from committing them).
- ``at_least_once``: produce the outputs, wait for every acknowledgement, then commit the
  offsets: a crash in between makes the next owner produce the batch again.
- ``at_most_once``: commit the offsets, then produce: a crash in between loses the batch.

``restart = "crash"`` strikes at exactly that vulnerable point, with a batch in hand, once
``restart_every_s`` has passed (inside ``restart_from_s`` / ``restart_until_s`` where they
bound it, as for any group member): the member records what its clients never reported
and drops both clients without a word (no LeaveGroup, no abort), as a killed process would.
Its group keeps the ghost until the session times out; the next incarnation builds a
producer with the same ``transactional.id`` and calls ``init_transactions`` before it
subscribes, which aborts the ghost's open transaction at once. ``restart = "clean"``
finishes the batch and closes both clients.

An abortable error aborts the transaction, and the member rejoins (closes its consumer
cleanly and subscribes anew), so it resumes from the committed offsets in a new
assignment instead of seeking back inside the old one. A fatal one (fenced, say) leaves
the transaction unknown and starts a new incarnation; a third in a row kills the member.

Rows, all through the workload's recorder: ``polls`` per record read (written as soon as
the batch is in hand, before the guarantee's steps, so a commit never runs ahead of what
the history says was read), ``sends``
per output (from its delivery report, or ``unknown`` with ``_ABANDONED`` when the member
crashed first), naming its source (schema 7's ``source_*``); ``transactions`` per
transaction; ``commits`` per partition of each commit (``txn`` rows take their
transaction's outcome); ``rebalances`` as every member writes them. An output is never
recorded ``failed``: without the producer's attempts it cannot be known not to be on the
log, and ``unknown`` is the side that cannot invent an anomaly.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, Producer, TopicPartition

from harness import history as hist
from harness.errors import describe_error
from harness.workload.clients import ZonePlacement, decode_value, make_producer
from harness.workload.group_member import GroupMember, GroupProgress, Recorder, Restarts, error_name
from harness.workload.transactional import (
    END_CALL_TIMEOUT_S,
    Transactions,
    TransactionsEnded,
    error_text,
    kafka_error,
)

EXACTLY_ONCE, AT_LEAST_ONCE, AT_MOST_ONCE = GUARANTEES = ("exactly_once", "at_least_once", "at_most_once")
ABANDONED = "_ABANDONED"  # the error of what a crashed member's clients never reported
FATAL_IN_A_ROW = 3  # incarnations ended by a fatal error in a row before the member gives up
# A transactional commit's outcome -> its commits rows' outcome.
COMMIT_OUTCOME = {hist.TXN_COMMITTED: hist.COMMIT_COMMITTED, hist.TXN_ABORTED: hist.COMMIT_FAILED,
                  hist.TXN_UNKNOWN: hist.COMMIT_UNKNOWN}


@dataclass(frozen=True)
class PipelineSpec:
    """One pipeline member of a scenario: it reads the scenario's topic as a member of
    ``group`` and writes one output per record to the scenario topic named ``output``
    (a ``ScenarioSpec.topics`` entry), as ``guarantee`` orders it (see the module doc).
    Its consumer settings may not turn automatic commits on, nor its producer settings
    name a transactional.id: the guarantee decides both."""

    name: str
    zone: str
    group: str
    output: str
    guarantee: str = EXACTLY_ONCE
    batch: int = 50
    restart_every_s: float | None = None
    restart: str = "clean"
    restart_from_s: float = 0.0
    restart_until_s: float | None = None
    abort_ratio: float = 0.0
    transactional_id: str | None = None
    consumer_settings: Mapping[str, Any] = field(default_factory=dict)
    producer_settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"pipeline {self.name}"
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"{where}: guarantee must be one of {', '.join(GUARANTEES)}, "
                             f"not {self.guarantee!r}")
        if self.restarts.problems():
            raise ValueError(f"{where}: {'; '.join(self.restarts.problems())}")
        if self.batch < 1:
            raise ValueError(f"{where}: batch must be at least 1")
        if not 0.0 <= self.abort_ratio <= 1.0:
            raise ValueError(f"{where}: abort_ratio must lie between 0 and 1")
        if self.guarantee != EXACTLY_ONCE and (self.abort_ratio or self.transactional_id is not None):
            raise ValueError(f"{where}: 'abort_ratio' and 'transactional_id' need guarantee exactly_once")
        if "enable.auto.commit" in self.consumer_settings:
            raise ValueError(f"{where}: the guarantee decides commits; drop 'enable.auto.commit'")
        if "transactional.id" in self.producer_settings:
            raise ValueError(f"{where}: name the transactional.id with 'transactional_id'")

    @property
    def restarts(self) -> Restarts:
        return Restarts(self.restart_every_s, self.restart, self.restart_from_s, self.restart_until_s)

    def to_dict(self) -> dict[str, Any]:
        """The spec as a scenario file's ``[[pipelines]]`` table would spell it."""
        out: dict[str, Any] = {"name": self.name, "zone": self.zone, "group": self.group,
                               "output": self.output, "guarantee": self.guarantee, "batch": self.batch,
                               "restart": self.restart, "abort_ratio": self.abort_ratio,
                               "consumer_settings": dict(self.consumer_settings),
                               "producer_settings": dict(self.producer_settings), **self.restarts.to_dict()}
        if self.transactional_id is not None:
            out["transactional_id"] = self.transactional_id
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PipelineSpec:
        """The pipeline member a scenario file's ``[[pipelines]]`` table spells."""
        keys = {"name", "zone", "group", "output", "guarantee", "batch", *Restarts.KEYS,
                "abort_ratio", "transactional_id", "consumer_settings", "producer_settings"}
        unknown = sorted(set(data) - keys)
        if unknown:
            raise ValueError(f"pipeline {data.get('name')}: unknown key(s) {', '.join(unknown)}")
        missing = [k for k in ("name", "zone", "group", "output") if not isinstance(data.get(k), str)]
        if missing:
            raise ValueError(f"pipeline {data.get('name')}: needs {', '.join(repr(k) for k in missing)} "
                             "(a string each)")
        for key in ("batch", "abort_ratio"):
            value = data.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"pipeline {data['name']}: {key} must be a number, not {value!r}")
        restarts = Restarts.from_dict(data, f"pipeline {data['name']}")
        tid = data.get("transactional_id")
        return cls(name=data["name"], zone=data["zone"], group=data["group"], output=data["output"],
                   guarantee=str(data.get("guarantee", EXACTLY_ONCE)), batch=int(data.get("batch", 50)),
                   restart_every_s=restarts.every_s, restart=restarts.how, restart_from_s=restarts.from_s,
                   restart_until_s=restarts.until_s, abort_ratio=float(data.get("abort_ratio", 0.0)),
                   transactional_id=None if tid is None else str(tid),
                   consumer_settings=dict(data.get("consumer_settings", {})),
                   producer_settings=dict(data.get("producer_settings", {})))


def default_transactional_id(group: str, member: str) -> str:
    """One stable id per member: each incarnation fences the one before it at once."""
    return f"kafka-chaos-{group}-{member}"


class PipelineMember(GroupMember):
    """One member of pipeline ``group``: reads ``input_topic``, writes ``output_topic``."""

    def __init__(self, name: str, zone: str, group: str, input_topic: str, output_topic: str,
                 output_partitions: int, guarantee: str, batch: int, restarts: Restarts,
                 abort_ratio: float, transactional_id: str | None,
                 consumer_settings: Mapping[str, Any], producer_settings: Mapping[str, Any],
                 placement: ZonePlacement, recorder: Recorder, progress: GroupProgress) -> None:
        if guarantee not in GUARANTEES:
            raise ValueError(f"pipeline {name}: guarantee must be one of {', '.join(GUARANTEES)}")
        commit = "none" if guarantee == EXACTLY_ONCE else "sync"
        super().__init__(name, zone, consumer_settings, group, commit, restarts, 0.0, placement,
                         input_topic, recorder, progress)
        self.output, self.output_partitions = output_topic, output_partitions
        self.guarantee, self.batch = guarantee, batch
        self.abort_ratio = abort_ratio
        self.transactional_id = transactional_id or default_transactional_id(group, name)
        self.producer_settings = dict(producer_settings)
        self.make_producer: Callable[[ZonePlacement, str, Mapping[str, Any]], Producer] = make_producer
        self.out_seq = 0  # outputs are "<member>-<seq>", seqs running on across incarnations
        self.incarnation = 0
        self.crashes = 0
        self._pending: dict[tuple[int, int], dict[str, Any]] = {}  # outputs awaiting their report
        self._txn: Transactions | None = None
        self._open_offsets: tuple[list[TopicPartition], str] | None = None  # sent, not yet ended
        self.outputs_committed: dict[int, int] = {}  # output partition -> highest committed offset

    # ------------------------------------------------------------------------- the loop

    def run(self) -> None:
        fatal = 0
        try:
            while not self._done():
                if self._incarnation():
                    fatal = 0
                    continue
                fatal += 1
                if fatal >= FATAL_IN_A_ROW:
                    raise RuntimeError(f"{FATAL_IN_A_ROW} incarnations in a row ended in a fatal error")
        except BaseException as exc:  # recorded: the scenario fails on a member that died
            self.error = describe_error(exc)

    def _incarnation(self) -> bool:
        """Run one incarnation (a producer and a consumer) until the workload is done, a
        restart or crash ends it, or a fatal error does (then False)."""
        self.incarnation += 1
        producer = self._producer()  # init_transactions before subscribing: see the module doc
        consumer = self._join()
        self._rejoin_at = self._next_restart()
        while not self._done():
            if self._restart_due() and self.restarts.how == "clean":
                self._left("clean")
                break
            records = [m for m in consumer.consume(num_messages=self.batch, timeout=0.2) if not m.error()]
            producer.poll(0)
            if not records:
                continue
            crash = self._restart_due() and self.restarts.how == "crash"
            try:
                result = self._unit_of_work(consumer, producer, records, crash)
            except TransactionsEnded as gone:  # fenced, fatal, or hung in a call
                self._abandon(str(gone))
                return False
            if result == "crashed":
                self.crashes += 1
                self._left("crash")
                self._abandon()
                return True  # both clients let go here (GroupMember.run says how)
            if result == "rejoin":
                self._close(consumer)
                consumer = self._join()
        self._close(consumer)
        producer.flush(END_CALL_TIMEOUT_S)
        if len(producer) == 0:  # closed, so its threads do not outlive the cluster
            producer.close()
        self._txn = None
        return True

    def _producer(self) -> Producer:
        settings: dict[str, Any] = {"enable.idempotence": True, "acks": "all", **self.producer_settings}
        self._txn = None
        if self.guarantee == EXACTLY_ONCE:
            settings["transactional.id"] = self.transactional_id
        producer = self.make_producer(self.placement, self.zone, settings)
        if self.guarantee == EXACTLY_ONCE:
            self._txn = Transactions(producer, self.member, self.transactional_id, size=1 << 62,
                                     abort_ratio=self.abort_ratio, record=self.recorder.row,
                                     on_committed=self._committed_outputs)
            self._txn.init()
        return producer

    # ------------------------------------------------------------------- a unit of work

    def _unit_of_work(self, consumer: Any, producer: Producer, records: Sequence[Any], crash: bool) -> str:
        """One batch, as the guarantee orders it: "done", "rejoin" (after an abort or a
        refused commit), or "crashed" (``crash``: stopped at the vulnerable point)."""
        offsets = _next_offsets(self.topic, records)
        for msg in records:  # read now, whatever the guarantee does with them next
            self._record_read(msg)
        if self.guarantee == EXACTLY_ONCE:
            return self._exactly_once(consumer, producer, records, offsets, crash)
        if self.guarantee == AT_LEAST_ONCE:
            self._transform(producer, records, None)
            producer.flush(END_CALL_TIMEOUT_S)
            if crash:
                return "crashed"
            return "done" if self._commit_sync(consumer, offsets) else "rejoin"
        if not self._commit_sync(consumer, offsets):
            return "rejoin"  # not committed, so not processed either: the next owner does it
        if crash:
            return "crashed"
        self._transform(producer, records, None)
        producer.flush(END_CALL_TIMEOUT_S)
        return "done"

    def _exactly_once(self, consumer: Any, producer: Producer, records: Sequence[Any],
                      offsets: list[TopicPartition], crash: bool) -> str:
        txn = self._txn
        assert txn is not None
        transaction_id = txn.before_send()
        try:
            self._transform(producer, records, transaction_id)
            self._open_offsets = (offsets, transaction_id)  # if it hangs, they may be in the transaction
            txn.send_offsets(offsets, consumer.consumer_group_metadata())
        except KafkaException as exc:  # the offsets were not sent: no commits rows
            self._open_offsets = None
            error = kafka_error(exc)
            if error is not None and error.retriable() and not error.fatal():
                txn.end(exc)  # still failing when retries ran out: aborted as if abortable
            else:
                txn.send_failed(exc)  # abortable: aborted; fatal: TransactionsEnded
            return "rejoin"
        if crash:
            return "crashed"
        self._open_offsets = None
        try:
            outcome = txn.end()
        except TransactionsEnded as exc:
            self._record_txn_commits(offsets, transaction_id, hist.TXN_UNKNOWN, exc)
            raise
        assert outcome is not None
        self._record_txn_commits(offsets, transaction_id, outcome, None)
        if outcome == hist.TXN_COMMITTED:
            self._progress(offsets)
        return "rejoin" if outcome == hist.TXN_ABORTED else "done"

    def _transform(self, producer: Producer, records: Sequence[Any], transaction_id: str | None) -> None:
        """Produce each record's output, the member's next id, to the output partition
        ``source partition mod output partitions``."""
        for msg in records:
            partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            seq, self.out_seq = self.out_seq, self.out_seq + 1
            message_id = f"{self.member}-{seq}"
            out_partition = partition % self.output_partitions
            key = (self.incarnation, seq)
            self._pending[key] = {
                "message_id": message_id, "producer_id": self.member, "seq": seq, "topic": self.output,
                "partition": out_partition, "zone": self.zone, "send_ts": time.time(),
                "transaction_id": transaction_id, "source_group": self.group, "source_topic": self.topic,
                "source_partition": partition, "source_offset": offset,
                "source_message_id": decode_value(msg.value()),
            }
            producer.produce(self.output, value=message_id.encode(), partition=out_partition,
                             on_delivery=functools.partial(self._delivered, key))
            producer.poll(0)

    def _delivered(self, key: tuple[int, int], err: Any, msg: Any) -> None:
        """An output's delivery report; one of an abandoned incarnation was written already."""
        row = self._pending.pop(key, None)
        if row is None:
            return
        acked = err is None
        offset = int(msg.offset()) if acked and msg is not None and msg.offset() is not None else None
        self.recorder.row("sends", {
            **row, "ack_ts": time.time() if acked else None,
            "outcome": hist.OUTCOME_ACKED if acked else hist.OUTCOME_UNKNOWN,
            "offset": offset, "error": None if acked else error_name(err),
        })
        if acked and offset is not None:
            if row["transaction_id"] is not None and self._txn is not None:
                self._txn.acked(row["transaction_id"], row["partition"], offset)
            else:
                self._committed_outputs({row["partition"]: offset})

    # ---------------------------------------------------------------------- committing

    def _commit_sync(self, consumer: Any, offsets: list[TopicPartition]) -> bool:
        """Commit ``offsets`` and wait; record the answer. True when it was committed."""
        try:
            answered = consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self._record_commits(offsets, exc.args[0] if exc.args else None, "sync")
            return False
        self._record_commits(answered or offsets, None, "sync")
        self._progress(offsets)
        return True

    def _record_txn_commits(self, offsets: list[TopicPartition], transaction_id: str, outcome: str,
                            why: BaseException | str | None) -> None:
        now = time.time()
        error = why if isinstance(why, str) or why is None else error_text(why)
        for tp in offsets:
            self.recorder.row("commits", {
                "group": self.group, "consumer_id": self.member, "assignment": self.assignment,
                "topic": tp.topic, "partition": tp.partition, "offset": tp.offset, "ts": now,
                "mode": hist.COMMIT_TXN, "outcome": COMMIT_OUTCOME[outcome], "error": error,
                "transaction_id": transaction_id,
            })

    def _progress(self, offsets: list[TopicPartition]) -> None:
        """The group has committed up to these offsets: the catch-up counts only those."""
        for tp in offsets:
            self.progress.read(tp.partition, tp.offset - 1)

    def _committed_outputs(self, offsets: Mapping[int, int]) -> None:
        for partition, offset in offsets.items():
            self.outputs_committed[partition] = max(offset, self.outputs_committed.get(partition, -1))

    # ------------------------------------------------------------------------ crashing

    def _abandon(self, why: str = ABANDONED) -> None:
        """Write what the dropped clients never reported: each output still awaiting its
        delivery report as ``unknown`` (``_ABANDONED``), the open transaction and the
        offsets sent to it as unknown (``why``: a crash, or the fatal error or hung call
        that ended the producer). The clients are then simply let go."""
        for key in [k for k in self._pending if k[0] == self.incarnation]:
            row = self._pending.pop(key)
            self.recorder.row("sends", {**row, "ack_ts": None, "outcome": hist.OUTCOME_UNKNOWN,
                                        "offset": None, "error": ABANDONED})
        if self._txn is not None and self._txn.current is not None:
            self._txn.abandon(why)
        if self._open_offsets is not None:
            offsets, transaction_id = self._open_offsets
            self._record_txn_commits(offsets, transaction_id, hist.TXN_UNKNOWN, why)
            self._open_offsets = None


def _next_offsets(topic: str, records: Sequence[Any]) -> list[TopicPartition]:
    """The offsets to commit after ``records``: per partition, one past the last read."""
    after: dict[int, int] = {}
    for msg in records:
        partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
        after[partition] = max(offset + 1, after.get(partition, 0))
    return [TopicPartition(topic, p, o) for p, o in sorted(after.items())]
