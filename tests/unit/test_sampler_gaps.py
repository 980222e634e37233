"""ZooKeeper sampling gaps: a stretch of failed reads is recorded once, with its error,
and its end is recorded when reads succeed again - never silently retried."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from harness.cluster.sampler import ROW_COLUMNS, ZK_READABLE, ZK_UNREADABLE, ClusterEvent, StateSampler
from harness.cluster.state import ClusterState, PartitionState
from harness.history import SCHEMAS


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


def _clock(value: float) -> Callable[[], float]:
    """A clock stopped at ``value``."""
    return lambda: value


def _play(steps: list[ClusterState | Exception]) -> list[ClusterEvent]:
    sampler = StateSampler(None, ["t"])
    snapshot = _Script(steps)
    for tick in range(len(steps)):
        sampler.sample(snapshot, now=_clock(100.0 + tick))
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


def test_changes_after_a_gap_closed_do_not_close_it_again() -> None:
    events = _play([_state(0), OSError("down"), _state(1), _state(2), _state(0)])
    assert _gaps(events) == [(101.0, ZK_UNREADABLE), (102.0, ZK_READABLE)]
    assert [e.ts for e in events if e.kind == "leader"] == [100.0, 102.0, 103.0, 104.0]


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

    def factory() -> _FakeObserver:
        for err in attempts:
            raise err
        made.append(_FakeObserver([_state(), OSError("lost"), _state()], done))
        return made[-1]

    sampler = StateSampler(factory, ["t"], interval_s=0.001)
    sampler.start()
    assert done.wait(5)
    events = sampler.stop()
    assert [k for _, k in _gaps(events)] == [ZK_UNREADABLE, ZK_READABLE, ZK_UNREADABLE, ZK_READABLE]
    assert "ConnectionRefusedError: refused" in events[0].detail
    assert made and made[0].closed


def test_the_public_constructor_is_unchanged() -> None:
    sampler = StateSampler(None, ["t"], 0.25)
    assert sampler.events() == [] and sampler.daemon


# ------------------------------------------------- one record: rows, events, "when" answers


def _two_partitions(leader: int, epoch: int, isr: tuple[int, ...], controller: int = 1,
                    brokers: tuple[int, ...] = (0, 1, 2)) -> ClusterState:
    parts = {("t", p): PartitionState("t", p, leader if p == 0 else 2, epoch if p == 0 else 0,
                                      isr if p == 0 else (0, 1, 2), 1, (0, 1, 2)) for p in (0, 1)}
    return ClusterState(brokers, controller, controller, parts)


# A scripted run: steady, the leader of p0 killed (broker 0 gone, p0 offline), a new leader
# elected, ZooKeeper unreadable for two reads, then back with the same state.
SCRIPT: list[tuple[float, ClusterState | Exception]] = [
    (10.0, _two_partitions(0, 5, (0, 1, 2))),
    (11.0, _two_partitions(0, 5, (0, 1, 2))),
    (12.0, _two_partitions(0, 5, (0, 1, 2))),
    (13.0, _two_partitions(-1, 6, (0,), brokers=(1, 2))),
    (14.0, _two_partitions(1, 7, (1, 2), controller=2, brokers=(1, 2))),
    (15.0, ConnectionError("connection loss")),
    (16.0, ConnectionError("connection loss")),
    (17.0, _two_partitions(1, 7, (1, 2), controller=2, brokers=(1, 2))),
    (18.0, _two_partitions(1, 7, (1, 2), controller=2, brokers=(1, 2))),
]


def _scripted(script: Sequence[tuple[float, ClusterState | Exception]] = SCRIPT,
              modes: Mapping[float, Mapping[str, str | None]] | None = None) -> StateSampler:
    """A sampler fed the script, wall time ts and monotonic time ts - 10 (two clocks)."""
    sampler = StateSampler(None, ["t"])
    snapshot = _Script([step for _, step in script])
    for ts, _ in script:
        if modes and ts in modes:
            sampler.set_modes(modes[ts])
        sampler.sample(snapshot, now=_clock(ts), mono=_clock(ts - 10.0))
    return sampler


def test_only_distinct_snapshots_are_kept_with_both_clocks_and_how_long_they_held() -> None:
    records = _scripted().records()
    assert [(r.ts, r.mono, r.readable) for r in records] == [
        (10.0, 0.0, True), (13.0, 3.0, True), (14.0, 4.0, True), (15.0, 5.0, False), (17.0, 7.0, True)]
    assert [r.held_until() for r in records] == [2.0, 3.0, 4.0, 5.0, 8.0]
    assert records[3].error == "ConnectionError: connection loss"
    assert [r.index for r in records] == [0, 1, 2, 3, 4]


def test_rows_are_one_per_sample_and_partition_and_one_per_gap() -> None:
    rows = _scripted(modes={10.0: {"zookeeper-0": "leader", "zookeeper-1": None}}).rows()
    assert [(r["sample"], r["partition"], r["readable"]) for r in rows] == [
        (0, 0, True), (0, 1, True), (1, 0, True), (1, 1, True), (2, 0, True), (2, 1, True),
        (3, None, False), (4, 0, True), (4, 1, True)]
    offline = rows[2]
    assert offline == {
        "sample": 1, "ts": 13.0, "mono": 3.0, "readable": True, "error": None, "controller": 1,
        "controller_epoch": 1, "live_brokers": [1, 2],
        "zk_modes": '{"zookeeper-0": "leader", "zookeeper-1": null}',
        "topic": "t", "partition": 0, "leader": -1, "leader_epoch": 6, "isr": [0], "replicas": [0, 1, 2],
        "migration_phase": None}
    gap = rows[6]
    assert (gap["ts"], gap["mono"], gap["error"]) == (15.0, 5.0, "ConnectionError: connection loss")
    assert all(gap[c] is None for c in ("controller", "live_brokers", "topic", "leader", "isr", "zk_modes"))
    assert [r["ts"] for r in rows if r["partition"] == 1] == [10.0, 13.0, 14.0, 17.0]


def test_a_mode_change_alone_is_a_new_sample() -> None:
    steady = [(float(t), _two_partitions(0, 5, (0, 1, 2))) for t in range(10, 14)]
    modes: dict[float, dict[str, str | None]] = {10.0: {"zookeeper-0": "leader"}, 12.0: {"zookeeper-0": None}}
    records = _scripted(steady, modes).records()
    assert [(r.ts, r.zk_modes) for r in records] == [(10.0, {"zookeeper-0": "leader"}),
                                                      (12.0, {"zookeeper-0": None})]
    assert _scripted(steady).records()[0].zk_modes is None  # modes not read: null, not "none"


def test_the_mode_thread_reads_every_zookeeper_node_and_snapshots_carry_the_modes() -> None:
    done = threading.Event()
    read: list[str] = []

    def mode(address: str) -> str | None:
        read.append(address)
        return "leader" if address.endswith(":1") else None

    sampler = StateSampler(lambda: _FakeObserver([_state()] * 50, done), ["t"], interval_s=0.001,
                           role_readers={"zookeeper-0": lambda: mode("127.0.0.1:1"),
                                         "zookeeper-1": lambda: mode("127.0.0.1:2")},
                           modes_interval_s=0.001)
    with sampler:
        assert done.wait(5)
    assert {"127.0.0.1:1", "127.0.0.1:2"} <= set(read)
    assert any(r.zk_modes == {"zookeeper-0": "leader", "zookeeper-1": None} for r in sampler.records())
    assert not sampler.is_alive()


def test_events_are_derived_from_the_samples_by_diff_states() -> None:
    sampler = _scripted()
    events = sampler.events()
    assert [(e.ts, e.kind) for e in events if e.kind not in ("leader", "isr")] == [
        (10.0, "broker_up"), (10.0, "broker_up"), (10.0, "broker_up"), (10.0, "controller"),
        (13.0, "broker_down"), (14.0, "controller"), (15.0, ZK_UNREADABLE), (17.0, ZK_READABLE)]
    assert [(e.ts, e.detail) for e in events if e.kind == "leader" and e.partition == 0] == [
        (10.0, "leader none -> 0 (epoch 5)"), (13.0, "leader 0 -> -1 (epoch 6)"),
        (14.0, "leader -1 -> 1 (epoch 7)")]
    readable = next(e for e in events if e.kind == ZK_READABLE)
    assert readable.detail == "ZooKeeper state readable again after 2.0 s"
    assert sampler.stop() == events  # never started: stopping returns the same derivation


def test_first_and_wait_for_answer_when_a_predicate_first_held() -> None:
    sampler = _scripted()

    def offline(s: ClusterState) -> bool:
        return s.partitions[("t", 0)].leader == -1

    def led_by_1(s: ClusterState) -> bool:
        return s.partitions[("t", 0)].leader == 1

    assert sampler.first(offline) == (3.0, SCRIPT[3][1])
    assert sampler.first(offline, after=3.5) is None  # the offline state ended at 4.0
    assert sampler.first(led_by_1, after=0.5) == (4.0, SCRIPT[4][1])
    # Already true at ``after``: answered with ``after`` (a read at or after it saw it) ...
    assert sampler.first(lambda s: 0 in s.live_brokers, after=1.5) == (1.5, SCRIPT[0][1])
    # ... but not when no read confirmed it at or after ``after``.
    assert sampler.first(lambda s: 0 in s.live_brokers, after=2.5) is None
    assert sampler.first(led_by_1, after=6.0) == (7.0, SCRIPT[7][1])  # the read closing the gap
    started = time.monotonic()
    assert sampler.wait_for(led_by_1, timeout_s=5, after=0.5) == (4.0, SCRIPT[4][1])
    assert sampler.wait_for(offline, timeout_s=0.05, after=5.0) is None
    assert time.monotonic() - started < 2


def test_between_starts_with_the_state_in_force_and_ends_at_end() -> None:
    sampler = _scripted()
    assert [t for t, _ in sampler.between(1.0, 4.0)] == [1.0, 3.0, 4.0]
    assert [t for t, _ in sampler.between(3.0)] == [3.0, 4.0, 7.0]
    assert [t for t, _ in sampler.between(5.5)] == [7.0]  # nothing readable was in force at 5.5
    assert [t for t, _ in sampler.samples] == [0.0, 3.0, 4.0, 7.0]


def test_wait_for_sees_samples_a_running_sampler_takes() -> None:
    done = threading.Event()
    moved = ClusterState((0, 1, 2), 1, 1, {("t", 0): PartitionState("t", 0, 2, 9, (2,), 1, (0, 1, 2))})
    steps: list[ClusterState | Exception] = [_state() if i < 20 else moved for i in range(1020)]
    observer = _FakeObserver(steps, done)
    with StateSampler(lambda: observer, ["t"], interval_s=0.001) as sampler:
        found = sampler.wait_for(lambda s: s.partitions[("t", 0)].leader == 2, timeout_s=5)
    assert found is not None and found[1] == moved and observer.closed


def test_rows_are_the_history_tables_columns() -> None:
    assert tuple(SCHEMAS["cluster_state"].names) == ROW_COLUMNS
    assert all(tuple(row) == ROW_COLUMNS for row in _scripted().rows())
