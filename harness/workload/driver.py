"""Producers and consumers placed in zones, recording everything they saw.

Jepsen's "client" and "generator" in one small module: steady-rate producers send
messages whose value is a unique id (``<producer_id>-<seq>``) and record every send with
its outcome *as the client saw it*; consumers record every record they poll; after the
faults heal, a drain through the harness's observer links reads every partition from
log start to high watermark. All of it goes into a :class:`~harness.history.HistoryWriter`
and nothing downstream ever looks at a client's internals.

Send outcomes are classified conservatively, because a wrong "failed" would make the
checker report an aborted read that never happened: only errors that mean the broker
refused the write before appending it count as failed; timeouts, transport errors and
anything after which a retry may already have been written count as unknown (in doubt).
"""

from __future__ import annotations

import math
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from harness import history as hist
from harness.errors import describe_error
from harness.workload.attempts import AttemptTracker, attempt_logging
from harness.workload.client_settings import (
    CLIENT_KEYS,
    CONSUMER,
    JAVA,
    LIBRDKAFKA,
    PRODUCER,
    check_client,
    client_keys,
    read_client_keys,
)
from harness.workload.clients import (
    ZonePlacement,
    decode_value,
    isolation_level,
    make_consumer,
    make_producer,
)
from harness.workload.group_member import COMMIT_MODES, GroupMember, GroupProgress, Restarts
from harness.workload.java_client import ClientHost, JavaConsumer, JavaProducer
from harness.workload.pipeline import PipelineMember, PipelineSpec
from harness.workload.transactional import Hold, Transactions, TransactionsEnded, kafka_error

# Errors after which the record is certainly not on the log: the broker rejected it
# before appending, or the client never could send it anywhere.
DEFINITIVE_FAILURES = {
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.INVALID_REQUIRED_ACKS,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
}


def classify(error: KafkaError | None, retries_enabled: bool, *, possibly_written: bool = True) -> str:
    """``acked``, ``failed`` (certainly not written) or ``unknown`` (in doubt).

    ``possibly_written`` comes from the producer's failed attempts
    (:class:`~harness.workload.attempts.AttemptTracker`); without that knowledge a send is assumed
    possibly written, so nothing is called failed on a guess. A send is failed only when
    no attempt may have appended it and its final error is a refusal, or it timed out in
    the producer's queue (every attempt refused, or never sent at all).
    """
    if error is None:
        return hist.OUTCOME_ACKED
    if possibly_written:
        return hist.OUTCOME_UNKNOWN
    code = error.code()
    if code in DEFINITIVE_FAILURES or code == KafkaError._MSG_TIMED_OUT:
        return hist.OUTCOME_FAILED
    if not retries_enabled and code in (KafkaError.NOT_LEADER_FOR_PARTITION,
                                        KafkaError.LEADER_NOT_AVAILABLE,
                                        KafkaError.UNKNOWN_TOPIC_OR_PART):
        return hist.OUTCOME_FAILED
    return hist.OUTCOME_UNKNOWN


@dataclass(frozen=True)
class ProducerSpec:
    """One producer: where it sits, how it is configured, how fast it sends. With a
    ``transaction_size`` it is transactional (:mod:`harness.workload.transactional`): its
    messages go in transactions of that many, under ``settings["transactional.id"]``
    (default ``kafka-chaos-<name>``), and a drawn ``abort_ratio`` share of them is aborted
    on purpose.

    ``start_after_s`` keeps it idle that long after the workload starts (before
    ``init_transactions``, for a transactional one): a second instance of a
    transactional.id that must arrive after something happened to the first.
    ``hold_at_s`` with ``hold_s`` makes a transactional producer a zombie: the first
    transaction that fills ``hold_at_s`` or more after its ``init_transactions`` is
    flushed, then held open ``hold_s`` seconds before its commit
    (:class:`~harness.workload.transactional.Hold`)."""

    name: str
    zone: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    rate_per_s: float = 200.0
    partitions: Sequence[int] | None = None  # round-robin over these; None = all
    transaction_size: int | None = None
    abort_ratio: float = 0.0
    start_after_s: float | None = None
    hold_at_s: float | None = None
    hold_s: float | None = None
    client: str = LIBRDKAFKA
    client_version: str | None = None  # the Java client's release; None: the cluster's

    def __post_init__(self) -> None:
        check_client(self.client, self.client_version, PRODUCER, self.settings, f"producer {self.name}")
        if self.client == JAVA and self.transaction_size is not None:
            raise ValueError(f"producer {self.name}: the Java client runs no transactions here yet; "
                             "a transactional producer needs client = \"librdkafka\"")
        if self.rate_per_s <= 0:
            raise ValueError(f"producer {self.name}: rate_per_s must be positive")
        if self.transaction_size is not None and self.transaction_size < 1:
            raise ValueError(f"producer {self.name}: transaction_size must be at least 1")
        if not 0.0 <= self.abort_ratio <= 1.0:
            raise ValueError(f"producer {self.name}: abort_ratio must lie between 0 and 1")
        if self.transaction_size is None and (self.abort_ratio or "transactional.id" in self.settings):
            raise ValueError(f"producer {self.name}: 'abort_ratio' and a 'transactional.id' setting "
                             "need a 'transaction_size'")
        for key, strictly in (("start_after_s", True), ("hold_at_s", False), ("hold_s", True)):
            value = getattr(self, key)
            if value is not None and not _seconds_at_least(value, strictly=strictly):
                wanted = "a positive number of seconds" if strictly else "a number of seconds, 0 or more"
                raise ValueError(f"producer {self.name}: {key} must be {wanted}, not {value!r}")
        if (self.hold_at_s is None) != (self.hold_s is None):
            raise ValueError(f"producer {self.name}: 'hold_at_s' and 'hold_s' go together (when to hold "
                             "a transaction open, and for how long)")
        if self.hold_at_s is not None and self.transaction_size is None:
            raise ValueError(f"producer {self.name}: 'hold_at_s' and 'hold_s' hold a transaction open and "
                             "need a 'transaction_size'")

    @property
    def hold(self) -> Hold | None:
        """The transaction this producer holds open, if it is a zombie on purpose."""
        if self.hold_at_s is None or self.hold_s is None:
            return None
        return Hold(self.hold_at_s, self.hold_s)

    @property
    def transactional_id(self) -> str | None:
        if self.transaction_size is None:
            return None
        return str(self.settings.get("transactional.id", f"kafka-chaos-{self.name}"))

    def to_dict(self) -> dict[str, Any]:
        """The scenario-file table that spells this producer."""
        out: dict[str, Any] = {"name": self.name, "zone": self.zone, "rate_per_s": self.rate_per_s,
                               "settings": dict(self.settings)}
        if self.partitions is not None:
            out["partitions"] = list(self.partitions)
        if self.transaction_size is not None:
            out["transaction_size"] = self.transaction_size
            out["abort_ratio"] = self.abort_ratio
        for key in ("start_after_s", "hold_at_s", "hold_s"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out.update(client_keys(self.client, self.client_version))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProducerSpec:
        """The producer a scenario file's ``[[producers]]`` table spells."""
        unknown = sorted(set(data) - {"name", "zone", "settings", "rate_per_s", "partitions",
                                      "transaction_size", "abort_ratio", "start_after_s", "hold_at_s",
                                      "hold_s", *CLIENT_KEYS})
        if unknown:
            raise ValueError(f"producer {data.get('name')}: unknown key(s) {', '.join(unknown)}")
        partitions = data.get("partitions")
        size = data.get("transaction_size")
        timing: dict[str, Any] = {}
        for key in ("start_after_s", "hold_at_s", "hold_s"):
            value = data.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"producer {data.get('name')}: {key} must be a number of seconds, "
                                 f"not {value!r}")
            timing[key] = None if value is None else float(value)
        return cls(name=str(data["name"]), zone=str(data["zone"]), settings=dict(data.get("settings", {})),
                   rate_per_s=float(data.get("rate_per_s", 200)),
                   partitions=None if partitions is None else tuple(int(p) for p in partitions),
                   transaction_size=None if size is None else int(size),
                   abort_ratio=float(data.get("abort_ratio", 0.0)), **timing,
                   **read_client_keys(data, f"producer {data.get('name')}"))


def _seconds_at_least(value: object, *, strictly: bool) -> bool:
    """A finite number of seconds, above 0 (``strictly``) or at least 0; never a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    return value > 0 if strictly else value >= 0


@dataclass(frozen=True)
class ConsumerSpec:
    """One live consumer. Without a ``group`` it assign()s every partition and reads from
    the start, never committing; with one it is a member of that consumer group
    (:mod:`harness.workload.group_member`): it subscribes, takes the partitions the group
    gives it, resumes from the group's committed offsets and commits as ``commit`` says
    (``none``, ``auto``, ``sync`` or ``async``), restarting every ``restart_every_s``
    seconds if that is set (``restart``: ``clean`` or ``crash``; only between
    ``restart_from_s`` and ``restart_until_s`` seconds into the workload where those
    bound it), and spending ``process_ms`` on each record it reads."""

    name: str
    zone: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    group: str | None = None
    commit: str = "none"
    restart_every_s: float | None = None
    restart: str = "clean"
    restart_from_s: float = 0.0
    restart_until_s: float | None = None
    process_ms: float = 0.0
    # A further topic of the scenario (its name in ``ScenarioSpec.topics``) to read instead
    # of the scenario's own, such as a pipeline's output.
    topic: str | None = None
    client: str = LIBRDKAFKA
    client_version: str | None = None  # the Java client's release; None: the cluster's

    def __post_init__(self) -> None:
        check_client(self.client, self.client_version, CONSUMER, self.settings, f"consumer {self.name}")
        if self.client == JAVA and self.restarts != Restarts():
            raise ValueError(f"consumer {self.name}: the Java client is not restarted here yet; "
                             "'restart_every_s' needs client = \"librdkafka\"")
        if self.client == JAVA and self.commit == "auto":
            raise ValueError(f"consumer {self.name}: the Java consumer reports no automatic commit "
                             "(it commits inside poll() without a callback), so its commits could not be "
                             "judged; use commit = \"sync\" or \"async\", or client = \"librdkafka\"")
        if self.commit not in COMMIT_MODES:
            raise ValueError(f"consumer {self.name}: commit must be one of {', '.join(COMMIT_MODES)}, "
                             f"not {self.commit!r}")
        if self.group is None and (self.commit != "none" or self.restarts != Restarts() or self.process_ms):
            raise ValueError(f"consumer {self.name}: 'commit', 'restart_every_s' and 'process_ms' "
                             "need a 'group'")
        if self.restarts.problems():
            raise ValueError(f"consumer {self.name}: {'; '.join(self.restarts.problems())}")
        if self.process_ms < 0:
            raise ValueError(f"consumer {self.name}: process_ms cannot be negative")

    @property
    def restarts(self) -> Restarts:
        return Restarts(self.restart_every_s, self.restart, self.restart_from_s, self.restart_until_s)

    def to_dict(self) -> dict[str, Any]:
        """The scenario-file table that spells this consumer."""
        out: dict[str, Any] = {"name": self.name, "zone": self.zone, "settings": dict(self.settings)}
        if self.group is not None:
            out["group"] = self.group
            out["commit"] = self.commit
        out.update(self.restarts.to_dict())
        if self.process_ms:
            out["process_ms"] = self.process_ms
        if self.topic is not None:
            out["topic"] = self.topic
        out.update(client_keys(self.client, self.client_version))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConsumerSpec:
        """The consumer a scenario file's ``[[consumers]]`` table spells."""
        where = f"consumer {data.get('name')}"
        unknown = sorted(set(data) - {"name", "zone", "settings", "group", "commit", *Restarts.KEYS,
                                      "process_ms", "topic", *CLIENT_KEYS})
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
        process_ms = data.get("process_ms", 0.0)
        if isinstance(process_ms, bool) or not isinstance(process_ms, int | float):
            raise ValueError(f"{where}: process_ms must be a number, not {process_ms!r}")
        group = data.get("group")
        restarts = Restarts.from_dict(data, where)
        return cls(name=str(data["name"]), zone=str(data["zone"]), settings=dict(data.get("settings", {})),
                   group=None if group is None else str(group), commit=str(data.get("commit", "none")),
                   restart_every_s=restarts.every_s, restart=restarts.how, restart_from_s=restarts.from_s,
                   restart_until_s=restarts.until_s, process_ms=float(process_ms),
                   topic=None if data.get("topic") is None else str(data["topic"]),
                   **read_client_keys(data, where))


# Appending a row takes microseconds (a Parquet part now and then, milliseconds). A wait
# this long means the lock will never come free, and the waiter is usually a delivery
# report inside a producer's flush: waiting on would hang the run, and a signal cannot end
# it (it may land on a librdkafka thread while the main thread sleeps on the lock).
RECORDER_LOCK_WAIT_S = 60.0


class RecorderStuck(RuntimeError):
    """The history recorder's lock was not released: the run cannot record any more."""


class _Recorder:
    """Serialises rows from client threads into the (single-threaded) history writer."""

    def __init__(self, writer: hist.HistoryWriter, lock_wait_s: float = RECORDER_LOCK_WAIT_S) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._lock_wait_s = lock_wait_s
        self._holder: tuple[str, int, str] | None = None  # thread name, ident, table
        self.commits_through: Counter[str] = Counter()  # group -> commits that went through

    def row(self, table: str, row: Mapping[str, Any]) -> None:
        if not self._lock.acquire(timeout=self._lock_wait_s):
            raise RecorderStuck(self._stuck(table))
        try:
            thread = threading.current_thread()
            self._holder = (thread.name, thread.ident or 0, table)
            self._writer.append(table, row)
            if table == "commits" and row.get("outcome") == hist.COMMIT_COMMITTED:
                self.commits_through[str(row["group"])] += 1
        finally:
            self._holder = None
            self._lock.release()

    def _stuck(self, table: str) -> str:
        """Who holds the lock, and where that thread is now, for the error's text."""
        waiter = threading.current_thread().name
        text = (f"history recorder: thread {waiter} waited {self._lock_wait_s:g} s to record a "
                f"{table} row")
        holder = self._holder
        if holder is None:
            return text + "; the lock's holder is unknown (it was taken and never released)"
        name, ident, held_table = holder
        frame = sys._current_frames().get(ident)
        where = ("".join(traceback.format_stack(frame)) if frame is not None
                 else "  (that thread is no longer running)\n")
        return text + f"; thread {name} holds it, recording a {held_table} row, at:\n{where}"


class _ProducerLoop(threading.Thread):
    def __init__(self, spec: ProducerSpec, placement: ZonePlacement, topic: str,
                 partitions: Sequence[int], recorder: _Recorder, stop: threading.Event) -> None:
        super().__init__(name=f"producer-{spec.name}", daemon=True)
        self.spec, self.topic, self.recorder, self.stop = spec, topic, recorder, stop
        self.partitions = list(spec.partitions if spec.partitions is not None else partitions)
        self.attempts = AttemptTracker(spec.name, topic, lambda row: recorder.row("attempts", row))
        transactional = {} if spec.transactional_id is None else {"transactional.id": spec.transactional_id}
        self.producer: Producer = make_producer(
            placement, spec.zone,
            {**spec.settings, **transactional, **attempt_logging(self.attempts, spec.settings)})
        self.retries = int(self.producer_setting("retries", 2**31 - 1)) > 0
        self.closed = False
        self.sent = 0
        self.outcomes: dict[str, int] = {o: 0 for o in hist.OUTCOMES}
        self.last_acked: dict[int, int] = {}  # partition -> highest acknowledged (and committed) offset
        self.error: str | None = None  # why the send loop died, if it did
        self.txn: Transactions | None = None
        self.stopped_transacting: str | None = None  # fenced or fatal: why it stopped early
        if spec.transaction_size is not None and spec.transactional_id is not None:
            self.txn = Transactions(self.producer, spec.name, spec.transactional_id, spec.transaction_size,
                                    spec.abort_ratio, recorder.row, self._committed, spec.hold, stop.wait)

    def _committed(self, acked: Mapping[int, int]) -> None:
        for partition, offset in acked.items():
            self.last_acked[partition] = max(offset, self.last_acked.get(partition, -1))

    def producer_setting(self, key: str, default: Any) -> Any:
        return self.spec.settings.get(key, default)

    def _deliver(self, seq: int, partition: int, send_ts: float, mark: int,
                 transaction_id: str | None) -> Any:
        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            outcome = classify(err, self.retries,
                               possibly_written=self.attempts.possibly_written(partition, mark))
            self.outcomes[outcome] += 1
            acked = outcome == hist.OUTCOME_ACKED
            if acked:
                offset = int(msg.offset() or 0)
                if self.txn is not None and transaction_id is not None:
                    self.txn.acked(transaction_id, partition, offset)  # a read target once committed
                else:
                    self.last_acked[partition] = max(offset, self.last_acked.get(partition, -1))
            self.recorder.row("sends", {
                "message_id": f"{self.spec.name}-{seq}", "producer_id": self.spec.name, "seq": seq,
                "topic": self.topic, "partition": partition, "key": None, "zone": self.spec.zone,
                "send_ts": send_ts, "ack_ts": time.time() if acked else None, "outcome": outcome,
                "offset": msg.offset() if acked else None,
                "error": None if err is None else err.name(), "transaction_id": transaction_id,
            })
        return on_delivery

    def run(self) -> None:
        try:
            # Nothing is sent before init_transactions, so a late instance's client may
            # exist from the start; a stop during the wait ends it before it began.
            if self.spec.start_after_s is not None and self.stop.wait(self.spec.start_after_s):
                return
            if self.txn is not None:
                self.txn.init()
            self._send()
            if self.txn is not None:
                self.txn.end()  # the last transaction ends as the others do
        except TransactionsEnded as ended:  # fenced: it stops, as Kafka promises a zombie does
            self.stopped_transacting = str(ended)
        except BaseException as exc:  # recorded: the scenario fails on a producer that died
            self.error = describe_error(exc)

    def _send(self) -> None:
        interval = 1.0 / self.spec.rate_per_s
        next_send = time.monotonic()
        seq = 0
        while not self.stop.is_set():
            partition = self.partitions[seq % len(self.partitions)]
            message_id = f"{self.spec.name}-{seq}"
            transaction_id = None if self.txn is None else self.txn.before_send()
            try:
                self.producer.produce(self.topic, value=message_id.encode(), partition=partition,
                                      on_delivery=self._deliver(seq, partition, time.time(),
                                                                self.attempts.enqueued(partition),
                                                                transaction_id))
                seq += 1
                self.sent = seq
                if self.txn is not None:
                    self.txn.after_send()
            except BufferError:
                pass  # local queue full while the cluster is down: retry after polling
            except KafkaException as exc:
                if self.txn is None:
                    raise
                self.txn.send_failed(exc)  # abortable: aborted and on; fenced: TransactionsEnded
            self.producer.poll(0)
            next_send += interval
            if next_send < time.monotonic():
                next_send = time.monotonic()  # behind (a slow poll): no burst to catch up
            # poll() returns as soon as it served an event (a delivery report, a log line),
            # so keep polling until the next send is due: the rate is the spec's.
            while (delay := next_send - time.monotonic()) > 0:
                self.producer.poll(delay)

    def drain(self, timeout_s: float) -> None:
        """Wait for every outstanding delivery report (each ends acked, failed or unknown),
        then close the producer so its threads do not outlive the cluster (and print
        connection errors after teardown). A producer that still holds messages is left
        open: closing it would flush again without a bound. A transactional producer that
        met a fatal error (a fenced zombie) raises it from every flush; librdkafka has
        already failed what it held, so that error ends the wait."""
        if self.closed:
            return
        try:
            self.producer.flush(timeout_s)
        except KafkaException as exc:
            error = kafka_error(exc)
            if self.txn is None or error is None or not error.fatal():
                raise
        if len(self.producer) == 0:
            self.producer.close()
            self.closed = True


class _ConsumerLoop(threading.Thread):
    """One consumer polling every partition from the start until told to finish; it then
    reads on until it has polled every offset the producers had acknowledged (or a
    deadline passes), so a clean run leaves no acknowledged message unseen."""

    def __init__(self, spec: ConsumerSpec, placement: ZonePlacement, topic: str,
                 partitions: Sequence[int], recorder: _Recorder) -> None:
        super().__init__(name=f"consumer-{spec.name}", daemon=True)
        self.spec, self.topic, self.recorder, self.placement = spec, topic, recorder, placement
        self.consumer: Consumer = make_consumer(placement, spec.zone, spec.settings)
        self.isolation = isolation_level(spec.settings)
        self.consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        self.polled = 0
        self.next_offsets: dict[int, int] = {}  # partition -> last polled offset + 1
        self._finish = threading.Event()
        self._targets: dict[int, int] = {}
        self._deadline = 0.0
        self._clamped = False
        self.error: str | None = None  # why the read loop died, if it did

    def finish(self, targets: Mapping[int, int], timeout_s: float) -> None:
        """Stop once every ``partition -> offset`` in ``targets`` was polled, or after
        ``timeout_s``."""
        self._targets = dict(targets)
        self._deadline = time.monotonic() + timeout_s
        self._finish.set()

    def caught_up(self) -> bool:
        return all(self.next_offsets.get(p, 0) > offset for p, offset in self._targets.items())

    def _done(self) -> bool:
        if not self._finish.is_set():
            return False
        if not self._clamped:
            self._clamp_to_log_end()
        return self.caught_up() or time.monotonic() >= self._deadline

    def _clamp_to_log_end(self) -> None:
        """An acknowledged offset past the log's end now (an unclean election truncated
        it) can never be read: wait only for what the log still holds.

        The end is the high watermark, asked for at read_uncommitted whatever this
        consumer's level. A read_committed consumer's own query answers the last stable
        offset, and right after a commit returns that is still short of the transaction's
        records: the coordinator writes the commit markers after it answers EndTxn. Clamped
        to it, the consumer stopped before the last transaction and its records counted as
        unseen (T3, about one run in three)."""
        self._clamped = True
        reader = make_consumer(self.placement, self.spec.zone, {"isolation.level": hist.READ_UNCOMMITTED})
        try:
            for partition, target in list(self._targets.items()):
                try:
                    _, high = reader.get_watermark_offsets(
                        TopicPartition(self.topic, partition), timeout=5, cached=False)
                except Exception:  # unreachable leader: keep waiting for the target until the deadline
                    continue
                self._targets[partition] = min(target, high - 1)
        finally:
            reader.close()

    def run(self) -> None:
        try:
            self._read()
        except BaseException as exc:  # recorded: the scenario fails on a consumer that died
            self.error = describe_error(exc)
        finally:
            self.consumer.close()

    def _read(self) -> None:
        while not self._done():
            msg = self.consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            value = msg.value()
            partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            self.next_offsets[partition] = max(offset + 1, self.next_offsets.get(partition, 0))
            self.recorder.row("polls", {
                "consumer_id": self.spec.name, "zone": self.spec.zone, "topic": self.topic,
                "partition": partition, "offset": offset,
                "message_id": decode_value(value), "poll_ts": time.time(), "poll_seq": self.polled,
                "isolation": self.isolation,
            })
            self.polled += 1


class Workload:
    """Producers, consumers and pipeline members running beside a fault, writing one
    history. Producers write ``topic``; pipelines read it and write further topics
    (``topics``: name -> real topic and partitions), which consumers may read instead."""

    def __init__(self, placement: ClientHost, topic: str, partitions: Sequence[int],
                 writer: hist.HistoryWriter, producers: Sequence[ProducerSpec],
                 consumers: Sequence[ConsumerSpec] = (), pipelines: Sequence[PipelineSpec] = (),
                 topics: Mapping[str, tuple[str, Sequence[int]]] | None = None) -> None:
        self.topic = topic
        # a consumer's topic name (None: the scenario's own) -> the real topic and its partitions
        self.topics: dict[str | None, tuple[str, list[int]]] = {None: (topic, list(partitions))}
        self.topics.update({name: (real, list(parts)) for name, (real, parts) in (topics or {}).items()})
        self.recorder = _Recorder(writer)
        self._stop = threading.Event()
        self.producers: list[_ProducerLoop | JavaProducer] = [
            JavaProducer(p, placement, topic, partitions, self.recorder.row, self._stop) if p.client == JAVA
            else _ProducerLoop(p, placement, topic, partitions, self.recorder, self._stop)
            for p in producers]
        groups = {g: GroupProgress() for g in {c.group for c in consumers} | {p.group for p in pipelines}
                  if g is not None}
        # Groups whose members commit: pipelines always do (offsets or transactions).
        committing = {c.group for c in consumers if c.group is not None and c.commit != "none"}
        self.committing_groups = sorted(committing | {p.group for p in pipelines})
        self.consumers: list[_ConsumerLoop | GroupMember | JavaConsumer] = []
        for c in consumers:
            real, parts = self.topics[c.topic]
            self.consumers.append(
                JavaConsumer(c, placement, real, parts, self.recorder.row,
                             None if c.group is None else groups[c.group]) if c.client == JAVA
                else _ConsumerLoop(c, placement, real, parts, self.recorder) if c.group is None
                else GroupMember(c.name, c.zone, c.settings, c.group, c.commit, c.restarts,
                                 c.process_ms, placement, real, self.recorder, groups[c.group]))
        self.pipelines = [
            PipelineMember(p.name, p.zone, p.group, topic, self.topics[p.output][0],
                           len(self.topics[p.output][1]), p.guarantee, p.batch, p.restarts, p.abort_ratio,
                           p.transactional_id, p.consumer_settings, p.producer_settings,
                           placement, self.recorder, groups[p.group])
            for p in pipelines]

    def start(self) -> Workload:
        for thread in [*self.consumers, *self.pipelines, *self.producers]:
            thread.start()
        return self

    def stop(self, drain_timeout_s: float = 30.0, catch_up_timeout_s: float = 30.0) -> None:
        """Stop sending, wait for outstanding deliveries, then let the pipelines commit up
        to the last acknowledged offset of every partition, and the consumers read up to
        it, or up to the highest committed output of the topic they read (each stage at
        most ``catch_up_timeout_s``)."""
        self._stop.set()
        for producer in self.producers:
            producer.join()
            producer.drain(drain_timeout_s)
        targets = self.last_acked()
        for pipeline in self.pipelines:
            pipeline.finish(targets, catch_up_timeout_s)
        for pipeline in self.pipelines:
            pipeline.join()
        outputs: dict[str, dict[int, int]] = {}
        for pipeline in self.pipelines:
            highest = outputs.setdefault(pipeline.output, {})
            for partition, offset in pipeline.outputs_committed.items():
                highest[partition] = max(offset, highest.get(partition, -1))
        for consumer in self.consumers:
            consumer.finish(targets if consumer.topic == self.topic else outputs.get(consumer.topic, {}),
                            catch_up_timeout_s)
        for consumer in self.consumers:
            consumer.join()

    def groups_yet_to_commit(self) -> list[str]:
        """Committing groups none of whose commits has gone through yet."""
        return [g for g in self.committing_groups if self.recorder.commits_through[g] == 0]

    def last_acked(self) -> dict[int, int]:
        """partition -> the highest offset any producer had acknowledged."""
        highest: dict[int, int] = {}
        for producer in self.producers:
            for partition, offset in producer.last_acked.items():
                highest[partition] = max(offset, highest.get(partition, -1))
        return highest

    def client_errors(self) -> dict[str, str]:
        """Clients whose loop died, and why: their part of the history stopped early."""
        loops: list[_ProducerLoop | _ConsumerLoop | GroupMember | JavaProducer | JavaConsumer] = [
            *self.producers, *self.consumers, *self.pipelines]
        return {_name(loop): loop.error for loop in loops if loop.error is not None}

    def java_clients(self) -> dict[str, dict[str, Any]]:
        """Each Java client's record (release, effective configuration, stderr), by name."""
        return {loop.spec.name: loop.process.summary() for loop in [*self.producers, *self.consumers]
                if isinstance(loop, JavaProducer | JavaConsumer)}

    def lagging_consumers(self) -> list[str]:
        """Consumers that stopped before reading every acknowledged offset (for a group
        member: before its group had read them all)."""
        return [_name(c) for c in [*self.consumers, *self.pipelines] if not c.caught_up()]

    def outcomes(self) -> dict[str, int]:
        total = {o: 0 for o in hist.OUTCOMES}
        for producer in self.producers:
            for outcome, count in producer.outcomes.items():
                total[outcome] += count
        return total


def _name(loop: _ProducerLoop | _ConsumerLoop | GroupMember | JavaProducer | JavaConsumer) -> str:
    return loop.member if isinstance(loop, GroupMember) else loop.spec.name


def drain_final_log(bootstrap: str, topic: str, partitions: Sequence[int], writer: hist.HistoryWriter,
                    timeout_s: float = 60.0, read_committed_pass: bool = False) -> int:
    """Read every partition from log start to high watermark into ``final_log``, as a
    read_uncommitted reader gets it (aborted transactions' records included). With
    ``read_committed_pass`` (a run with transactional producers) a read_committed reader
    drains the same ranges too, and each record's ``read_committed`` says whether that
    reader was given it; otherwise the column stays null (both readers get the same)."""
    logged = _drain(bootstrap, topic, partitions, hist.READ_UNCOMMITTED, timeout_s)
    visible = ({(p, o) for p, o, _ in _drain(bootstrap, topic, partitions, hist.READ_COMMITTED, timeout_s)}
               if read_committed_pass else None)
    for partition, offset, message_id in logged:
        given = None if visible is None else (partition, offset) in visible
        writer.append("final_log", {"topic": topic, "partition": partition, "offset": offset,
                                    "message_id": message_id, "read_committed": given})
    return len(logged)


# transaction.timeout.ms's default (librdkafka and Kafka): a read_committed offset look-up
# waits while a partition has pending transactional offsets, at most until the open
# transaction times out and is aborted; the margin covers the abort's own round trips.
FINAL_OFFSETS_TIMEOUT_S = 60.0 + 30.0


def record_final_offsets(bootstrap: str, groups: Sequence[tuple[str, str, Sequence[int]]],
                         writer: hist.HistoryWriter, timeout_s: float = FINAL_OFFSETS_TIMEOUT_S) -> None:
    """Write each (group, topic, partitions)'s committed offsets to ``final_offsets``, as
    the broker holds them after healing. The look-up is read_committed, so the broker
    answers only once no transaction has offsets pending for the partition: what a member
    joining now would resume from. The reader names the group but never subscribes, so
    it does not join it."""
    for group, topic, partitions in groups:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                             "isolation.level": hist.READ_COMMITTED, "log_level": 3})
        try:
            committed = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=timeout_s)
        finally:
            consumer.close()
        looked_up = time.time()
        for tp in committed:
            if tp.error is not None:
                raise KafkaException(tp.error)
            writer.append("final_offsets", {"group": group, "topic": tp.topic, "partition": tp.partition,
                                            "offset": tp.offset if tp.offset >= 0 else None, "ts": looked_up})


def _drain(bootstrap: str, topic: str, partitions: Sequence[int], isolation: str,
           timeout_s: float) -> list[tuple[int, int, str | None]]:
    """(partition, offset, message id) of every record a reader at ``isolation`` is given
    from each partition's log start to its end. The end is the partition-EOF event, not
    the last record's offset: a transaction's commit marker takes the last offset and is
    never handed to a client, and a read_committed reader stops at the last stable offset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafka-chaos-drain",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True, "isolation.level": isolation,
                         "log_level": 3})
    records: list[tuple[int, int, str | None]] = []
    try:
        for partition in partitions:
            tp = TopicPartition(topic, partition)
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout_s)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
            deadline = time.monotonic() + timeout_s
            eof: int | None = None
            while (eof is None or eof < high) and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        eof = int(msg.offset() or 0)
                    continue
                records.append((partition, int(msg.offset() or 0), decode_value(msg.value())))
            # A read_committed reader may be held at the last stable offset by a transaction
            # nobody ended until its timeout aborts it: what lies past it was not readable.
            end = eof if eof is not None and (eof >= high or isolation == hist.READ_COMMITTED) else None
            if end is None:
                reached = max((o for p, o, _ in records if p == partition), default=low - 1) + 1
                raise TimeoutError(
                    f"drain of {topic}-{partition} ({isolation}) stopped at {reached} of {high}")
    finally:
        consumer.close()
    return records
