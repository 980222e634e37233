"""Chaos tests selected where no Docker engine answers: one clear error, non-zero exit.

DOCKER_HOST pointing at a socket nobody listens on stands for a machine without an
engine (and keeps the harness from starting dockerd, which it only does where
DOCKER_HOST is unset), so these run anywhere, without Docker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _no_engine_env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock",
                KAFKA_CHAOS_REPORTS=str(tmp_path / "reports"))


def test_selecting_chaos_tests_without_an_engine_is_one_error_not_a_run_of_skips(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "chaos", "-p", "no:cacheprovider",
         "tests/chaos/test_cluster.py"],
        cwd=ROOT, env=_no_engine_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 4, output  # pytest's usage error, not 0 and not 5
    assert "chaos test(s) selected, but no Docker engine answers" in output
    assert " passed" not in output and " skipped" not in output
    assert not (tmp_path / "reports").exists(), "nothing may be reported for a run that never ran"


def test_unit_tests_alone_need_no_engine(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_topology.py"],
        cwd=ROOT, env=_no_engine_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_scenario_file_run_without_an_engine_stops_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "harness.entry.cli", "run", "tests/scenarios/kill_leader_acks_all.toml"],
        cwd=ROOT, env=_no_engine_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafka-chaos: no Docker engine answers"), result.stderr
