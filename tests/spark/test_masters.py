"""The job gives identical results in one JVM (local[*]) and with separate executor
processes (local-cluster), i.e. nothing depends on driver-side state or Python workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.history.verdict import VERDICT_SCHEMA_VERSION
from spark_jobs.reconcile import reconcile
from spark_jobs.session import build_session
from tests.synthetic.core import SynthHistory

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def _run(master: str, history: SynthHistory) -> dict[str, Any]:
    spark = build_session(master, {"spark.driver.memory": "1g", "spark.executor.memory": "512m"})
    try:
        found = reconcile(spark, history.path)
    finally:
        spark.stop()
    out = found.to_dict()
    out.pop("timings")
    return out


def test_local_and_local_cluster_agree(history: SynthHistory) -> None:
    local = _run("local[*]", history)
    cluster = _run("local-cluster[2,1,1024]", history)
    assert cluster == local
    assert local["counts"] == {k: sum(v.values()) for k, v in history.expected.items()}


def test_cli_writes_verdict_and_exit_code(history: SynthHistory, tmp_path: Path) -> None:
    out = tmp_path / "verdict.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "spark_jobs" / "reconcile.py"),
            str(history.path),
            "--out",
            str(out),
            "--master",
            "local[2]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # synthetic expectations are the exact planted counts: the verdict passes
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdict = json.loads(out.read_text())
    assert verdict["passed"] is True
    assert verdict["schema_version"] == VERDICT_SCHEMA_VERSION
    assert set(verdict["rules"]) == set(verdict["kinds"])


def test_cli_rejects_incomplete_history(history: SynthHistory, tmp_path: Path) -> None:
    broken = tmp_path / "h"
    (broken / "sends").mkdir(parents=True)
    manifest = json.loads((history.path / "manifest.json").read_text())
    (broken / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    proc = subprocess.run(
        [sys.executable, str(REPO / "spark_jobs" / "reconcile.py"), str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"reconcile: error: history {broken} is still being written (status running)"
    ]
    assert not (broken / "verdict.json").exists()
