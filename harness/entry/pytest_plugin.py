"""The kafka-chaos pytest plugin (registered through the ``pytest11`` entry point).

It gives chaos tests what testcontainers-python gives service tests: a session-scoped
cluster started on first use (held by ``chaos_run``) and a per-test fixture (``cluster``)
that hands it over healthy and, after the test, restores full health - every node
running, every proxy clean, every ISR full. When healing is not enough, recovery
escalates (restart the nodes that block health, then replace the cluster) and the test
that left the damage errors at teardown with what it broke: only that test fails, and the
next one starts on a healthy cluster (:mod:`harness.cluster.recovery`).

Every test of the session is recorded with its outcome and error text in the run's
``run.json``, and the report is rendered when the session ends, so its headline agrees
with pytest's own result. Chaos tests selected with no Docker engine answering stop the
session with one error before any test runs: a run of skips is not a green run.

This module is the one pytest loads; the plugin's parts live in a module per job and are
gathered here, into this module's namespace, where pytest finds hooks and fixtures alike
(``pytest_plugins`` is refused outside a root conftest):

- :mod:`harness.entry.plugin_options`: the options, the markers, the session's run;
- :mod:`harness.entry.plugin_selection`: the tier and metadata-mode deselection;
- :mod:`harness.entry.plugin_preflight`: the checks and starts before the first test;
- :mod:`harness.entry.plugin_fixtures`: ``docker_engine``, ``chaos_run``, ``cluster``,
  ``run_directory``, ``judge``, ``scenario``;
- :mod:`harness.entry.plugin_outcomes`: each test's record, its console line, the report;
- :mod:`harness.entry.plugin_state`: the stash keys through which they meet.
"""

from __future__ import annotations

from harness.entry.plugin_fixtures import chaos_run, cluster, docker_engine, judge, run_directory, scenario
from harness.entry.plugin_options import pytest_addoption, pytest_configure, pytest_configure_node
from harness.entry.plugin_outcomes import (
    pytest_report_teststatus,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_unconfigure,
)
from harness.entry.plugin_preflight import pytest_collection_finish
from harness.entry.plugin_selection import pytest_collection_modifyitems, pytest_report_collectionfinish
from harness.entry.plugin_state import CHAOS_MARKERS, chaos_run_of

__all__ = [
    "CHAOS_MARKERS",
    "chaos_run",
    "chaos_run_of",
    "cluster",
    "docker_engine",
    "judge",
    "pytest_addoption",
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_configure_node",
    "pytest_report_collectionfinish",
    "pytest_report_teststatus",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_unconfigure",
    "run_directory",
    "scenario",
]
