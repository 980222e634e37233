"""The kafka-chaos pytest plugin (registered through the ``pytest11`` entry point).

It gives chaos tests what testcontainers-python gives service tests: a session-scoped
cluster started once and health-checked (``kafka_cluster``), and a per-test fixture
(``cluster``) that first restores full health - every node running, every proxy enabled
with no toxics, every ISR full - so no test inherits another's damage.

Where no Docker engine can be had, chaos tests are *skipped* with the reason; a cluster
that fails to start for any other reason is an error, never a pass.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Generator, Iterator
from types import FrameType

import docker
import pytest

from harness.cluster import Cluster
from harness.engine import ensure_engine
from harness.errors import ChaosError, EngineUnavailable
from harness.resources import RunIdentity, new_run_id
from harness.rundir import STATUS_COMPLETE, STATUS_INTERRUPTED, RunDirectory
from harness.scenario import Judge, ScenarioRun, ScenarioSpec
from harness.versions import DEFAULT_VERSION, release
from topologies import load_topology

_RUN_KEY = pytest.StashKey[RunDirectory]()
_REPORT_KEY = pytest.StashKey[str]()
_SCENARIO_KEY = pytest.StashKey[ScenarioRun]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos")
    group.addoption(
        "--kafka-version",
        default=os.environ.get("KAFKA_CHAOS_VERSION", DEFAULT_VERSION),
        help=f"Kafka release the cluster runs (default {DEFAULT_VERSION}, or $KAFKA_CHAOS_VERSION)",
    )
    group.addoption(
        "--topology",
        default=os.environ.get("KAFKA_CHAOS_TOPOLOGY", "three_az"),
        help="topology name or TOML path (default three_az)",
    )
    group.addoption(
        "--run-id",
        default=None,
        help="name of this run (its report goes to reports/<run id>/); default: time-based",
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
    # SIGTERM (a CI runner cancelling the job) must unwind like Ctrl-C, so that fixture
    # finalizers remove the run's containers instead of leaving them behind.
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        release(config.getoption("--kafka-version"))
        load_topology(config.getoption("--topology"))
    except ChaosError as err:
        raise pytest.UsageError(str(err)) from err


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def docker_engine() -> docker.DockerClient:
    """A Docker client; chaos tests are skipped, with the reason, when none can be had."""
    try:
        return ensure_engine()
    except EngineUnavailable as err:
        pytest.skip(f"chaos tests need a Docker engine: {err}")


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest, docker_engine: docker.DockerClient) -> Iterator[Cluster]:
    """The session's cluster, started once and removed at the end of the session."""
    config = request.config
    keep = bool(config.getoption("--keep-cluster"))
    cluster = Cluster(
        load_topology(config.getoption("--topology")),
        config.getoption("--kafka-version"),
        identity=RunIdentity(config.getoption("--run-id") or new_run_id(), keep=keep),
        progress=lambda line: print(f"[kafka-chaos] {line}", flush=True),
        docker_client=docker_engine,
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(kafka_cluster: Cluster) -> Cluster:
    """The session's cluster, healed of every fault and at full health before the test."""
    from faults.heal import heal_all

    heal_all(kafka_cluster)
    return kafka_cluster


@pytest.fixture(scope="session")
def run_directory(request: pytest.FixtureRequest, kafka_cluster: Cluster) -> Iterator[RunDirectory]:
    """``reports/<run id>/`` for this session; its report is written when the session ends."""
    run = RunDirectory(kafka_cluster.run_id, kafka_cluster.kafka_version)
    request.config.stash[_RUN_KEY] = run
    status = STATUS_INTERRUPTED
    try:
        yield run
        status = STATUS_COMPLETE
    finally:
        run.finish(status)
        _render_report(request.config, run)


@pytest.fixture(scope="session")
def judge() -> Iterator[Judge]:
    """The Spark reconciliation, one session for the whole test session."""
    spark_judge = Judge()
    try:
        yield spark_judge
    finally:
        spark_judge.close()


@pytest.fixture
def scenario(cluster: Cluster, run_directory: RunDirectory, judge: Judge,
             request: pytest.FixtureRequest) -> Callable[[ScenarioSpec], ScenarioRun]:
    """Factory: ``with scenario(spec) as run:`` starts topic, workload and sampling.

    The scenario's folder is named after the test (parameters included), so every
    parametrization gets its own page in the report.
    """

    def start(spec: ScenarioSpec) -> ScenarioRun:
        scenario_id = _scenario_id(request.node.name)
        run = ScenarioRun(cluster, spec, run_directory, judge, scenario_id=scenario_id)
        request.node.stash[_SCENARIO_KEY] = run
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


def _render_report(config: pytest.Config, run: RunDirectory) -> None:
    try:
        from harness.report import render_run
    except ImportError:
        return
    try:
        config.stash[_REPORT_KEY] = str(render_run(run.path))
    except Exception as err:  # a broken report must not hide the test results
        config.stash[_REPORT_KEY] = f"(report failed: {err})"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Record the test's own outcome on its scenario's report page.

    Assertions a test makes after its scenario finished (or an error outside the
    scenario's block) decide the pytest result; the report must agree with it.
    """
    report = yield
    run = item.stash.get(_SCENARIO_KEY, None)
    if run is not None and report.when == "call":
        detail = "" if report.passed else str(report.longrepr).strip().splitlines()[-1][:500]
        run.record_test_outcome(report.passed, detail)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    report = config.stash.get(_REPORT_KEY, None)
    if report:
        terminalreporter.write_sep("=", "kafka-chaos report")
        terminalreporter.write_line(f"report: {report}")
