"""A consumer-group member: it subscribes, rebalances, commits, and records all of it.

Where :class:`~harness.workload.driver` consumers ``assign()`` every partition and never
commit, a group member lets the group coordinator hand it partitions, resumes each from
the group's committed offset, and commits what it read in one of three ways:

- ``auto``: librdkafka commits the offsets of delivered records every
  ``auto.commit.interval.ms`` (1 s here unless a scenario says otherwise) and on close;
- ``sync``: after recording each batch it read (its "processing"), it commits the batch's
  next offsets and waits for the answer;
- ``async``: the same, without waiting; the answer arrives in the commit callback.

Everything the member saw goes into the history: each read with its group, assignment
number and receive order (``polls``); each partition assigned, revoked or lost, with the
committed offset it resumes from (``rebalances``); each commit's outcome (``commits``).
The judge reads poll skips, backward polls, commit regressions and commits beyond what
was read from those rows alone.

A member may restart every ``restart_every_s`` seconds, inside a window of the workload
if ``restart_from_s`` / ``restart_until_s`` bound it (:class:`Restarts`), which with
several members makes a rebalance storm. A ``clean`` restart ``close()``s the consumer:
it leaves the group, so the group rebalances at once, and automatic commits commit one
last time. A ``crash`` lets the consumer go as a killed process would: no LeaveGroup, no
final commit; the group keeps the ghost until its session times out, and only then
hands its partitions on. The period runs from each rejoin, and a member that is not yet
back (its new incarnation not yet handed an assignment) does not restart again. A
restart of either kind interrupts the batch being processed
(``process_ms`` per record): the records not yet processed are never read, although
automatic commits may have committed them - the hazard of automatic commits that the
judge catches as commits beyond what was read, and that committing after processing
avoids.

Each restart is recorded in the history's ``faults`` table, where the report draws it
beside the schedule's faults: an ``inject`` row (fault ``member_restart`` or
``member_crash``, the member as target) when the member leaves, a ``heal`` row when its
next incarnation is handed its first assignment. A crash's window therefore lasts about
a session timeout (less the time since the ghost's last heartbeat), a clean restart's
about one rebalance.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from harness import history as hist
from harness.cluster.waiting import hold, wait_for_answer
from harness.errors import describe_error
from harness.workload.clients import ZonePlacement, decode_value, isolation_level, make_consumer

# How a member commits; "none" reads without ever committing.
COMMIT_MODES = ("none", "auto", "sync", "async")
AUTO_COMMIT_INTERVAL_MS = 1000
# How long a member keeps asking for the committed offsets of a new assignment before it
# gives up (and dies, failing the scenario): a coordinator moving after a broker loss
# answers within a session timeout or two.
RESUME_LOOKUP_TIMEOUT_S = 60.0
BATCH = 500
RESTARTS = ("clean", "crash")
# The faults-table name of each kind of restart (module doc).
RESTART_FAULTS = {"clean": "member_restart", "crash": "member_crash"}


@dataclass(frozen=True)
class Restarts:
    """When a member restarts, and how: every ``every_s`` seconds (None: never), only
    while the workload is between ``from_s`` and ``until_s`` seconds old (``until_s``
    None: to its end), ``clean`` or as a ``crash`` (module doc). A window lets a scenario
    storm the group and then watch it settle while the workload still runs."""

    every_s: float | None = None
    how: str = "clean"
    from_s: float = 0.0
    until_s: float | None = None

    # How a scenario file (and ``to_dict``) spells each field.
    KEYS = ("restart_every_s", "restart", "restart_from_s", "restart_until_s")

    def problems(self) -> list[str]:
        """What is wrong with these restarts, one phrase each (the caller names the client)."""
        out = []
        if self.how not in RESTARTS:
            out.append(f"restart must be one of {', '.join(RESTARTS)}, not {self.how!r}")
        if self.every_s is not None and not (_finite(self.every_s) and self.every_s > 0):
            out.append(f"restart_every_s must be positive, not {self.every_s!r}")
        if not (_finite(self.from_s) and self.from_s >= 0):
            out.append(f"restart_from_s must be 0 or more, not {self.from_s!r}")
        if self.until_s is not None and not (_finite(self.until_s) and self.until_s > self.from_s):
            out.append(f"restart_until_s must come after restart_from_s ({self.from_s:g}), "
                       f"not {self.until_s!r}")
        if self.every_s is None and (self.how != "clean" or self.from_s or self.until_s is not None):
            out.append("'restart', 'restart_from_s' and 'restart_until_s' need 'restart_every_s'")
        return out

    @property
    def any(self) -> bool:
        return self.every_s is not None

    def to_dict(self) -> dict[str, Any]:
        """The scenario-file keys that spell these restarts (none when there are none)."""
        if self.every_s is None:
            return {}
        out: dict[str, Any] = {"restart_every_s": self.every_s}
        if self.how != "clean":
            out["restart"] = self.how
        if self.from_s:
            out["restart_from_s"] = self.from_s
        if self.until_s is not None:
            out["restart_until_s"] = self.until_s
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Restarts:
        """The restarts a client table spells; a value of the wrong type is a ValueError
        naming ``where`` and the key."""
        for key in ("restart_every_s", "restart_from_s", "restart_until_s"):
            value = data.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"{where}: {key} must be a number, not {value!r}")
        how = data.get("restart", "clean")
        if not isinstance(how, str):
            raise ValueError(f"{where}: restart must be one of {', '.join(RESTARTS)}, not {how!r}")
        every, until = data.get("restart_every_s"), data.get("restart_until_s")
        return cls(every_s=None if every is None else float(every), how=how,
                   from_s=float(data.get("restart_from_s", 0.0)),
                   until_s=None if until is None else float(until))

    def next_due(self, now: float, started: float) -> float:
        """When the next restart falls due (monotonic seconds) for a member that started
        at ``started`` and (re)joined at ``now``; infinity once the window has closed."""
        if self.every_s is None:
            return math.inf
        due = max(now + self.every_s, started + self.from_s)
        return math.inf if self.until_s is not None and due >= started + self.until_s else due


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def member_settings(group: str, commit: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The consumer settings a member's group and commit mode impose over the scenario's
    (shown on the scenario page as the harness's)."""
    out: dict[str, Any] = {"group.id": group, "enable.auto.commit": commit == "auto"}
    if commit == "auto":
        out["auto.commit.interval.ms"] = settings.get("auto.commit.interval.ms", AUTO_COMMIT_INTERVAL_MS)
    return out


class Recorder(Protocol):
    """Where a member's rows go (the workload's thread-safe recorder)."""

    def row(self, table: str, row: Mapping[str, Any]) -> None: ...


class GroupProgress:
    """What a group has read, shared by its members: partition -> next offset to read.
    The workload's final catch-up waits for the group, not for each member, since each
    member holds only some of the partitions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.next_offsets: dict[int, int] = {}

    def read(self, partition: int, offset: int) -> None:
        with self._lock:
            self.next_offsets[partition] = max(offset + 1, self.next_offsets.get(partition, 0))

    def caught_up(self, targets: Mapping[int, int]) -> bool:
        with self._lock:
            return all(self.next_offsets.get(p, 0) > offset for p, offset in targets.items())


class GroupMember(threading.Thread):
    """One member of ``group``, reading ``topic`` until told to finish."""

    def __init__(self, name: str, zone: str, settings: Mapping[str, Any], group: str, commit: str,
                 restarts: Restarts, process_ms: float, placement: ZonePlacement, topic: str,
                 recorder: Recorder, progress: GroupProgress) -> None:
        super().__init__(name=f"member-{name}", daemon=True)
        if commit not in COMMIT_MODES:  # ConsumerSpec checks it first; this guards direct use
            raise ValueError(f"consumer {name}: commit must be one of {', '.join(COMMIT_MODES)}")
        self.member, self.zone, self.group, self.commit_mode = name, zone, group, commit
        self.settings, self.placement, self.topic = dict(settings), placement, topic
        self.isolation = isolation_level(settings)
        if restarts.problems():  # the specs check it first; this guards direct use
            raise ValueError(f"consumer {name}: {'; '.join(restarts.problems())}")
        self.restarts = restarts
        self.process_s = process_ms / 1000
        self._began = time.monotonic()
        self._rejoin_at = math.inf
        self._returning: str | None = None  # the restart whose heal the next assignment records
        self.recorder, self.progress = recorder, progress
        self.make_consumer = make_consumer  # tests hand in a stand-in
        self.assignment = -1  # the member's assignment number; the first one is 0
        self.poll_seq = 0
        self.polled = 0
        self.error: str | None = None  # why the member died, if it did
        self._finish = threading.Event()
        self._targets: dict[int, int] = {}
        self._deadline = 0.0
        self._closing = False  # inside ``_close``: an assignment delivered now is not read

    # ------------------------------------------------------------------ the workload's side

    def finish(self, targets: Mapping[int, int], timeout_s: float) -> None:
        """Stop once the group has read every ``partition -> offset`` in ``targets``, or
        after ``timeout_s``."""
        self._targets = dict(targets)
        self._deadline = time.monotonic() + timeout_s
        self._finish.set()

    def caught_up(self) -> bool:
        return self.progress.caught_up(self._targets)

    def _done(self) -> bool:
        return self._finish.is_set() and (self.caught_up() or time.monotonic() >= self._deadline)

    # ------------------------------------------------------------------------- reading

    def run(self) -> None:
        consumer: Consumer | None = None
        try:
            consumer = self._join()
            self._rejoin_at = self._next_restart()
            while not self._done():
                if self._restart_due():
                    self._left(self.restarts.how)
                    if self.restarts.how == "clean":
                        self._close(consumer)  # leaves the group: the others rebalance at once
                    # A crash: the client is let go. Its last reference goes here, and
                    # confluent-kafka destroys a consumer that was never closed without
                    # closing it (rd_kafka_destroy_flags with NO_CONSUMER_CLOSE): no
                    # LeaveGroup, no final commit, as if the process had been killed.
                    consumer = None
                    consumer = self._join()
                    self._rejoin_at = self._next_restart()
                self._read_batch(consumer)
        except BaseException as exc:  # recorded: the scenario fails on a member that died
            self.error = describe_error(exc)
        finally:
            if consumer is not None:
                with contextlib.suppress(RuntimeError):  # closed by a restart that failed to rejoin
                    self._close(consumer)

    def _restart_due(self) -> bool:
        """Time to leave and rejoin: the period has passed since the last (re)join and the
        member is back in the group (its next incarnation was handed an assignment, which
        after a crash takes a session timeout); never once the workload is finishing, so
        the group settles and can catch up."""
        return (time.monotonic() >= self._rejoin_at and self._returning is None
                and not self._finish.is_set())

    def _next_restart(self) -> float:
        return self.restarts.next_due(time.monotonic(), self._began)

    def _left(self, how: str) -> None:
        """Record a restart's start (module doc); its heal comes with the next assignment."""
        self._returning = RESTART_FAULTS[how]
        self._record_restart("inject")

    def _record_restart(self, action: str) -> None:
        assert self._returning is not None
        self.recorder.row("faults", {"ts": time.time(), "mono": time.monotonic(), "fault": self._returning,
                                     "action": action, "targets": json.dumps([self.member]),
                                     "outcome": "ok"})

    def _close(self, consumer: Consumer) -> None:
        """Leave the group. librdkafka can deliver one more assignment from inside
        ``close()``: the member reads nothing under it, and the handle being destroyed
        answers a look-up of committed offsets only with ``_DESTROY``, which then raised out
        of ``close()`` and ended the member's thread. So ``_on_assign`` leaves alone what a
        close delivers."""
        self._closing = True
        try:
            consumer.close()
        finally:
            self._closing = False

    def _join(self) -> Consumer:
        settings = {**self.settings, **member_settings(self.group, self.commit_mode, self.settings),
                    "on_commit": self._on_commit}
        consumer = self.make_consumer(self.placement, self.zone, settings)
        consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                           on_lost=self._on_lost)
        return consumer

    def _read_batch(self, consumer: Consumer) -> None:
        """Fetch a batch and process it record by record: a record counts as read (a
        ``polls`` row) once processed, which takes ``process_ms``. A restart that falls
        due mid-batch interrupts the processing, as a crash or a redeploy would: the rest
        of the batch is never processed, although librdkafka stored (and with automatic
        commits will commit) the offsets of everything it delivered."""
        processed: dict[int, int] = {}  # partition -> next offset after this batch
        for msg in consumer.consume(num_messages=BATCH, timeout=0.2):
            if self._restart_due():
                return  # interrupted: nothing more is processed, nothing committed by hand
            if msg.error():
                continue
            if self.process_s:
                hold(self.process_s)  # processing takes its time, whatever the cluster does
            partition, offset = self._record_read(msg)
            self.progress.read(partition, offset)
            processed[partition] = offset + 1
        if processed and self.commit_mode in ("sync", "async"):
            self._commit(consumer, processed)

    def _record_read(self, msg: Any) -> tuple[int, int]:
        """Write the ``polls`` row of a record the member processed; its (partition, offset)."""
        partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
        self.recorder.row("polls", {
            "consumer_id": self.member, "zone": self.zone, "topic": self.topic,
            "partition": partition, "offset": offset, "message_id": decode_value(msg.value()),
            "poll_ts": time.time(), "group": self.group, "assignment": self.assignment,
            "poll_seq": self.poll_seq, "isolation": self.isolation,
        })
        self.poll_seq += 1
        self.polled += 1
        return partition, offset

    # ------------------------------------------------------------------------ committing

    def _commit(self, consumer: Consumer, processed: Mapping[int, int]) -> None:
        offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(processed.items())]
        if self.commit_mode == "async":
            consumer.commit(offsets=offsets, asynchronous=True)  # answered in _on_commit
            return
        try:
            answered = consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self._record_commits(offsets, exc.args[0] if exc.args else None, "sync")
            return
        self._record_commits(answered or offsets, None, "sync")

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """librdkafka's answer to an automatic or asynchronous commit. A synchronous one is
        recorded from its return instead, so no commit is recorded twice."""
        if self.commit_mode == "sync":
            return
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return  # an automatic commit with nothing new to commit: no request was sent
        self._record_commits(partitions, err, self.commit_mode)

    def _record_commits(self, partitions: list[TopicPartition], err: Any, mode: str) -> None:
        now = time.time()
        for tp in partitions:
            if tp.offset < 0:
                continue  # a partition with nothing to commit
            error = tp.error or err
            self.recorder.row("commits", {
                "group": self.group, "consumer_id": self.member, "assignment": self.assignment,
                "topic": tp.topic, "partition": tp.partition, "offset": tp.offset, "ts": now,
                "mode": mode, "outcome": hist.COMMIT_FAILED if error else hist.COMMIT_COMMITTED,
                "error": error_name(error),
            })

    # ------------------------------------------------------------------------ rebalances

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._closing:  # delivered by close(): nothing is read under it (``_close``)
            return
        if self._returning is not None:  # the first assignment after a restart: back in the group
            self._record_restart("heal")
            self._returning = None
        self.assignment += 1
        resume = self._committed(consumer, partitions)
        self._record_rebalance(hist.REBALANCE_ASSIGNED, partitions, resume)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._record_rebalance(hist.REBALANCE_REVOKED, partitions, {})

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._record_rebalance(hist.REBALANCE_LOST, partitions, {})

    def _committed(self, consumer: Consumer, partitions: list[TopicPartition]) -> dict[int, int | None]:
        """The group's committed offsets for a new assignment: where the member resumes.
        Asked until the coordinator answers; a member that cannot learn them dies rather
        than record a guess the judge would hold its reads against."""
        if not partitions:
            return {}
        answered = wait_for_answer(lambda: consumer.committed(partitions, timeout=10),
                                   RESUME_LOOKUP_TIMEOUT_S,
                                   f"group {self.group}'s committed offsets for member {self.member}",
                                   transient=(KafkaException,), interval_s=0.5)
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in answered}

    def _record_rebalance(self, event: str, partitions: list[TopicPartition],
                          resume: Mapping[int, int | None]) -> None:
        now = time.time()
        for tp in partitions:
            self.recorder.row("rebalances", {
                "group": self.group, "consumer_id": self.member, "ts": now, "event": event,
                "assignment": max(self.assignment, 0), "topic": tp.topic, "partition": tp.partition,
                "resume_offset": resume.get(tp.partition),
            })


def error_name(error: Any) -> str | None:
    if error is None:
        return None
    return error.name() if isinstance(error, KafkaError) else str(error)

