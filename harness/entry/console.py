"""What a person watching a chaos run sees: a first line with the count and how long it
should take, one line per test as it ends, and the harness's own progress (cluster start,
healing, recovery, waits past :data:`harness.cluster.waiting.LONG_WAIT_S`) as it happens.

pytest captures a test's output, so a line written while a test runs goes to a copy of
the terminal taken before capturing began (:class:`LiveLines`; the plugin ends pytest's
own line before each chaos test starts, so these lines never land mid-line); the waits
announce themselves on the ``kafka_chaos`` logger, which :meth:`LiveLines.attach`
routes to the same place. The estimate comes from the durations the newest earlier run
of the same reports folder recorded (:func:`previous_durations`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

from harness.cluster.waiting import PROGRESS_LOGGER

PREFIX = "[kafka-chaos]"


class LiveLines:
    """Lines written at once to the terminal the session started on, from any thread."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        if stream is None:
            try:  # a copy of stdout taken now, before pytest redirects it for a test
                stream = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, closefd=True)
            except (OSError, ValueError, AttributeError):  # no real stdout (an embedded run)
                stream = sys.stdout
        self._stream = stream
        self._lock = threading.Lock()
        self._handler: logging.Handler | None = None

    def __call__(self, line: str) -> None:
        with self._lock:
            self._stream.write(f"{PREFIX} {line}\n")
            self._stream.flush()

    def attach(self) -> None:
        """Show the harness's ``kafka_chaos`` log (long waits) as live lines."""
        if self._handler is not None:
            return
        live = self

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                live(record.getMessage())

        self._handler = _Handler(logging.INFO)
        logger = logging.getLogger(PROGRESS_LOGGER)
        logger.addHandler(self._handler)
        logger.setLevel(logging.INFO)

    def detach(self) -> None:
        if self._handler is not None:
            logging.getLogger(PROGRESS_LOGGER).removeHandler(self._handler)
            self._handler = None


def minutes(seconds: float) -> str:
    """A duration as a person says it: "40 s", "12 min", "1 h 5 min"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    whole = round(seconds / 60)
    return f"{whole} min" if whole < 60 else f"{whole // 60} h {whole % 60} min"


def previous_durations(reports: Path, excluding: str) -> tuple[str, dict[str, float]] | None:
    """The run id and per-test durations of the newest run under ``reports`` (by start)
    that recorded any, other than ``excluding``; None when there is none."""
    newest: tuple[float, str, dict[str, float]] | None = None
    for header in reports.glob("*/run.json"):
        if header.parent.name == excluding:
            continue
        try:
            data = json.loads(header.read_text())
            started = float(data.get("started") or 0)
            durations = {str(t["id"]): float(t["duration_s"]) for t in data.get("tests", [])
                         if t.get("outcome") in ("passed", "failed") and t.get("duration_s")}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
        if durations and (newest is None or started > newest[0]):
            newest = (started, header.parent.name, durations)
    return None if newest is None else (newest[1], newest[2])


def opening_line(test_ids: Iterable[str], previous: tuple[str, Mapping[str, float]] | None) -> str:
    """How many chaos tests, and how long they should take by the last run's durations
    (a test it did not run counted at that run's mean)."""
    ids = list(test_ids)
    count = f"{len(ids)} chaos test{'' if len(ids) == 1 else 's'}"
    if previous is None:
        return f"{count}; no earlier run in this reports folder to estimate the time from"
    run_id, durations = previous
    mean = sum(durations.values()) / len(durations)
    known = sum(1 for i in ids if i in durations)
    total = sum(durations.get(i, mean) for i in ids)
    return (f"{count}; about {minutes(total)} by the durations of run {run_id} "
            f"({known} of {len(ids)} ran there)")


def anomaly_phrase(counts: Mapping[str, int] | None) -> str:
    """A verdict's anomalies in one phrase ("" without a verdict)."""
    if counts is None:
        return ""
    found = [f"{kind} {n}" for kind, n in counts.items() if n]
    return "anomalies: " + ", ".join(found) if found else "no anomaly"


def ended_line(position: int, total: int, test_id: str, outcome: str, duration_s: float, phrase: str,
              error: str = "") -> str:
    """One ended test: where in the run, outcome, duration, name, what its verdict found;
    for a test that did not pass, the last line of its error."""
    tail = f"; {phrase}" if phrase else ""
    why = ""
    if outcome not in ("passed", "skipped") and error.strip():
        last = error.strip().splitlines()[-1]
        why = f"\n    {last[:200]}"
    return f"{position}/{total} {outcome.upper()} {minutes(duration_s)} {test_id}{tail}{why}"
