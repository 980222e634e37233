"""Schedules: validated as a whole, saved and loaded without loss, run in a stable order."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from faults.base import Fault
from faults.errors import ScheduleError
from faults.events import EventLog
from faults.schedule import Schedule, ScheduleEntry, ScheduleRun
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

    def __init__(self, name: str, calls: list[str], fail: bool = False) -> None:
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
