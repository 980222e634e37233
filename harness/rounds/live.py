"""What an exploration round shows while it runs: a line every few seconds with how long
it has run, which faults are in force, acknowledgements per second and the violations so
far, read from the round's event log and workload."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from faults.events import FaultEvent
from harness.scenario.runner import ScenarioRun

Progress = Callable[[str], None]


def faults_in_force(events: Sequence[FaultEvent]) -> list[str]:
    """The faults injected and not yet healed, each with what it hit."""
    pending: list[FaultEvent] = []
    for event in events:
        if event.action == "inject":
            pending.append(event)
        else:
            match = next((e for e in pending if e.fault == event.fault), None)
            if match is not None:
                pending.remove(match)
    return [f"{e.fault}({', '.join(e.targets)})" if e.targets else e.fault for e in pending]


class LiveProgress:
    """A line every ``every_s`` while a round runs: how long, which faults are in force,
    acknowledgements per second since the last line, violations so far."""

    def __init__(self, number: int, run: ScenarioRun, violations: Callable[[], int], progress: Progress,
                 every_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.number, self.run, self.violations, self.progress = number, run, violations, progress
        self.every_s, self.clock = every_s, clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name=f"explore-round-{number}", daemon=True)
        self._acked, self._at = 0, clock()
        self._began = self._at

    def begin(self) -> LiveProgress:
        self._thread.start()
        return self

    def end(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def line(self) -> str:
        workload, now = self.run.workload, self.clock()
        acked = 0 if workload is None else workload.outcomes().get("acked", 0)
        rate = (acked - self._acked) / max(now - self._at, 1e-6)
        self._acked, self._at = acked, now
        faults = ", ".join(faults_in_force(self.run.log.events)) or "nothing"
        return (f"round {self.number}: {now - self._began:.0f} s, in force: {faults}, "
                f"{rate:.0f} acks/s, violations so far: {self.violations()}")

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            self.progress(self.line())
