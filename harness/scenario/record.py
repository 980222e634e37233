"""What a scenario's page says besides its anomaly counts: its checks, its measured
windows, and the error that stopped it, written as the scenario's ``assertions.json``.

A control run names checks that must fail (``must_fail``): such a check is recorded
inverted, and the record says whether every one of them was evaluated, so a misspelt
name cannot pass unseen. The record never claims more than it saw: an error that
stopped the scenario is a failed line of its own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.files import write_json
from harness.report.load import ASSERTIONS_FILE

if TYPE_CHECKING:
    from harness.history.verdict import Verdict


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""


class ScenarioRecord:
    """The checks, windows and error of one scenario, and the file they are written to."""

    def __init__(self, directory: Path, must_fail: Sequence[str] = ()) -> None:
        self.dir = directory
        self.must_fail = tuple(must_fail)
        self._controls_evaluated: set[str] = set()
        self.checks: list[Check] = []
        self.windows: list[dict[str, Any]] = []
        self.verdict: Verdict | None = None
        self._error: str | None = None
        self.started = time.time()

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        """Record a check for the report; returns ``passed`` to assert on. A check the spec
        names in ``must_fail`` is inverted: it passes when it failed, as a control run
        requires."""
        if name in self.must_fail:
            self._controls_evaluated.add(name)
            held = "held" if passed else "failed"
            name = f"{name} (must fail in this control run)"
            detail = f"{held}, as measured: {detail}"
            passed = not passed
        self.checks.append(Check(name, bool(passed), detail))
        return bool(passed)

    def check_controls(self) -> None:
        """Every check a control run names in ``must_fail`` was evaluated: a name that
        matches no check (misspelt, or the check never ran) would otherwise pass unseen.
        Called once the run's last check is made (:func:`~harness.scenario.spec_runner.run_spec`)."""
        if not self.must_fail:
            return
        missing = [name for name in self.must_fail if name not in self._controls_evaluated]
        self.check("every check the control run must see fail was evaluated", not missing,
                   "never evaluated: " + "; ".join(missing) if missing
                   else f"{len(self.must_fail)} evaluated")

    def record_test_outcome(self, passed: bool, detail: str) -> None:
        """The pytest result of the test that ran this scenario, added to its checks."""
        self.checks.append(Check("test assertions (pytest)", passed, detail))
        self._write_assertions()

    def window(self, name: str, seconds: float) -> float:
        """Record a measured window (e.g. unavailability of a partition) for the report."""
        self.windows.append({"name": name, "seconds": round(seconds, 3)})
        return seconds

    @property
    def passed(self) -> bool:
        """Every check held, the verdict (if judged) passed, and nothing stopped the run."""
        return (self._error is None and all(c.passed for c in self.checks)
                and (self.verdict is None or self.verdict.passed))

    def failures(self) -> list[str]:
        """The failed checks and rules, one line each, for an assertion message."""
        lines = [f"{c.name}: {c.detail}" for c in self.checks if not c.passed]
        if self.verdict is not None and not self.verdict.passed:
            lines.extend(f"verdict: {r.reason}" for r in self.verdict.rules if not r.passed)
        return lines

    def _write_assertions(self) -> None:
        checks = [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks]
        if self._error:
            checks.append({"name": "scenario ran to completion", "passed": False, "detail": self._error})
        write_json(self.dir / ASSERTIONS_FILE, {
            "passed": all(c["passed"] for c in checks) and self._error is None,
            "checks": checks, "windows": self.windows,
            "duration_s": round(time.time() - self.started, 1),
        })
