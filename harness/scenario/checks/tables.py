"""Reading a check's scenario-file table: the registry of check kinds, and the values
every kind spells alike (anchors, conditions, counts, ranges of seconds).

Each check class registers itself here under its kind (``@CHECKS.kind("sends")``) with
the keys its table may hold and a ``from_spec(table, what)`` that builds it, so a new
kind is one class in one module and the list of kinds in every error is derived.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faults.conditions import Condition, parse_condition
from faults.errors import FaultError
from harness.fields import Fields
from harness.scenario.checks.base import Check, CountRange, SecondsRange
from harness.scenario.checks.evidence import Anchor, CheckSpecError
from harness.tagged import SpecKinds

CHECKS: SpecKinds[Check] = SpecKinds("check", CheckSpecError)
"""Every check kind, by the key that names it in a ``[[checks]]`` table."""

WINDOW_KEYS = frozenset({"from", "until", "settle_s", "for_s", "name"})
"""The keys of a window counted from an anchor (with the label every check may have)."""


def fields(table: Mapping[str, Any], what: str) -> Fields:
    return Fields(table, what, CheckSpecError)


def label_of(table: Fields) -> str | None:
    """The check's own name for the page (``name = "..."``), if it gives one."""
    return None if "name" not in table else table.text("name")


def anchor(table: Fields, key: str) -> Anchor | None:
    return None if key not in table else Anchor.parse(table.table[key], f"{table.what}: '{key}'")


def required_anchor(table: Fields, key: str, kind: str, meaning: str) -> Anchor:
    found = anchor(table, key)
    if found is None:
        raise table.refuse(f"'{kind}' needs '{key}' ({meaning})")
    return found


def condition(raw: Any, what: str) -> Condition:
    try:
        return parse_condition(raw, what)
    except FaultError as err:
        raise CheckSpecError(str(err)) from err


def count_range(raw: Any, what: str, key: str = "count") -> CountRange:
    """``key = N`` (exactly N) or ``key = { min = .., max = .. }`` with either end open."""
    if raw is None:
        raise CheckSpecError(f"{what}: 'sends' needs 'count' ({{ min = .., max = .. }} or an integer)")
    try:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return CountRange(raw, raw)
        if not isinstance(raw, Mapping) or not set(raw) <= {"min", "max"}:
            raise CheckSpecError(f"'{key}' must be an integer or {{ min = .., max = .. }}, not {raw!r}")
        return CountRange(raw.get("min"), raw.get("max"))
    except CheckSpecError as err:
        text = str(err)
        raise CheckSpecError(text if text.startswith(f"'{key}'") else f"'{key}': {text}") from err


def seconds_range(table: Fields, kind: str) -> SecondsRange:
    """``kind = { min = .., max = .. }``: a range of seconds."""
    seconds = table.table[kind]
    if not isinstance(seconds, Mapping) or not set(seconds) <= {"min", "max"}:
        raise table.refuse(f"'{kind}' must be {{ min = .., max = .. }}, not {seconds!r}")
    return SecondsRange(seconds.get("min"), seconds.get("max"))


__all__ = ["CHECKS", "WINDOW_KEYS", "anchor", "condition", "count_range", "fields", "label_of",
           "required_anchor", "seconds_range"]
