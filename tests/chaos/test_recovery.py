"""No cascades: a test that breaks the cluster beyond healing fails alone.

A pytest session of its own (a subprocess, with its own cluster and report folder) runs
two tests: the first leaves a broker running but unregistered in ZooKeeper - its
``/brokers/ids`` znode deleted under it, which ``heal_all`` cannot undo, because every
process runs and every link is clean, yet the controller counts the broker as gone; the
second needs a healthy cluster. Recovery must restart the broker that blocks health, the
first test must error at teardown saying so, the second must pass, and the run's report
must say FAILED with that one error - and pytest must exit non-zero.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import docker
import pytest

from harness.cluster.resources import RUN_LABEL, new_run_id
from harness.report import load_run
from harness.report.model import Outcome

pytestmark = pytest.mark.chaos

INNER_TESTS = '''
import pytest

pytestmark = pytest.mark.chaos


def test_unregisters_a_running_broker(cluster):
    state = cluster.state([])
    victim = next(b.broker_id for b in cluster.topology.brokers if b.broker_id != state.controller)
    cluster.zk.client.delete(f"/brokers/ids/{victim}")
    assert victim not in cluster.zk.live_brokers()


def test_finds_a_healthy_cluster(cluster):
    health = cluster.health()
    assert health.healthy, health.problems
    assert len(cluster.zk.live_brokers()) == len(cluster.topology.brokers)
'''


def test_a_test_that_breaks_the_cluster_beyond_healing_fails_alone(
    tmp_path: Path, docker_engine: docker.DockerClient
) -> None:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER_TESTS))
    run_id = new_run_id()
    reports = tmp_path / "reports"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--run-id", run_id,
         "--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")],
        cwd=tmp_path, env=dict(os.environ, KAFKA_CHAOS_REPORTS=str(reports)),
        capture_output=True, text=True, timeout=900,
    )
    output = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 1, output

    header = json.loads((reports / run_id / "run.json").read_text())
    breaker, follower = header["tests"]
    assert breaker["id"].endswith("test_unregisters_a_running_broker")
    assert (breaker["outcome"], breaker["phase"]) == ("error", "teardown"), output
    assert follower["outcome"] == "passed", follower["error"]

    [escalation] = header["escalations"]
    assert escalation["after"] == breaker["id"]
    assert escalation["healthy"] is True
    restarted = [a for a in escalation["actions"] if a.startswith("restarted kafka-")]
    assert restarted, escalation["actions"]
    assert not any("replaced" in a for a in escalation["actions"]), "a restart was enough here"

    diagnostics = reports / run_id / breaker["diagnostics"]
    assert {p.name for p in (diagnostics / "logs").iterdir()} >= {"kafka-0.log", "zk-a.log", "toxiproxy.log"}
    znodes = json.loads((diagnostics / "znodes.json").read_text())["znodes"]
    live = {path for path in znodes if path.startswith("/brokers/ids/")}
    assert len(live) == 2, f"the dump must show the broker missing, as the test left it: {sorted(live)}"

    assert load_run(reports / run_id).outcome is Outcome.FAILED
    assert not docker_engine.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
