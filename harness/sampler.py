"""Sampling ZooKeeper during a run, so the report can mark leader, ISR and controller
changes on the timeline and tests can measure unavailability windows.

A background thread snapshots the cluster state every ``interval_s`` and keeps only
changes. Sampling goes through the harness's observer links, which faults never cut; a
read that fails (ZooKeeper itself losing quorum) is retried at the next tick.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from harness.zkstate import ClusterState, PartitionState, ZkObserver


@dataclass(frozen=True)
class ClusterEvent:
    """One observed change: when, what kind, where, and a one-line description."""

    ts: float
    kind: str  # leader | isr | controller | broker_up | broker_down
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


class ZkSampler(threading.Thread):
    """Records every change of live brokers, controller, leaders and ISRs of ``topics``."""

    def __init__(self, hosts: str, topics: list[str], interval_s: float = 0.25) -> None:
        super().__init__(name="zk-sampler", daemon=True)
        self._hosts = hosts
        self._topics = topics
        self._interval_s = interval_s
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._events: list[ClusterEvent] = []
        self._last: ClusterState | None = None

    def run(self) -> None:
        observer = ZkObserver(self._hosts)
        try:
            while not self._stop_event.is_set():
                try:
                    state = observer.snapshot(self._topics)
                except Exception:  # quorum loss or a reconnect: try again next tick
                    state = None
                if state is not None:
                    events = diff_states(self._last, state, time.time())
                    with self._lock:
                        self._events.extend(events)
                        self._last = state
                self._stop_event.wait(self._interval_s)
        finally:
            observer.close()

    def stop(self) -> list[ClusterEvent]:
        self._stop_event.set()
        self.join(timeout=10)
        return self.events()

    def events(self) -> list[ClusterEvent]:
        with self._lock:
            return list(self._events)
