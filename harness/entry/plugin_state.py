"""What the pytest plugin's hooks and fixtures hand each other through pytest's stash.

The plugin is split by job (:mod:`harness.entry.pytest_plugin` gathers the parts), and the
parts meet only here: the session's run and live console, made when pytest configures;
the order the chaos tests were chosen in; each test's scenario and whether its body
passed; and the lines the selection and the report leave for the terminal. Each key has
one module that writes it; the others read it.
"""

from __future__ import annotations

import pytest

from harness.entry.console import LiveLines
from harness.scenario.chaos_run import ChaosRun
from harness.scenario.runner import ScenarioRun

CHAOS_RUN_KEY = pytest.StashKey[ChaosRun]()
REPORT_KEY = pytest.StashKey[str]()
SCENARIO_KEY = pytest.StashKey[ScenarioRun]()
TIER_KEY = pytest.StashKey[str]()
MODE_KEY = pytest.StashKey[str]()
CALL_PASSED_KEY = pytest.StashKey[bool]()
LIVE_KEY = pytest.StashKey[LiveLines]()
ORDER_KEY = pytest.StashKey[dict[str, int]]()
CHAOS_MARKERS = ("chaos", "smoke")


def chaos_run_of(config: pytest.Config) -> ChaosRun:
    """The session's run, made when pytest configured the plugin."""
    return config.stash[CHAOS_RUN_KEY]


def needs_cluster(item: pytest.Item) -> bool:
    """Whether ``item`` is a chaos test: one that runs on the session's cluster."""
    return any(item.get_closest_marker(name) for name in CHAOS_MARKERS)


def call_passed(item: pytest.Item) -> bool:
    """Whether the test's body passed (a failed one has said what went wrong already)."""
    return bool(item.stash.get(CALL_PASSED_KEY, False))
