"""Fault events: every inject and every heal, as the run's history records them.

A verdict such as "messages were lost while zone a was isolated" is only checkable if
the history says exactly when each fault started and ended and which nodes it hit.
Each event therefore carries both clocks: wall-clock time to line up with the
producers' and consumers' records, monotonic time to measure gaps that a clock step
cannot distort. An event also says when its action finished (``done_ts``): a heal that
starts a node is done only once the node is back in the cluster, so the outage it ends
runs until then, not until the process was started. The row layout is the ``faults``
table of :mod:`harness.history` (ts, mono, fault, action, targets as a JSON list,
outcome, done_ts); a writer's ``append`` can be given as the log's sink so events reach
the history as they happen.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.errors import describe_error

Action = Literal["inject", "heal"]
Sink = Callable[[Mapping[str, Any]], None]

OK = "ok"


@dataclass(frozen=True)
class FaultEvent:
    """One inject or heal: when it started and finished, what it was aimed at, how it ended."""

    ts: float
    mono: float
    fault: str
    action: Action
    targets: tuple[str, ...]
    outcome: str
    done_ts: float | None = None  # wall clock when the action finished (None: not recorded)

    @property
    def ok(self) -> bool:
        return self.outcome == OK or self.outcome.startswith(OK + ":")

    def to_row(self) -> dict[str, Any]:
        return {
            "ts": self.ts,
            "mono": self.mono,
            "fault": self.fault,
            "action": self.action,
            "targets": json.dumps(list(self.targets)),
            "outcome": self.outcome,
            "done_ts": self.done_ts,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> FaultEvent:
        action = row["action"]
        if action not in ("inject", "heal"):
            raise ValueError(f"fault event action must be inject or heal, got {action!r}")
        return cls(
            ts=float(row["ts"]),
            mono=float(row["mono"]),
            fault=str(row["fault"]),
            action=action,
            targets=tuple(json.loads(row["targets"] or "[]")),
            outcome=str(row["outcome"]),
            done_ts=None if row.get("done_ts") is None else float(row["done_ts"]),
        )


def outcome_ok(detail: str = "") -> str:
    return f"{OK}: {detail}" if detail else OK


def outcome_error(err: BaseException) -> str:
    return f"error: {describe_error(err)}"


class EventLog:
    """The fault events of one run, in the order they finished; safe across threads.

    A schedule injects from its own thread while the test thread heals, so appends are
    locked. ``sink`` (for instance ``lambda row: writer.append("faults", row)``) receives
    every row as it is recorded.
    """

    def __init__(self, sink: Sink | None = None) -> None:
        self._events: list[FaultEvent] = []
        self._lock = threading.Lock()
        self._sink = sink

    def record(
        self,
        fault: str,
        action: Action,
        targets: tuple[str, ...],
        outcome: str,
        started: tuple[float, float] | None = None,
    ) -> FaultEvent:
        """Append an event; ``started`` is the (wall, monotonic) time the action began, and
        the event is recorded when the action has finished (its ``done_ts``)."""
        done = time.time()
        ts, mono = started or (done, time.monotonic())
        event = FaultEvent(ts, mono, fault, action, tuple(targets), outcome, done)
        with self._lock:
            self._events.append(event)
        if self._sink is not None:
            self._sink(event.to_row())
        return event

    @property
    def events(self) -> list[FaultEvent]:
        with self._lock:
            return list(self._events)

    def to_rows(self) -> list[dict[str, Any]]:
        return [event.to_row() for event in self.events]

    def __iter__(self) -> Iterator[FaultEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)


def now() -> tuple[float, float]:
    """Both clocks, read together."""
    return time.time(), time.monotonic()
