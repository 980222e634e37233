"""Scenario files run through the same ScenarioRun as the Python suite, so a user's
data-only scenario gets the same healing, reconciliation and report."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import docker
import pyarrow.parquet as pq
import pytest

from harness.report import load_run
from harness.report.model import Outcome
from harness.resources import new_run_id
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


FAULT_FAILS = """
id = "fault-that-errors"
title = "A fault whose inject cannot succeed"
warmup_s = 2
cooldown_s = 2

[topic]
partitions = 2

[expectations]
lost = 0
unseen = "any"

[[schedule]]
start_s = 0
duration_s = 0
fault = "delete_controller"
timeout_s = 0.001
"""


def test_a_scenario_file_whose_fault_errors_fails_with_the_error_on_its_page(
    tmp_path: Path, docker_engine: docker.DockerClient
) -> None:
    """delete_controller with no time to see the new controller raises at inject; the
    workload and the verdict are fine, so only the fault check can fail the run."""
    path = tmp_path / "fault_that_errors.toml"
    path.write_text(FAULT_FAILS)
    run_id = new_run_id()
    reports = tmp_path / "reports"
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(path), "--run-id", run_id],
        env=dict(os.environ, KAFKA_CHAOS_REPORTS=str(reports)), capture_output=True, text=True,
        timeout=900,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    [record] = json.loads((reports / run_id / "run.json").read_text())["tests"]
    assert (record["kind"], record["outcome"]) == ("scenario-file", "failed"), record
    faults = pq.read_table(reports / run_id / "fault-that-errors" / "history" / "faults").to_pylist()
    failed = [row["outcome"] for row in faults if row["action"] == "inject" and row["outcome"] != "ok"]
    assert failed, faults
    page = (reports / run_id / "fault-that-errors.html").read_text()
    assert html.escape(failed[0], quote=False) in page
    verdict = json.loads((reports / run_id / "fault-that-errors" / "verdict.json").read_text())
    assert verdict["passed"], "the verdict must pass here, so that the fault alone fails the run"
    assert load_run(reports / run_id).outcome is Outcome.FAILED
