"""Scenario files run through the same ScenarioRun as the Python suite, so a user's
data-only scenario gets the same healing, reconciliation and report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.scenario import ScenarioRun, ScenarioSpec
from harness.scenario_file import load_scenario_file, run_scenario_file

pytestmark = pytest.mark.chaos

FILES = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_builtin_scenario_file_runs_and_passes(
    path: Path, scenario: Callable[[ScenarioSpec], ScenarioRun]
) -> None:
    loaded = load_scenario_file(path)
    assert run_scenario_file(loaded, scenario), f"{path.name} did not pass; see its report page"
