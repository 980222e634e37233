"""What every check shares: the :class:`Check` interface (a name a reviewer reads, a
verdict with its detail, the scenario-file table it came from) and the window arithmetic
its kinds spell alike (from an anchor, plus a settling time, to another anchor or for so
many seconds)."""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.history.gaps import longest_gap
from harness.scenario.checks.evidence import Anchor, CheckResult, CheckSpecError, Evidence


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


def seconds_text(value: float) -> str:
    return f"{value:.1f} s"


def partition_listing(partitions: Iterable[int] | None) -> str:
    if partitions is None:
        return "every partition"
    listed = sorted(partitions)
    return f"partition {listed[0]}" if len(listed) == 1 else f"partitions {', '.join(map(str, listed))}"


def window_words(start: Anchor | None, until: Anchor | None) -> str:
    if start is None and until is None:
        return "over the whole run"
    begin = "the first fault" if start is None else start.describe()
    end = "the end of the workload" if until is None else until.describe()
    return f"from {begin} to {end}"


@dataclass(frozen=True)
class CountRange:
    """An allowed count: at least ``at_least`` and at most ``at_most`` (either may be open)."""

    at_least: int | None = None
    at_most: int | None = None

    def __post_init__(self) -> None:
        for name in ("at_least", "at_most"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise CheckSpecError(f"a count bound must be a non-negative integer, not {value!r}")
        if self.at_least is None and self.at_most is None:
            raise CheckSpecError("a count range needs 'min', 'max' or both")
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise CheckSpecError(f"min {self.at_least} is above max {self.at_most}")

    def holds(self, count: int) -> bool:
        return ((self.at_least is None or count >= self.at_least)
                and (self.at_most is None or count <= self.at_most))

    def describe(self) -> str:
        if self.at_least == self.at_most:
            return f"exactly {self.at_least}"
        if self.at_least is None:
            return f"at most {self.at_most}"
        if self.at_most is None:
            return f"at least {self.at_least}"
        return f"between {self.at_least} and {self.at_most}"

    def to_dict(self) -> dict[str, int]:
        """The TOML shape: ``{ min = 1, max = 2 }`` with open ends left out."""
        out = {"min": self.at_least, "max": self.at_most}
        return {k: v for k, v in out.items() if v is not None}


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


def wall_bounds(evidence: Evidence, start: Anchor | None, settle_s: float,
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


def check_for_s(kind: str, start: Anchor | None, until: Anchor | None, for_s: float | None) -> None:
    if for_s is not None and (until is not None or start is None):
        raise CheckSpecError(f"{kind}: 'for_s' counts from 'from' and replaces 'until'")


def span_words(start: Anchor | None, settle_s: float, until: Anchor | None, for_s: float | None) -> str:
    """'from <start> (+settle) to <end>', as a check's description says its window."""
    begin = "the run's start" if start is None else start.describe()
    settle = f" (+{settle_s:g} s)" if settle_s else ""
    end = "its end" if until is None else until.describe()
    if for_s is not None:
        end = f"{for_s:g} s later"
    return f"from {begin}{settle} to {end}"


def with_window(out: dict[str, Any], start: Anchor | None, until: Anchor | None, settle_s: float = 0.0,
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


def longest_quiet(evidence: Evidence, start: Anchor | None, until: Anchor | None, seconds: SecondsRange,
                  moments: Iterable[float]) -> tuple[bool, str]:
    """Whether the longest stretch of the window without one of ``moments`` lies in
    ``seconds``, the window's ends counting as boundaries: the verdict of the checks that
    bound how long something stopped (commits, transactions), whatever they count."""
    window = evidence.window(start, until)
    if isinstance(window, str):
        return False, window
    begin, end = window[0].ts, window[1].ts
    gap = longest_gap(sorted(moments), begin, end)
    return seconds.holds(gap), f"{gap:.2f} s (window {end - begin:.1f} s)"
