"""Shared fixtures for tests that run the reconciliation on real Spark masters, and on a
local Spark Connect server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

import pyspark
from pyspark.sql import SparkSession

from spark_jobs.session import build_session
from tests.synthetic.core import SynthHistory, SynthSpec, generate

# local-cluster starts real worker and executor JVMs through $SPARK_HOME/bin/spark-class;
# a pip-installed pyspark ships that script inside the package directory.
os.environ.setdefault("SPARK_HOME", str(Path(pyspark.__file__).parent))
REPO = Path(__file__).resolve().parents[2]

ALL_KINDS = {
    "lost": 3,
    "duplicate": 2,
    "truncated": 4,
    "unexpected": 2,
    "aborted_read": 2,
    "reordered": 3,
    "unseen": 2,
    "poll_skip": 3,
    "nonmonotonic_poll": 2,
    "commit_regression": 2,
    "commit_beyond_read": 2,
}


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """A small classic session per module (a module may define its own instead)."""
    session = build_session("local[2]", {"spark.driver.memory": "1g"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynthHistory]:
    root = tmp_path_factory.mktemp("history")
    spec = SynthSpec(sends=20_000, partitions=4, producers=3, anomalies=ALL_KINDS, seed=11)
    yield generate(spec, root)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def connect_remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server of the installed pyspark (sbin/start-connect-server.sh),
    listening on 127.0.0.1 only, on a free port; yields its ``sc://`` URL and stops it at
    the end with sbin/stop-connect-server.sh. Its pid and logs live in a directory of
    this session, so the stop script ends this server and no other. The server's Python
    workers run this interpreter, which imports the installed spark_jobs: the sweep that
    mapInArrow ships to them is a function of that module."""
    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("spark-connect")
    port = _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_PID_DIR": str(work),
        "SPARK_LOG_DIR": str(work),
        "SPARK_IDENT_STRING": f"kafka-chaos-{port}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    start = [
        "bash", str(home / "sbin" / "start-connect-server.sh"),
        "--master", "local[2]",
        "--driver-memory", "1g",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.log.level=WARN",
    ]  # fmt: skip
    stop = ["bash", str(home / "sbin" / "stop-connect-server.sh")]
    subprocess.run(start, env=env, check=True, capture_output=True, timeout=60)
    try:
        deadline = time.monotonic() + 180
        while not _answers(port):
            pids = list(work.glob("*.pid"))
            alive = pids and Path(f"/proc/{pids[0].read_text().strip()}").exists()
            if not alive or time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-3000:] for p in work.glob("*.out"))
                pytest.fail(f"the Spark Connect server did not start on port {port}:\n{logs}")
            time.sleep(1)
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run(stop, env=env, check=False, capture_output=True, timeout=120)
