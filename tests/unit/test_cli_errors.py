"""Bad input to the command line: one clear line on stderr and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.compose.cli", *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )


def _one_line_error(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kafka-chaos: ")
    assert expected in lines[0]


def test_unknown_kafka_version_is_refused_with_the_supported_list() -> None:
    result = _cli("up", "--kafka-version", "3.7.99")
    _one_line_error(result, "Kafka '3.7.99' is not supported; supported versions: 2.8.2")


def test_version_never_released_on_maven_central_is_refused() -> None:
    _one_line_error(_cli("setup", "--kafka-version", "9.9.9"), "is not supported")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('zones = ["a", "b", "c"]\n[[brokers]]\nid = 0\nzone = "a"\n', "zone 'b' of topology"),
        ('zones = ["a"]\nbrokers_per_zone = 1\n[topic_defaults]\n"replication.factor" = 3\n',
         "replication factor 3 is impossible on 1 broker(s)"),
        ('zones = ["a", "a"]\n', "repeats zone(s)"),
        ("zones = [\n", "does not parse"),
    ],
)
def test_malformed_topology_is_refused(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content)
    _one_line_error(_cli("check", str(path)), expected)
    # The same declaration handed to `up` fails before any container exists.
    _one_line_error(_cli("up", "--topology", str(path)), expected)


def test_no_docker_engine_is_one_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-docker.sock"
    result = _cli("up", env={"DOCKER_HOST": f"unix://{missing}"})
    _one_line_error(result, "no Docker engine answers")
