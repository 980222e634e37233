"""Schedules: validated as a whole, saved and loaded without loss, run in a stable order."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss

from faults.base import Fault
from faults.conditions import BrokerGone, Condition, ControllerChanged, IsrFull, LeavesIsr
from faults.errors import ScheduleError
from faults.events import EventLog
from faults.schedule import TICK_S, Schedule, ScheduleEntry, ScheduleRun
from harness.cluster.state import ClusterState, PartitionState
from topologies import Topology, load_topology

ENTRIES: list[dict[str, Any]] = [
    {"start_s": 0.0, "duration_s": 2.0, "fault": "pause", "target": {"follower_of": ["t", 0]}},
    {"start_s": 0.5, "duration_s": 0.0, "fault": "delete_controller", "timeout_s": 30.0},
    {
        "start_s": 2.0,
        "duration_s": 1.0,
        "fault": "cut",
        "links": {"isolate": {"zone": "c"}},
        "mode": "blackhole",
    },
]

TOML = """
version = 1

[[entries]]
start_s = 0
duration_s = 2
fault = "pause"
target = { follower_of = ["t", 0] }

[[entries]]
start_s = 0.5
fault = "delete_controller"
timeout_s = 30

[[entries]]
start_s = 2
duration_s = 1
fault = "cut"
mode = "blackhole"
links = { isolate = { zone = "c" } }
"""


def test_a_schedule_round_trips_through_json_with_its_recorded_events(tmp_path: Path) -> None:
    schedule = Schedule.from_dict({"version": 1, "entries": ENTRIES})
    log = EventLog()
    log.record("pause follower of t-0", "inject", ("kafka-1",), "ok")
    path = schedule.save(tmp_path / "run.json", log)
    loaded = Schedule.load(path)
    assert loaded.entries == schedule.entries
    assert [e.to_dict() for e in loaded.entries] == ENTRIES
    assert loaded.recorded == log.events


def test_toml_and_json_describe_the_same_schedule(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(TOML)
    assert Schedule.load(tmp_path / "s.toml").entries == Schedule.from_dict({"entries": ENTRIES}).entries


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"start_s": 0, "fault": "explode"}], "entry 1: unknown fault 'explode'"),
        (
            [ENTRIES[0], {"start_s": 1, "duration_s": -3, "fault": "delete_controller"}],
            "entry 2: duration_s must not be negative",
        ),
        ([{"start_s": -1, "fault": "delete_controller"}], "start_s must not be negative"),
        ([{"fault": "delete_controller"}], "needs 'start_s'"),
        ([{"start_s": "soon", "fault": "delete_controller"}], "start_s must be float"),
        ([{"start_s": 0, "fault": "kill", "target": {"zone": 3}}], "must be str"),
    ],
)
def test_bad_entries_are_refused_naming_the_entry(entries: list[Any], message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        Schedule.from_dict({"entries": entries})


def test_files_that_do_not_parse_get_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"entries": [')
    with pytest.raises(ScheduleError, match=r"bad.json is not valid JSON"):
        Schedule.load(tmp_path / "bad.json")
    (tmp_path / "bad.toml").write_text("[[entries]\nstart_s = ")
    with pytest.raises(ScheduleError, match=r"bad.toml is not valid TOML"):
        Schedule.load(tmp_path / "bad.toml")
    with pytest.raises(ScheduleError, match="cannot read schedule"):
        Schedule.load(tmp_path / "missing.json")
    (tmp_path / "v2.json").write_text(json.dumps({"version": 2, "entries": []}))
    with pytest.raises(ScheduleError, match="version 2"):
        Schedule.load(tmp_path / "v2.json")


def test_unknown_zones_and_brokers_are_refused_before_the_run() -> None:
    schedule = Schedule.from_dict(
        {"entries": [ENTRIES[0], {"start_s": 1, "fault": "isolate", "target": {"zone": "z"}}]}
    )
    with pytest.raises(
        ScheduleError, match=r"schedule entry 2 \(cut\[refuse\] isolate zone z\): unknown zone 'z'"
    ):
        schedule.check(load_topology("three_az"))


# -- running, with stand-in faults and cluster --------------------------------------------
@dataclass
class FakeCluster:
    topology: Topology = field(default_factory=lambda: load_topology("three_az"))
    run_id: str = "unit-test-run"


class Recording(Fault):
    """A fault that only records what happened to it."""

    def __init__(self, name: str, calls: list[str], fail: bool | Exception = False) -> None:
        super().__init__()
        self.name, self.calls, self.fail = name, calls, fail

    def describe(self) -> str:
        return self.name

    def to_spec(self) -> dict[str, Any]:
        return {"fault": self.name}

    def _resolve(self, cluster: Any) -> tuple[str, ...]:
        return (f"node-of-{self.name}",)

    def _apply(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        self.calls.append(f"inject {self.name}")
        if isinstance(self.fail, Exception):
            raise self.fail
        if self.fail:
            raise RuntimeError("boom")
        return ""

    def _restore(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        self.calls.append(f"heal {self.name}")
        return ""


def _run(entries: list[tuple[float, float]], fail: int | None = None) -> tuple[list[str], ScheduleRun]:
    calls: list[str] = []
    schedule = Schedule([ScheduleEntry(s, {"fault": "delete_controller"}, d) for s, d in entries])
    faults = [Recording(f"f{i}", calls, fail=i == fail) for i in range(len(entries))]
    run = ScheduleRun(schedule, faults, FakeCluster(), EventLog())  # type: ignore[arg-type]
    run.start()
    assert run.wait(10)
    run.stop()
    return calls, run


def test_actions_run_in_time_order_with_heals_before_injects_at_equal_times() -> None:
    calls, run = _run([(0.0, 0.2), (0.2, 0.0), (0.1, 0.3)])
    assert calls == ["inject f0", "inject f2", "heal f0", "inject f1", "heal f1", "heal f2"]
    assert [(e.fault, e.action) for e in run.log.events] == [
        ("f0", "inject"),
        ("f2", "inject"),
        ("f0", "heal"),
        ("f1", "inject"),
        ("f1", "heal"),
        ("f2", "heal"),
    ]
    assert all(e.ok and e.targets == (f"node-of-{e.fault}",) for e in run.log.events)


def test_a_failing_inject_is_recorded_and_the_schedule_goes_on() -> None:
    calls, run = _run([(0.0, 0.1), (0.05, 0.1)], fail=0)
    failed = run.log.events[0]
    assert (failed.fault, failed.action, failed.outcome) == ("f0", "inject", "error: RuntimeError: boom")
    assert "inject f1" in calls and "heal f1" in calls
    assert run.errors and "boom" in run.errors[0]


def test_stopping_a_run_heals_what_it_injected() -> None:
    calls: list[str] = []
    schedule = Schedule([ScheduleEntry(0.0, {"fault": "delete_controller"}, 60.0)])
    fault = Recording("long", calls)
    with ScheduleRun(schedule, [fault], FakeCluster(), EventLog()) as run:  # type: ignore[arg-type]
        run.start()
        assert not run.wait(0.3)
        assert fault.active
    assert calls == ["inject long", "heal long"]
    assert not fault.active


# -- triggers: after an entry's heal, when a condition holds ---------------------------------
TRIGGERED: list[dict[str, Any]] = [
    {"start_s": 5.0, "duration_s": 10.0, "fault": "controlled_shutdown", "target": {"broker": 0}},
    {"start_s": 0.0, "duration_s": 10.0, "after": 1, "when": "isr_full", "when_timeout_s": 120.0,
     "fault": "controlled_shutdown", "target": {"broker": 1}},
    {"start_s": 2.0, "duration_s": 0.0, "after": 2, "fault": "delete_controller"},
    {"start_s": 20.0, "duration_s": 3.0, "when": {"leaves_isr": {"broker": 2, "topic": "t", "partition": 0}},
     "when_timeout_s": 30.0, "fault": "pause", "target": {"broker": 2}},
]

ROLLING_TOML = """
[[entries]]
start_s = 5
duration_s = 10
fault = "controlled_shutdown"
target = { broker = 0 }

[[entries]]
after = 1
when = "isr_full"
duration_s = 10
fault = "controlled_shutdown"
target = { broker = 1 }

[[entries]]
after = 2
start_s = 2
fault = "delete_controller"

[[entries]]
start_s = 20
duration_s = 3
when = { leaves_isr = { broker = 2, topic = "t", partition = 0 } }
when_timeout_s = 30
fault = "pause"
target = { broker = 2 }
"""


def test_triggers_round_trip_through_json_and_toml(tmp_path: Path) -> None:
    schedule = Schedule.from_dict({"entries": TRIGGERED})
    assert [e.to_dict() for e in schedule.entries] == TRIGGERED
    loaded = Schedule.load(schedule.save(tmp_path / "run.json"))
    assert loaded.entries == schedule.entries
    (tmp_path / "s.toml").write_text(ROLLING_TOML)
    assert Schedule.load(tmp_path / "s.toml").entries == schedule.entries


def test_a_triggered_schedule_says_so_and_bounds_its_length() -> None:
    schedule = Schedule.from_dict({"entries": TRIGGERED})
    assert schedule.triggered and not Schedule.from_dict({"entries": ENTRIES}).triggered
    assert schedule.length_s == 15.0  # entry 1 only: the others wait for something
    # entry 2 ends at 15 + 120 + 10, entry 3 two seconds after that; entry 4 at 20 + 30 + 3
    assert schedule.longest_s == 147.0


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([ENTRIES[0], {"start_s": 0, "when": "sunny", "fault": "delete_controller"}],
         r"entry 2: 'when': unknown condition 'sunny'; conditions are: isr_full, controller_changed"),
        ([ENTRIES[0], {"after": 2, "fault": "delete_controller"}],
         r"entry 2: 'after' = 2 names this entry itself; it must name an earlier entry \(1 to 1\)"),
        ([ENTRIES[0], {"after": 3, "fault": "delete_controller"}, ENTRIES[1]],
         r"entry 2: 'after' = 3 names a later entry"),
        ([{"after": 1, "fault": "delete_controller"}],
         r"entry 1: 'after' = 1: the first entry has no earlier"),
        ([ENTRIES[0], {"after": 0, "fault": "delete_controller"}], r"entry 2: 'after' must be the number"),
        ([ENTRIES[0], {"after": True, "fault": "delete_controller"}], r"entry 2: after must be int"),
        ([{"start_s": 0, "when_timeout_s": 5, "fault": "delete_controller"}],
         r"entry 1: 'when_timeout_s' bounds"),
        ([{"start_s": 0, "when": "isr_full", "when_timeout_s": 0, "fault": "delete_controller"}],
         r"entry 1: when_timeout_s must be positive"),
        ([{"start_s": 0, "when": {"broker_gone": "one"}, "fault": "delete_controller"}],
         r"entry 1: 'when': broker_gone must be int"),
    ],
)
def test_bad_triggers_are_refused_naming_the_entry(entries: list[Any], message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        Schedule.from_dict({"entries": entries})


def test_schedules_built_in_code_refuse_an_entry_after_itself() -> None:
    with pytest.raises(ScheduleError, match=r"entry 1: 'after' = 1"):
        Schedule([ScheduleEntry(0.0, {"fault": "delete_controller"}, after=1)])


def test_conditions_naming_brokers_the_topology_lacks_are_refused_before_the_run() -> None:
    schedule = Schedule.from_dict({"entries": [
        ENTRIES[0], {"start_s": 0, "when": {"broker_gone": 7}, "fault": "delete_controller"}]})
    refused = r"schedule entry 2 \(delete_controller\): 'when' \(broker 7 no longer registered\): "
    with pytest.raises(ScheduleError, match=refused + r"topology 'three_az' has no broker 7"):
        schedule.check(load_topology("three_az"))
    joins = {"joins_isr": {"broker": 3, "topic": "t", "partition": 0}}
    with pytest.raises(ScheduleError, match=r"schedule entry 1 .*has no broker 3"):
        Schedule.from_dict({"entries": [{"start_s": 0, "when": joins, "fault": "delete_controller"}]}).check(
            load_topology("three_az"))


# A scripted cluster state: one partition t-0 on brokers 0, 1, 2.
def _cluster_state(isr: tuple[int, ...] = (0, 1, 2), live: tuple[int, ...] = (0, 1, 2),
                   controller_epoch: int = 1) -> ClusterState:
    part = PartitionState(topic="t", partition=0, leader=isr[0] if isr else -1, leader_epoch=1, isr=isr,
                          controller_epoch=controller_epoch, replicas=(0, 1, 2))
    return ClusterState(live_brokers=live, controller=0, controller_epoch=controller_epoch,
                        partitions={("t", 0): part})


class Script:
    """An ``observe`` callable playing states in order, one per read, the last one repeated."""

    def __init__(self, states: Sequence[ClusterState | None]) -> None:
        self.states, self.served = list(states), 0
        self.read_at: list[float] = []  # monotonic time of each read

    def __call__(self, since: float) -> ClusterState | None:
        state = self.states[min(self.served, len(self.states) - 1)]
        self.served += 1
        self.read_at.append(time.monotonic())
        return state


class Timed(Recording):
    """A recording fault that also notes when each action began and ended, and what
    ``note`` said at the inject (the state a script had served, say)."""

    def __init__(self, name: str, calls: list[str], note: Callable[[], object] = lambda: None,
                 restore_s: float = 0.0, apply_s: float = 0.0) -> None:
        super().__init__(name, calls)
        self.note, self.restore_s, self.apply_s = note, restore_s, apply_s
        self.times: dict[str, tuple[float, float]] = {}
        self.noted: object = None

    def _apply(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        began = time.monotonic()
        self.noted = self.note()
        super()._apply(cluster, resolved)
        time.sleep(self.apply_s)
        self.times["inject"] = (began, time.monotonic())
        return ""

    def _restore(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        began = time.monotonic()
        time.sleep(self.restore_s)
        super()._restore(cluster, resolved)
        self.times["heal"] = (began, time.monotonic())
        return ""


def _start(entries: list[ScheduleEntry], faults: list[Fault], observe: Any = None,
           cluster: Any = None) -> ScheduleRun:
    chosen: Any = cluster or FakeCluster()  # a stand-in for Cluster: topology and run_id
    run = ScheduleRun(Schedule(entries), faults, chosen, EventLog(), observe)
    run.start()
    assert run.wait(10), "the schedule did not finish"
    run.stop()
    return run


SPEC = {"fault": "delete_controller"}


def test_a_time_only_schedule_never_looks_at_the_state() -> None:
    def observe(since: float) -> ClusterState:
        raise AssertionError("a time-only schedule read the state")

    calls: list[str] = []
    run = _start([ScheduleEntry(0.0, SPEC, 0.05), ScheduleEntry(0.02, SPEC)],
                 [Recording("f0", calls), Recording("f1", calls)], observe)
    assert calls == ["inject f0", "inject f1", "heal f1", "heal f0"]
    assert run.errors == []


def test_a_delayed_inject_does_not_move_its_heal() -> None:
    calls: list[str] = []
    slow, long = Timed("slow", calls, apply_s=0.5), Timed("long", calls)
    run = _start([ScheduleEntry(0.0, SPEC), ScheduleEntry(0.1, SPEC, 0.5)], [slow, long])
    assert run.started_mono is not None
    injected, healed = long.times["inject"][0] - run.started_mono, long.times["heal"][0] - run.started_mono
    assert injected >= 0.5  # waited for the slow inject before it
    assert healed < 0.85  # due at 0.1 + 0.5 from the start, not 0.5 after the late inject (>= 1.0)


def test_after_counts_from_the_moment_its_entry_was_healed() -> None:
    calls: list[str] = []
    first, second = Timed("first", calls, restore_s=0.2), Timed("second", calls)
    _start([ScheduleEntry(0.0, SPEC, 0.1), ScheduleEntry(0.15, SPEC, 0.05, after=1)], [first, second])
    assert calls == ["inject first", "heal first", "inject second", "heal second"]
    heal_ended = first.times["heal"][1]
    assert second.times["inject"][0] >= heal_ended + 0.15
    assert second.times["heal"][0] >= heal_ended + 0.15 + 0.05  # duration_s after its inject was due


def test_when_injects_at_the_first_state_in_which_the_condition_holds() -> None:
    calls: list[str] = []
    script = Script([_cluster_state(isr=(0, 2))] * 3 + [_cluster_state()])
    fault = Timed("f", calls, note=lambda: script.served)
    run = _start([ScheduleEntry(0.0, SPEC, 0.1, when=IsrFull())], [fault], script)
    assert calls == ["inject f", "heal f"]
    assert fault.noted == 4  # injected right after the 4th read, the first full ISR
    assert run.errors == []
    # Healed duration_s after the look at which the condition held. That look began after
    # the 3rd read returned (and before the inject began, so the inject's own start is no
    # bound: a loaded machine puts time between the look and the inject).
    assert fault.times["heal"][0] >= script.read_at[2] + 0.1


def test_a_triggered_entry_is_healed_duration_s_after_its_condition_held_not_after_a_slow_inject() -> None:
    calls: list[str] = []
    fault = Timed("slow", calls, apply_s=0.3)
    _start([ScheduleEntry(0.0, SPEC, 0.3, when=IsrFull())], [fault], Script([_cluster_state()]))
    began = fault.times["inject"][0]
    assert began + 0.3 <= fault.times["heal"][0] < began + 0.45  # not 0.3 after the inject ended


def test_a_comparing_condition_compares_with_the_state_when_the_wait_began() -> None:
    calls: list[str] = []
    script = Script([_cluster_state(controller_epoch=5)] * 2 + [_cluster_state(controller_epoch=6)])
    fault = Timed("f", calls, note=lambda: script.served)
    _start([ScheduleEntry(0.0, SPEC, when=ControllerChanged())], [fault], script)
    assert fault.noted == 3


def test_a_condition_that_never_holds_is_an_error_with_the_condition_and_the_last_state() -> None:
    calls: list[str] = []
    leaves = LeavesIsr(topic="t", partition=0, broker=1)
    run = _start([ScheduleEntry(0.0, SPEC, 0.1, when=leaves, when_timeout_s=0.3),
                  ScheduleEntry(0.0, SPEC, after=1)],
                 [Recording("f0", calls), Recording("f1", calls)], Script([_cluster_state()]))
    assert calls == []
    assert run.errors == [
        "entry 1 (f0): not injected: 'when' broker 1 out of the isr of t-0 did not hold within 0.3 s; "
        "at the last look: broker 1 is in the isr [0, 1, 2] of t-0",
        "entry 2 (f1): not injected: entry 1 (f0) was never injected",
    ]
    assert len(run.log) == 0


def test_an_unreadable_state_never_triggers_and_says_why() -> None:
    def observe(since: float) -> ClusterState:
        raise ConnectionError("no quorum")

    calls: list[str] = []
    run = _start([ScheduleEntry(0.0, SPEC, when=BrokerGone(1), when_timeout_s=0.2)],
                 [Recording("f", calls)], observe)
    assert calls == []
    assert len(run.errors) == 1
    assert "the cluster state could not be read (ConnectionError: no quorum)" in run.errors[0]


def test_an_error_without_text_is_reported_by_its_type() -> None:
    # kazoo fails a request whose connection dropped with a bare ConnectionLoss(): the
    # schedule's error must still say what went wrong, not "entry 1 (f0): ".
    run = _start([ScheduleEntry(0.0, SPEC, 0.05)], [Recording("f0", [], fail=ConnectionLoss())])
    assert run.errors == ["entry 1 (f0): ConnectionLoss"]
    assert run.log.events[0].outcome == "error: ConnectionLoss"


def test_a_failed_heal_keeps_the_entries_after_it_out() -> None:
    calls: list[str] = []

    class BadHeal(Recording):
        def _restore(self, cluster: Any, resolved: tuple[str, ...]) -> str:
            raise RuntimeError("broker did not come back")

    run = _start([ScheduleEntry(0.0, SPEC, 0.05), ScheduleEntry(0.0, SPEC, after=1)],
                 [BadHeal("f0", calls), Recording("f1", calls)])
    assert calls == ["inject f0"]
    assert run.errors[:2] == ["entry 1 (f0): RuntimeError: broker did not come back",
                              "entry 2 (f1): not injected: entry 1 (f0) was not healed"]


@dataclass
class StateCluster(FakeCluster):
    """A fake cluster that answers ``state(topics)`` and remembers what it was asked."""

    asked: list[list[str] | None] = field(default_factory=list)

    def state(self, topics: list[str] | None = None) -> ClusterState:
        self.asked.append(topics)
        return _cluster_state(isr=(0, 2))


@pytest.mark.parametrize(
    ("condition", "topics"),
    [(LeavesIsr(topic="orders", partition=0, broker=1), ["orders"]), (IsrFull(), None),
     (BrokerGone(1), [])],
)
def test_without_observe_the_cluster_is_read_for_the_topics_the_conditions_need(
    condition: Condition, topics: list[str] | None
) -> None:
    cluster = StateCluster()
    began = time.monotonic()
    _start([ScheduleEntry(0.0, SPEC, when=condition, when_timeout_s=0.3)], [Recording("f", [])],
           cluster=cluster)
    assert cluster.asked and all(asked == topics for asked in cluster.asked)
    assert len(cluster.asked) <= (time.monotonic() - began) / TICK_S + 1  # at most once a tick


def test_stopping_a_run_that_waits_for_a_condition_returns_at_once() -> None:
    calls: list[str] = []
    schedule = Schedule([ScheduleEntry(0.0, SPEC, when=IsrFull())])
    run = ScheduleRun(schedule, [Recording("f", calls)], FakeCluster(), EventLog(),  # type: ignore[arg-type]
                      Script([_cluster_state(isr=(0,))]))
    run.start()
    assert not run.wait(0.2)
    began = time.monotonic()
    run.stop()
    assert time.monotonic() - began < 1.0 and run.wait(0)
    assert calls == []


class RollingCluster(FakeCluster):
    """Brokers 0-2 replicating t-0: a stopped broker leaves the ISR at once and, once
    started again, rejoins it only ``catch_up_s`` later (its replica catching up)."""

    def __init__(self, catch_up_s: float) -> None:
        super().__init__()
        self.catch_up_s = catch_up_s
        self.rejoins: dict[int, float | None] = {}  # broker -> when it is back in the ISR (None: down)

    def observe(self, since: float = 0.0) -> ClusterState:
        now = time.monotonic()
        isr = tuple(b for b in (0, 1, 2) if (at := self.rejoins.get(b, 0.0)) is not None and at <= now)
        live = tuple(b for b in (0, 1, 2) if self.rejoins.get(b, 0.0) is not None)
        return _cluster_state(isr=isr, live=live)


class Restart(Timed):
    """Stops broker ``broker`` at inject and starts it at heal, on a RollingCluster."""

    def __init__(self, broker: int, calls: list[str], cluster: RollingCluster) -> None:
        super().__init__(f"restart {broker}", calls, note=lambda: cluster.observe().partitions[("t", 0)].isr)
        self.broker, self.cluster = broker, cluster

    def _apply(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        super()._apply(cluster, resolved)
        self.cluster.rejoins[self.broker] = None
        return ""

    def _restore(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        super()._restore(cluster, resolved)
        self.cluster.rejoins[self.broker] = time.monotonic() + self.cluster.catch_up_s
        return ""


def test_a_rolling_restart_waits_for_full_isrs_and_never_overlaps() -> None:
    calls: list[str] = []
    cluster = RollingCluster(catch_up_s=0.25)
    faults: list[Fault] = [Restart(b, calls, cluster) for b in (0, 1, 2)]
    entries = [ScheduleEntry(0.0, SPEC, 0.1),
               ScheduleEntry(0.0, SPEC, 0.1, after=1, when=IsrFull()),
               ScheduleEntry(0.0, SPEC, 0.1, after=2, when=IsrFull())]
    run = _start(entries, faults, cluster.observe, cluster)
    assert run.errors == []
    assert calls == ["inject restart 0", "heal restart 0", "inject restart 1", "heal restart 1",
                     "inject restart 2", "heal restart 2"]
    restarts = [f for f in faults if isinstance(f, Restart)]
    for before, after in itertools.pairwise(restarts):
        assert after.times["inject"][0] >= before.times["heal"][1] + cluster.catch_up_s
        assert after.noted == (0, 1, 2)  # every replica back in sync when it struck


def test_two_entries_waiting_at_once_are_judged_on_the_state_after_the_first_struck() -> None:
    calls: list[str] = []
    cluster = RollingCluster(catch_up_s=0.25)
    first, second = Restart(0, calls, cluster), Restart(1, calls, cluster)
    entries = [ScheduleEntry(0.0, SPEC, 0.1, when=IsrFull()), ScheduleEntry(0.0, SPEC, 0.1, when=IsrFull())]
    run = _start(entries, [first, second], cluster.observe, cluster)
    assert run.errors == []
    assert calls == ["inject restart 0", "heal restart 0", "inject restart 1", "heal restart 1"]
    assert second.times["inject"][0] >= first.times["heal"][1] + cluster.catch_up_s


def test_conditions_are_judged_only_on_states_read_after_the_last_action_ended() -> None:
    calls: list[str] = []
    asked: list[float] = []

    def observe(since: float) -> ClusterState:
        asked.append(since)
        return _cluster_state()

    first, second = Timed("first", calls, restore_s=0.05), Timed("second", calls)
    _start([ScheduleEntry(0.0, SPEC, 0.05), ScheduleEntry(0.0, SPEC, after=1, when=IsrFull())],
           [first, second], observe)
    assert calls == ["inject first", "heal first", "inject second", "heal second"]
    assert asked and min(asked) >= first.times["heal"][1]


def test_an_entry_anchored_to_a_migration_phase_waits_for_it_longer_by_default() -> None:
    """A phase can begin many minutes into a run (the broker roll came 93 s after the
    schedule's start on a quiet machine, past the 120 s a plain condition gets once the
    warm-up is counted): a wait naming a phase defaults to 900 s, in combinations too."""
    from faults.schedule import ScheduleEntry

    kill = {"start_s": 0, "fault": "kill", "target": {"broker": 1}}
    plain = ScheduleEntry.from_dict({**kill, "when": "isr_full"})
    phase = ScheduleEntry.from_dict({**kill, "when": {"migration_phase": "broker_roll"}})
    combined = ScheduleEntry.from_dict({**kill, "when": {"all": [{"migration_phase": "broker_roll"},
                                                                  {"broker_gone": 0}]}})
    told = ScheduleEntry.from_dict({**kill, "when": {"migration_phase": "copy"}, "when_timeout_s": 30})
    assert (plain.when_timeout_s, phase.when_timeout_s, combined.when_timeout_s, told.when_timeout_s) == \
        (120.0, 900.0, 900.0, 30.0)
