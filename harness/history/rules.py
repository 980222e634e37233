"""Expectations: per anomaly kind, how many the scenario allows (a count, "any", or
"at_least_one" for a failure the scenario must catch), and how a count fares against it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from harness.history.schema import HistoryError

# --------------------------------------------------------------------------- expectations

# The anomaly kinds the reconciliation reports; the order is the report's order. Four are
# about consumer groups (schema 5's group reads, commits and rebalances), four about
# transactions (schema 6) and three about consume-transform-produce pipelines (schema 7's
# sources of outputs and final offsets); each set is zero for a history without its data.
ANOMALY_KINDS = (
    "lost",
    "duplicate",
    "truncated",
    "unexpected",
    "aborted_read",
    "reordered",
    "unseen",
    "poll_skip",
    "nonmonotonic_poll",
    "commit_regression",
    "commit_beyond_read",
    "txn_aborted_read",
    "txn_uncommitted_read",
    "txn_lost",
    "txn_partial",
    "pipeline_duplicate",
    "pipeline_lost",
    "pipeline_orphan",
)
GROUP_KINDS = ANOMALY_KINDS[7:11]
TXN_KINDS = ANOMALY_KINDS[11:15]
PIPELINE_KINDS = ANOMALY_KINDS[15:]
MESSAGE_KINDS = ANOMALY_KINDS[:7]
# The families, each judged by one pass of the reconciliation (and so timed apart in a
# verdict's ``timings``), in report order.
ANOMALY_FAMILIES: dict[str, tuple[str, ...]] = {
    "messages": MESSAGE_KINDS,
    "groups": GROUP_KINDS,
    "transactions": TXN_KINDS,
    "pipelines": PIPELINE_KINDS,
}

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


def _parse_rule(kind: str, value: object) -> Rule:
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


@dataclass(frozen=True)
class Expectations:
    """A scenario's acceptance rules, one per anomaly kind.

    Every kind defaults to 0 (none tolerated): a scenario has to say out loud which
    anomalies it accepts, so forgetting a rule makes a run fail rather than pass.
    """

    lost: Rule = 0
    duplicate: Rule = 0
    truncated: Rule = 0
    unexpected: Rule = 0
    aborted_read: Rule = 0
    reordered: Rule = 0
    unseen: Rule = 0
    poll_skip: Rule = 0
    nonmonotonic_poll: Rule = 0
    commit_regression: Rule = 0
    commit_beyond_read: Rule = 0
    txn_aborted_read: Rule = 0
    txn_uncommitted_read: Rule = 0
    txn_lost: Rule = 0
    txn_partial: Rule = 0
    pipeline_duplicate: Rule = 0
    pipeline_lost: Rule = 0
    pipeline_orphan: Rule = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Expectations:
        unknown = sorted(set(data) - set(ANOMALY_KINDS))
        if unknown:
            raise HistoryError(f"unknown anomaly kind(s) in expectations: {', '.join(unknown)}")
        return cls(**{k: _parse_rule(k, v) for k, v in data.items()})

    def to_dict(self) -> dict[str, Rule]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def rule(self, kind: str) -> Rule:
        if kind not in ANOMALY_KINDS:
            raise KeyError(kind)
        rule: Rule = getattr(self, kind)
        return rule

    def judge(self, counts: Mapping[str, int]) -> list[RuleResult]:
        """One result per kind, in report order; a kind missing from counts counts 0."""
        return [check_rule(k, self.rule(k), int(counts.get(k, 0))) for k in ANOMALY_KINDS]
