"""What a person watching a run reads: the opening estimate, one line per ended test,
and long waits announced while they last."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest

from harness.cluster import waiting
from harness.cluster.waiting import PROGRESS_LOGGER, WaitTimeout, wait_until_clear
from harness.entry.console import (
    LiveLines,
    anomaly_phrase,
    ended_line,
    minutes,
    opening_line,
    previous_durations,
)


def _run(root: Path, run_id: str, started: float, tests: list[dict[str, object]]) -> None:
    (root / run_id).mkdir(parents=True)
    header = {"run_id": run_id, "started": started, "tests": tests}
    (root / run_id / "run.json").write_text(json.dumps(header))


def test_the_estimate_comes_from_the_newest_earlier_run_that_recorded_durations(tmp_path: Path) -> None:
    _run(tmp_path, "old", 100.0, [{"id": "a", "outcome": "passed", "duration_s": 999.0}])
    _run(tmp_path, "new", 200.0, [{"id": "a", "outcome": "passed", "duration_s": 60.0},
                                  {"id": "b", "outcome": "failed", "duration_s": 120.0},
                                  {"id": "c", "outcome": "error", "duration_s": 5.0}])
    _run(tmp_path, "this", 300.0, [{"id": "a", "outcome": "passed", "duration_s": 1.0}])
    previous = previous_durations(tmp_path, excluding="this")
    assert previous == ("new", {"a": 60.0, "b": 120.0})  # an error's time says nothing of the test's
    line = opening_line(["a", "b", "z"], previous)
    # z never ran there: counted at the mean, 90 s; 60 + 120 + 90 = 270 s
    assert line == "3 chaos tests; about 4 min by the durations of run new (2 of 3 ran there)"
    assert opening_line(["a"], None) == (
        "1 chaos test; no earlier run in this reports folder to estimate the time from")
    assert previous_durations(tmp_path / "none", excluding="x") is None


def test_an_ended_test_is_one_line_with_its_place_outcome_time_and_anomalies() -> None:
    assert anomaly_phrase(None) == ""
    assert anomaly_phrase({}) == "no anomaly"
    found = {"duplicate": 4, "lost": 0, "reordered": 1}
    assert anomaly_phrase(found) == "anomalies: duplicate 4, reordered 1"
    assert ended_line(3, 37, "t.py::test_x", "passed", 42.4, "no anomaly") == \
        "3/37 PASSED 42 s t.py::test_x; no anomaly"
    failed = ended_line(4, 37, "t.py::test_y", "failed", 130.0, "anomalies: lost 3",
                       "Traceback ...\nAssertionError: lost=3 exceeds max 0")
    assert failed == ("4/37 FAILED 2 min t.py::test_y; anomalies: lost 3\n"
                      "    AssertionError: lost=3 exceeds max 0")


def test_durations_read_as_a_person_says_them() -> None:
    assert [minutes(s) for s in (0.4, 89, 90, 719, 3900)] == ["0 s", "89 s", "2 min", "12 min", "1 h 5 min"]


def test_a_long_wait_is_announced_once_on_the_live_lines_while_it_lasts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = list(logging.getLogger(PROGRESS_LOGGER).handlers)
    out = io.StringIO()
    live = LiveLines(out)
    live.attach()
    clock = iter(float(t) for t in range(100))  # every look at the clock is a second later
    monkeypatch.setattr(waiting.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(waiting.time, "sleep", lambda _s: None)
    try:
        with pytest.raises(WaitTimeout):
            wait_until_clear(lambda: "kafka-2 is exited", 30, "kafka-2 registering")
    finally:
        live.detach()
    lines = out.getvalue().splitlines()
    assert lines == ["[kafka-chaos] still waiting for kafka-2 registering after 10 s (gives up at 30 s): "
                     "kafka-2 is exited"], lines
    assert logging.getLogger(PROGRESS_LOGGER).handlers == before  # detached
