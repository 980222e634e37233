"""``kafka-chaos explore`` end to end: a drawn round runs on a real cluster, is judged by
what the safe configuration promises and by the cluster's own rules, and is recorded so
it can be replayed and read.

Whether the round passes is Kafka's and librdkafka's to say (the explorer exists to find
the rounds that do not), so the test holds the command to its word instead: the exit
status matches the round's outcome in the report, the schedule that ran is the one the
seed names, and every judgement a round promises was made on what the cluster showed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import docker
import pytest

from harness.cluster.resources import new_run_id
from harness.explore.generator import KindsInTurn, Space, draw_schedule, planned_entries
from harness.report import load_run
from harness.rounds.explore_round import CLUSTER_RULES, LIVENESS, round_seed
from topologies import load_topology

pytestmark = pytest.mark.chaos

SAFE = Path(__file__).resolve().parent.parent / "explore" / "safe.toml"
KINDS = ("kill", "pause", "isolate")


@pytest.mark.core
def test_explore_runs_a_drawn_round_judges_it_and_records_it(tmp_path: Path,
                                                               docker_engine: docker.DockerClient) -> None:
    run_id, reports = new_run_id(), tmp_path / "reports"
    result = subprocess.run(
        [sys.executable, "-m", "harness.entry.cli", "explore", str(SAFE), "--seed", "3", "--rounds", "1",
         "--faults", ",".join(KINDS), "--run-id", run_id],
        env=dict(os.environ, KAFKA_CHAOS_REPORTS=str(reports)), capture_output=True, text=True, timeout=900,
    )
    assert result.returncode in (0, 1), result.stderr[-3000:]
    folder = reports / run_id
    [explored] = json.loads((folder / "explore.json").read_text())["rounds"]
    space = Space.of(load_topology(), partitions=6, kinds=KINDS)
    dealt = KindsInTurn(space, 3).kinds_of(planned_entries(space, round_seed(3, 0)))
    assert explored["schedule"] == draw_schedule(space, round_seed(3, 0), kinds=dealt)

    [test] = load_run(folder).tests
    assert test.kind == "explore-round", test
    assert (test.outcome == "passed") == (result.returncode == 0) == (explored["outcome"] == "passed"), \
        (test, result.returncode, result.stderr[-2000:])

    scenario = folder / explored["scenario"]
    checks = {c["name"]: c for c in json.loads((scenario / "assertions.json").read_text())["checks"]}
    assert " states, " in checks[CLUSTER_RULES]["detail"], checks[CLUSTER_RULES]  # judged on a timeline
    assert LIVENESS in checks
    replay = tomllib.loads((scenario / "scenario.toml").read_text())
    assert [entry["fault"] for entry in replay["schedule"]] == [e["fault"] for e in explored["schedule"]]
    assert replay["expectations"]["lost"] == 0 and replay["expectations"]["duplicate"] == 0
    progress = result.stderr
    assert "round 0: " in progress and "fault kinds not exercised" in progress, progress[-2000:]
