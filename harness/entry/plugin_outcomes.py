"""Each test's outcome, into the run's records, and the report when the session ends.

Every test of the session is recorded with its outcome and error text in the run's
``run.json`` (the first failure of its setup, call or teardown is the one kept), a failed
chaos test keeps the cluster's diagnostics before teardown heals what it shows, and the
report is rendered when the session ends, so its headline agrees with pytest's own
result. On the terminal a chaos test ends with one line of its own (place, outcome,
duration, name, anomalies) instead of a dot, and the session with the report's path.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from harness.entry.console import anomaly_phrase, ended_line
from harness.entry.plugin_state import (
    CALL_PASSED_KEY,
    CHAOS_MARKERS,
    CHAOS_RUN_KEY,
    LIVE_KEY,
    ORDER_KEY,
    REPORT_KEY,
    SCENARIO_KEY,
    chaos_run_of,
)
from harness.report.model import RunStatus
from harness.scenario.chaos_run import ERROR, FAILED, SKIPPED, ChaosRun, TestRecord


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Record the test's own outcome on its scenario's page, and keep diagnostics of a
    failure while the cluster still shows it (before teardown heals it)."""
    report = yield
    run = item.stash.get(SCENARIO_KEY, None)
    if report.when == "call":
        item.stash[CALL_PASSED_KEY] = report.passed
        if run is not None and run.verdict is not None:
            counts = run.verdict.findings.counts()
            chaos_run_of(item.config).record(item.nodeid).anomalies = {k: n for k, n in counts.items() if n}
    if report.when == "call" and run is not None:
        detail = "" if report.passed else _error_text(report)
        run.record_test_outcome(report.passed, detail)
    if report.failed and report.when == "call" and "cluster" in getattr(item, "fixturenames", ()):
        chaos = chaos_run_of(item.config)
        if chaos.keeper.started:
            chaos.keep_diagnostics(item.nodeid, chaos.keeper.current(),
                                   run.dir if run is not None else None)
    return report


def _error_text(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return str(report.longrepr or "").strip()


@pytest.hookimpl(wrapper=True)
def pytest_report_teststatus(report: pytest.TestReport,
                             config: pytest.Config) -> Generator[None, Any, Any]:
    """No dot for a chaos test: the line :class:`Recorder` writes when it ends says more."""
    status = yield
    keywords = getattr(report, "keywords", {})  # a collection report has none
    if status and config.get_verbosity() <= 0 and any(m in keywords for m in CHAOS_MARKERS):
        category, _, word = status
        return category, "", word
    return status


class Recorder:
    """Folds the setup, call and teardown reports of each test into its one record.

    A plugin object rather than a module hook because reports do not carry the config
    that holds the run.
    """

    def __init__(self, run: ChaosRun, config: pytest.Config) -> None:
        self.run = run
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        """End the line pytest's terminal is on, so the live lines of the test start on
        one of their own."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if nodeid in self.config.stash.get(ORDER_KEY, {}) and reporter is not None:
            reporter.ensure_newline()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        order = self.config.stash.get(ORDER_KEY, {})
        if nodeid not in order:
            return  # not a chaos test
        record = self.run.record(nodeid)
        self.config.stash[LIVE_KEY](ended_line(order[nodeid], len(order), nodeid, record.outcome,
                                              record.duration_s, anomaly_phrase(record.anomalies),
                                              record.error))
        self.run.checkpoint(nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record: TestRecord = self.run.record(report.nodeid)
        record.duration_s = round(record.duration_s + report.duration, 3)
        if report.passed or record.outcome in (FAILED, ERROR):
            return  # the first failure is the one the record keeps
        if report.skipped:
            if record.outcome != SKIPPED:
                record.outcome, record.phase, record.error = SKIPPED, report.when, _error_text(report)
            return
        record.outcome = FAILED if report.when == "call" else ERROR
        record.phase, record.error = report.when, _error_text(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write every test's record into run.json and render the report."""
    run = session.config.stash.get(CHAOS_RUN_KEY, None)
    if run is None:
        return
    if run.worker is None and not hasattr(session.config, "workerinput"):
        run.absorb_workers()  # the controller of an xdist session; a no-op otherwise
    if not run.opened:
        return
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    try:
        result = run.finish(RunStatus.INTERRUPTED if interrupted else RunStatus.COMPLETE)
    except Exception as err:  # a broken report must not hide the test results
        session.config.stash[REPORT_KEY] = f"(report failed: {err})"
        return
    if result is not None:
        session.config.stash[REPORT_KEY] = f"{result.index_html} ({result.headline.upper()})"


def pytest_unconfigure(config: pytest.Config) -> None:
    live = config.stash.get(LIVE_KEY, None)
    if live is not None:
        live.detach()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    report = config.stash.get(REPORT_KEY, None)
    if report:
        terminalreporter.write_sep("=", "kafka-chaos report")
        terminalreporter.write_line(f"report: {report}")
