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
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any

import docker
import pytest

from faults import struck_kinds
from harness.cluster.engine import ensure_engine
from harness.cluster.lifecycle import Cluster
from harness.cluster.resources import new_run_id
from harness.cluster.versions import release
from harness.entry.cluster_options import add_pytest_options
from harness.entry.console import LiveLines, anomaly_phrase, ended_line, opening_line, previous_durations
from harness.entry.tiers import (
    CORE_MARKER_HELP,
    METADATA_MARKER_HELP,
    TIERS,
    CoreClaim,
    TierError,
    runs_in,
    selects_core_only,
    unmet,
)
from harness.errors import USER_ERRORS, EngineUnavailable
from harness.report.model import RunStatus
from harness.scenario.chaos_run import (
    ERROR,
    FAILED,
    SKIPPED,
    ChaosRun,
    TestRecord,
    escalation_text,
    unwind_on_sigterm,
)
from harness.scenario.judge import Judge
from harness.scenario.rundir import RunDirectory, reports_root
from harness.scenario.runner import ScenarioRun, ScenarioSpec

_CHAOS_RUN_KEY = pytest.StashKey[ChaosRun]()
_REPORT_KEY = pytest.StashKey[str]()
_SCENARIO_KEY = pytest.StashKey[ScenarioRun]()
_TIER_KEY = pytest.StashKey[str]()
_MODE_KEY = pytest.StashKey[str]()
_CALL_PASSED_KEY = pytest.StashKey[bool]()
_LIVE_KEY = pytest.StashKey[LiveLines]()
_ORDER_KEY = pytest.StashKey[dict[str, int]]()
CHAOS_MARKERS = ("chaos", "smoke")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos")
    add_pytest_options(group)
    group.addoption(
        "--tier",
        choices=TIERS,
        default="auto",
        help="chaos tests to run: 'core' (the tier the README's test command runs), 'all', or "
        "'auto' (default): core when the command names no paths and no -m or -k, else all",
    )
    group.addoption(
        "--keep-cluster",
        action="store_true",
        default=False,
        help="leave the cluster running after the session, for inspection "
        "(remove it later with 'kafka-chaos clean --all')",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "chaos: runs against a real Kafka cluster in Docker (needs a Docker engine)"
    )
    config.addinivalue_line("markers", CORE_MARKER_HELP)
    config.addinivalue_line("markers", METADATA_MARKER_HELP)
    # SIGTERM (a CI runner cancelling the job) must unwind like Ctrl-C, so that fixture
    # finalizers remove the run's containers instead of leaving them behind.
    unwind_on_sigterm()
    from faults.heal import heal_all

    live = LiveLines()  # the terminal as it is now, before pytest captures a test's output
    config.stash[_LIVE_KEY] = live

    # Under pytest-xdist each worker runs its own cluster; all share the controller's run id,
    # so their scenario pages land in one run folder and one report.
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["kafka_chaos_run_id"] if workerinput else config.getoption("--run-id")
    try:
        release(config.getoption("--kafka-version"))
        config.stash[_CHAOS_RUN_KEY] = ChaosRun(
            run_id or new_run_id(),
            config.getoption("--kafka-version"),
            config.getoption("--topology"),
            healer=heal_all,
            keep=bool(config.getoption("--keep-cluster")),
            progress=live,
            worker=workerinput["workerid"] if workerinput else None,
            metadata=config.getoption("--metadata"),
        )
    except USER_ERRORS as err:
        raise pytest.UsageError(str(err)) from err
    config.pluginmanager.register(_Recorder(config.stash[_CHAOS_RUN_KEY], config), "kafka-chaos-recorder")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: hand each worker the run id it reports into."""
    node.workerinput["kafka_chaos_run_id"] = chaos_run_of(node.config).run_id


def _needs_cluster(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in CHAOS_MARKERS)


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
    left = [i for i in items if _needs_cluster(i) and CoreClaim.of(i) is None]
    if left:
        kept = sum(1 for i in items if _needs_cluster(i)) - len(left)
        config.hook.pytest_deselected(items=left)
        items[:] = [i for i in items if i not in set(left)]
        config.stash[_TIER_KEY] = (f"core tier: {kept} of {kept + len(left)} chaos tests "
                                   "('pytest -m chaos' or 'kafka-chaos run' runs them all)")


def _keep_the_sessions_mode(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests of another metadata mode's own machinery (their ``metadata``
    marker), saying how many in the header: deselected, not skipped."""
    mode = chaos_run_of(config).base_topology.metadata
    other = [i for i in items if not runs_in(i, mode)]
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = [i for i in items if i not in set(other)]
        config.stash[_MODE_KEY] = f"{mode} mode: {len(other)} test(s) of another metadata mode deselected"


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """What the selection left out and why, under pytest's "collected" line (a report
    header would be printed before collection, when neither is known yet)."""
    return [line for line in (config.stash.get(_MODE_KEY, None), config.stash.get(_TIER_KEY, None)) if line]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Stop before any test when chaos tests were selected and the project's scenario
    files do not check, or no engine can be had."""
    chosen = [item for item in session.items if _needs_cluster(item)]
    if not chosen or session.config.option.collectonly:
        return
    run = chaos_run_of(session.config)
    problems = _scenario_file_problems(session.config, run)
    if problems:
        pytest.exit("kafka-chaos: the project's scenario files do not check:\n" + "\n".join(problems),
                    returncode=pytest.ExitCode.USAGE_ERROR)
    run.expected = len(chosen)
    session.config.stash[_ORDER_KEY] = {item.nodeid: i for i, item in enumerate(chosen, start=1)}
    live = session.config.stash[_LIVE_KEY]
    live.attach()  # long waits shown as they happen
    live(opening_line([i.nodeid for i in chosen], previous_durations(reports_root(), run.run_id)))
    try:
        ensure_engine()
    except EngineUnavailable as err:
        pytest.exit(f"kafka-chaos: {len(chosen)} chaos test(s) selected, but {err}",
                    returncode=pytest.ExitCode.USAGE_ERROR)
    # From here on the session has a report, even if no test gets as far as a cluster.
    chaos_run_of(session.config).directory  # noqa: B018
    if any("scenario" in getattr(item, "fixturenames", ()) for item in chosen):
        chaos_run_of(session.config).judge.warm_up()  # while the first cluster starts


def _scenario_file_problems(config: pytest.Config, run: ChaosRun) -> list[str]:
    """``kafka-chaos check`` of the scenario files pyproject.toml registers, on the
    session's topology and Kafka release."""
    from harness.scenario.catalogue import scenario_folders
    from harness.scenario.check_files import check_paths

    folders = [f for f in scenario_folders(config.rootpath) if f.is_dir()]
    if not folders:
        return []
    return check_paths(folders, run.run_topology).problems


def chaos_run_of(config: pytest.Config) -> ChaosRun:
    return config.stash[_CHAOS_RUN_KEY]


@pytest.fixture(scope="session")
def docker_engine() -> docker.DockerClient:
    """A Docker client; a missing engine is an error here, never a skip."""
    try:
        return ensure_engine()
    except EngineUnavailable as err:
        pytest.fail(f"chaos tests need a Docker engine: {err}", pytrace=False)


@pytest.fixture(scope="session")
def chaos_run(request: pytest.FixtureRequest, docker_engine: docker.DockerClient) -> Iterator[ChaosRun]:
    """The session's run: its folder exists from here on; cluster and judge go at the end."""
    run = chaos_run_of(request.config)
    try:
        yield run
    finally:
        run.close()


@pytest.fixture
def cluster(chaos_run: ChaosRun, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The session's cluster at full health; healed (or restarted, or replaced) afterwards.

    A test that leaves damage healing cannot undo errors at teardown, naming what it
    left broken and what recovery did; the next test gets a healthy cluster either way.
    """
    cluster = chaos_run.begin(request.node.nodeid)
    struck_before = len(struck_kinds(cluster))
    yield cluster
    struck = struck_kinds(cluster)[struck_before:]
    escalation = chaos_run.end(request.node.nodeid)
    if escalation is not None:
        pytest.fail(escalation_text(escalation), pytrace=False)
    claim = CoreClaim.of(request.node)
    if claim is not None and _call_passed(request.node):
        run = request.node.stash.get(_SCENARIO_KEY, None)
        verdict = run.verdict if run is not None else None
        problems = unmet(claim, struck, verdict.findings.timings if verdict is not None else None)
        if problems:
            pytest.fail("core tier claim not met: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def run_directory(chaos_run: ChaosRun) -> RunDirectory:
    """``reports/<run id>/`` for this session; its report is written when the session ends."""
    return chaos_run.directory


@pytest.fixture(scope="session")
def judge(chaos_run: ChaosRun) -> Judge:
    """The Spark reconciliation, one session for the whole test session."""
    return chaos_run.judge


@pytest.fixture
def scenario(cluster: Cluster, chaos_run: ChaosRun,
             request: pytest.FixtureRequest) -> Callable[[ScenarioSpec], ScenarioRun]:
    """Factory: ``with scenario(spec) as run:`` starts topic, workload and sampling.

    The scenario's folder is named after the test (parameters included), so every
    parametrization gets its own page in the report.
    """

    def start(spec: ScenarioSpec) -> ScenarioRun:
        scenario_id = _scenario_id(request.node.name)
        run = ScenarioRun(cluster, spec, chaos_run.directory, chaos_run.judge, scenario_id=scenario_id)
        request.node.stash[_SCENARIO_KEY] = run
        chaos_run.record(request.node.nodeid).scenario = scenario_id
        return run

    return start


def _scenario_id(test_name: str) -> str:
    """A folder name from the test name, keeping the parameters whole when shortening."""

    def clean(text: str) -> str:
        return "-".join(p for p in "".join(c if c.isalnum() else "-" for c in text).split("-") if p)

    base, _, params = test_name.removeprefix("test_").partition("[")
    suffix = clean(params)
    head = clean(base)[: 80 - len(suffix) - 1 if suffix else 80].rstrip("-")
    return f"{head}-{suffix}" if suffix else head


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Record the test's own outcome on its scenario's page, and keep diagnostics of a
    failure while the cluster still shows it (before teardown heals it)."""
    report = yield
    run = item.stash.get(_SCENARIO_KEY, None)
    if report.when == "call":
        item.stash[_CALL_PASSED_KEY] = report.passed
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


def _call_passed(item: pytest.Item) -> bool:
    """Whether the test's body passed (a failed one has said what went wrong already)."""
    return bool(item.stash.get(_CALL_PASSED_KEY, False))


def _error_text(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return str(report.longrepr or "").strip()


@pytest.hookimpl(wrapper=True)
def pytest_report_teststatus(report: pytest.TestReport,
                             config: pytest.Config) -> Generator[None, Any, Any]:
    """No dot for a chaos test: the line :class:`_Recorder` writes when it ends says more."""
    status = yield
    keywords = getattr(report, "keywords", {})  # a collection report has none
    if status and config.get_verbosity() <= 0 and any(m in keywords for m in CHAOS_MARKERS):
        category, _, word = status
        return category, "", word
    return status


class _Recorder:
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
        if nodeid in self.config.stash.get(_ORDER_KEY, {}) and reporter is not None:
            reporter.ensure_newline()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        order = self.config.stash.get(_ORDER_KEY, {})
        if nodeid not in order:
            return  # not a chaos test
        record = self.run.record(nodeid)
        self.config.stash[_LIVE_KEY](ended_line(order[nodeid], len(order), nodeid, record.outcome,
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
    run = session.config.stash.get(_CHAOS_RUN_KEY, None)
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
        session.config.stash[_REPORT_KEY] = f"(report failed: {err})"
        return
    if result is not None:
        session.config.stash[_REPORT_KEY] = f"{result.index_html} ({result.headline.upper()})"


def pytest_unconfigure(config: pytest.Config) -> None:
    live = config.stash.get(_LIVE_KEY, None)
    if live is not None:
        live.detach()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    report = config.stash.get(_REPORT_KEY, None)
    if report:
        terminalreporter.write_sep("=", "kafka-chaos report")
        terminalreporter.write_line(f"report: {report}")
