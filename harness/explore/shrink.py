"""Shrinking a failing schedule to the smallest one that still fails.

First delta debugging (Zeller and Hildebrandt's ddmin) over the schedule's entries, then
each remaining entry's duration and start time moved toward the smallest value that still
fails. The predicate is a real round against a cluster, so it is nondeterministic: a
candidate counts as failing when at least ``needed`` of up to ``runs`` runs fail (runs stop
as soon as the answer is known), and each distinct candidate is judged once and
remembered. A schedule that fails with no entry at all is reported as such: the violation
is not the faults' doing.

A budget (``out_of_time``) stops the search where it is: from then on every candidate not
yet judged counts as passing, so the search winds down at once and hands back the smallest
schedule that was *seen* to fail (every step it took was judged), only no longer shown to
be minimal; ``stopped_early`` says so. Each run of a candidate is a whole round against a
cluster, minutes each, so a user who has an hour gets the best hour's result, not nothing.

Entries are plain dicts (the scenario-file form); a candidate keeps the original order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from faults.schedule import entry_words

Entry = Mapping[str, Any]
MIN_DURATION_S = 1.0


@dataclass(frozen=True)
class Flaky:
    """A candidate that failed in some of its runs, but not in enough to count as failing."""

    candidate: int
    entries: list[Entry]
    failed: int
    runs: int


def schedule_words(entries: Sequence[Entry]) -> str:
    return "; ".join(entry_words(e) for e in entries) or "no fault"


def majority(runs: int) -> int:
    """The failed runs that make a candidate count as failing by default: most of them.
    With one failure in three, a flaky violation shrinks to a schedule that then fails
    in one run out of three; with two, the shrunk file fails again more often than not."""
    return runs // 2 + 1


@dataclass
class Shrinker:
    """Judges candidates with ``fails`` (one run: True when it violates an invariant)."""

    fails: Callable[[list[Entry]], bool]
    runs: int = 3
    needed: int = 1
    out_of_time: Callable[[], bool] = lambda: False
    judged: dict[str, bool] = field(default_factory=dict)
    rounds_run: int = 0
    stopped_early: bool = False
    # The candidate being judged (1 for the first distinct one) and its run (1 to runs):
    # what a caller's ``fails`` may name a run by.
    candidate: int = 0
    run: int = 0
    # Candidates that failed in some runs but fewer than ``needed``: counted as passing,
    # and listed, since a violation that comes and goes is worth a look of its own.
    flaky: list[Flaky] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 1 <= self.needed <= self.runs:
            raise ValueError(f"needed ({self.needed}) must be between 1 and runs ({self.runs})")

    def still_fails(self, candidate: Sequence[Entry]) -> bool:
        entries = sorted(candidate, key=lambda e: float(e["start_s"]))
        key = json.dumps(entries, sort_keys=True)
        if key not in self.judged:
            if self.stopped_early or self.out_of_time():
                self.stopped_early = True
                return False  # not judged: the search keeps what it has seen fail
            failed = 0
            self.candidate += 1
            for done in range(1, self.runs + 1):
                self.rounds_run += 1
                self.run = done
                failed += bool(self.fails(list(entries)))
                if failed >= self.needed or failed + (self.runs - done) < self.needed:
                    break
            self.judged[key] = failed >= self.needed
            if 0 < failed < self.needed:
                self.flaky.append(Flaky(self.candidate, list(entries), failed, done))
        return self.judged[key]

    def shrink(self, schedule: Sequence[Entry]) -> list[Entry]:
        """The smallest schedule found that still fails: [] if the empty one fails, else a
        1-minimal subset of ``schedule`` (no single entry can go), then shortened."""
        if self.still_fails([]):
            return []
        entries = self.fewest(list(schedule))
        entries = self.shortest(entries)
        return sorted(entries, key=lambda e: float(e["start_s"]))

    def fewest(self, entries: list[Entry]) -> list[Entry]:
        """ddmin: try each of n chunks alone, then each complement; on success restart
        from the smaller set, else split finer, until single entries were tried."""
        n = 2
        while len(entries) >= 2:
            chunks = _split(entries, n)
            smaller = next((c for c in chunks if self.still_fails(c)), None)
            if smaller is not None:
                entries, n = smaller, 2
                continue
            complements = [[e for j, c in enumerate(chunks) if j != i for e in c] for i in range(len(chunks))]
            smaller = next((c for c in complements if len(chunks) > 2 and self.still_fails(c)), None)
            if smaller is not None:
                entries, n = smaller, max(n - 1, 2)
                continue
            if n >= len(entries):
                break
            n = min(len(entries), 2 * n)
        return entries

    def shortest(self, entries: list[Entry]) -> list[Entry]:
        """Each entry's duration halved, then its start moved halfway to the previous
        entry's start (or to 0), for as long as the schedule still fails."""
        entries = sorted(entries, key=lambda e: float(e["start_s"]))
        for i in range(len(entries)):
            while float(entries[i]["duration_s"]) > MIN_DURATION_S:
                shorter = round(max(MIN_DURATION_S, float(entries[i]["duration_s"]) / 2), 1)
                if not self._try(entries, i, "duration_s", shorter):
                    break
            floor = float(entries[i - 1]["start_s"]) if i else 0.0
            while float(entries[i]["start_s"]) - floor >= 1.0:
                earlier = round((float(entries[i]["start_s"]) + floor) / 2, 1)
                if not self._try(entries, i, "start_s", earlier):
                    break
        return entries

    def _try(self, entries: list[Entry], i: int, key: str, value: float) -> bool:
        candidate = [*entries[:i], {**entries[i], key: value}, *entries[i + 1:]]
        if self.still_fails(candidate):
            entries[i] = candidate[i]
            return True
        return False


def _split(entries: list[Entry], n: int) -> list[list[Entry]]:
    """``entries`` in n contiguous chunks of near-equal size (none empty)."""
    n = min(n, len(entries))
    size, extra = divmod(len(entries), n)
    chunks, start = [], 0
    for i in range(n):
        end = start + size + (i < extra)
        chunks.append(entries[start:end])
        start = end
    return chunks
