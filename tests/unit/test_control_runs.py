"""Control runs and fault errors as a scenario run records them, over a stand-in run: a
check named in ``must_fail`` passes only when it failed, a name that was never evaluated
fails the run, and an inject or heal that raised fails the scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from faults.events import FaultEvent
from harness.scenario.file_format import ScenarioFileError, parse_scenario
from harness.scenario.record import ScenarioRecord
from harness.scenario.runner import ScenarioRun


class StandInRun(ScenarioRecord):
    """A scenario's record with the fault log ScenarioRun reads its fault events from."""

    def __init__(self, must_fail: tuple[str, ...] = (), log: list[FaultEvent] | None = None) -> None:
        super().__init__(Path("unwritten"), must_fail)
        self.log = log or []

    def outcome(self) -> dict[str, bool]:
        return {c.name: c.passed for c in self.checks}


def test_a_check_a_control_run_must_see_fail_passes_only_when_it_failed() -> None:
    run = StandInRun(must_fail=("writes refused",))
    assert run.check("writes refused", False, "120 acknowledged") is True
    assert run.check("other", True) is True
    run.check_controls()
    assert run.outcome() == {"writes refused (must fail in this control run)": True, "other": True,
                             "every check the control run must see fail was evaluated": True}
    assert run.checks[0].detail == "failed, as measured: 120 acknowledged"

    held = StandInRun(must_fail=("writes refused",))
    assert held.check("writes refused", True, "0 acknowledged") is False
    assert held.checks[0].detail == "held, as measured: 0 acknowledged"


def test_a_must_fail_name_that_no_check_carries_fails_the_control_run() -> None:
    run = StandInRun(must_fail=("writes refused", "misspelt check"))
    run.check("writes refused", False)
    run.check_controls()
    last = run.checks[-1]
    assert (last.passed, last.detail) == (False, "never evaluated: misspelt check")
    plain = StandInRun()
    plain.check_controls()
    assert plain.checks == []  # not a control run: nothing to add


def _event(action: str, outcome: str) -> FaultEvent:
    fields: dict[str, Any] = {"ts": 1.0, "mono": 1.0, "fault": "kill", "action": action,
                              "targets": ("kafka-1",), "outcome": outcome}
    return FaultEvent(**fields)


def test_a_heal_that_raised_fails_the_scenario_with_its_error() -> None:
    failed_heal = _event("heal", "error: FaultTimeout: kafka-1 never started")
    run = StandInRun(log=[_event("inject", "ok"), failed_heal])
    ScenarioRun._check_fault_events(run)  # type: ignore[arg-type]
    [check] = run.checks
    assert not check.passed
    assert "heal kill kafka-1: error: FaultTimeout: kafka-1 never started" in check.detail
    good = StandInRun(log=[_event("inject", "ok"), _event("heal", "ok")])
    ScenarioRun._check_fault_events(good)  # type: ignore[arg-type]
    assert [(c.passed, c.detail) for c in good.checks] == [(True, "1 injections and 1 heals, all ok")]


def test_a_scenario_file_names_the_checks_its_control_run_must_see_fail() -> None:
    spec = parse_scenario('must_fail = ["writes refused"]\n', "control.toml")
    assert spec.must_fail == ("writes refused",)
    assert spec.to_dict()["must_fail"] == ["writes refused"]
    assert "must_fail" not in parse_scenario('title = "plain"\n', "plain.toml").to_dict()
    for bad in ('must_fail = "writes refused"', "must_fail = [1]", 'must_fail = [""]'):
        with pytest.raises(ScenarioFileError, match="'must_fail' must be a list of check names"):
            parse_scenario(bad, "bad.toml")
