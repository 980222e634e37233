"""`kafka-chaos run` prints every failed check and rule of a scenario, not only the last."""

from __future__ import annotations

import pytest

from harness.entry.commands import run


def test_every_failure_is_printed_one_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    error = "rule lost: lost=2327 exceeds max 0\nrule truncated: truncated=2327 exceeds max 0"
    run.report_outcome("explore-2-r0-shrunk", "failed", error)
    captured = capsys.readouterr()
    out = captured.err + captured.out
    assert "scenario explore-2-r0-shrunk: FAILED (2 checks and rules):" in out
    assert "lost=2327 exceeds max 0" in out
    assert "truncated=2327 exceeds max 0" in out


def test_a_long_detail_is_cut_on_the_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    run.report_outcome("s", "failed", "liveness: " + "p0: 0 in the window; " * 40 + "\nrule lost: lost=1")
    out = capsys.readouterr()
    text = out.err + out.out
    assert max(len(line) for line in text.splitlines()) < run.FAILURE_LINE_CHARS + 40
    assert "..." in text


def test_an_error_shows_its_message_and_a_pass_nothing_more(capsys: pytest.CaptureFixture[str]) -> None:
    run.report_outcome("s", "error", "Traceback (most recent call last):\n  ...\nRuntimeError: boom")
    run.report_outcome("t", "passed", "")
    out = capsys.readouterr()
    text = out.err + out.out
    assert "scenario s: ERROR: RuntimeError: boom" in text
    assert "scenario t: PASSED" in text
