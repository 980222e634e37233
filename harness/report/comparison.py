"""The figures a platform engineer compares across metadata modes and clients, per
scenario: what was lost and written twice, how long each partition was unavailable, how
soon a partition had a leader again after the first fault and how soon the clients were
acknowledged by it, and how soon every ISR was full again after the last heal.

They are read from what a scenario's report already holds (the longest stretch each
partition went without an acknowledgement while sends were made, read from the sends
table; the sampled cluster events; the fault windows), so a matrix page can set a
ZooKeeper and a KRaft run of the same scenario side by side without a second judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.history.kinds import kind
from harness.report.model import ClusterEvent, Scenario

# The kinds a comparison of clients reads first.
LOST = kind("lost").name
DUPLICATE = kind("duplicate").name

_ISR = re.compile(r"-> \[([\d, ]*)\]")


@dataclass(frozen=True)
class Figures:
    """One scenario's comparison figures; None where the run has nothing to measure
    (no fault, no leader change, no heal)."""

    unavailable_s: dict[int, float]  # partition -> the longest it went without an acknowledgement
    new_leader_s: float | None  # first fault's inject -> the first leader change to a broker
    full_isr_s: float | None  # last heal -> every partition's ISR as large as at the start
    # That leader change -> the first acknowledgement on its partition: the clients' part.
    first_ack_s: float | None = None
    # The verdict's counts of the kinds a client comparison reads first; None: not judged.
    lost: int | None = None
    duplicate: int | None = None

    def text(self) -> str:
        """One line for a grid cell."""
        worst = max(self.unavailable_s.values(), default=0.0)
        parts = [] if self.lost is None else [f"lost {self.lost}", f"duplicate {self.duplicate}"]
        parts.append(f"longest stall {worst:.1f} s")
        if self.new_leader_s is not None:
            parts.append(f"new leader {self.new_leader_s:.1f} s")
        if self.first_ack_s is not None:
            parts.append(f"first ack {self.first_ack_s:.1f} s after it")
        if self.full_isr_s is not None:
            parts.append(f"ISR full {self.full_isr_s:.1f} s after heal")
        return " · ".join(parts)

    def per_partition(self) -> str:
        return ", ".join(f"p{p}: {s:.1f} s" for p, s in sorted(self.unavailable_s.items())) or "no sends"


def figures(scenario: Scenario) -> Figures:
    verdict = scenario.verdict
    unavailable = scenario.ack_stalls
    if unavailable is None:  # the sends were not read: the seconds whose sends failed or stayed in doubt
        unavailable = ({p.partition: len(p.outage) * verdict.bucket_seconds for p in verdict.partitions}
                       if verdict else {})
    topics = {p.topic for p in verdict.partitions} if verdict else None
    events = [e for e in scenario.events if topics is None or e.topic is None or e.topic in topics]
    injects = [f.start for f in scenario.faults]
    heals = [f.end for f in scenario.faults if f.end is not None]
    counts = verdict.counts if verdict else {}
    return Figures(
        unavailable_s=unavailable,
        new_leader_s=_new_leader_after(events, min(injects)) if injects else None,
        full_isr_s=_full_isr_after(events, max(heals)) if heals else None,
        first_ack_s=scenario.first_ack_after_leader_s,
        lost=counts.get(LOST) if verdict else None,
        duplicate=counts.get(DUPLICATE) if verdict else None,
    )


def _new_leader_after(events: list[ClusterEvent], start: float) -> float | None:
    for event in events:
        if event.new_leader is not None and event.ts >= start:
            return event.ts - start
    return None


def _full_isr_after(events: list[ClusterEvent], healed: float) -> float | None:
    """Replay each partition's ISR size from the ISR events; the first moment at or after
    ``healed`` at which every partition is back to its size at the first sample (0 when
    every one already was at the heal)."""
    full: dict[str, int] = {}
    size: dict[str, int] = {}

    def all_full() -> bool:
        return bool(full) and all(size[k] >= full[k] for k in full)

    looked_at_heal = False
    for event in events:
        found = _ISR.search(event.detail) if event.kind == "isr" else None
        if not found:
            continue
        if event.ts >= healed and not looked_at_heal:
            looked_at_heal = True
            if all_full():
                return 0.0
        members = len([m for m in found.group(1).split(",") if m.strip()])
        full.setdefault(event.where, members)
        size[event.where] = members
        if event.ts >= healed and all_full():
            return event.ts - healed
    return 0.0 if not looked_at_heal and all_full() else None
