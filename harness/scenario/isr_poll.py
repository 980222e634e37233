"""The ISR after the last heal, watched when the run has finished.

An ``isr_full_after_heal_s`` check needs to know when every ISR was full again after
the last heal, and the sampler has stopped by the time its bound may run out. So the
runner polls the metadata after the heal for as long as the longest such bound allows;
the check then reads the sampled states where they show it, else the poll
(:class:`~harness.scenario.checks.IsrFullAfterHeal`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.cluster.waiting import WaitTimeout, wait_until_clear
from harness.scenario.checks import IsrAfterHeal
from harness.scenario.checks.metadata import isr_full_after, isr_full_since, isr_shortfalls

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster


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
    full_at: list[float] = []

    def short_isrs() -> list[str]:
        nonlocal replicas
        try:
            parts = cluster.state([topic]).topic(topic)
        except Exception as err:  # unreadable for a moment, or till the bound: its reason, never a crash
            return [f"ZooKeeper could not be read: {err}"]
        replicas = {p.partition: p.replicas for p in parts}
        waiting = isr_shortfalls({p.partition: (p.isr, p.replicas) for p in parts})
        if not parts:
            return waiting or ["the topic has no partition state"]
        if not waiting:
            full_at.append(time.time())
        return waiting

    try:
        wait_until_clear(short_isrs, healed_at + bound_s - time.time(), f"every ISR of {topic} full",
                         interval_s=0.25)
    except WaitTimeout as timeout:
        return IsrPoll(healed_at, replicas, None, list(timeout.last_problems))
    return IsrPoll(healed_at, replicas, full_at[-1], [])


def isr_after_heal(states: Sequence[Any], topic: str, isr: IsrPoll | None) -> IsrAfterHeal | None:
    """When every ISR was full again after the last heal: from the sampled states where
    they show it, else from the poll."""
    if isr is None:
        return None
    since = isr_full_since(states, topic, isr.replicas)
    return isr_full_after(isr.healed_at, since, isr.full_at, isr.waiting)
