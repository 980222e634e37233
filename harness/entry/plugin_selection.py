"""Which of the collected tests a session runs: its tier, and its metadata mode.

A session that asks for the core tier (``--tier core``, or ``auto`` with no paths, ``-m``
or ``-k``) keeps only the chaos tests carrying a ``core`` claim, and a claim naming no
fault kind or family is a usage error; a test of another metadata mode's own machinery
is deselected. Both are deselections, never skips, and each leaves one line under
pytest's "collected" saying how many tests it left out and why (:mod:`harness.entry.tiers`
holds the rules; these are the hooks that apply them).
"""

from __future__ import annotations

import pytest

from harness.entry.plugin_state import MODE_KEY, TIER_KEY, chaos_run_of, needs_cluster
from harness.entry.tiers import CoreClaim, TierError, runs_in, selects_core_only


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only the core tier's chaos tests when the session asks for the core tier, and
    refuse a core marker whose claim names no fault kind or family."""
    try:
        for item in items:
            CoreClaim.of(item)
    except TierError as err:
        raise pytest.UsageError(str(err)) from err
    _keep_the_sessions_mode(config, items)
    from_testpaths = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if not selects_core_only(config.getoption("--tier"), from_testpaths,
                             config.option.markexpr, config.option.keyword):
        return
    left = [i for i in items if needs_cluster(i) and CoreClaim.of(i) is None]
    if left:
        kept = sum(1 for i in items if needs_cluster(i)) - len(left)
        config.hook.pytest_deselected(items=left)
        items[:] = [i for i in items if i not in set(left)]
        config.stash[TIER_KEY] = (f"core tier: {kept} of {kept + len(left)} chaos tests "
                                  "('pytest -m chaos' or 'kafka-chaos run' runs them all)")


def _keep_the_sessions_mode(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests of another metadata mode's own machinery (their ``metadata``
    marker), saying how many in the header: deselected, not skipped."""
    mode = chaos_run_of(config).base_topology.metadata
    other = [i for i in items if not runs_in(i, mode)]
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = [i for i in items if i not in set(other)]
        config.stash[MODE_KEY] = f"{mode} mode: {len(other)} test(s) of another metadata mode deselected"


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """What the selection left out and why, under pytest's "collected" line (a report
    header would be printed before collection, when neither is known yet)."""
    return [line for line in (config.stash.get(MODE_KEY, None), config.stash.get(TIER_KEY, None)) if line]
