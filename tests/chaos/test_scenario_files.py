"""Scenario files run through the same ScenarioRun as the Python suite, so a user's
data-only scenario gets the same healing, reconciliation and report."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import docker
import pyarrow.parquet as pq
import pytest

from harness.cluster.resources import new_run_id
from harness.report import load_run
from harness.report.model import Outcome
from harness.scenario.file_format import load_scenario_file
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec

pytestmark = pytest.mark.chaos

FILES = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))


def run_file(path: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path, str]:
    """``kafka-chaos run FILE`` as a user runs it, reports under ``tmp_path``; returns the
    finished process, the reports folder and the run id."""
    run_id = new_run_id()
    reports = tmp_path / "reports"
    result = subprocess.run(
        [sys.executable, "-m", "harness.entry.cli", "run", str(path), "--run-id", run_id],
        env=dict(os.environ, KAFKA_CHAOS_REPORTS=str(reports)), capture_output=True, text=True,
        timeout=900,
    )
    return result, reports, run_id


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_builtin_scenario_file_runs_and_passes(
    path: Path, scenario: Callable[[ScenarioSpec], ScenarioRun]
) -> None:
    loaded = load_scenario_file(path)
    run = run_spec(loaded.spec, scenario)
    assert run.passed, f"{path.name} did not pass: {run.failures()}"


FAULT_FAILS = """
id = "fault-that-errors"
title = "A fault whose inject cannot succeed"
warmup_s = 2
cooldown_s = 2

[topic]
partitions = 2

# Every kind "any": the default producer has idempotence off, so a retry under load may
# duplicate or reorder; the verdict must pass whatever the cluster did, so that the
# fault's error alone can fail the run.
[expectations]
lost = "any"
duplicate = "any"
truncated = "any"
unexpected = "any"
aborted_read = "any"
reordered = "any"
unseen = "any"

# The brokers refuse this value (cleanup.policy is compact and/or delete), so the
# fault's AlterConfigs fails at inject on any cluster, however fast or loaded.
[[schedule]]
start_s = 0
duration_s = 1
fault = "topic_config"
topic = "$topic"
settings = { "cleanup.policy" = "not-a-policy" }
"""


def test_a_scenario_file_whose_fault_errors_fails_with_the_error_on_its_page(
    tmp_path: Path, docker_engine: docker.DockerClient
) -> None:
    """A configuration change the brokers refuse raises at inject; the workload and the
    verdict are fine, so only the fault check can fail the run."""
    path = tmp_path / "fault_that_errors.toml"
    path.write_text(FAULT_FAILS)
    result, reports, run_id = run_file(path, tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    [record] = json.loads((reports / run_id / "run.json").read_text())["tests"]
    assert (record["kind"], record["outcome"]) == ("scenario-file", "failed"), record
    faults = pq.read_table(reports / run_id / "fault-that-errors" / "history" / "faults").to_pylist()
    failed = [row["outcome"] for row in faults if row["action"] == "inject" and row["outcome"] != "ok"]
    assert failed, faults
    page = (reports / run_id / "fault-that-errors.html").read_text()
    assert failed[0] in html.unescape(page), failed[0]
    verdict = json.loads((reports / run_id / "fault-that-errors" / "verdict.json").read_text())
    assert verdict["passed"], f"only the fault may fail the run, yet the verdict failed: {verdict['counts']}"
    assert load_run(reports / run_id).outcome is Outcome.FAILED


BOUNDED = """
id = "bounds-and-broker-settings"
title = "Broker settings and bounds, one bound violated on purpose"
warmup_s = 3
cooldown_s = 5

[topic]
partitions = 3
replication_factor = 3
config = { "min.insync.replicas" = 2 }

[brokers]
# Harmless for speed (fsync every 10000 messages), yet unlike the topology's values.
settings = { "log.flush.interval.messages" = 10000, "num.replica.fetchers" = 2 }

[expectations]
lost = 0
truncated = 0
duplicate = "any"
reordered = "any"
unseen = "any"

[bounds]
max_failed = 100000
max_in_doubt = 100000
max_unavailable_s = 120
controller_changes = { max = 3 }
isr_full_after_heal_s = 180
# Killing partition 0's leader must raise its leader epoch: "exactly 0" is violated.
leader_epoch_changes = { "0" = 0, "1" = { max = 5 } }

[[schedule]]
start_s = 0
duration_s = 10
fault = "kill"
target = { leader_of = ["$topic", 0] }
"""

VIOLATED = "leader-epoch changes on partition 0 exactly 0"


def test_a_scenario_files_broker_settings_and_bounds_reach_the_cluster_and_the_record(
    tmp_path: Path, docker_engine: docker.DockerClient
) -> None:
    """The file runs on a cluster whose brokers report its [brokers] settings; every
    bound is a check with its measured figure; the one bound violated on purpose fails
    the file (exit 1) while the verdict and every other check pass."""
    path = tmp_path / "bounded.toml"
    path.write_text(BOUNDED)
    result, reports, run_id = run_file(path, tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    sdir = reports / run_id / "bounds-and-broker-settings"
    [record] = json.loads((reports / run_id / "run.json").read_text())["tests"]
    assert (record["kind"], record["outcome"]) == ("scenario-file", "failed"), record
    assert VIOLATED in record["error"], record["error"]

    checks = {c["name"]: c for c in json.loads((sdir / "assertions.json").read_text())["checks"]}
    settings = checks["brokers run the scenario's broker settings"]
    assert settings["passed"], settings
    assert settings["detail"] == ("log.flush.interval.messages=10000, num.replica.fetchers=2 "
                                  "on brokers 0, 1, 2, as each reports it")

    figures = {
        "at most 100000 sends failed": r"\d+ of \d+ sends ended failed; bound at most 100000",
        "at most 100000 sends in doubt": r"\d+ of \d+ sends ended in doubt; bound at most 100000",
        "no partition without an acknowledgement for more than 120 s":
            r"p0: \d+\.\d\d s; p1: \d+\.\d\d s; p2: \d+\.\d\d s \(window \d+\.\d s\)",
        "controller changes at most 3":
            r"\d+ \(controller epoch \d+ -> \d+; controllers seen .*\); bound at most 3",
        "leader-epoch changes on partition 1 at most 5": r"\d+; bound at most 5",
        "every ISR full within 180 s of the last heal":
            r"full \d+\.\d\d s after the last heal \(partition \d last\); bound 180 s",
    }
    for name, figure in figures.items():
        assert name in checks, sorted(checks)
        assert checks[name]["passed"], checks[name]
        assert re.fullmatch(figure, checks[name]["detail"]), checks[name]

    violated = checks[VIOLATED]
    assert not violated["passed"], violated
    measured = re.fullmatch(r"(\d+); bound exactly 0", violated["detail"])
    assert measured and int(measured[1]) >= 1, violated
    others = [c for name, c in checks.items() if name != VIOLATED and not c["passed"]]
    assert not others, f"only the violated bound may fail: {others}"
    verdict = json.loads((sdir / "verdict.json").read_text())
    assert verdict["passed"], "the verdict must pass here, so that the bound alone fails the file"

    config = json.loads((sdir / "config.json").read_text())
    brokers = {s["key"]: s for s in config["effective_config"]["brokers"]}
    flush = brokers["log.flush.interval.messages"]
    assert (flush["value"], flush["source"]) == ("10000", "scenario")
    saved = tomllib.loads((sdir / "scenario.toml").read_text())["checks"]
    assert {"leader_epoch_changes": {"min": 0, "max": 0}, "partitions": [0]} in saved, saved
    assert {"leader_epoch_changes": {"max": 5}, "partitions": [1]} in saved, saved
    page = (reports / run_id / "bounds-and-broker-settings.html").read_text()
    assert VIOLATED in page and "Effective configuration" in page
    assert load_run(reports / run_id).outcome is Outcome.FAILED
