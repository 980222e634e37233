"""The run's judge warms its Spark session in the background; the scenario's verdict
then runs on the warm session and is the same as a cold judge's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.scenario.judge import Judge
from spark_jobs.warm_up import warm_up_histories
from tests.synthetic.core import SynthSpec, generate

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


def test_a_verdict_asked_for_during_the_warm_up_interrupts_it(tmp_path: Path) -> None:
    """Once the session is up the warm-up judges for seconds (the first judgement of a
    session); a verdict asked for then interrupts it instead of waiting for it, and is
    exact on the session as warm as it got."""
    planted = {"lost": 1, "unseen": 2}
    generate(SynthSpec(sends=1_000, anomalies=planted, partitions=2), tmp_path / "h")
    judge = Judge("local[2]")
    try:
        judge.warm_up()
        deadline = time.monotonic() + 120
        while judge._spark is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert judge._spark is not None, "the warm-up never started its session"
        verdict = judge.verdict(tmp_path / "h")
        assert judge._warming is not None
        judge._warming.join(300)
    finally:
        judge.close()
    counts = verdict.findings.counts()
    assert {k: counts[k] for k in planted} == planted
    assert judge.warm_up_error is None  # an interrupt is not a failure
    assert judge.warm_up_stages == 0  # the first judgement was cut short, not waited for


def test_a_warm_up_left_alone_judges_every_stage(tmp_path: Path) -> None:
    judge = Judge("local[2]")
    try:
        judge.warm_up()
        assert judge._warming is not None
        judge._warming.join(300)
    finally:
        judge.close()
    assert judge.warm_up_error is None
    assert judge.warm_up_stages == len(warm_up_histories()) == 2


def test_closing_the_judge_interrupts_its_warm_up() -> None:
    """A run that ends before any verdict (a failure, Ctrl-C) closes the judge while the
    warm-up judges: the warm-up is stopped, not waited for."""
    judge = Judge("local[2]")
    judge.warm_up()
    deadline = time.monotonic() + 120
    while judge._spark is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert judge._spark is not None, "the warm-up never started its session"
    judge.close()
    assert judge._warming is not None and not judge._warming.is_alive()
    assert judge.warm_up_error is None
    assert judge.warm_up_stages == 0
    assert judge._spark is None
