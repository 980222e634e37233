"""A scenario's page in a few sentences, generated from its verdict, faults and timeline:
what was done to the cluster, what the cluster did, and what the clients saw and lost.
And each rule in plain words: why it held, or why it was required to fail.

A reviewer handed the page reads these first; everything they say is on the page below,
drawn from the same data, so the words cannot tell another story than the figures.
"""

from __future__ import annotations

from harness.history import RuleResult
from harness.history.kinds import kind
from harness.report.comparison import figures
from harness.report.format import count, offset_range, rel
from harness.report.model import Scenario

LOST = kind("lost").name
MAX_FAULTS_NAMED = 3
MAX_RANGES_NAMED = 2


def _faults(scenario: Scenario, t0: float | None) -> str:
    phases = scenario.migration
    migrated = ""
    if phases:
        took = phases[-1].end - phases[0].start
        migrated = f"The cluster was migrated from ZooKeeper to KRaft in {len(phases)} phases, {took:.0f} s"
    if not scenario.faults:
        return f"{migrated}; no fault was injected." if migrated else "No fault was injected."
    named = []
    for f in scenario.faults[:MAX_FAULTS_NAMED]:
        healed = "never healed" if f.end is None else f"healed {f.end - f.start:.1f} s later"
        if f.coming_back_s is not None:
            healed += f", {f.coming_back_s:.1f} s of it coming back after the heal began"
        named.append(f"{f.label} at {rel(f.start, t0)} ({healed}{'' if f.ok else ', with an error'})")
    more = len(scenario.faults) - MAX_FAULTS_NAMED
    faults = "; ".join(named) + (f"; and {more} more" if more > 0 else "")
    return f"{migrated}, under these faults: {faults}." if migrated else f"Faults: {faults}."


def _cluster(scenario: Scenario) -> str:
    found = figures(scenario)
    leaders = sum(e.kind == "leader" for e in scenario.events)
    parts = [f"{leaders} leader change{'s' if leaders != 1 else ''} sampled"]
    if found.new_leader_s is not None:
        parts.append(f"a new leader {found.new_leader_s:.1f} s after the first fault")
    if found.full_isr_s is not None:
        parts.append(f"every ISR full again {found.full_isr_s:.1f} s after the last heal")
    worst = max(found.unavailable_s.values(), default=0.0)
    if worst > 0:
        parts.append(f"a partition went up to {worst:.1f} s without an acknowledgement")
    return "The cluster: " + ", ".join(parts) + "."


def _clients(scenario: Scenario, t0: float | None) -> str:
    v = scenario.verdict
    if v is None:
        return "There is no verdict: what was produced was never reconciled against what can be consumed."
    sends, acked, failed, unknown = (count(v.totals.get(k, 0)) for k in ("sends", "acked", "failed",
                                                                         "unknown"))  # fmt: skip
    sent = f"The producers made {sends} sends: {acked} acknowledged, {failed} failed, {unknown} in doubt."
    lost = v.counts.get(LOST, 0)
    if lost:
        where = [offset_range(topic, p, r, t0) for topic, p, r in v.ranges_of(LOST)[:MAX_RANGES_NAMED]]
        at = f" ({'; '.join(where)})" if where else ""
        kept = f"{count(lost)} acknowledged message{'s were' if lost != 1 else ' was'} lost{at}."
    else:
        kept = "No acknowledged message was lost."
    others = [f"{k} {count(n)}" for k, n in v.anomalies.items() if k != LOST]
    also = f" The verdict also counts: {', '.join(others)}." if others else ""
    return f"{sent} {kept}{also}"


def story(scenario: Scenario, t0: float | None) -> list[str]:
    """Three sentences (or so): the faults, the cluster, the clients."""
    return [_faults(scenario, t0), _cluster(scenario), _clients(scenario, t0)]


def rule_words(r: RuleResult) -> str:
    """Why a rule held or failed, in words: what it allows, and what was found."""
    found = f"{count(r.count)} found"
    if r.rule == "at_least_one":
        if r.passed:
            return f"required: this is the unsafe side, and it was caught ({found})"
        return "required, yet none was found: the unsafe side went unseen, so the check is blind here"
    if r.rule == "any":
        return f"not promised in this configuration, so any count is accepted ({found})"
    allowed = "none allowed" if r.rule == 0 else f"up to {count(int(r.rule))} allowed"
    if r.passed:
        return f"{allowed}, {'none found' if r.count == 0 else found}: holds"
    return f"{allowed}, {found}: broken"
