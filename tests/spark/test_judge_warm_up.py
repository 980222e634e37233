"""The run's judge warms its Spark session in the background; the scenario's verdict
then runs on the warm session and is the same as a cold judge's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.compose.judge import Judge
from spark_jobs.synthetic import SynthSpec, generate

pytestmark = pytest.mark.spark


def test_a_warmed_judge_gives_the_same_exact_verdict_on_a_warm_session(tmp_path: Path) -> None:
    planted = {"lost": 2, "duplicate": 1}
    generate(SynthSpec(sends=5_000, anomalies=planted, partitions=4), tmp_path / "h")
    judge = Judge("local[2]")
    try:
        judge.warm_up()
        assert judge._warming is not None
        judge._warming.join(300)
        assert judge.warm_up_error is None and judge.warm_up_s is not None
        started = time.monotonic()
        verdict = judge.verdict(tmp_path / "h")
        warm_s = time.monotonic() - started
    finally:
        judge.close()
    counts = verdict.findings.counts()
    assert {k: counts[k] for k in planted} == planted
    print(f"\nwarm-up {judge.warm_up_s:.1f} s; a 5k-send history judged warm in {warm_s:.2f} s")
    assert warm_s < judge.warm_up_s, "the judgement after the warm-up paid the start-up again"
