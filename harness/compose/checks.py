"""A scenario's checks: predicates over what the run recorded, declared with the spec.

A scenario says what must happen as data, not as code woven between its faults: "within
30 s of entry 1's inject, partition 1 is offline with only broker 2 in its ISR", "from
entry 1's inject to its heal, partition 0 keeps broker 0 as leader", "between them,
every send to partition 1 failed". Each :class:`Check` reads the run's evidence after
the workload stopped - the cluster-state timeline of the run's one sampler, the moments
the schedule's entries were injected and healed, the history's sends - and becomes one
named line of the scenario's page with what was seen beside what was expected.

Conditions on the cluster state are the schedule's own (:mod:`faults.conditions`), so a
trigger ("inject when broker 1 leaves the ISR") and a check ("broker 1 left the ISR
within 12 s") are spelled alike. Moments are :class:`Anchor` s - entry N's inject or
heal, by the 1-based numbers a scenario file gives its ``[[schedule]]`` entries - and
every window starts when its action *began* (the fault is in force from then).

In a scenario file (``$topic`` is the scenario's topic)::

    [[checks]]
    eventually = { offline = { topic = "$topic", partition = 1 } }
    after = { inject = 1 }
    within_s = 30

    [[checks]]
    throughout = { leader_is = { broker = 0, topic = "$topic", partition = 0 } }
    from = { inject = 1 }
    until = { heal = 1 }

    [[checks]]
    sends = "not_acked"          # acked | failed | in_doubt | not_acked
    partitions = [1]
    from = { inject = 1 }
    until = { heal = 1 }
    count = { min = 1 }          # per partition named (or per partition sent to)

    [[checks]]
    unavailable_s = { max = 6 }  # longest stretch without an acknowledgement
    partitions = [0, 2]
    from = { inject = 1 }

Everything here is pure: :class:`Evidence` is plain data, so every check is unit-tested
on made-up timelines (tests/unit/test_checks.py).
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from faults.conditions import Condition, parse_condition
from faults.errors import FaultError
from harness import history as hist
from harness.cluster.zkstate import ClusterState
from harness.compose.expectations import BoundsError, CountRange, longest_gap
from harness.explore import cluster_rules

ACTIONS = ("inject", "heal")
SEND_OUTCOMES = {"acked": (hist.OUTCOME_ACKED,), "failed": (hist.OUTCOME_FAILED,),
                 "in_doubt": (hist.OUTCOME_UNKNOWN,),
                 "not_acked": (hist.OUTCOME_FAILED, hist.OUTCOME_UNKNOWN)}


class CheckSpecError(ValueError):
    """A check that cannot be evaluated as written; the message names the check."""


# ----------------------------------------------------------------------------- evidence


@dataclass(frozen=True, order=True)
class Anchor:
    """A moment of the schedule: entry ``entry``'s inject or heal (entries from 1)."""

    entry: int
    action: str = "inject"

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise CheckSpecError(f"an anchor is {{ inject = N }} or {{ heal = N }}, not {self.action!r}")
        if isinstance(self.entry, bool) or not isinstance(self.entry, int) or self.entry < 1:
            raise CheckSpecError(f"an anchor names a schedule entry from 1, not {self.entry!r}")

    def describe(self) -> str:
        return f"entry {self.entry}'s {self.action}"

    def to_spec(self) -> dict[str, int]:
        return {self.action: self.entry}

    @classmethod
    def parse(cls, raw: Any, what: str) -> Anchor:
        if not isinstance(raw, Mapping) or len(raw) != 1:
            raise CheckSpecError(f"{what} must be {{ inject = N }} or {{ heal = N }}, not {raw!r}")
        ((action, entry),) = raw.items()
        return cls(entry, action)


def inject(entry: int) -> Anchor:
    return Anchor(entry, "inject")


def heal(entry: int) -> Anchor:
    return Anchor(entry, "heal")


@dataclass(frozen=True)
class Moment:
    """When a schedule action ran: its start on both clocks (wall for the history's
    sends, monotonic for the cluster-state timeline)."""

    ts: float
    mono: float


@dataclass(frozen=True)
class Observed:
    """One distinct cluster state: first seen at ``mono``, last confirmed at ``until``."""

    mono: float
    until: float
    state: ClusterState


@dataclass(frozen=True)
class Lookup:
    """A fresh consumer's look-up: the first offset written at or after ``since`` (wall
    clock), and the first record it then read (offset and timestamp in ms), if any."""

    since: float
    offset: int
    first_read: int | None
    first_ts_ms: int | None

    @property
    def resumed(self) -> bool:
        """Read from exactly the offset looked up, a record written no earlier than asked."""
        return (self.offset >= 0 and self.first_read == self.offset and self.first_ts_ms is not None
                and self.first_ts_ms >= int(self.since * 1000))


@dataclass(frozen=True)
class Produced:
    """What a probe's producer got: sends acknowledged, sends failed, the errors seen."""

    acked: int
    failed: int
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeResult:
    """What a probe found: the broker's view as a cluster state, a consumer's look-up,
    or why the broker or client did not answer."""

    probe: str
    ts: float
    state: ClusterState | None
    error: str | None = None
    lookup: Lookup | None = None
    produced: Produced | None = None
    read: tuple[int, int] | None = None  # a read probe: (partition, records read from its start)

    def to_dict(self) -> dict[str, Any]:
        state = self.state
        return {"probe": self.probe, "ts": self.ts, "error": self.error,
                "lookup": None if self.lookup is None else vars(self.lookup),
                "produced": None if self.produced is None else vars(self.produced),
                "read": None if self.read is None else {"partition": self.read[0], "records": self.read[1]},
                "view": None if state is None else {
                    "brokers": list(state.live_brokers), "controller": state.controller,
                    "partitions": {f"{t}-{p}": {"leader": s.leader, "isr": list(s.isr)}
                                   for (t, p), s in sorted(state.partitions.items())}}}


@dataclass(frozen=True)
class Evidence:
    """What a finished run recorded, as the checks read it."""

    timeline: Sequence[Observed]
    moments: Mapping[Anchor, Moment]
    sends: Sequence[Mapping[str, Any]]  # rows of the history's sends table
    end: Moment  # when the workload stopped: open windows end there
    polls: Sequence[Mapping[str, Any]] = ()  # rows of the history's polls table
    attempts: Sequence[Mapping[str, Any]] = ()  # rows of the history's attempts table
    probes: Mapping[str, ProbeResult] = field(default_factory=dict)  # by probe name
    commits: Sequence[Mapping[str, Any]] = ()  # rows of the history's commits table
    transactions: Sequence[Mapping[str, Any]] = ()  # rows of the history's transactions table
    final_log: Sequence[Mapping[str, Any]] = ()  # rows of the history's final_log table
    final_offsets: Sequence[Mapping[str, Any]] = ()  # rows of the history's final_offsets table

    def moment(self, anchor: Anchor) -> Moment | None:
        return self.moments.get(anchor)

    def window(self, start: Anchor | None, until: Anchor | None) -> tuple[Moment, Moment] | str:
        """The moments ``start`` and ``until`` (the run's start and end when None), or why not."""
        first = min(self.moments.values(), key=lambda m: m.mono, default=None) if start is None \
            else self.moment(start)
        if first is None:
            return "no schedule action ran" if start is None else f"{start.describe()} never ran"
        last = self.end if until is None else self.moment(until)
        if last is None:
            assert until is not None
            return f"{until.describe()} never ran"
        if last.mono < first.mono:
            return "the window ends before it starts"
        return first, last

    def states(self, start: float, end: float) -> list[Observed]:
        """Every state in force at some moment of [start, end] (monotonic)."""
        return [o for o in self.timeline if o.mono <= end and o.until >= start]

    def baseline(self, before: float) -> ClusterState | None:
        """The last state first seen before ``before``: what a comparing condition compares with."""
        earlier = [o for o in self.timeline if o.mono < before]
        return earlier[-1].state if earlier else None


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str


# ------------------------------------------------------------------------------- checks


class Check(ABC):
    """One predicate over the evidence, with a name a reviewer reads."""

    kind: ClassVar[str]
    label: str | None

    @abstractmethod
    def describe(self) -> str: ...

    @property
    def name(self) -> str:
        return self.label or self.describe()

    @abstractmethod
    def judge(self, evidence: Evidence) -> tuple[bool, str]: ...

    def evaluate(self, evidence: Evidence) -> CheckResult:
        try:
            passed, detail = self.judge(evidence)
        except Exception as err:  # a check that cannot be judged fails, with the reason
            return CheckResult(self.name, False, f"could not be judged: {err!r}")
        return CheckResult(self.name, passed, detail)

    @abstractmethod
    def spec(self) -> dict[str, Any]: ...

    def to_spec(self) -> dict[str, Any]:
        out = self.spec()
        if self.label is not None:
            out["name"] = self.label
        return out

    def anchors(self) -> tuple[Anchor, ...]:
        return tuple(a for a in (getattr(self, "start", None), getattr(self, "until", None))
                     if isinstance(a, Anchor))


def _seconds(value: float) -> str:
    return f"{value:.1f} s"


@dataclass(frozen=True)
class Eventually(Check):
    """``condition`` held at some state in force within ``within_s`` of ``start``."""

    condition: Condition
    start: Anchor
    within_s: float
    label: str | None = None
    kind: ClassVar[str] = "eventually"

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
                return True, f"held {_seconds(after)} after {self.start.describe()}"
        return False, f"not within {self.within_s:g} s; {len(states)} states seen, the last: {why}"

    def spec(self) -> dict[str, Any]:
        return {"eventually": self.condition.to_spec(), "after": self.start.to_spec(),
                "within_s": self.within_s}


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
                return False, f"{_seconds(observed.mono - first.mono)} after {self.start.describe()}: {why}"
        return True, f"{len(states)} states over {_seconds(end - first.mono)}, all held"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"throughout": self.condition.to_spec(), "from": self.start.to_spec()}
        if self.until is not None:
            out["until"] = self.until.to_spec()
        if self.for_s is not None:
            out["for_s"] = self.for_s
        if self.settle_s:
            out["settle_s"] = self.settle_s
        return out


def _partition_listing(partitions: Iterable[int] | None) -> str:
    if partitions is None:
        return "every partition"
    listed = sorted(partitions)
    return f"partition {listed[0]}" if len(listed) == 1 else f"partitions {', '.join(map(str, listed))}"


def _window_words(start: Anchor | None, until: Anchor | None) -> str:
    if start is None and until is None:
        return "over the whole run"
    begin = "the first fault" if start is None else start.describe()
    end = "the end of the workload" if until is None else until.describe()
    return f"from {begin} to {end}"


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
    kind: ClassVar[str] = "sends"

    def __post_init__(self) -> None:
        if self.outcome not in SEND_OUTCOMES:
            raise CheckSpecError(f"sends: outcome {self.outcome!r} is not one of {', '.join(SEND_OUTCOMES)}")
        if self.timed_by not in ("send", "ack"):
            raise CheckSpecError(f"sends: timed_by is \"send\" or \"ack\", not {self.timed_by!r}")
        if self.timed_by == "ack" and self.outcome != "acked":
            raise CheckSpecError("sends: only acknowledged sends have an acknowledgement to time them by")
        _check_for_s("sends", self.start, self.until, self.for_s)

    def describe(self) -> str:
        who = "" if self.producers is None else f" by {', '.join(self.producers)}"
        words = self.outcome.replace("_", " ")
        where = _partition_listing(self.partitions)
        when = "made" if self.timed_by == "send" else "acknowledged"
        return (f"sends{who} {words}: {self.count.describe()} on each of {where}, {when} "
                f"{_span_words(self.start, self.settle_s, self.until, self.for_s)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = _wall_bounds(evidence, self.start, self.settle_s, self.until, self.for_s)
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
        return _with_window(out, self.start, self.until, self.settle_s, self.for_s)


@dataclass(frozen=True)
class SecondsRange:
    """Seconds between ``at_least`` and ``at_most`` (either may be open)."""

    at_least: float | None = None
    at_most: float | None = None

    def __post_init__(self) -> None:
        for value in (self.at_least, self.at_most):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value < 0):
                raise CheckSpecError(f"a bound in seconds must be a non-negative number, not {value!r}")
        if self.at_least is None and self.at_most is None:
            raise CheckSpecError("a range of seconds needs 'min', 'max' or both")
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise CheckSpecError(f"min {self.at_least} is above max {self.at_most}")

    def holds(self, seconds: float) -> bool:
        return ((self.at_least is None or seconds >= self.at_least)
                and (self.at_most is None or seconds <= self.at_most))

    def describe(self) -> str:
        if self.at_least is None:
            return f"at most {self.at_most:g} s"
        if self.at_most is None:
            return f"at least {self.at_least:g} s"
        return f"between {self.at_least:g} and {self.at_most:g} s"

    def to_dict(self) -> dict[str, float]:
        out = {"min": self.at_least, "max": self.at_most}
        return {k: v for k, v in out.items() if v is not None}


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

    def describe(self) -> str:
        return (f"{_partition_listing(self.partitions)} without an acknowledgement for "
                f"{self.seconds.describe()} at the longest, {_window_words(self.start, self.until)}")

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
        return _with_window(out, self.start, self.until)


@dataclass(frozen=True)
class Seen(Check):
    """What a probe found (:mod:`harness.compose.probes`): the broker's own view holds
    ``condition``, or, with ``condition`` None, the broker did not answer at all."""

    probe: str
    condition: Condition | None = None
    label: str | None = None
    resumes: bool = False  # a look-up probe: the consumer read from the offset it looked up
    acked: CountRange | None = None  # a produce probe: how many of its sends were acknowledged
    # A read probe: it read at least every record acknowledged on its partition before it.
    reads_acked: bool = False
    kind: ClassVar[str] = "probe"

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

    def describe(self) -> str:
        which = "" if self.partitions is None else f" of {_partition_listing(self.partitions)}"
        order = ", every read at the next offset" if self.contiguous else ""
        return (f"records{which} polled by {', '.join(self.consumers)}: {self.count.describe()} each, "
                f"{_span_words(self.start, self.settle_s, self.until, None)}{order}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = _wall_bounds(evidence, self.start, self.settle_s, self.until)
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
        return _with_window(out, self.start, self.until, self.settle_s)


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


_ERROR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def error_names(error: Any) -> tuple[str, ...]:
    """The error names in a recorded error: ``NAME: sentence``, or several joined by
    ``"; "`` where one error led to another (a commit refused, then the abort it led to
    fenced: ``INVALID_PRODUCER_EPOCH: ...; _FENCED: ...``). Parts that do not start with
    a name (a sentence of librdkafka's that holds a ``;``) are skipped."""
    if error is None:
        return ()
    heads = (part.split(":", 1)[0].strip() for part in str(error).split("; "))
    return tuple(head for head in heads if _ERROR_NAME.fullmatch(head))


def tally_outcomes(rows: Sequence[Mapping[str, Any]], window: tuple[float, float],
                   placed_at: Callable[[Mapping[str, Any]], float], wanted: Collection[str],
                   errors: Collection[str] | None = None) -> tuple[int, str]:
    """Of the ``rows`` (commits, transactions) placed inside ``window``: how many ended
    an outcome in ``wanted`` (and, with ``errors``, with one of those error names among
    theirs), and every outcome seen there with its count ("committed 13, failed
    (REBALANCE_IN_PROGRESS) 2"), so a failed count says what happened instead. An error
    shows by its names only, not librdkafka's sentences after them."""
    begin, end = window
    seen: dict[str, int] = {}
    counted = 0
    for row in rows:
        if not begin <= placed_at(row) <= end:
            continue
        error = row.get("error")
        names = error_names(error)
        named = "; ".join(names) or str(error).split(":")[0]
        word = str(row["outcome"]) if error is None else f"{row['outcome']} ({named})"
        seen[word] = seen.get(word, 0) + 1
        counted += row["outcome"] in wanted and (errors is None or any(n in errors for n in names))
    return counted, ", ".join(f"{word} {n}" for word, n in sorted(seen.items())) or "none"


COMMIT_OUTCOMES = {"committed": ("committed",), "failed": ("failed",), "any": ("committed", "failed")}


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

    def __post_init__(self) -> None:
        if self.outcome not in COMMIT_OUTCOMES:
            words = ", ".join(COMMIT_OUTCOMES)
            raise CheckSpecError(f"commits: outcome {self.outcome!r} is not one of {words}")
        _check_for_s("commits", self.start, self.until, self.for_s)

    def describe(self) -> str:
        who = "" if self.consumers is None else f" by {', '.join(self.consumers)}"
        outcome = "ending either way" if self.outcome == "any" else self.outcome
        return (f"offset commits{who} {outcome}: {self.count.describe()} "
                f"{_span_words(self.start, self.settle_s, self.until, self.for_s)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = _wall_bounds(evidence, self.start, self.settle_s, self.until, self.for_s)
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
        return _with_window(out, self.start, self.until, self.settle_s, self.for_s)


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

    def describe(self) -> str:
        who = "no member" if self.consumers is None else f"none of {', '.join(self.consumers)}"
        return (f"{who} committing for {self.seconds.describe()} at the longest, "
                f"{_window_words(self.start, self.until)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = evidence.window(self.start, self.until)
        if isinstance(window, str):
            return False, window
        begin, end = window[0].ts, window[1].ts
        times = sorted(float(row["ts"]) for row in evidence.commits
                       if row["outcome"] == hist.COMMIT_COMMITTED
                       and (self.consumers is None or row["consumer_id"] in self.consumers))
        gap = longest_gap(times, begin, end)
        return self.seconds.holds(gap), f"{gap:.2f} s (window {end - begin:.1f} s)"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commit_gap_s": self.seconds.to_dict()}
        if self.consumers is not None:
            out["consumers"] = list(self.consumers)
        return _with_window(out, self.start, self.until)


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

    def __post_init__(self) -> None:
        if self.outcome not in TRANSACTION_OUTCOMES:
            words = ", ".join(TRANSACTION_OUTCOMES)
            raise CheckSpecError(f"transactions: outcome {self.outcome!r} is not one of {words}")
        _check_for_s("transactions", self.start, self.until, self.for_s)
        if self.errors is not None and not self.errors:
            raise CheckSpecError("transactions: 'errors' names at least one error (left out: any error)")

    def describe(self) -> str:
        who = "" if self.producers is None else f" of {', '.join(self.producers)}"
        outcome = "ending any way" if self.outcome == "any" else self.outcome
        why = "" if self.errors is None else f" with {' or '.join(self.errors)}"
        return (f"transactions{who} {outcome}{why}: {self.count.describe()} "
                f"{_span_words(self.start, self.settle_s, self.until, self.for_s)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = _wall_bounds(evidence, self.start, self.settle_s, self.until, self.for_s)
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
        return _with_window(out, self.start, self.until, self.settle_s, self.for_s)


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

    def describe(self) -> str:
        who = "no producer" if self.producers is None else f"none of {', '.join(self.producers)}"
        return (f"{who} committing a transaction for {self.seconds.describe()} at the longest, "
                f"{_window_words(self.start, self.until)}")

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        window = evidence.window(self.start, self.until)
        if isinstance(window, str):
            return False, window
        begin, end = window[0].ts, window[1].ts
        times = sorted(float(row["end_ts"]) for row in evidence.transactions
                       if row["outcome"] == hist.TXN_COMMITTED and row.get("end_ts") is not None
                       and (self.producers is None or row["producer_id"] in self.producers))
        gap = longest_gap(times, begin, end)
        return self.seconds.holds(gap), f"{gap:.2f} s (window {end - begin:.1f} s)"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"transaction_gap_s": self.seconds.to_dict()}
        if self.producers is not None:
            out["producers"] = list(self.producers)
        return _with_window(out, self.start, self.until)


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


@dataclass(frozen=True)
class ClusterRules(Check):
    """ZooKeeper's view of the cluster kept Kafka's own rules through the whole run: one
    controller per controller epoch, leader epochs never going back, every leader in its
    ISR and every ISR within its replicas (harness/explore/cluster_rules.py, which says
    how states caught mid-change are treated). A run with no recorded state fails it."""

    label: str | None = None
    kind: ClassVar[str] = "cluster_rules"

    def describe(self) -> str:
        return "ZooKeeper's view keeps the cluster's rules: " + "; ".join(cluster_rules.RULES)

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        timeline = [cluster_rules.Seen(o.mono, o.until, o.state) for o in evidence.timeline]
        if not timeline:
            return False, "no cluster state was recorded, so nothing was shown"
        found = cluster_rules.violations(timeline)
        epochs = {o.state.controller_epoch for o in evidence.timeline} - {None}
        detail = f"{len(timeline)} states, {len(epochs)} controller epoch(s)"
        if found:
            detail += f"; {len(found)} breach(es): " + "; ".join(f"{v.rule}: {v.detail}" for v in found[:4])
        return not found, detail

    def spec(self) -> dict[str, Any]:
        return {"cluster_rules": True}


def _wall_bounds(evidence: Evidence, start: Anchor | None, settle_s: float,
                 until: Anchor | None, for_s: float | None = None) -> tuple[float, float] | str:
    """The window's wall-clock ends: ``start`` + ``settle_s`` (else -inf) to ``until``
    (else +inf), or ``for_s`` after its start; or why an anchor has no moment."""
    begin, end = -math.inf, math.inf
    if start is not None:
        moment = evidence.moment(start)
        if moment is None:
            return f"{start.describe()} never ran"
        begin = moment.ts + settle_s
    if until is not None:
        moment = evidence.moment(until)
        if moment is None:
            return f"{until.describe()} never ran"
        end = moment.ts
    if for_s is not None:
        end = begin + for_s
    return begin, end


def _check_for_s(kind: str, start: Anchor | None, until: Anchor | None, for_s: float | None) -> None:
    if for_s is not None and (until is not None or start is None):
        raise CheckSpecError(f"{kind}: 'for_s' counts from 'from' and replaces 'until'")


def _span_words(start: Anchor | None, settle_s: float, until: Anchor | None, for_s: float | None) -> str:
    """'from <start> (+settle) to <end>', as a check's description says its window."""
    begin = "the run's start" if start is None else start.describe()
    settle = f" (+{settle_s:g} s)" if settle_s else ""
    end = "its end" if until is None else until.describe()
    if for_s is not None:
        end = f"{for_s:g} s later"
    return f"from {begin}{settle} to {end}"


def _with_window(out: dict[str, Any], start: Anchor | None, until: Anchor | None, settle_s: float = 0.0,
                 for_s: float | None = None) -> dict[str, Any]:
    """``out`` with the window's keys as a scenario file spells them (defaults left out)."""
    for key, anchor in (("from", start), ("until", until)):
        if anchor is not None:
            out[key] = anchor.to_spec()
    if for_s is not None:
        out["for_s"] = for_s
    if settle_s:
        out["settle_s"] = settle_s
    return out


def evaluate_checks(checks: Sequence[Check], evidence: Evidence) -> list[CheckResult]:
    return [check.evaluate(evidence) for check in checks]


# ------------------------------------------------------------------------------ parsing


_KINDS = ("eventually", "throughout", "sends", "unavailable_s", "probe", "polls", "attempts", "commits",
          "commit_gap_s", "transactions", "transaction_gap_s", "never_visible", "commits_kept",
          "cluster_rules")
_KEYS = {
    "eventually": {"eventually", "after", "within_s", "name"},
    "throughout": {"throughout", "from", "until", "for_s", "settle_s", "name"},
    "sends": {"sends", "count", "partitions", "producers", "from", "until", "timed_by", "settle_s", "for_s",
              "name"},
    "unavailable_s": {"unavailable_s", "partitions", "from", "until", "name"},
    "probe": {"probe", "holds", "answers", "resumes", "acked", "reads_acked", "name"},
    "polls": {"polls", "count", "from", "until", "settle_s", "partitions", "contiguous", "name"},
    "attempts": {"attempts", "errors", "count", "producers", "from", "for_s", "name"},
    "commits": {"commits", "count", "consumers", "from", "until", "settle_s", "for_s", "name"},
    "commit_gap_s": {"commit_gap_s", "consumers", "from", "until", "name"},
    "transactions": {"transactions", "count", "producers", "from", "until", "settle_s", "for_s", "errors",
                     "name"},
    "transaction_gap_s": {"transaction_gap_s", "producers", "from", "until", "name"},
    "never_visible": {"never_visible", "name"},
    "commits_kept": {"commits_kept", "name"},
    "cluster_rules": {"cluster_rules", "name"},
}


def _number(raw: Mapping[str, Any], key: str, what: str, default: float | None = None) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CheckSpecError(f"{what}: '{key}' must be a number of seconds, not {value!r}")
    return float(value)


def _ints(raw: Any, key: str, what: str) -> tuple[int, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw):
        raise CheckSpecError(f"{what}: '{key}' must be a list of integers, not {raw!r}")
    return tuple(raw)


def _names(raw: Any, what: str, key: str = "producers") -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise CheckSpecError(f"{what}: '{key}' must be a list of names, not {raw!r}")
    return tuple(raw)


def _seen(raw: Mapping[str, Any], what: str, label: str | None) -> Seen:
    """``probe = NAME`` with ``holds = <condition>`` or ``answers = false``."""
    probe = raw["probe"]
    if not isinstance(probe, str):
        raise CheckSpecError(f"{what}: 'probe' names a [[probes]] entry")
    if sum(key in raw for key in ("holds", "answers", "resumes", "acked", "reads_acked")) != 1:
        raise CheckSpecError(f"{what}: a probe check takes 'holds' (a condition), 'answers = false', "
                             "'resumes = true', 'acked' (a count) or 'reads_acked = true'")
    if "reads_acked" in raw:
        if raw["reads_acked"] is not True:
            raise CheckSpecError(f"{what}: 'reads_acked' can only be true")
        return Seen(probe, None, label, reads_acked=True)
    if "acked" in raw:
        return Seen(probe, None, label, acked=_count_range(raw["acked"], what))
    if "resumes" in raw:
        if raw["resumes"] is not True:
            raise CheckSpecError(f"{what}: 'resumes' can only be true")
        return Seen(probe, None, label, resumes=True)
    if "answers" in raw:
        if raw["answers"] is not False:
            raise CheckSpecError(f"{what}: 'answers' can only be false (use 'holds' for what it answers)")
        return Seen(probe, None, label)
    return Seen(probe, _condition(raw["holds"], what), label)


def _anchor(raw: Mapping[str, Any], key: str, what: str) -> Anchor | None:
    return None if key not in raw else Anchor.parse(raw[key], f"{what}: '{key}'")


def _condition(raw: Any, what: str) -> Condition:
    try:
        return parse_condition(raw, what)
    except FaultError as err:
        raise CheckSpecError(str(err)) from err


def parse_check(raw: Any, what: str = "check") -> Check:
    """A check from its scenario-file table; CheckSpecError (one line naming ``what``) if malformed."""
    if not isinstance(raw, Mapping):
        raise CheckSpecError(f"{what} must be a table ([[checks]])")
    kinds = [k for k in _KINDS if k in raw]
    if len(kinds) != 1:
        raise CheckSpecError(f"{what} needs exactly one of {', '.join(_KINDS)}")
    kind = kinds[0]
    unknown = sorted(set(raw) - _KEYS[kind])
    if unknown:
        raise CheckSpecError(f"{what}: unknown key(s) {', '.join(unknown)} for a '{kind}' check")
    label = raw.get("name")
    if label is not None and not isinstance(label, str):
        raise CheckSpecError(f"{what}: 'name' must be a string")
    try:
        if kind == "eventually":
            start = _anchor(raw, "after", what)
            if start is None:
                raise CheckSpecError(f"{what}: 'eventually' needs 'after' (the inject or heal it follows)")
            return Eventually(_condition(raw[kind], what), start, _number(raw, "within_s", what), label)
        if kind == "throughout":
            start = _anchor(raw, "from", what)
            if start is None:
                raise CheckSpecError(f"{what}: 'throughout' needs 'from' (the inject or heal it starts at)")
            for_s = None if "for_s" not in raw else _number(raw, "for_s", what)
            return Throughout(_condition(raw[kind], what), start, _anchor(raw, "until", what),
                              _number(raw, "settle_s", what, 0.0), for_s, label)
        if kind == "sends":
            count = _count_range(raw.get("count"), what)
            timed_by = raw.get("timed_by", "send")
            if not isinstance(timed_by, str):
                raise CheckSpecError(f"{what}: 'timed_by' is \"send\" or \"ack\", not {timed_by!r}")
            return Sends(str(raw[kind]), count, _ints(raw.get("partitions"), "partitions", what),
                         _names(raw.get("producers"), what), _anchor(raw, "from", what),
                         _anchor(raw, "until", what), timed_by, _number(raw, "settle_s", what, 0.0), label,
                         None if "for_s" not in raw else _number(raw, "for_s", what))
        if kind == "probe":
            return _seen(raw, what, label)
        if kind == "polls":
            consumers = _names(raw["polls"], what, "polls")
            assert consumers is not None
            contiguous = raw.get("contiguous", False)
            if not isinstance(contiguous, bool):
                raise CheckSpecError(f"{what}: 'contiguous' is true or false")
            return Polls(consumers, _count_range(raw.get("count"), what), _anchor(raw, "from", what),
                         _anchor(raw, "until", what), _number(raw, "settle_s", what, 0.0), label,
                         _ints(raw.get("partitions"), "partitions", what), contiguous)
        if kind == "attempts":
            start = _anchor(raw, "from", what)
            if start is None:
                raise CheckSpecError(f"{what}: 'attempts' needs 'from' (the inject or heal it follows)")
            errors = _names(raw.get("errors"), what, "errors")
            producers = _names(raw["attempts"], what, "attempts") or ()
            return Attempts(producers, _count_range(raw.get("count"), what), start,
                            _number(raw, "for_s", what), errors, label)
        if kind == "commits":
            return Commits(str(raw[kind]), _count_range(raw.get("count"), what),
                           _names(raw.get("consumers"), what, "consumers"), _anchor(raw, "from", what),
                           _anchor(raw, "until", what), _number(raw, "settle_s", what, 0.0),
                           None if "for_s" not in raw else _number(raw, "for_s", what), label)
        if kind == "transactions":
            return TransactionOutcomes(str(raw[kind]), _count_range(raw.get("count"), what),
                                       _names(raw.get("producers"), what), _anchor(raw, "from", what),
                                       _anchor(raw, "until", what), _number(raw, "settle_s", what, 0.0),
                                       None if "for_s" not in raw else _number(raw, "for_s", what), label,
                                       _names(raw.get("errors"), what, "errors"))
        if kind == "never_visible":
            return NeverVisible(_names(raw[kind], what, kind) or (), label)
        if kind == "cluster_rules":
            if raw[kind] is not True:
                raise CheckSpecError(f"{what}: 'cluster_rules' can only be true")
            return ClusterRules(label)
        if kind == "commits_kept":
            groups = raw[kind]
            if groups is True:
                return CommitsKept(None, label)
            if groups is False or not isinstance(groups, list) or not groups:
                raise CheckSpecError(f"{what}: 'commits_kept' is true (every group) or a list of group ids")
            return CommitsKept(_names(groups, what, kind), label)
        seconds = raw[kind]
        if not isinstance(seconds, Mapping) or not set(seconds) <= {"min", "max"}:
            raise CheckSpecError(f"{what}: '{kind}' must be {{ min = .., max = .. }}, not {seconds!r}")
        if kind == "commit_gap_s":
            return CommitGap(SecondsRange(seconds.get("min"), seconds.get("max")),
                             _names(raw.get("consumers"), what, "consumers"), _anchor(raw, "from", what),
                             _anchor(raw, "until", what), label)
        if kind == "transaction_gap_s":
            return TransactionGap(SecondsRange(seconds.get("min"), seconds.get("max")),
                                  _names(raw.get("producers"), what), _anchor(raw, "from", what),
                                  _anchor(raw, "until", what), label)
        return Unavailable(SecondsRange(seconds.get("min"), seconds.get("max")),
                           _ints(raw.get("partitions"), "partitions", what),
                           _anchor(raw, "from", what), _anchor(raw, "until", what), label)
    except CheckSpecError as err:
        text = str(err)
        raise CheckSpecError(text if text.startswith(what) else f"{what}: {text}") from err


def _count_range(raw: Any, what: str) -> CountRange:
    if raw is None:
        raise CheckSpecError(f"{what}: 'sends' needs 'count' ({{ min = .., max = .. }} or an integer)")
    try:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return CountRange(raw, raw)
        if not isinstance(raw, Mapping) or not set(raw) <= {"min", "max"}:
            raise CheckSpecError(f"'count' must be an integer or {{ min = .., max = .. }}, not {raw!r}")
        return CountRange(raw.get("min"), raw.get("max"))
    except BoundsError as err:
        raise CheckSpecError(f"'count': {err}") from err


def check_anchors(checks: Sequence[Check], entries: int, what: str = "checks") -> None:
    """Refuse a check anchored to an entry the schedule does not have, before anything runs."""
    for index, check in enumerate(checks, start=1):
        for anchor in check.anchors():
            if anchor.entry > entries:
                raise CheckSpecError(f"{what} {index} ({check.name}): {anchor.describe()} - the schedule "
                                     f"has {entries} entr{'y' if entries == 1 else 'ies'}")

