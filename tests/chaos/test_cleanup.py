"""Nothing leaks: a run interrupted with Ctrl-C removes its resources; a run killed
outright leaves them, and the next start reaps them; a port in use is refused cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from harness.cluster.resources import RUN_LABEL, new_run_id, reap_stale, remove_run

pytestmark = pytest.mark.chaos


def _labelled(client: docker.DockerClient, run_id: str) -> int:
    selector = {"label": f"{RUN_LABEL}={run_id}"}
    return (len(client.containers.list(all=True, sparse=True, filters=selector))
            + len(client.networks.list(filters=selector))
            + len(client.volumes.list(filters=selector)))


def _interruptible() -> None:
    """In the child, before exec: take Ctrl-C as a terminal delivers it. A shell without
    job control starts background jobs with SIGINT ignored, children inherit that, and a
    Python started so never raises KeyboardInterrupt: a suite launched with ``&`` saw
    ``up`` sit out SIGINT until the test's bound ran out."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_up(run_id: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.entry.cli", "up", "--run-id", run_id, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=_interruptible,
    )


def _wait_for_ready(process: subprocess.Popen[str], timeout_s: float = 180) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    output = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        output.append(line)
        if line.startswith("Ctrl-C"):
            return "".join(output)
    process.kill()
    pytest.fail("cluster did not come up:\n" + "".join(output[-20:]))


# Ctrl-C closes the clients, then the engine kills and deletes the containers side by
# side; a CI run with one core kept busy took over 60 s for it (one removal at a time, as
# it then was), so the bound is the one a cluster gets to come up.
TEARDOWN_S = 180
# A cluster's start and health on the same loaded machine, and a session's collection.
CLUSTER_UP_S = 240


def test_ctrl_c_removes_every_container_network_and_volume(docker_engine: docker.DockerClient) -> None:
    run_id = new_run_id()
    process = _start_up(run_id)
    try:
        _wait_for_ready(process)
        assert _labelled(docker_engine, run_id) >= 8  # 7 containers and a network
        process.send_signal(signal.SIGINT)
        # Read what it prints while it tears down: a full pipe would block it mid-way.
        output, _ = process.communicate(timeout=TEARDOWN_S)
        assert process.returncode == 0, output[-3000:]
        assert _labelled(docker_engine, run_id) == 0
    finally:  # a failed check must not leave this test's cluster behind for the next ones
        if process.poll() is None:
            process.kill()
            process.wait()
        remove_run(docker_engine, run_id)


# A test that holds the session's cluster until Ctrl-C stops it: the signal must land while
# a test runs. The suite's own shortest cluster test ends 5 s after its brokers start on a
# quiet machine, and a signal that came later found a finished session (exit 0 or 1).
_HOLDING_TEST = """
import os, pathlib, time, pytest

def test_holds_the_cluster_until_interrupted(cluster):
    pathlib.Path(os.environ["KAFKA_CHAOS_HOLDING"]).write_text(cluster.run_id)
    time.sleep({hold_s})
    pytest.fail("no Ctrl-C came")
"""


@pytest.mark.core
def test_ctrl_c_in_a_pytest_session_removes_its_cluster(
    docker_engine: docker.DockerClient, tmp_path: Path,
) -> None:
    run_id = new_run_id()
    holding, marker = tmp_path / "test_holding.py", tmp_path / "holding"
    holding.write_text(_HOLDING_TEST.format(hold_s=TEARDOWN_S))
    project = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--run-id", run_id,
         "-c", str(project / "pyproject.toml"), "--rootdir", str(project), str(holding)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_interruptible,
        env={**os.environ, "KAFKA_CHAOS_HOLDING": str(marker)}, cwd=project,
    )
    try:
        deadline = time.monotonic() + CLUSTER_UP_S
        while time.monotonic() < deadline and not marker.exists() and process.poll() is None:
            time.sleep(0.5)
        assert marker.exists(), f"the holding test never ran (pytest exit {process.poll()})"
        assert _running_brokers(docker_engine, run_id) == 3, "the session's cluster is not up"
        process.send_signal(signal.SIGINT)
        # pytest's status for a session Ctrl-C stopped: the signal, not the test ending on its
        # own, is what removed the cluster.
        assert process.wait(timeout=TEARDOWN_S) == pytest.ExitCode.INTERRUPTED
        assert _labelled(docker_engine, run_id) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        remove_run(docker_engine, run_id)


def _running_brokers(client: docker.DockerClient, run_id: str) -> int:
    selector = {"label": [f"{RUN_LABEL}={run_id}", "kafka-chaos.role=broker"], "status": "running"}
    return len(client.containers.list(sparse=True, filters=selector))


@pytest.mark.core
def test_leftovers_of_a_killed_run_are_reaped_at_the_next_start(docker_engine: docker.DockerClient) -> None:
    run_id = new_run_id()
    process = _start_up(run_id)
    _wait_for_ready(process)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert _labelled(docker_engine, run_id) >= 8, "a SIGKILLed run cannot clean up after itself"
    assert run_id in reap_stale(docker_engine)
    assert _labelled(docker_engine, run_id) == 0


@pytest.mark.core
def test_a_port_already_in_use_is_refused_and_nothing_is_left_running(
    docker_engine: docker.DockerClient,
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        run_id = new_run_id()
        result = subprocess.run(
            [sys.executable, "-m", "harness.entry.cli", "up", "--run-id", run_id, "--port-base", str(port)],
            capture_output=True, text=True, timeout=120,
        )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("kafka-chaos:")]
    assert len(errors) == 1 and f"port 127.0.0.1:{port}" in errors[0] and "already in use" in errors[0]
    assert _labelled(docker_engine, run_id) == 0
