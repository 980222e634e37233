"""Checks over the producers' sends and attempts: how many sends of an outcome a window
holds, the longest stretch without an acknowledgement, what a consumer saw, and the
errors attempts ended with."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from faults.conditions import Condition
from harness import history as hist
from harness.history.gaps import longest_gap
from harness.scenario.checks.base import (
    Check,
    CountRange,
    SecondsRange,
    check_for_s,
    partition_listing,
    span_words,
    wall_bounds,
    window_words,
    with_window,
)
from harness.scenario.checks.evidence import Anchor, CheckSpecError, Evidence
from harness.scenario.checks.tables import (
    CHECKS,
    WINDOW_KEYS,
    anchor,
    condition,
    count_range,
    fields,
    label_of,
    required_anchor,
    seconds_range,
)

SEND_OUTCOMES = {"acked": (hist.OUTCOME_ACKED,), "failed": (hist.OUTCOME_FAILED,),
                 "in_doubt": (hist.OUTCOME_UNKNOWN,),
                 "not_acked": (hist.OUTCOME_FAILED, hist.OUTCOME_UNKNOWN)}


@CHECKS.kind("sends")
@dataclass(frozen=True)
class Sends(Check):
    """Per partition, the sends of the window that ended ``outcome``: their number lies in
    ``count``. A send is placed by when it was made, or with ``timed_by = "ack"`` by when
    its acknowledgement arrived (only acknowledged sends have one). The window runs from
    ``start`` plus ``settle_s`` (the run's start when None) to ``until`` (its end)."""

    outcome: str
    count: CountRange
    partitions: tuple[int, ...] | None = None
    producers: tuple[str, ...] | None = None
    start: Anchor | None = None
    until: Anchor | None = None
    timed_by: str = "send"
    settle_s: float = 0.0
    label: str | None = None
    # The window ends this long after its start instead of at ``until``.
    for_s: float | None = None
    # Count the partitions' sends together instead of each partition's on its own.
    summed: bool = False
    kind: ClassVar[str] = "sends"
    spec_keys: ClassVar[frozenset[str]] = WINDOW_KEYS | {"count", "partitions", "producers", "timed_by",
                                                         "summed"}

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Sends:
        table = fields(raw, what)
        timed_by = raw.get("timed_by", "send")
        if not isinstance(timed_by, str):
            raise table.refuse(f"'timed_by' is \"send\" or \"ack\", not {timed_by!r}")
        return cls(str(raw["sends"]), count_range(raw.get("count"), what), table.ints("partitions"),
                   table.names("producers"), anchor(table, "from"), anchor(table, "until"), timed_by,
                   table.seconds("settle_s", 0.0), label_of(table), table.optional_seconds("for_s"),
                   table.flag("summed", False))

    def __post_init__(self) -> None:
        if self.outcome not in SEND_OUTCOMES:
            raise CheckSpecError(f"sends: outcome {self.outcome!r} is not one of {', '.join(SEND_OUTCOMES)}")
        if self.timed_by not in ("send", "ack"):
            raise CheckSpecError(f"sends: timed_by is \"send\" or \"ack\", not {self.timed_by!r}")
        if self.timed_by == "ack" and self.outcome != "acked":
            raise CheckSpecError("sends: only acknowledged sends have an acknowledgement to time them by")
        check_for_s("sends", self.start, self.until, self.for_s)

    def describe(self) -> str:
        who = "" if self.producers is None else f" by {', '.join(self.producers)}"
        words = self.outcome.replace("_", " ")
        where = partition_listing(self.partitions)
        when = "made" if self.timed_by == "send" else "acknowledged"
        each = f"over {where} together" if self.summed else f"on each of {where}"
        return (f"sends{who} {words}: {self.count.describe()} {each}, {when} "
                f"{span_words(self.start, self.settle_s, self.until, self.for_s)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = wall_bounds(evidence, self.start, self.settle_s, self.until, self.for_s)
        if isinstance(window, str):
            return False, window
        begin, end = window
        counted: dict[int, int] = {p: 0 for p in self.partitions or ()}
        totals: dict[int, int] = dict(counted)
        wanted = SEND_OUTCOMES[self.outcome]
        for row in evidence.sends:
            partition = int(row["partition"])
            if self.partitions is not None and partition not in self.partitions:
                continue
            if self.producers is not None and row["producer_id"] not in self.producers:
                continue
            if self.timed_by == "send" and not begin <= float(row["send_ts"]) <= end:
                continue
            at = row["send_ts"] if self.timed_by == "send" else row["ack_ts"]
            totals[partition] = totals.get(partition, 0) + 1
            inside = at is not None and begin <= float(at) <= end
            counted[partition] = counted.get(partition, 0) + (row["outcome"] in wanted and inside)
        if not totals:
            return False, "no partition to count: no send was made in the window"
        if self.summed:
            count = sum(counted.values())
            words = self.outcome.replace("_", " ")
            return self.count.holds(count), (f"{count} of {sum(totals.values())} sends ended {words}; "
                                             f"bound {self.count.describe()}")
        of = "of" if self.timed_by == "send" else "in the window, of all"
        listing = "; ".join(f"p{p}: {counted[p]} {of} {totals[p]}" for p in sorted(totals))
        return all(self.count.holds(n) for n in counted.values()), listing

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sends": self.outcome, "count": self.count.to_dict()}
        for key, value in (("partitions", self.partitions), ("producers", self.producers)):
            if value is not None:
                out[key] = list(value)
        if self.timed_by != "send":
            out["timed_by"] = self.timed_by
        if self.summed:
            out["summed"] = True
        return with_window(out, self.start, self.until, self.settle_s, self.for_s)


@CHECKS.kind("unavailable_s")
@dataclass(frozen=True)
class Unavailable(Check):
    """Per partition, the longest stretch of the window without an acknowledgement (all
    producers together) lies in ``seconds``; the window's ends count as boundaries."""

    seconds: SecondsRange
    partitions: tuple[int, ...] | None = None
    start: Anchor | None = None
    until: Anchor | None = None
    label: str | None = None
    kind: ClassVar[str] = "unavailable_s"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"partitions", "from", "until", "name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Unavailable:
        table = fields(raw, what)
        return cls(seconds_range(table, "unavailable_s"), table.ints("partitions"), anchor(table, "from"),
                   anchor(table, "until"), label_of(table))

    def describe(self) -> str:
        return (f"{partition_listing(self.partitions)} without an acknowledgement for "
                f"{self.seconds.describe()} at the longest, {window_words(self.start, self.until)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = evidence.window(self.start, self.until)
        if isinstance(window, str):
            return False, window
        begin, end = window[0].ts, window[1].ts
        acks: dict[int, list[float]] = {p: [] for p in self.partitions or ()}
        for row in evidence.sends:
            partition = int(row["partition"])
            if self.partitions is not None and partition not in self.partitions:
                continue
            times = acks.setdefault(partition, [])
            if row["outcome"] == hist.OUTCOME_ACKED and row.get("ack_ts") is not None:
                times.append(float(row["ack_ts"]))
        if not acks:
            return False, "no partition to measure: no send was made"
        gaps = {p: longest_gap(sorted(times), begin, end) for p, times in acks.items()}
        listing = "; ".join(f"p{p}: {gaps[p]:.2f} s" for p in sorted(gaps))
        return all(self.seconds.holds(g) for g in gaps.values()), f"{listing} (window {end - begin:.1f} s)"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"unavailable_s": self.seconds.to_dict()}
        if self.partitions is not None:
            out["partitions"] = list(self.partitions)
        return with_window(out, self.start, self.until)


@CHECKS.kind("probe")
@dataclass(frozen=True)
class Seen(Check):
    """What a probe found (:mod:`harness.scenario.probes`): the broker's own view holds
    ``condition``, or, with ``condition`` None, the broker did not answer at all."""

    probe: str
    condition: Condition | None = None
    label: str | None = None
    resumes: bool = False  # a look-up probe: the consumer read from the offset it looked up
    acked: CountRange | None = None  # a produce probe: how many of its sends were acknowledged
    # A read probe: it read at least every record acknowledged on its partition before it.
    reads_acked: bool = False
    kind: ClassVar[str] = "probe"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"holds", "answers", "resumes", "acked", "reads_acked",
                                                     "name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Seen:
        """``probe = NAME`` with one of ``holds = <condition>``, ``answers = false``,
        ``resumes = true``, ``acked = <count>`` or ``reads_acked = true``."""
        table = fields(raw, what)
        probe, name = raw["probe"], label_of(table)
        if not isinstance(probe, str):
            raise table.refuse("'probe' names a [[probes]] entry")
        if sum(key in raw for key in ("holds", "answers", "resumes", "acked", "reads_acked")) != 1:
            raise table.refuse("a probe check takes 'holds' (a condition), 'answers = false', "
                               "'resumes = true', 'acked' (a count) or 'reads_acked = true'")
        if "reads_acked" in raw:
            table.only_true("reads_acked")
            return cls(probe, None, name, reads_acked=True)
        if "acked" in raw:
            return cls(probe, None, name, acked=count_range(raw["acked"], what))
        if "resumes" in raw:
            table.only_true("resumes")
            return cls(probe, None, name, resumes=True)
        if "answers" in raw:
            if raw["answers"] is not False:
                raise table.refuse("'answers' can only be false (use 'holds' for what it answers)")
            return cls(probe, None, name)
        return cls(probe, condition(raw["holds"], what), name)

    def describe(self) -> str:
        if self.reads_acked:
            return f"probe {self.probe}: a consumer reads back every record acknowledged before it"
        if self.acked is not None:
            return f"probe {self.probe}: {self.acked.describe()} of its sends acknowledged"
        if self.resumes:
            return f"probe {self.probe}: a consumer resumes from the offset it looked up"
        if self.condition is None:
            return f"probe {self.probe}: the broker does not answer"
        return f"probe {self.probe}: in the broker's own view, {self.condition.describe()}"

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        result = evidence.probes.get(self.probe)
        if result is None:
            return False, f"probe {self.probe} was never taken (its moment never came)"
        if self.reads_acked:
            if result.read is None:
                return False, f"nothing was read: {result.error or 'not a read probe'}"
            partition, read = result.read
            acked = sum(1 for row in evidence.sends if int(row["partition"]) == partition
                        and row["outcome"] == hist.OUTCOME_ACKED and row.get("ack_ts") is not None
                        and float(row["ack_ts"]) <= result.ts)
            return 0 < acked <= read, (f"{read} records read back from p{partition}; {acked} had been "
                                       "acknowledged there before the probe")
        if self.acked is not None:
            sent = result.produced
            if sent is None:
                return False, f"nothing was produced: {result.error or 'not a produce probe'}"
            errors = ", ".join(sent.errors) or "none"
            return self.acked.holds(sent.acked), f"{sent.acked} acknowledged, {sent.failed} failed ({errors})"
        if self.resumes:
            found = result.lookup
            if found is None:
                return False, f"no look-up was made: {result.error or 'not a look-up probe'}"
            written = (found.first_ts_ms or 0) / 1000
            return found.resumed, (f"looked up offset {found.offset} for {found.since:.3f}; first read "
                                   f"offset {found.first_read}, written at {written:.3f}")
        if self.condition is None:
            return result.state is None, result.error or "it answered"
        if result.state is None:
            return False, f"the broker did not answer: {result.error}"
        held, why = self.condition.evaluate(result.state, result.state)
        return held, "held" if held else why

    def spec(self) -> dict[str, Any]:
        if self.reads_acked:
            return {"probe": self.probe, "reads_acked": True}
        if self.acked is not None:
            return {"probe": self.probe, "acked": self.acked.to_dict()}
        if self.resumes:
            return {"probe": self.probe, "resumes": True}
        if self.condition is None:
            return {"probe": self.probe, "answers": False}
        return {"probe": self.probe, "holds": self.condition.to_spec()}


@CHECKS.kind("attempts")
@dataclass(frozen=True)
class Attempts(Check):
    """The producers' failed attempts (the history's attempts table: every error a send
    met, retried or final) in the ``for_s`` seconds from ``start``, all producers named
    together: their number lies in ``count``; ``errors`` limits them to those codes."""

    producers: tuple[str, ...]
    count: CountRange
    start: Anchor
    for_s: float
    errors: tuple[str, ...] | None = None
    label: str | None = None
    kind: ClassVar[str] = "attempts"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"errors", "count", "producers", "from", "for_s", "name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> Attempts:
        table = fields(raw, what)
        start = required_anchor(table, "from", "attempts", "the inject or heal it follows")
        return cls(table.names("attempts") or (), count_range(raw.get("count"), what), start,
                   table.seconds("for_s"), table.names("errors"), label_of(table))

    def __post_init__(self) -> None:
        if not math.isfinite(self.for_s) or self.for_s <= 0:
            raise CheckSpecError(f"attempts: for_s must be a positive number of seconds, not {self.for_s!r}")

    def describe(self) -> str:
        which = ("failed attempts" if self.errors is None
                 else f"attempts failing with {', '.join(self.errors)}")
        return (f"{which} of {', '.join(self.producers)}: {self.count.describe()} in the {self.for_s:g} s "
                f"from {self.start.describe()}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        moment = evidence.moment(self.start)
        if moment is None:
            return False, f"{self.start.describe()} never ran"
        unreported = sorted(set(self.producers) & evidence.attempts_unreported)
        if unreported:
            return False, (f"not judged: {', '.join(unreported)} run on Kafka's Java client, which reports "
                           "no failed attempt, only each send's outcome (docs/HISTORY.md)")
        seen: dict[str, int] = {}
        for row in evidence.attempts:
            inside = moment.ts <= float(row["ts"]) <= moment.ts + self.for_s
            if row["producer_id"] in self.producers and inside:
                seen[str(row["error"])] = seen.get(str(row["error"]), 0) + 1
        counted = sum(n for error, n in seen.items() if self.errors is None or error in self.errors)
        listing = ", ".join(f"{error} {n}" for error, n in sorted(seen.items())) or "none"
        return self.count.holds(counted), f"{counted} counted; every error seen: {listing}"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"attempts": list(self.producers), "count": self.count.to_dict(),
                               "from": self.start.to_spec(), "for_s": self.for_s}
        if self.errors is not None:
            out["errors"] = list(self.errors)
        return out
