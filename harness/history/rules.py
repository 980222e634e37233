"""Expectations: per anomaly kind, how many the scenario allows (a count, "any", or
"at_least_one" for a failure the scenario must catch), and how a count fares against it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.history.kinds import KINDS, Family, kinds_of
from harness.history.schema import HistoryError

# --------------------------------------------------------------------------- expectations

# The anomaly kinds the reconciliation reports, in the report's order, and the families
# (each judged by one pass); all of it read off the registry in ``harness.history.kinds``.
ANOMALY_KINDS = tuple(k.name for k in KINDS)
ANOMALY_FAMILIES: dict[str, tuple[str, ...]] = {f.value: kinds_of(f) for f in Family}
MESSAGE_KINDS = kinds_of(Family.MESSAGES)
GROUP_KINDS = kinds_of(Family.GROUPS)
TXN_KINDS = kinds_of(Family.TRANSACTIONS)
PIPELINE_KINDS = kinds_of(Family.PIPELINES)

RuleWord = Literal["any", "at_least_one"]
Rule = int | RuleWord


@dataclass(frozen=True)
class RuleResult:
    """How one anomaly count fared against its rule, with a reason a reader can act on."""

    kind: str
    rule: Rule
    count: int
    passed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rule": self.rule,
            "count": self.count,
            "passed": self.passed,
            "reason": self.reason,
        }


def check_rule(kind: str, rule: Rule, count: int) -> RuleResult:
    """Judge one count: an int is a maximum, "any" always passes, "at_least_one" demands
    the anomaly be seen (the unsafe side of a scenario must be caught losing data, or the
    checker is blind)."""
    if rule == "any":
        return RuleResult(kind, rule, count, True, f"{kind}={count}, any count accepted")
    if rule == "at_least_one":
        ok = count >= 1
        why = "caught as required" if ok else "expected at least one, checker saw none"
        return RuleResult(kind, rule, count, ok, f"{kind}={count}, {why}")
    ok = count <= rule
    why = f"within max {rule}" if ok else f"exceeds max {rule}"
    return RuleResult(kind, rule, count, ok, f"{kind}={count} {why}")


def parse_rule(kind: str, value: object) -> Rule:
    bad = f"expectation {kind!r}: {value!r} is not an int, 'any' or 'at_least_one'"
    # bool is an int subclass; True read as "max 1" would be a silent misreading.
    if isinstance(value, bool):
        raise HistoryError(bad)
    if isinstance(value, int):
        if value < 0:
            raise HistoryError(f"expectation {kind!r}: maximum {value} is negative")
        return value
    if value == "any":
        return "any"
    if value == "at_least_one":
        return "at_least_one"
    raise HistoryError(bad)


class Expectations:
    """A scenario's acceptance rules, one per anomaly kind.

    Every kind defaults to 0 (none tolerated): a scenario has to say out loud which
    anomalies it accepts, so forgetting a rule makes a run fail rather than pass. Built
    from keywords (``Expectations(lost="at_least_one")``) or a scenario's mapping
    (:meth:`from_dict`); either way an unknown kind or a malformed rule is refused.
    """

    __slots__ = ("_rules",)

    def __init__(self, **rules: Rule) -> None:
        unknown = sorted(set(rules) - set(ANOMALY_KINDS))
        if unknown:
            raise HistoryError(f"unknown anomaly kind(s) in expectations: {', '.join(unknown)}")
        self._rules: dict[str, Rule] = {k: parse_rule(k, rules.get(k, 0)) for k in ANOMALY_KINDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Expectations:
        unknown = sorted(set(data) - set(ANOMALY_KINDS))
        if unknown:
            raise HistoryError(f"unknown anomaly kind(s) in expectations: {', '.join(unknown)}")
        return cls(**{k: parse_rule(k, v) for k, v in data.items()})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expectations) and self._rules == other._rules

    def __hash__(self) -> int:
        return hash(tuple(self._rules.items()))

    def __repr__(self) -> str:
        changed = ", ".join(f"{k}={v!r}" for k, v in self._rules.items() if v != 0)
        return f"Expectations({changed})"

    def to_dict(self) -> dict[str, Rule]:
        return dict(self._rules)

    def rule(self, kind: str) -> Rule:
        return self._rules[kind]

    def judge(self, counts: Mapping[str, int]) -> list[RuleResult]:
        """One result per kind, in report order; a kind missing from counts counts 0."""
        return [check_rule(k, self.rule(k), int(counts.get(k, 0))) for k in ANOMALY_KINDS]
