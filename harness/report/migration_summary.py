"""What each phase of a migration did and what it cost, for a scenario page: one
:class:`PhaseCost` per phase (the table's rows), and the paragraph that says them in words.

The cost is read from the history, never guessed: the sends made in the phase (by send
time) and how many failed or were left in doubt, and its unavailability, the longest
stretch in it in which no acknowledgement arrived (by ack time, to the width of the
verdict's buckets). Send time alone would hide a stall whose writes were acknowledged
late, after the producer's retries; ack time shows it. Without a verdict, or without the
sends table, a cost is unknown and said to be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from harness.cluster.migration.plan import PHASE_PURPOSE
from harness.report.format import count
from harness.report.model import AckBucket, MigrationPhase, Scenario


@dataclass(frozen=True)
class PhaseCost:
    """One phase with what it did and cost; None where the history could not say."""

    phase: MigrationPhase
    sends: int | None
    failed: int | None  # failed or left in doubt
    without_acks_s: float | None  # the longest stretch without an acknowledgement arriving

    @property
    def took_s(self) -> float:
        return self.phase.end - self.phase.start

    @property
    def purpose(self) -> str | None:
        """What the harness does in this phase (None for a name the plan does not know)."""
        known = {str(phase): purpose for phase, purpose in PHASE_PURPOSE.items()}
        return known.get(self.phase.phase)


def longest_without_acks(phase: MigrationPhase, buckets: Sequence[AckBucket], width: float) -> float:
    """The longest stretch of ``phase`` in which no acknowledgement arrived: the gaps
    between the ``width``-second buckets that had one (``buckets`` lists only those),
    and from the phase's start to the first and from the last to its end."""
    inside = sorted(b.start for b in buckets
                    if b.count > 0 and b.start < phase.end and b.start + width > phase.start)
    if not inside:
        return phase.end - phase.start
    gaps = [inside[0] - phase.start, phase.end - (inside[-1] + width)]
    gaps += [later - (earlier + width) for earlier, later in pairwise(inside)]
    return max(0.0, *gaps)


def phase_costs(scenario: Scenario) -> list[PhaseCost]:
    """Every phase of the scenario's migration, in the order walked, with its cost."""
    width = scenario.bucket_seconds
    costs = []
    for phase in scenario.migration:
        sent = scenario.phase_sends(phase)
        stall = (None if scenario.ack_buckets is None
                 else longest_without_acks(phase, scenario.ack_buckets, width))
        costs.append(PhaseCost(phase, sent[0] if sent else None, sent[1] if sent else None, stall))
    return costs


def _cost_words(cost: PhaseCost) -> str:
    if cost.sends is None:
        sends = "its sends unknown (no verdict)"
    elif cost.sends == 0:
        sends = "no sends"
    else:
        failed = "none failed" if not cost.failed else f"{count(cost.failed)} failed or in doubt"
        sends = f"{count(cost.sends)} sends, {failed}"
    if cost.without_acks_s is None:
        stall = "how long acknowledgements stopped unknown (the sends were not read)"
    elif cost.without_acks_s <= 0:
        stall = "no stretch without an acknowledgement"
    else:
        stall = f"at most {cost.without_acks_s:.0f} s without an acknowledgement"
    return f"{sends}, {stall}"


def migration_summary(scenario: Scenario) -> str:
    """One paragraph: the walk's time and outcome, then each phase's time, what it did and
    what it cost, in the order walked; a failed phase with its error, where the walk stopped."""
    costs = phase_costs(scenario)
    if not costs:
        return ""
    walked = costs[-1].phase.end - costs[0].phase.start
    failed = next((c for c in costs if not c.phase.completed), None)
    outcome = (f"{failed.phase.phase} failed and the walk stopped there" if failed is not None
               else "every phase completed")
    sentences = [f"The migration walked {len(costs)} phase{'' if len(costs) == 1 else 's'} in "
                 f"{walked:.1f} s; {outcome}."]
    for cost in costs:
        did = f" {cost.purpose}" if cost.purpose else ""
        failure = "" if cost.phase.completed else f" It failed: {cost.phase.detail or 'no detail recorded'}."
        sentences.append(f"{cost.phase.phase} ({cost.took_s:.1f} s){did}: {_cost_words(cost)}.{failure}")
    return " ".join(sentences)
