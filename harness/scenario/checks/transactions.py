"""Checks over transactional producers: how their transactions ended, the longest stretch
without a settled one, and a zombie's writes never becoming visible."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from harness import history as hist
from harness.scenario.checks.base import (
    Check,
    CountRange,
    SecondsRange,
    check_for_s,
    longest_quiet,
    span_words,
    tally_outcomes,
    wall_bounds,
    window_words,
    with_window,
)
from harness.scenario.checks.evidence import Anchor, CheckSpecError, Evidence
from harness.scenario.checks.tables import (
    CHECKS,
    WINDOW_KEYS,
    anchor,
    count_range,
    fields,
    label_of,
    seconds_range,
)

TRANSACTION_OUTCOMES = {"committed": (hist.TXN_COMMITTED,), "aborted": (hist.TXN_ABORTED,),
                        "unknown": (hist.TXN_UNKNOWN,), "any": hist.TXN_OUTCOMES}


def transaction_known_at(row: Mapping[str, Any]) -> float:
    """When a transactions row's outcome became known to its producer: when its commit or
    abort returned; one whose end never returned (outcome unknown) counts from when its
    end was asked for, else from when it began."""
    for key in ("end_ts", "end_requested_ts"):
        if row.get(key) is not None:
            return float(row[key])
    return float(row["begin_ts"])


@CHECKS.kind("transactions")
@dataclass(frozen=True)
class TransactionOutcomes(Check):
    """The transactional producers' transactions (the history's transactions table) that
    ended ``outcome`` in the window, all producers named (every producer when None)
    together: their number lies in ``count``. The window runs from ``start`` plus
    ``settle_s`` (the run's start when None) to ``until`` (its end), or for ``for_s``
    seconds; a transaction is placed by when its producer learnt the outcome
    (:func:`transaction_known_at`), as a commit is by when its outcome was known. With
    ``errors`` only transactions whose recorded error names one of them count: an
    ``unknown`` that came from fencing (``_FENCED``) is told apart from one that ran out
    of time."""

    outcome: str
    count: CountRange
    producers: tuple[str, ...] | None = None
    start: Anchor | None = None
    until: Anchor | None = None
    settle_s: float = 0.0
    for_s: float | None = None
    label: str | None = None
    errors: tuple[str, ...] | None = None
    kind: ClassVar[str] = "transactions"
    spec_keys: ClassVar[frozenset[str]] = WINDOW_KEYS | {"count", "producers", "errors"}

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> TransactionOutcomes:
        table = fields(raw, what)
        return cls(str(raw["transactions"]), count_range(raw.get("count"), what), table.names("producers"),
                   anchor(table, "from"), anchor(table, "until"), table.seconds("settle_s", 0.0),
                   table.optional_seconds("for_s"), label_of(table), table.names("errors"))

    def __post_init__(self) -> None:
        if self.outcome not in TRANSACTION_OUTCOMES:
            words = ", ".join(TRANSACTION_OUTCOMES)
            raise CheckSpecError(f"transactions: outcome {self.outcome!r} is not one of {words}")
        check_for_s("transactions", self.start, self.until, self.for_s)
        if self.errors is not None and not self.errors:
            raise CheckSpecError("transactions: 'errors' names at least one error (left out: any error)")

    def describe(self) -> str:
        who = "" if self.producers is None else f" of {', '.join(self.producers)}"
        outcome = "ending any way" if self.outcome == "any" else self.outcome
        why = "" if self.errors is None else f" with {' or '.join(self.errors)}"
        return (f"transactions{who} {outcome}{why}: {self.count.describe()} "
                f"{span_words(self.start, self.settle_s, self.until, self.for_s)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = wall_bounds(evidence, self.start, self.settle_s, self.until, self.for_s)
        if isinstance(window, str):
            return False, window
        rows = [row for row in evidence.transactions
                if self.producers is None or row["producer_id"] in self.producers]
        counted, listing = tally_outcomes(rows, window, transaction_known_at,
                                          TRANSACTION_OUTCOMES[self.outcome], self.errors)
        return self.count.holds(counted), f"{counted} counted; every transaction in the window: {listing}"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"transactions": self.outcome, "count": self.count.to_dict()}
        if self.producers is not None:
            out["producers"] = list(self.producers)
        if self.errors is not None:
            out["errors"] = list(self.errors)
        return with_window(out, self.start, self.until, self.settle_s, self.for_s)


@CHECKS.kind("transaction_gap_s")
@dataclass(frozen=True)
class TransactionGap(Check):
    """The longest stretch of the window in which none of the named producers (every
    producer when None) had a transaction commit lies in ``seconds``; the window's ends
    count as boundaries. A commit is placed when ``commit_transaction()`` returned, so the
    stretch is measured from the history alone, not from when the fault struck (a loaded
    machine takes a moment to deliver a SIGKILL, and commits go through until it lands)."""

    seconds: SecondsRange
    producers: tuple[str, ...] | None = None
    start: Anchor | None = None
    until: Anchor | None = None
    label: str | None = None
    kind: ClassVar[str] = "transaction_gap_s"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"producers", "from", "until", "name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> TransactionGap:
        table = fields(raw, what)
        return cls(seconds_range(table, "transaction_gap_s"), table.names("producers"),
                   anchor(table, "from"), anchor(table, "until"), label_of(table))

    def describe(self) -> str:
        who = "no producer" if self.producers is None else f"none of {', '.join(self.producers)}"
        return (f"{who} committing a transaction for {self.seconds.describe()} at the longest, "
                f"{window_words(self.start, self.until)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        commits = (float(row["end_ts"]) for row in evidence.transactions
                   if row["outcome"] == hist.TXN_COMMITTED and row.get("end_ts") is not None
                   and (self.producers is None or row["producer_id"] in self.producers))
        return longest_quiet(evidence, self.start, self.until, self.seconds, commits)

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"transaction_gap_s": self.seconds.to_dict()}
        if self.producers is not None:
            out["producers"] = list(self.producers)
        return with_window(out, self.start, self.until)


@CHECKS.kind("never_visible")
@dataclass(frozen=True)
class NeverVisible(Check):
    """No record of the named producers' transactions that ended ``unknown`` became
    visible at read_committed: none was polled by a read_committed consumer, and none is
    on the final log with ``read_committed`` true. At least one of their sends must have
    been acknowledged, so the records were on the log to hide (else the check proves
    nothing), and every final-log row of theirs must come from a read_committed drain.

    The judge's transaction kinds leave ``unknown`` transactions alone (Kafka may have
    committed or aborted them); where the scenario knows better - a zombie whose held
    transaction its coordinator aborted, then fenced (T2) - this says what must follow."""

    producers: tuple[str, ...]
    label: str | None = None
    kind: ClassVar[str] = "never_visible"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> NeverVisible:
        table = fields(raw, what)
        return cls(table.names("never_visible") or (), label_of(table))

    def __post_init__(self) -> None:
        if not self.producers:
            raise CheckSpecError("never_visible: name at least one producer")

    def describe(self) -> str:
        return (f"no record of a transaction of {', '.join(self.producers)} that ended unknown is "
                "visible at read_committed")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        in_doubt = sorted(str(row["transaction_id"]) for row in evidence.transactions
                          if row["producer_id"] in self.producers and row["outcome"] == hist.TXN_UNKNOWN)
        ids = set(in_doubt)
        sends = [row for row in evidence.sends if row.get("transaction_id") in ids]
        messages = {row["message_id"] for row in sends}
        acked = sum(row["outcome"] == hist.OUTCOME_ACKED for row in sends)
        polled = {row["message_id"] for row in evidence.polls
                  if row.get("isolation") == hist.READ_COMMITTED and row.get("message_id") in messages}
        logged = [row for row in evidence.final_log if row.get("message_id") in messages]
        visible = {row["message_id"] for row in logged if row.get("read_committed") is True}
        undrained = sum(row.get("read_committed") is None for row in logged)
        listing = (f"{len(in_doubt)} transaction(s) unknown ({', '.join(in_doubt[:3]) or 'none'}"
                   f"{', ...' if len(in_doubt) > 3 else ''}), {len(sends)} sends, {acked} acknowledged; "
                   f"{len(polled)} polled at read_committed; {len(logged)} on the final log, {len(visible)} "
                   "of them given to the read_committed drain")
        if undrained:
            listing += f", {undrained} never drained at read_committed"
        return acked > 0 and not polled and not visible and not undrained, listing

    def spec(self) -> dict[str, Any]:
        return {"never_visible": list(self.producers)}
