"""ZooKeeper sampling gaps: a stretch of failed reads is recorded once, with its error,
and its end is recorded when reads succeed again - never silently retried."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from harness.cluster.sampler import ZK_READABLE, ZK_UNREADABLE, ClusterEvent, ZkSampler
from harness.cluster.zkstate import ClusterState, PartitionState


def _state(leader: int = 0) -> ClusterState:
    part = PartitionState(
        topic="t", partition=0, leader=leader, leader_epoch=leader, isr=(0, 1, 2),
        controller_epoch=1, replicas=(0, 1, 2),
    )
    return ClusterState(
        live_brokers=(0, 1, 2), controller=1, controller_epoch=1, partitions={("t", 0): part}
    )


class _Script:
    """A snapshot function playing a script: a ClusterState is returned, an exception raised."""

    def __init__(self, steps: list[ClusterState | Exception]) -> None:
        self._steps: Iterator[ClusterState | Exception] = iter(steps)

    def __call__(self, topics: list[str] | None = None) -> ClusterState:
        step = next(self._steps)
        if isinstance(step, Exception):
            raise step
        return step


def _play(steps: list[ClusterState | Exception]) -> list[ClusterEvent]:
    sampler = ZkSampler("zk:2181", ["t"])
    snapshot = _Script(steps)
    for tick in range(len(steps)):
        sampler.sample(snapshot, now=lambda tick=tick: 100.0 + tick)
    return sampler.events()


def _gaps(events: list[ClusterEvent]) -> list[tuple[float, str]]:
    return [(e.ts, e.kind) for e in events if e.kind in (ZK_UNREADABLE, ZK_READABLE)]


def test_a_gap_after_success_is_one_pair_of_events_with_the_error() -> None:
    lost = ConnectionError("connection loss")
    events = _play([_state(), lost, lost, lost, _state(), _state()])
    assert _gaps(events) == [(101.0, ZK_UNREADABLE), (104.0, ZK_READABLE)]
    unreadable = next(e for e in events if e.kind == ZK_UNREADABLE)
    assert "ConnectionError: connection loss" in unreadable.detail
    readable = next(e for e in events if e.kind == ZK_READABLE)
    assert "after 3.0 s" in readable.detail


def test_failing_from_the_start_is_a_gap_too() -> None:
    events = _play([TimeoutError("no quorum"), _state()])
    assert _gaps(events) == [(100.0, ZK_UNREADABLE), (101.0, ZK_READABLE)]
    assert events[0].kind == ZK_UNREADABLE  # before the first state's broker_up events


def test_two_gaps_give_two_pairs_and_changes_are_still_diffed() -> None:
    err = OSError("down")
    events = _play([_state(0), err, _state(1), err, err, _state(1)])
    assert _gaps(events) == [
        (101.0, ZK_UNREADABLE),
        (102.0, ZK_READABLE),
        (103.0, ZK_UNREADABLE),
        (105.0, ZK_READABLE),
    ]
    assert [e.ts for e in events if e.kind == "leader"] == [100.0, 102.0]


def test_reads_that_never_fail_record_no_gap() -> None:
    assert _gaps(_play([_state(), _state(), _state()])) == []


def test_a_gap_still_open_at_the_end_has_no_readable_event() -> None:
    assert _gaps(_play([_state(), RuntimeError("x"), RuntimeError("y")])) == [(101.0, ZK_UNREADABLE)]


class _FakeObserver:
    def __init__(self, steps: list[ClusterState | Exception], done: threading.Event) -> None:
        self._script = _Script(steps)
        self._left = len(steps)
        self._done = done
        self.closed = False

    def snapshot(self, topics: list[str] | None = None) -> ClusterState:
        self._left -= 1
        if self._left == 0:
            self._done.set()
        if self._left < 0:
            return _state()
        return self._script(topics)

    def close(self) -> None:
        self.closed = True


def test_the_thread_records_a_failed_connect_and_retries_it() -> None:
    """The default path: the observer is built in the thread, and building it can fail."""
    done = threading.Event()
    made: list[_FakeObserver] = []
    attempts = iter([ConnectionRefusedError("refused")])

    def factory(hosts: str) -> _FakeObserver:
        assert hosts == "zk:2181"
        for err in attempts:
            raise err
        made.append(_FakeObserver([_state(), OSError("lost"), _state()], done))
        return made[-1]

    sampler = ZkSampler("zk:2181", ["t"], interval_s=0.001, observer_factory=factory)
    sampler.start()
    assert done.wait(5)
    events = sampler.stop()
    assert [k for _, k in _gaps(events)] == [ZK_UNREADABLE, ZK_READABLE, ZK_UNREADABLE, ZK_READABLE]
    assert "ConnectionRefusedError: refused" in events[0].detail
    assert made and made[0].closed


def test_the_public_constructor_is_unchanged() -> None:
    sampler = ZkSampler("zk:2181", ["t"], 0.25)
    assert sampler.events() == [] and sampler.daemon
