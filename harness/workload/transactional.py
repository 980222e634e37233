"""A producer's transactions, each recorded with the outcome the producer was told.

A transactional producer (``transactional.id`` set) writes its messages in transactions of
a fixed size and commits each, or aborts a drawn share of them on purpose, so a history
holds both what must become readable and what must never be. The outcome recorded is the
client's view, chosen as conservatively as send outcomes are (harness/workload/driver.py):

* ``committed`` only when ``commit_transaction()`` returned;
* ``aborted`` only when ``abort_transaction()`` returned, either by choice or because the
  transaction hit an abortable error (a send failed, the commit was refused);
* ``unknown`` when the producer was fenced (a newer instance with the same
  transactional.id took over), hit a fatal error, or could not end the transaction before
  its deadline: the coordinator may have committed or aborted it, and the transaction
  kinds judge neither (docs/HISTORY.md).

Each transaction gets an id of its own (``<producer>.t<n>``) that its sends carry, so the
judge can tell which records belong together. The offsets a transaction's sends were
acknowledged at count as read targets for the consumers' catch-up only once it committed:
an aborted transaction's records are never handed to a read_committed consumer.

A :class:`Hold` makes the producer a zombie on purpose (scenario T2): one full
transaction is flushed, so every record of it is acknowledged and on the log, and then
nothing is asked of the client for a while before the commit. librdkafka's own threads
have nothing left to send, and a transactional producer sends no heartbeat, so to the
coordinator the producer looks stopped: the transaction times out there, and a newer
instance with the same transactional.id can take over before the commit comes.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from harness import history as hist
from harness.cluster.waiting import Problems, WaitTimeout, hold, wait_until_clear
from harness.errors import describe_error

# How long one commit_transaction()/abort_transaction() call may block, and how long a
# transaction may take to end in all (retriable errors are retried until then). A fault
# that takes the transaction coordinator away holds a commit for about a ZooKeeper session
# plus an election; two minutes leaves a wide margin over both.
END_CALL_TIMEOUT_S = 10.0
END_DEADLINE_S = 120.0
INIT_TIMEOUT_S = 60.0
# How long past its own timeout a call may block before it counts as hung. librdkafka's
# send_offsets_to_transaction() can ignore its timeout and block for good while the group
# coordinator is away (confluentinc/librdkafka#5456, #5511; seen in P2).
HUNG_GRACE_S = 20.0
HUNG = "_HUNG"  # the error of a transaction whose producer hung in a call


def call_within(call: Callable[[], object], limit_s: float) -> bool:
    """Run ``call`` in a thread of its own and wait up to ``limit_s``: True when it
    returned (an exception it raised is raised here), False when it is still blocked (it
    is left to its thread, a daemon)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:  # handed to the caller
            outcome.append(exc)

    worker = threading.Thread(target=run, name="bounded-call", daemon=True)
    worker.start()
    worker.join(limit_s)
    if not outcome:
        return False
    if outcome[0] is not None:
        raise outcome[0]
    return True


class TransactionsEnded(Exception):
    """The producer can no longer run transactions (fenced, or a fatal error): its loop
    stops sending. Not a client failure: a zombie's fencing is what Kafka promises."""


@dataclass(frozen=True)
class Hold:
    """Hold the first transaction that fills ``at_s`` seconds or more after ``init``
    returned: flush it, then call nothing on the client for ``for_s`` seconds, then
    commit it as any other. Counted from ``init`` rather than from the thread's start so
    the transactions before the hold are there however long the coordinator took to
    find (a first ``init_transactions`` makes a broker create ``__transaction_state``).
    A scenario spells it as a producer's ``hold_at_s`` and ``hold_s``
    (:class:`harness.workload.driver.ProducerSpec`, which checks the values)."""

    at_s: float
    for_s: float


def kafka_error(exc: KafkaException) -> KafkaError | None:
    """The KafkaError a KafkaException carries, if it carries one."""
    error = exc.args[0] if exc.args else None
    return error if isinstance(error, KafkaError) else None


def error_text(exc: BaseException) -> str:
    error = kafka_error(exc) if isinstance(exc, KafkaException) else None
    return f"{error.name()}: {error.str()}" if error is not None else describe_error(exc)


class Transactions:
    """The transactions of one producer: begin, end (commit or abort), and their rows.

    ``record`` appends a history row; ``on_committed`` receives the highest acknowledged
    offset per partition of each committed transaction. Called from the producer's own
    thread only (delivery reports run there too, inside ``poll``).

    With a ``hold``, ``wait(seconds)`` is how the held transaction lets its time pass (a
    hold, not a wait for a condition: :func:`harness.cluster.waiting.hold` by default); the
    producer loop passes its stop event's ``wait``, so stopping the workload ends a hold
    early. ``clock`` (monotonic seconds) places the hold; tests pass their own."""

    def __init__(self, producer: Producer, producer_id: str, transactional_id: str, size: int,
                 abort_ratio: float, record: Callable[[str, Mapping[str, Any]], None],
                 on_committed: Callable[[Mapping[int, int]], None], hold: Hold | None = None,
                 wait: Callable[[float], object] = hold,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.producer = producer
        self.producer_id = producer_id
        self.transactional_id = transactional_id
        self.size = size
        self.abort_ratio = abort_ratio
        self._record = record
        self._on_committed = on_committed
        self._draw = random.Random(f"kafka-chaos-aborts-{producer_id}")  # same spec, same aborts
        self._count = 0
        self.current: str | None = None  # the open transaction's id
        self._begun = 0.0
        self._in_current = 0
        self._acked: dict[str, dict[int, int]] = {}  # the open transaction's acknowledged offsets
        self._committed: set[str] = set()
        self.outcomes: dict[str, int] = dict.fromkeys(hist.TXN_OUTCOMES, 0)
        self.ended: str | None = None  # why the producer can no longer transact
        self._hold = hold
        self._wait = wait
        self._clock = clock
        self._initialised_at: float | None = None
        self.held: str | None = None  # the transaction a hold kept open, once it did

    def init(self) -> None:
        """Register the transactional.id with its coordinator, fencing any older instance
        and aborting what that instance left open (the zombie fencing Kafka promises)."""
        self.producer.init_transactions(INIT_TIMEOUT_S)
        self._initialised_at = self._clock()

    def before_send(self) -> str:
        """The id of the transaction the next message goes into, beginning one if none is
        open."""
        if self.current is None:
            self.producer.begin_transaction()
            self._count += 1
            self.current = f"{self.producer_id}.t{self._count}"
            self._begun = time.time()
            self._in_current = 0
        return self.current

    def after_send(self) -> None:
        """Count the message just produced; end the transaction once it holds ``size``."""
        self._in_current += 1
        if self._in_current >= self.size:
            self.end()

    def acked(self, transaction_id: str, partition: int, offset: int) -> None:
        """A send of ``transaction_id`` was acknowledged at ``offset``. Delivery reports are
        served by ``poll``, so one may come after its transaction ended: then it is a read
        target at once if the transaction committed, and never if not."""
        if transaction_id in self._committed:
            self._on_committed({partition: offset})
        elif transaction_id == self.current:
            by_partition = self._acked.setdefault(transaction_id, {})
            by_partition[partition] = max(offset, by_partition.get(partition, -1))

    def end(self, error: BaseException | None = None) -> str | None:
        """Commit the open transaction, or abort it (drawn, or because ``error``, an
        abortable error from a send, says it must be); record its row and return its
        outcome (None: no transaction was open). Raises TransactionsEnded when the producer
        can no longer transact."""
        if self.current is None:
            return None
        transaction_id = self.current
        abort = error is not None or self._draw.random() < self.abort_ratio
        # Still the open transaction while it ends: commit_transaction flushes, serving the
        # delivery reports of its last messages, and those offsets are read targets too.
        # (Forgotten, the consumers stopped before the last transaction's final records,
        # which then counted as unseen.)
        if not abort and self._hold_due():
            self._hold_open(transaction_id)
        # After any hold: no commit marker can exist before the commit is asked for, and
        # txn_uncommitted_read judges read_committed polls against this moment.
        requested = time.time()
        outcome, why = self._abort(error) if abort else self._commit()
        self.current = None
        self.outcomes[outcome] += 1
        self._record("transactions", {
            "transaction_id": transaction_id, "producer_id": self.producer_id,
            "transactional_id": self.transactional_id, "begin_ts": self._begun,
            "end_requested_ts": requested,
            "end_ts": time.time() if outcome != hist.TXN_UNKNOWN else None,
            "outcome": outcome, "error": why,
        })
        acked = self._acked.pop(transaction_id, {})
        if outcome == hist.TXN_COMMITTED:
            self._committed.add(transaction_id)
            self._on_committed(acked)
        if self.ended is not None:
            raise TransactionsEnded(self.ended)
        return outcome

    def send_offsets(self, offsets: list[Any], group_metadata: object) -> None:
        """Add a consumer's next offsets to the open transaction
        (``send_offsets_to_transaction``), so they commit or abort with it. Retriable
        errors are retried with the very same offsets and metadata, as librdkafka asks,
        until END_DEADLINE_S; any other error is raised for the caller to end the
        transaction as it demands (``send_failed``). A call still blocked HUNG_GRACE_S
        past its timeout is left blocked, the transaction recorded unknown and the
        producer given up (TransactionsEnded): the client cannot be asked anything more."""
        def attempt(timeout: float) -> None:
            call = functools.partial(self.producer.send_offsets_to_transaction, offsets, group_metadata,
                                     timeout)
            if not call_within(call, timeout + HUNG_GRACE_S):
                self.ended = (f"{HUNG}: send_offsets_to_transaction blocked {timeout + HUNG_GRACE_S:g} s, "
                              f"past its {timeout:g} s timeout")
                self._close_unknown(self.ended)
                raise TransactionsEnded(self.ended)

        failure = self._until_not_retriable(attempt)
        if failure is not None:
            raise failure

    def abandon(self, why: str) -> None:
        """Record the open transaction as unknown and forget it, without a word to the
        client: the producer is being dropped mid-transaction (a crash), and whether the
        coordinator aborts it (a newer instance's init, or its timeout) is Kafka's to say."""
        self._close_unknown(why)

    def _hold_due(self) -> bool:
        """The open transaction is full, about to be committed, and the first to be so
        at least ``hold.at_s`` after ``init``: the one to hold. A transaction ended early
        (the workload stopping, a failed send) is not full and never held."""
        if self._hold is None or self.held is not None or self._initialised_at is None:
            return False
        return self._in_current >= self.size and self._clock() - self._initialised_at >= self._hold.at_s

    def _hold_open(self, transaction_id: str) -> None:
        """Flush, so every record of the transaction is acknowledged and on the log and
        librdkafka has nothing left to send, then call nothing on the client for
        ``hold.for_s``. A flush that cannot finish (``message.timeout.ms`` ends it) still
        leads to the wait: the commit then reports what became of those records."""
        assert self._hold is not None
        self.held = transaction_id
        self.producer.flush(END_CALL_TIMEOUT_S)
        self._wait(self._hold.for_s)

    def _commit(self) -> tuple[str, str | None]:
        failure = self._until_not_retriable(self.producer.commit_transaction)
        if failure is None:
            return hist.TXN_COMMITTED, None
        error = kafka_error(failure)
        if error is not None and error.txn_requires_abort():
            return self._abort(failure)
        self.ended = f"commit failed: {error_text(failure)}"
        return hist.TXN_UNKNOWN, error_text(failure)

    def _abort(self, cause: BaseException | None) -> tuple[str, str | None]:
        why = None if cause is None else error_text(cause)
        if cause is None:
            # An abort on purpose first lets every message be delivered. librdkafka (2.x)
            # may otherwise send EndTxn while its partitions are not yet registered with
            # the coordinator (AddPartitionsToTxn still retrying CONCURRENT_TRANSACTIONS
            # right after the previous commit), and the coordinator, knowing no open
            # transaction, answers INVALID_TXN_STATE, which is fatal to the producer.
            # Delivered, the records are on the log: an abort that hides something.
            self.producer.flush(END_CALL_TIMEOUT_S)
        failure = self._until_not_retriable(self.producer.abort_transaction)
        if failure is None:
            return hist.TXN_ABORTED, why
        self.ended = f"abort failed: {error_text(failure)}"
        return hist.TXN_UNKNOWN, error_text(failure) if why is None else f"{why}; {error_text(failure)}"

    @staticmethod
    def _until_not_retriable(end_call: Callable[[float], None]) -> KafkaException | None:
        """Call ``end_call`` (commit or abort) again after each retriable error, as
        librdkafka asks, for up to END_DEADLINE_S; None once it succeeded, else the error
        that ended the tries (one that demands an abort is never retried)."""
        retried: list[KafkaException] = []

        def not_ended() -> Problems:
            try:
                end_call(END_CALL_TIMEOUT_S)
            except KafkaException as exc:
                error = kafka_error(exc)
                if error is None or not error.retriable() or error.txn_requires_abort():
                    raise
                retried.append(exc)
                return error_text(exc)
            return None

        try:  # asked again at once, as librdkafka asks
            wait_until_clear(not_ended, END_DEADLINE_S, "the transaction to end", interval_s=0)
        except KafkaException as exc:
            return exc
        except WaitTimeout:
            return retried[-1]
        return None

    def send_failed(self, exc: KafkaException) -> None:
        """A produce() call raised: end the transaction as the error demands (abort when
        it is abortable; a fatal error, a fenced producer among them, ends transacting)."""
        error = kafka_error(exc)
        if error is not None and error.txn_requires_abort():
            self.end(exc)
            return
        if error is not None and (error.fatal() or error.code() == KafkaError._FENCED):
            self.ended = f"fenced or fatal: {error_text(exc)}"
            self._close_unknown(error_text(exc))
            raise TransactionsEnded(self.ended) from exc
        raise exc

    def _close_unknown(self, why: str) -> None:
        """Record the open transaction as unknown: the producer cannot end it itself, and
        whether a newer instance's init aborted it is the coordinator's to say."""
        if self.current is None:
            return
        transaction_id, self.current = self.current, None
        self.outcomes[hist.TXN_UNKNOWN] += 1
        self._acked.pop(transaction_id, None)
        self._record("transactions", {
            "transaction_id": transaction_id, "producer_id": self.producer_id,
            "transactional_id": self.transactional_id, "begin_ts": self._begun,
            "end_requested_ts": None, "end_ts": None, "outcome": hist.TXN_UNKNOWN,
            "error": why,
        })
