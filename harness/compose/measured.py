"""The figures a scenario's bounds are judged on, gathered when the run has finished.

Send outcomes and the longest stretches without an acknowledgement come from the closed
history; controller and leader-epoch changes from the ZooKeeper sampler's rows; ISR
recovery from a poll of ZooKeeper after the last heal, since the sampler has stopped by
the time the bound may run out. What cannot be read becomes a reason in
``Measured.problems``, and the bounds that needed it fail with that reason
(:func:`harness.compose.expectations.evaluate`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness import history as hist
from harness.compose.expectations import (
    IsrAfterHeal,
    Measured,
    controller_changes,
    isr_full_after,
    isr_full_since,
    isr_shortfalls,
    leader_epoch_changes,
    send_outcomes,
)
from harness.history.gaps import longest_gaps

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster
    from harness.cluster.sampler import StateSampler


@dataclass(frozen=True)
class IsrPoll:
    """What polling ZooKeeper after the heal found, for the ISR bound."""

    healed_at: float
    replicas: Mapping[int, tuple[int, ...]]
    full_at: float | None  # when a poll saw every ISR full; None: not before the bound
    waiting: list[str]  # the partitions still short at the last poll


def poll_isr_after_heal(cluster: Cluster, topic: str, healed_at: float, bound_s: float) -> IsrPoll:
    """Poll ZooKeeper until every ISR of ``topic`` is full or ``bound_s`` has passed since
    ``healed_at``; the replica sets it reads also serve the sampler's events.

    The bound runs from the heal, which may be long past by now, not from this call."""
    replicas: dict[int, tuple[int, ...]] = {}
    while True:
        try:
            parts = cluster.state([topic]).topic(topic)
            replicas = {p.partition: p.replicas for p in parts}
            waiting = isr_shortfalls({p.partition: (p.isr, p.replicas) for p in parts})
            if parts and not waiting:
                return IsrPoll(healed_at, replicas, time.time(), [])
        except Exception as err:  # ZooKeeper unreadable for a moment: try until the bound
            waiting = [f"ZooKeeper could not be read: {err}"]
        if time.time() >= healed_at + bound_s:
            return IsrPoll(healed_at, replicas, None, waiting or ["the topic has no partition state"])
        time.sleep(0.25)


def measured(history: Path, topic: str, injects: Sequence[float],
             workload: tuple[float | None, float | None], sampler: StateSampler | None,
             isr: IsrPoll | None) -> Measured:
    """Every figure a bound reads. ``injects`` are the fault injections' times; the
    acknowledgement gaps are measured from the first of them (from the workload's start
    without one) to the workload's stop, ``workload`` = (started, stopped)."""
    problems: dict[str, str] = {}
    rows: list[dict[str, Any]] | None = None
    try:
        rows = [row for part in hist.part_files(history, "sends")
                for row in pq.read_table(part, columns=["partition", "outcome", "ack_ts"]).to_pylist()]
    except (OSError, pa.ArrowException) as err:
        problems["sends"] = problems["gaps"] = f"the sends table cannot be read: {err}"
    start = min(injects) if injects else workload[0]
    window_from = "the first fault inject" if injects else "the start of the workload"
    end = workload[1]
    window = None
    if start is None or end is None:
        problems.setdefault("gaps", "no workload ran, so no acknowledgement could be timed")
    elif end <= start:
        problems.setdefault("gaps", "the first fault was injected after the workload stopped")
    else:
        window = (start, end)
    states = sampler.rows() if sampler is not None else []
    figures: dict[str, Any] = {}
    for key, measure in (("controller_changes", lambda: controller_changes(states)),
                         ("leader_epoch_changes", lambda: leader_epoch_changes(states, topic)),
                         ("isr_full_after_heal_s", lambda: isr_after_heal(states, topic, isr))):
        try:
            figures[key] = measure()
        except ValueError as err:  # a sampled row that cannot be read
            problems[key] = str(err)
    if sampler is None:
        for key in ("controller_changes", "leader_epoch_changes"):
            problems[key] = "ZooKeeper was not sampled"
            figures.pop(key, None)
    return Measured(
        sends=None if rows is None else send_outcomes(rows),
        window=window, window_from=window_from,
        gaps=None if rows is None or window is None else longest_gaps(rows, *window),
        controller=figures.get("controller_changes"),
        leader_epochs=figures.get("leader_epoch_changes"),
        isr=figures.get("isr_full_after_heal_s"),
        problems=problems,
    )


def isr_after_heal(states: Sequence[Any], topic: str, isr: IsrPoll | None) -> IsrAfterHeal | None:
    """When every ISR was full again after the last heal: from the sampled states where
    they show it, else from the poll."""
    if isr is None:
        return None
    since = isr_full_since(states, topic, isr.replicas)
    return isr_full_after(isr.healed_at, since, isr.full_at, isr.waiting)
