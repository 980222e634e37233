"""A fault's window runs until its heal was done, and a window longer than planned says why."""

from __future__ import annotations

import json
from typing import Any

from harness.report.load_faults import explain_overruns, fault_windows
from harness.report.model import ScheduleEntry


def _row(ts: float, fault: str, action: str, targets: list[str], done: float | None = None) -> dict[str, Any]:
    return {"ts": ts, "fault": fault, "action": action, "targets": json.dumps(targets), "outcome": "ok",
            "done_ts": done}


def _entry(fault: str, start_s: float, duration_s: float) -> ScheduleEntry:
    return ScheduleEntry(start_s=start_s, duration_s=duration_s, fault=fault, params={})


def test_the_window_of_a_slow_heal_ends_when_the_node_was_back() -> None:
    """The power came back at +24 s, broker 0 registered at +52 s: the outage is 0-52."""
    [window] = fault_windows([_row(0.0, "power_loss zone a", "inject", ["kafka-0", "zk-a"], 0.5),
                              _row(24.0, "power_loss zone a", "heal", ["kafka-0", "zk-a"], 52.0)])
    assert (window.start, window.end, window.heal_began) == (0.0, 52.0, 24.0)


def test_a_quick_heal_and_an_old_history_end_where_the_heal_began() -> None:
    quick, old = fault_windows([_row(0.0, "cut a", "inject", ["a"]), _row(10.0, "cut a", "heal", ["a"], 10.2),
                                _row(20.0, "cut b", "inject", ["b"]), _row(30.0, "cut b", "heal", ["b"])])
    assert (quick.end, quick.coming_back_s) == (10.2, None)
    assert (old.end, old.heal_began, old.coming_back_s) == (30.0, 30.0, None)


def test_a_window_that_grew_says_why() -> None:
    """A 15 s power loss whose heal took 28 s, and a 35 s cut whose heal had to wait for it."""
    rows = [_row(0.0, "power_loss zone a", "inject", ["kafka-0"], 1.0),
            _row(5.0, "network_partition zone b", "inject", ["b"], 5.1),
            _row(15.0, "power_loss zone a", "heal", ["kafka-0"], 43.0),
            _row(43.0, "network_partition zone b", "heal", ["b"], 43.1)]
    planned = [_entry("power_loss", 0, 15), _entry("network_partition", 5, 30)]
    power, cut = explain_overruns(fault_windows(rows), planned)
    assert power.overrun == ("planned 15 s, lasted 43.0 s, because the heal took 28.0 s, until what it "
                             "restarted was back in the cluster")
    assert cut.overrun == ("planned 30 s, lasted 38.1 s, because its heal began 8.0 s after its planned end "
                           "while the schedule, which runs one action at a time, was busy with "
                           "power_loss zone a kafka-0")


def test_a_window_that_lasted_as_planned_says_nothing() -> None:
    rows = [_row(0.0, "kill kafka-0", "inject", ["kafka-0"]),
            _row(15.5, "kill kafka-0", "heal", ["kafka-0"], 15.9)]
    [window] = explain_overruns(fault_windows(rows), [_entry("kill", 0, 15)])
    assert window.overrun == ""
