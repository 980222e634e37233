"""Checks over the cluster-state timeline: a condition reached within a bound, a condition
held through a window, and the explorer's cluster rules never broken."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from faults.conditions import Condition
from harness.explore import cluster_rules
from harness.scenario.checks.base import Check, seconds_text
from harness.scenario.checks.evidence import Anchor, CheckSpecError, Evidence
from harness.scenario.checks.tables import (
    CHECKS,
    WINDOW_KEYS,
    anchor,
    condition,
    fields,
    label_of,
    required_anchor,
)


@CHECKS.kind("eventually")
@dataclass(frozen=True)
class Eventually(Check):
    """``condition`` held at some state in force within ``within_s`` of ``start``."""

    condition: Condition
    start: Anchor
    within_s: float
    label: str | None = None
    kind: ClassVar[str] = "eventually"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"after", "within_s", "name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Eventually:
        table = fields(raw, what)
        start = required_anchor(table, "after", "eventually", "the inject or heal it follows")
        return cls(condition(raw["eventually"], what), start, table.seconds("within_s"), label_of(table))

    def __post_init__(self) -> None:
        if not math.isfinite(self.within_s) or self.within_s <= 0:
            raise CheckSpecError(f"within_s must be a positive number of seconds, not {self.within_s!r}")

    def describe(self) -> str:
        return f"{self.condition.describe()} within {self.within_s:g} s of {self.start.describe()}"

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        moment = evidence.moment(self.start)
        if moment is None:
            return False, f"{self.start.describe()} never ran"
        states = evidence.states(moment.mono, moment.mono + self.within_s)
        if not states:
            return False, "no cluster state was observed in the window"
        baseline = evidence.baseline(moment.mono)
        why = ""
        for observed in states:
            held, why = self.condition.evaluate(observed.state, baseline)
            if held:
                after = max(0.0, observed.mono - moment.mono)
                return True, f"held {seconds_text(after)} after {self.start.describe()}"
        return False, f"not within {self.within_s:g} s; {len(states)} states seen, the last: {why}"

    def spec(self) -> dict[str, Any]:
        return {"eventually": self.condition.to_spec(), "after": self.start.to_spec(),
                "within_s": self.within_s}


@CHECKS.kind("throughout")
@dataclass(frozen=True)
class Throughout(Check):
    """``condition`` held at every state in force from ``start`` (plus ``settle_s``) to
    ``until``, or for ``for_s`` seconds (the end of the workload when neither is given);
    at least one state must be seen."""

    condition: Condition
    start: Anchor
    until: Anchor | None = None
    settle_s: float = 0.0
    for_s: float | None = None
    label: str | None = None
    kind: ClassVar[str] = "throughout"
    spec_keys: ClassVar[frozenset[str]] = WINDOW_KEYS

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Throughout:
        table = fields(raw, what)
        start = required_anchor(table, "from", "throughout", "the inject or heal it starts at")
        return cls(condition(raw["throughout"], what), start, anchor(table, "until"),
                   table.seconds("settle_s", 0.0), table.optional_seconds("for_s"), label_of(table))

    def __post_init__(self) -> None:
        if self.until is not None and self.for_s is not None:
            raise CheckSpecError("throughout: give 'until' or 'for_s', not both")
        if self.for_s is not None and (not math.isfinite(self.for_s) or self.for_s <= 0):
            raise CheckSpecError(f"for_s must be a positive number of seconds, not {self.for_s!r}")

    def describe(self) -> str:
        settle = f" (+{self.settle_s:g} s)" if self.settle_s else ""
        if self.for_s is not None:
            return f"{self.condition.describe()} for {self.for_s:g} s from {self.start.describe()}{settle}"
        end = "the end of the workload" if self.until is None else self.until.describe()
        return f"{self.condition.describe()} from {self.start.describe()}{settle} to {end}"

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = evidence.window(self.start, self.until)
        if isinstance(window, str):
            return False, window
        first, last = window
        end = last.mono if self.for_s is None else first.mono + self.settle_s + self.for_s
        states = evidence.states(first.mono + self.settle_s, end)
        if not states:
            return False, "no cluster state was observed in the window"
        baseline = evidence.baseline(first.mono)
        for observed in states:
            held, why = self.condition.evaluate(observed.state, baseline)
            if not held:
                since = seconds_text(observed.mono - first.mono)
                return False, f"{since} after {self.start.describe()}: {why}"
        return True, f"{len(states)} states over {seconds_text(end - first.mono)}, all held"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"throughout": self.condition.to_spec(), "from": self.start.to_spec()}
        if self.until is not None:
            out["until"] = self.until.to_spec()
        if self.for_s is not None:
            out["for_s"] = self.for_s
        if self.settle_s:
            out["settle_s"] = self.settle_s
        return out


@CHECKS.kind("cluster_rules")
@dataclass(frozen=True)
class ClusterRules(Check):
    """The metadata's view of the cluster (ZooKeeper's, or the KRaft quorum's and the Admin
    API's) kept Kafka's own rules through the whole run: one
    controller per controller epoch, leader epochs never going back, every leader in its
    ISR and every ISR within its replicas (harness/explore/cluster_rules.py, which says
    how states caught mid-change are treated). A run with no recorded state fails it."""

    label: str | None = None
    kind: ClassVar[str] = "cluster_rules"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> ClusterRules:
        table = fields(raw, what)
        table.only_true("cluster_rules")
        return cls(label_of(table))

    def describe(self) -> str:
        return "The metadata keeps the cluster's rules: " + "; ".join(cluster_rules.RULES)

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        timeline = [cluster_rules.Seen(o.mono, o.until, o.state) for o in evidence.timeline]
        if not timeline:
            return False, "no cluster state was recorded, so nothing was shown"
        found = cluster_rules.violations(timeline)
        epochs = {(o.state.epoch_count, o.state.controller_epoch) for o in evidence.timeline
                  if o.state.controller_epoch is not None}
        detail = f"{len(timeline)} states, {len(epochs)} controller epoch(s)"
        if found:
            detail += f"; {len(found)} breach(es): " + "; ".join(f"{v.rule}: {v.detail}" for v in found[:4])
        return not found, detail

    def spec(self) -> dict[str, Any]:
        return {"cluster_rules": True}
