"""Checks over what consumers did: their polls, their groups' commits and the gaps between
them, and committed offsets kept through the run."""

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
    partition_listing,
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


@CHECKS.kind("polls")
@dataclass(frozen=True)
class Polls(Check):
    """Per consumer named, the records it polled in the window (by when they were
    polled) number within ``count``; the window runs from ``start`` plus ``settle_s``
    (the run's start when None) to ``until`` (its end)."""

    consumers: tuple[str, ...]
    count: CountRange
    start: Anchor | None = None
    until: Anchor | None = None
    settle_s: float = 0.0
    label: str | None = None
    partitions: tuple[int, ...] | None = None
    # Over the whole run, each consumer's reads of each partition named went on at the
    # next offset: no offset skipped or read twice across leader changes.
    contiguous: bool = False
    kind: ClassVar[str] = "polls"
    spec_keys: ClassVar[frozenset[str]] = WINDOW_KEYS - {"for_s"} | {"count", "partitions", "contiguous"}

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Polls:
        table = fields(raw, what)
        consumers = table.names("polls")
        assert consumers is not None
        return cls(consumers, count_range(raw.get("count"), what), anchor(table, "from"),
                   anchor(table, "until"), table.seconds("settle_s", 0.0), label_of(table),
                   table.ints("partitions"), table.flag("contiguous", False))

    def describe(self) -> str:
        which = "" if self.partitions is None else f" of {partition_listing(self.partitions)}"
        order = ", every read at the next offset" if self.contiguous else ""
        return (f"records{which} polled by {', '.join(self.consumers)}: {self.count.describe()} each, "
                f"{span_words(self.start, self.settle_s, self.until, None)}{order}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = wall_bounds(evidence, self.start, self.settle_s, self.until)
        if isinstance(window, str):
            return False, window
        begin, end = window
        counted = dict.fromkeys(self.consumers, 0)
        offsets: dict[tuple[str, int], list[tuple[float, int]]] = {}
        for row in evidence.polls:
            if row["consumer_id"] not in counted:
                continue
            if self.partitions is not None and int(row["partition"]) not in self.partitions:
                continue
            offsets.setdefault((row["consumer_id"], int(row["partition"])), []).append(
                (float(row["poll_ts"]), int(row["offset"])))
            if begin <= float(row["poll_ts"]) <= end:
                counted[row["consumer_id"]] += 1
        listing = "; ".join(f"{c}: {n}" for c, n in counted.items())
        jumps = [f"{c} p{p} {a} -> {b}" for (c, p), seen in sorted(offsets.items())
                 for (_, a), (_, b) in zip(sorted(seen), sorted(seen)[1:], strict=False) if b != a + 1]
        if self.contiguous:
            listing += f"; offset jumps: {', '.join(jumps[:5]) or 'none'}"
        return all(self.count.holds(n) for n in counted.values()) and not (self.contiguous and jumps), listing

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"polls": list(self.consumers), "count": self.count.to_dict()}
        if self.partitions is not None:
            out["partitions"] = list(self.partitions)
        if self.contiguous:
            out["contiguous"] = True
        return with_window(out, self.start, self.until, self.settle_s)


COMMIT_OUTCOMES = {"committed": ("committed",), "failed": ("failed",), "any": ("committed", "failed")}


@CHECKS.kind("commits")
@dataclass(frozen=True)
class Commits(Check):
    """The group members' offset commits (the history's commits table, one row per
    partition of a commit) that ended ``outcome`` in the window, all members named (every
    member when None) together: their number lies in ``count``. The window runs from
    ``start`` plus ``settle_s`` (the run's start when None) to ``until`` (its end), or for
    ``for_s`` seconds; a commit is placed by when its outcome was known."""

    outcome: str
    count: CountRange
    consumers: tuple[str, ...] | None = None
    start: Anchor | None = None
    until: Anchor | None = None
    settle_s: float = 0.0
    for_s: float | None = None
    label: str | None = None
    kind: ClassVar[str] = "commits"
    spec_keys: ClassVar[frozenset[str]] = WINDOW_KEYS | {"count", "consumers"}

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Commits:
        table = fields(raw, what)
        return cls(str(raw["commits"]), count_range(raw.get("count"), what), table.names("consumers"),
                   anchor(table, "from"), anchor(table, "until"), table.seconds("settle_s", 0.0),
                   table.optional_seconds("for_s"), label_of(table))

    def __post_init__(self) -> None:
        if self.outcome not in COMMIT_OUTCOMES:
            words = ", ".join(COMMIT_OUTCOMES)
            raise CheckSpecError(f"commits: outcome {self.outcome!r} is not one of {words}")
        check_for_s("commits", self.start, self.until, self.for_s)

    def describe(self) -> str:
        who = "" if self.consumers is None else f" by {', '.join(self.consumers)}"
        outcome = "ending either way" if self.outcome == "any" else self.outcome
        return (f"offset commits{who} {outcome}: {self.count.describe()} "
                f"{span_words(self.start, self.settle_s, self.until, self.for_s)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = wall_bounds(evidence, self.start, self.settle_s, self.until, self.for_s)
        if isinstance(window, str):
            return False, window
        rows = [row for row in evidence.commits
                 if self.consumers is None or row["consumer_id"] in self.consumers]
        counted, listing = tally_outcomes(rows, window, lambda row: float(row["ts"]),
                                          COMMIT_OUTCOMES[self.outcome])
        return self.count.holds(counted), f"{counted} counted; every commit in the window: {listing}"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commits": self.outcome, "count": self.count.to_dict()}
        if self.consumers is not None:
            out["consumers"] = list(self.consumers)
        return with_window(out, self.start, self.until, self.settle_s, self.for_s)


@CHECKS.kind("commit_gap_s")
@dataclass(frozen=True)
class CommitGap(Check):
    """The longest stretch of the window in which no named member (every member when
    None) had a commit go through lies in ``seconds``; the window's ends count as
    boundaries. Measured from the recorded commits alone, so it does not depend on how
    long the fault took to strike after its inject began."""

    seconds: SecondsRange
    consumers: tuple[str, ...] | None = None
    start: Anchor | None = None
    until: Anchor | None = None
    label: str | None = None
    kind: ClassVar[str] = "commit_gap_s"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"consumers", "from", "until", "name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> CommitGap:
        table = fields(raw, what)
        return cls(seconds_range(table, "commit_gap_s"), table.names("consumers"), anchor(table, "from"),
                   anchor(table, "until"), label_of(table))

    def describe(self) -> str:
        who = "no member" if self.consumers is None else f"none of {', '.join(self.consumers)}"
        return (f"{who} committing for {self.seconds.describe()} at the longest, "
                f"{window_words(self.start, self.until)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        commits = (float(row["ts"]) for row in evidence.commits
                   if row["outcome"] == hist.COMMIT_COMMITTED
                   and (self.consumers is None or row["consumer_id"] in self.consumers))
        return longest_quiet(evidence, self.start, self.until, self.seconds, commits)

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commit_gap_s": self.seconds.to_dict()}
        if self.consumers is not None:
            out["consumers"] = list(self.consumers)
        return with_window(out, self.start, self.until)


@CHECKS.kind("commits_kept")
@dataclass(frozen=True)
class CommitsKept(Check):
    """Every offset a group was told it committed survived the faults: after healing, the
    committed offset the broker gives for each partition a named group (every group when
    None) committed is that of the group's last commit that went through (by when its
    outcome was known), or of a commit attempted after it that failed or never learned
    its outcome, since such a commit may still have reached the coordinator. A group with
    no commit that went through proves nothing and fails the check.

    ``commits`` is what the clients were told, ``final_offsets`` what a member joining
    after the run would resume from; a broker that lost an acknowledged commit (or moved
    one) shows as a partition whose final offset matches none of them."""

    groups: tuple[str, ...] | None = None
    label: str | None = None
    kind: ClassVar[str] = "commits_kept"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> CommitsKept:
        table = fields(raw, what)
        groups = raw["commits_kept"]
        if groups is True:
            return cls(None, label_of(table))
        if groups is False or not isinstance(groups, list) or not groups:
            raise table.refuse("'commits_kept' is true (every group) or a list of group ids")
        return cls(table.names("commits_kept"), label_of(table))

    def describe(self) -> str:
        who = "every group" if self.groups is None else ", ".join(self.groups)
        return f"the committed offsets of {who} after healing are those of the last commits that went through"

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        by_partition: dict[tuple[str, str, int], list[Mapping[str, Any]]] = {}
        for row in evidence.commits:
            if self.groups is None or row["group"] in self.groups:
                key = (str(row["group"]), str(row["topic"]), int(row["partition"]))
                by_partition.setdefault(key, []).append(row)
        final = {(str(r["group"]), str(r["topic"]), int(r["partition"])): r["offset"]
                 for r in evidence.final_offsets}
        groups = {key[0] for key, rows in by_partition.items()
                  if any(r["outcome"] == hist.COMMIT_COMMITTED for r in rows)}
        missing = sorted(set(self.groups or ()) - groups)
        kept, wrong = 0, []
        for key, rows in sorted(by_partition.items()):
            went = [r for r in rows if r["outcome"] == hist.COMMIT_COMMITTED]
            if not went:
                continue
            last = max(went, key=lambda r: (float(r["ts"]), int(r["offset"])))
            allowed = {int(last["offset"])} | {int(r["offset"]) for r in rows
                                               if r["outcome"] != hist.COMMIT_COMMITTED
                                               and float(r["ts"]) >= float(last["ts"])}
            held = final.get(key)
            if held is not None and int(held) in allowed:
                kept += 1
            else:
                shown = "nothing" if held is None else str(held)
                wrong.append(f"{key[0]} {key[1]}-{key[2]}: the broker holds {shown}, the last commit "
                             f"that went through was {last['offset']}")
        detail = f"{kept} partition(s) kept across {len(groups)} group(s)"
        if wrong:
            detail += f"; {len(wrong)} not: " + "; ".join(wrong[:4]) + ("; ..." if len(wrong) > 4 else "")
        if missing:
            detail += f"; no commit of {', '.join(missing)} went through"
        if not groups:
            detail += "; no group committed anything, so nothing was shown"
        return bool(groups) and not wrong and not missing, detail

    def spec(self) -> dict[str, Any]:
        return {"commits_kept": True if self.groups is None else list(self.groups)}
