"""Checks from their scenario-file tables (``[[checks]]``): one table, one check, or one
line naming what is wrong with it before anything runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The kinds register themselves on import: every module defining one is imported here.
from harness.scenario.checks import cluster, consumers, metadata, sends, transactions  # noqa: F401
from harness.scenario.checks.base import Check
from harness.scenario.checks.evidence import CheckSpecError
from harness.scenario.checks.tables import CHECKS


def parse_check(raw: Any, what: str = "check") -> Check:
    """A check from its scenario-file table; CheckSpecError (one line naming ``what``) if malformed."""
    if not isinstance(raw, Mapping):
        raise CheckSpecError(f"{what} must be a table ([[checks]])")
    try:
        return CHECKS.parse(raw, what)
    except CheckSpecError as err:
        text = str(err)
        raise CheckSpecError(text if text.startswith(what) else f"{what}: {text}") from err


def check_anchors(checks: Sequence[Check], entries: int, what: str = "checks") -> None:
    """Refuse a check anchored to an entry the schedule does not have, before anything runs."""
    for index, check in enumerate(checks, start=1):
        for anchor in check.anchors():
            if anchor.entry > entries:
                raise CheckSpecError(f"{what} {index} ({check.name}): {anchor.describe()} - the schedule "
                                     f"has {entries} entr{'y' if entries == 1 else 'ies'}")
