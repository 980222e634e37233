"""Sampling ZooKeeper during a run, so the report can mark leader, ISR and controller
changes on the timeline and tests can measure unavailability windows.

A background thread snapshots the cluster state every ``interval_s`` and keeps only
changes. Sampling goes through the harness's observer links, which faults never cut; a
read that fails (ZooKeeper itself losing quorum) is retried at the next tick. Such a gap
is recorded, not hidden: one ``zk_unreadable`` event (with the error) when reads start
failing and one ``zk_readable`` event when they succeed again, because "no leader change
seen" means nothing for a stretch in which ZooKeeper could not be read at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Protocol

from harness.cluster.zkstate import ClusterState, PartitionState, ZkObserver


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
        events.append(ClusterEvent(ts, "broker_down", None, None, f"broker {broker} gone from /brokers/ids"))
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


class _Snapshotter(Protocol):
    """What the sampler needs of an observer; ZkObserver is one, tests pass fakes."""

    def snapshot(self, topics: list[str] | None = None) -> ClusterState: ...

    def close(self) -> None: ...


ObserverFactory = Callable[[str], _Snapshotter]


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ZkSampler(threading.Thread):
    """Records every change of live brokers, controller, leaders and ISRs of ``topics``,
    and every stretch during which ZooKeeper could not be read.

    ``observer_factory`` (hosts -> observer) exists so tests can drive the sampling
    without ZooKeeper; it defaults to :class:`ZkObserver`.
    """

    def __init__(
        self,
        hosts: str,
        topics: list[str],
        interval_s: float = 0.25,
        observer_factory: ObserverFactory | None = None,
    ) -> None:
        super().__init__(name="zk-sampler", daemon=True)
        self._hosts = hosts
        self._topics = topics
        self._interval_s = interval_s
        self._factory: ObserverFactory = observer_factory or ZkObserver
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._events: list[ClusterEvent] = []
        self._last: ClusterState | None = None
        self._readable: bool | None = None  # None: no read attempted yet
        self._gap_started: float | None = None

    def run(self) -> None:
        observer: _Snapshotter | None = None
        try:
            while not self._stop_event.is_set():
                observer = self._sample_with(observer)
                self._stop_event.wait(self._interval_s)
        finally:
            if observer is not None:
                observer.close()

    def _sample_with(self, observer: _Snapshotter | None) -> _Snapshotter | None:
        """One tick; connecting is part of reading, so a failed connect is a gap too and
        is retried at the next tick. Returns the observer to use next time."""
        if observer is None:
            try:
                observer = self._factory(self._hosts)
            except Exception as exc:  # ZooKeeper unreachable at start
                self.record_failure(exc, time.time())
                return None
        self.sample(observer.snapshot)
        return observer

    def sample(
        self, snapshot: Callable[[list[str]], ClusterState], now: Callable[[], float] = time.time
    ) -> None:
        """Take one snapshot and record what changed, or the start or end of a gap."""
        try:
            state = snapshot(self._topics)
        except Exception as exc:  # quorum loss or a reconnect: try again next tick
            self.record_failure(exc, now())
            return
        ts = now()
        with self._lock:
            self._events.extend(self._gap_closed(ts) + diff_states(self._last, state, ts))
            self._last = state
            self._readable = True

    def record_failure(self, exc: BaseException, ts: float) -> None:
        """Open a gap unless one is already open: one event per gap, not one per tick."""
        with self._lock:
            if self._readable is False:
                return
            self._readable = False
            self._gap_started = ts
            self._events.append(
                ClusterEvent(ts, ZK_UNREADABLE, None, None, f"ZooKeeper state unreadable: {_describe(exc)}")
            )

    def _gap_closed(self, ts: float) -> list[ClusterEvent]:
        """The event ending an open gap, if one is open (called holding the lock)."""
        if self._readable is not False:
            return []
        since = self._gap_started
        lasted = f" after {ts - since:.1f} s" if since is not None else ""
        self._gap_started = None
        return [ClusterEvent(ts, ZK_READABLE, None, None, f"ZooKeeper state readable again{lasted}")]

    def stop(self) -> list[ClusterEvent]:
        self._stop_event.set()
        self.join(timeout=10)
        return self.events()

    def events(self) -> list[ClusterEvent]:
        with self._lock:
            return list(self._events)
