"""Sampling the cluster's metadata during a run: one record of the cluster state over
time, for the history, the report's timeline, the scenario bounds and the tests' "when"
questions.

A background thread snapshots the cluster state (live brokers, controller and its epoch,
leader, leader epoch, ISR and replicas of every partition of ``topics``) every
``interval_s`` through the harness's observer links, which faults never cut, and keeps
every *distinct* snapshot with both clocks: wall time (``ts``, comparable with the
history's send and acknowledgement times) and monotonic time (``mono``, comparable with
the ``mono`` of fault events). A snapshot equal to the previous one only extends how
long that state is known to have held (``last_mono``), so a long quiet run stays small.

The state is read where the metadata mode keeps it (:mod:`harness.cluster.metadata`; in
ZooKeeper mode, the znodes). A read that fails (the metadata quorum itself losing
quorum, a reconnect) is retried at the next tick. Such a gap is recorded, not hidden: one
unreadable record (with the error) when reads start failing, ended by the next
successful read, because "no leader change seen" means nothing for a stretch in which
the metadata could not be read at all.

Everything else is derived from these records, so there is one truth:

* :meth:`StateSampler.rows` - the rows of the history's ``cluster_state`` table (one per
  sample and partition, see docs/HISTORY.md); the composition layer writes them, this
  layer does not import the history;
* :meth:`StateSampler.events` - the :class:`ClusterEvent` list of the report's timeline
  markers, by :func:`diff_states` between consecutive samples plus the gap events;
* :meth:`StateSampler.first`, :meth:`StateSampler.wait_for`, :meth:`StateSampler.between` - when
  a predicate on the state first held, for tests measuring failover times.

The quorum nodes' roles (a ZooKeeper server's mode: leader / follower / none) need one
TCP round trip per node, and a frozen node answers only at the timeout; they are
therefore read by a second thread every ``modes_interval_s`` (1 s by default, not every
tick) and attached to the next snapshot, so a slow node never delays the state sampling.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from harness.cluster.state import ClusterState, PartitionState
from harness.cluster.waiting import Problems, WaitTimeout, wait_until_clear
from harness.errors import describe_error

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster


@dataclass(frozen=True)
class ClusterEvent:
    """One observed change: when, what kind, where, and a one-line description."""

    ts: float
    kind: str  # leader | isr | controller | broker_up | broker_down | zk_unreadable | zk_readable
    topic: str | None
    partition: int | None
    detail: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def diff_states(before: ClusterState | None, after: ClusterState, ts: float) -> list[ClusterEvent]:
    """The events that turn ``before`` into ``after`` (everything is new if no before)."""
    events: list[ClusterEvent] = []
    old_brokers = set(before.live_brokers) if before else set()
    for broker in sorted(set(after.live_brokers) - old_brokers):
        events.append(ClusterEvent(ts, "broker_up", None, None, f"broker {broker} registered"))
    for broker in sorted(old_brokers - set(after.live_brokers)):
        events.append(ClusterEvent(ts, "broker_down", None, None, f"broker {broker} no longer registered"))
    new_controller = (after.controller, after.controller_epoch)
    if before is None or (before.controller, before.controller_epoch) != new_controller:
        was = "none" if before is None else f"{before.controller} (epoch {before.controller_epoch})"
        now = f"{after.controller} (epoch {after.controller_epoch})"
        events.append(ClusterEvent(ts, "controller", None, None, f"controller {was} -> {now}"))
    for key, new in sorted(after.partitions.items()):
        old: PartitionState | None = before.partitions.get(key) if before else None
        if old is None or (old.leader, old.leader_epoch) != (new.leader, new.leader_epoch):
            was = "none" if old is None else str(old.leader)
            events.append(ClusterEvent(ts, "leader", new.topic, new.partition,
                                       f"leader {was} -> {new.leader} (epoch {new.leader_epoch})"))
        if old is None or set(old.isr) != set(new.isr):
            was = "none" if old is None else str(sorted(old.isr))
            events.append(ClusterEvent(ts, "isr", new.topic, new.partition,
                                       f"isr {was} -> {sorted(new.isr)}"))
    return events


ZK_UNREADABLE = "zk_unreadable"
ZK_READABLE = "zk_readable"

# The columns of one cluster_state row, in the order of the history's CLUSTER_STATE_SCHEMA
# (harness/history/schema.py; this layer may not import it, a unit test holds them equal).
ROW_COLUMNS = ("sample", "ts", "mono", "readable", "error", "controller", "controller_epoch",
               "live_brokers", "zk_modes", "topic", "partition", "leader", "leader_epoch", "isr",
               "replicas", "migration_phase")

ZkModes = Mapping[str, str | None]
Sample = tuple[float, ClusterState]  # (monotonic time, state): what the "when" questions answer


@dataclass(frozen=True)
class StateRecord:
    """One entry of the sampler's record: a distinct snapshot, or the start of a stretch
    during which ZooKeeper could not be read (``state`` None, ``error`` set).

    ``last_mono`` is the last read that still returned this state: the state is known to
    have held from ``mono`` to ``last_mono``.
    """

    index: int
    ts: float
    mono: float
    state: ClusterState | None
    zk_modes: ZkModes | None = None
    error: str | None = None
    last_mono: float | None = None

    @property
    def readable(self) -> bool:
        return self.state is not None

    def held_until(self) -> float:
        return self.mono if self.last_mono is None else self.last_mono

    def with_modes(self) -> ClusterState | None:
        """The snapshot with the ZooKeeper modes it was recorded with, for conditions
        that ask whether a ZooKeeper node serves."""
        return None if self.state is None else dataclasses.replace(self.state, zk_modes=self.zk_modes)

    def rows(self) -> list[dict[str, Any]]:
        """This record as cluster_state rows: one per partition (one without a partition
        when the snapshot has none), or one unreadable row with the error."""
        base: dict[str, Any] = dict.fromkeys(ROW_COLUMNS)
        base.update(sample=self.index, ts=self.ts, mono=self.mono, readable=self.readable,
                    error=self.error)
        state = self.state
        if state is None:
            return [base]
        modes = None if self.zk_modes is None else json.dumps(dict(self.zk_modes), sort_keys=True)
        base.update(controller=state.controller, controller_epoch=state.controller_epoch,
                    live_brokers=list(state.live_brokers), zk_modes=modes,
                    migration_phase=state.migration_phase)
        parts = [p for _, p in sorted(state.partitions.items())]
        if not parts:
            return [base]
        return [{**base, "topic": p.topic, "partition": p.partition, "leader": p.leader,
                 "leader_epoch": p.leader_epoch, "isr": list(p.isr), "replicas": list(p.replicas)}
                for p in parts]


def events_of(records: Sequence[StateRecord]) -> list[ClusterEvent]:
    """The report's change events, derived from the records: :func:`diff_states` between
    consecutive readable snapshots (across gaps), one event when a gap opens (with its
    error) and one when the next read closes it."""
    events: list[ClusterEvent] = []
    last: ClusterState | None = None
    gap: StateRecord | None = None
    for record in records:
        if record.state is None:
            gap = record
            events.append(ClusterEvent(record.ts, ZK_UNREADABLE, None, None,
                                       f"metadata unreadable: {record.error}"))
            continue
        if gap is not None:
            events.append(ClusterEvent(record.ts, ZK_READABLE, None, None,
                                       f"ZooKeeper state readable again after {record.ts - gap.ts:.1f} s"))
            gap = None
        events += diff_states(last, record.state, record.ts)
        last = record.state
    return events


class _Snapshotter(Protocol):
    """What the sampler needs of a reader (a metadata mode's; tests pass fakes)."""

    def snapshot(self, topics: list[str] | None = None) -> ClusterState: ...

    def close(self) -> None: ...


def _unreadable() -> _Snapshotter:
    raise RuntimeError("this sampler has no reader: it is fed by hand")


class StateSampler(threading.Thread):
    """Records every distinct cluster state of ``topics``, and every stretch during which
    the metadata could not be read; answers when a predicate on the state first held.

    ``open_reader`` opens a reader (a failure to open is a gap too); tests pass fakes,
    or none when they feed :meth:`sample` themselves. ``role_readers`` (quorum node ->
    a read of its role) turns on reading the quorum's roles. Use :meth:`for_cluster`
    to sample a running cluster, and the sampler as a context manager (started on
    entry, stopped on exit) in tests.
    """

    def __init__(
        self,
        open_reader: Callable[[], _Snapshotter] | None,
        topics: list[str],
        interval_s: float = 0.25,
        role_readers: Mapping[str, Callable[[], str | None]] | None = None,
        modes_interval_s: float = 1.0,
    ) -> None:
        super().__init__(name="state-sampler", daemon=True)
        self._open_reader = open_reader or _unreadable
        self._topics = topics
        self.interval_s = interval_s
        self._role_readers = dict(role_readers or {})
        self._modes_interval_s = modes_interval_s
        self._modes: ZkModes | None = None
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._records: list[StateRecord] = []
        self._modes_thread: threading.Thread | None = None

    @classmethod
    def for_cluster(cls, cluster: Cluster, topics: list[str], interval_s: float = 0.05,
                    modes: bool = True) -> StateSampler:
        """A sampler of ``cluster`` through its observer links, with the quorum's roles
        unless ``modes`` is False. The default interval is the one failover tests time with."""
        return cls(cluster.metadata.open_reader, topics, interval_s,
                   role_readers=cluster.metadata.role_readers() if modes else None)

    # -- sampling ----------------------------------------------------------------------
    def start(self) -> None:
        if self._role_readers:
            self._modes_thread = threading.Thread(target=self._read_modes, name="quorum-roles", daemon=True)
            self._modes_thread.start()
        super().start()

    def run(self) -> None:
        observer: _Snapshotter | None = None
        try:
            while not self._stop_event.is_set():
                observer = self._sample_with(observer)
                self._stop_event.wait(self.interval_s)
        finally:
            if observer is not None:
                observer.close()

    def _read_modes(self) -> None:
        """Refresh the quorum's roles at their own pace; the next snapshot carries them."""
        while not self._stop_event.is_set():
            self.set_modes({name: read() for name, read in self._role_readers.items()})
            self._stop_event.wait(self._modes_interval_s)

    def set_modes(self, modes: ZkModes) -> None:
        """The modes the next snapshot is recorded with (the mode thread, or a test)."""
        with self._lock:
            self._modes = dict(modes)

    def _sample_with(self, observer: _Snapshotter | None) -> _Snapshotter | None:
        """One tick; connecting is part of reading, so a failed connect is a gap too and
        is retried at the next tick. Returns the observer to use next time."""
        if observer is None:
            try:
                observer = self._open_reader()
            except Exception as exc:  # the metadata unreachable at start
                self.record_failure(exc, time.time(), time.monotonic())
                return None
        self.sample(observer.snapshot)
        return observer

    def sample(
        self,
        snapshot: Callable[[list[str]], ClusterState],
        now: Callable[[], float] = time.time,
        mono: Callable[[], float] | None = None,
    ) -> None:
        """Take one snapshot and record it if it differs from the last record, or the
        start of a gap. Both clocks are read when the read starts: the state was seen
        no earlier than that. ``mono`` defaults to the monotonic clock, or to ``now``
        when a test scripts ``now`` alone (one scripted clock for both)."""
        ts = now()
        taken = (time.monotonic if now is time.time else now)() if mono is None else mono()
        try:
            state = snapshot(self._topics)
        except Exception as exc:  # quorum loss or a reconnect: try again next tick
            self.record_failure(exc, ts, taken)
            return
        with self._lock:
            last = self._records[-1] if self._records else None
            # A migration's phase is not part of a state's identity, but a new phase
            # starts a new record, so conditions on the phase see it.
            if (last is not None and last.state == state and last.zk_modes == self._modes
                    and last.state is not None and last.state.migration_phase == state.migration_phase):
                self._records[-1] = StateRecord(last.index, last.ts, last.mono, last.state,
                                                last.zk_modes, None, taken)
                return
            self._records.append(StateRecord(len(self._records), ts, taken, state, self._modes,
                                             None, taken))

    def record_failure(self, exc: BaseException, ts: float, mono: float | None = None) -> None:
        """Open a gap unless one is already open: one record per gap, not one per tick."""
        with self._lock:
            if self._records and self._records[-1].state is None:
                return
            self._records.append(StateRecord(len(self._records), ts, ts if mono is None else mono,
                                             None, None, describe_error(exc)))

    def stop(self) -> list[ClusterEvent]:
        """Stop both threads (idempotent) and return the derived events."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=10)
        if self._modes_thread is not None and self._modes_thread.is_alive():
            self._modes_thread.join(timeout=10)
        return self.events()

    def __enter__(self) -> StateSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what was recorded -------------------------------------------------------------
    def records(self) -> list[StateRecord]:
        with self._lock:
            return list(self._records)

    def events(self) -> list[ClusterEvent]:
        return events_of(self.records())

    def rows(self) -> list[dict[str, Any]]:
        """The history's cluster_state rows (docs/HISTORY.md), in sample order."""
        return [row for record in self.records() for row in record.rows()]

    def latest(self, since: float = 0.0) -> ClusterState | None:
        """The state the last read returned, if that read began at or after ``since``
        (monotonic); None while ZooKeeper cannot be read, before the first read, or when
        nothing was read since then. A fault schedule's conditions look here, so they add
        no ZooKeeper reads of their own and never judge a state from before a gap, or
        from before the schedule's last action changed the cluster."""
        with self._lock:
            last = self._records[-1] if self._records else None
        if last is None or last.state is None or last.held_until() < since:
            return None
        return last.with_modes()

    @property
    def samples(self) -> list[Sample]:
        """Every distinct readable snapshot as (monotonic time first seen, state)."""
        return [(r.mono, r.state) for r in self.records() if r.state is not None]

    def between(self, start: float, end: float | None = None) -> list[Sample]:
        """The states seen from ``start`` to ``end`` (monotonic): the state in force at
        ``start``, if a read confirmed it there, dated ``start``, then every later one
        first seen by ``end``."""
        found: list[Sample] = []
        for record in self.records():
            if record.state is None or (end is not None and record.mono > end):
                continue
            if record.mono >= start:
                found.append((record.mono, record.state))
            elif record.held_until() >= start:
                found.append((start, record.state))
        return found

    def first(self, predicate: Callable[[ClusterState], bool], after: float = 0.0) -> Sample | None:
        """The first state at or after ``after`` (monotonic) for which ``predicate`` holds:
        (when first seen, state), or (``after``, state) if it already held then."""
        for taken, state in self.between(after):
            if predicate(state):
                return taken, state
        return None

    def wait_for(
        self, predicate: Callable[[ClusterState], bool], timeout_s: float, after: float = 0.0
    ) -> Sample | None:
        """Block until a state satisfies ``predicate`` (or the timeout); return it as
        :meth:`first` does, or None when none did in time."""
        found: list[Sample] = []

        def not_seen() -> Problems:
            hit = self.first(predicate, after)
            if hit is None:
                return "no sampled state satisfies it yet"
            found.append(hit)
            return None

        try:
            wait_until_clear(not_seen, timeout_s, "a sampled state that satisfies the condition",
                             interval_s=self.interval_s)
        except WaitTimeout:
            return None
        return found[-1]
