"""The report's sample run says what the real reconciliation would say about it.

The report tests use a hand-built verdict so they need neither Spark nor Java; this
test keeps that shortcut honest by running ``spark_jobs.reconcile`` on the sample
histories and comparing everything the report shows: pass/fail, counts per kind and
partition, send totals, availability buckets with their fates, where each kind's offsets
lie (ranges) and the examples' positions.

It starts Spark and takes minutes on a busy two-core machine, so it runs only when
asked for: ``python3 -m pytest -m spark tests/report``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.history import Expectations
from tests.report.sample_run import SCENARIOS, build_sample_run, findings, simulate

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="the Spark reconciliation needs Java"),
]


def _shown(verdict: dict[str, Any]) -> dict[str, Any]:
    """The parts of a verdict the report displays (not run paths, timings or wording)."""
    return {
        "passed": verdict["passed"],
        "counts": verdict["counts"],
        "totals": verdict["totals"],
        "availability": verdict["availability"],
        "fates": verdict["fates"],
        "partitions": [
            {
                **{k: p[k] for k in ("topic", "partition", "counts", "sends", "log", "ranges")},
                "examples": {
                    kind: [(e["message_id"], e["offset"], e["ack_ts"], e["final_message_id"]) for e in exs]
                    for kind, exs in p["examples"].items()
                },
            }
            for p in verdict["partitions"]
        ],
    }


@pytest.mark.spark
def test_sample_verdicts_match_the_spark_reconciliation(tmp_path: Path) -> None:
    from spark_jobs.reconcile import reconcile
    from spark_jobs.session import build_session

    run_dir = build_sample_run(tmp_path)
    spark = build_session("local[2]", {"spark.ui.enabled": "false"})
    try:
        for scenario in SCENARIOS:
            expectations = Expectations.from_dict(scenario.expectations)
            real = reconcile(spark, run_dir / scenario.id / "history", partitions=2).judge(expectations)
            ours = findings(simulate(scenario.duration_s, scenario.fate, scenario.ack_delay)).judge(
                expectations
            )
            assert _shown(json.loads(json.dumps(ours.to_dict()))) == _shown(
                json.loads(json.dumps(real.to_dict()))
            ), scenario.id
    finally:
        spark.stop()
