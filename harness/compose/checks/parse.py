"""Checks from their scenario-file tables (``[[checks]]``): one table, one check, or one
line naming what is wrong with it before anything runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from faults.conditions import Condition, parse_condition
from faults.errors import FaultError
from harness.compose.checks.base import Check, SecondsRange
from harness.compose.checks.cluster import ClusterRules, Eventually, Throughout
from harness.compose.checks.consumers import CommitGap, Commits, CommitsKept, Polls
from harness.compose.checks.evidence import Anchor, CheckSpecError
from harness.compose.checks.sends import Attempts, Seen, Sends, Unavailable
from harness.compose.checks.transactions import NeverVisible, TransactionGap, TransactionOutcomes
from harness.compose.expectations import BoundsError, CountRange

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
