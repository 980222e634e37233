"""The fixtures a chaos test asks for: the run, the cluster, the judge, the scenario.

What testcontainers-python gives service tests, for a Kafka cluster: the session's run
(``chaos_run``) starts the cluster on first use and keeps it for the session, and the
per-test ``cluster`` hands it over healthy and restores full health afterwards - every
node running, every proxy clean, every ISR full. When healing is not enough, recovery
escalates (:mod:`harness.cluster.recovery`) and the test that left the damage errors at
teardown with what it broke, as does a core-tier test whose claim was not met.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import docker
import pytest

from faults import struck_kinds
from harness.cluster.engine import ensure_engine
from harness.cluster.lifecycle import Cluster
from harness.entry.plugin_state import SCENARIO_KEY, call_passed, chaos_run_of
from harness.entry.tiers import CoreClaim, unmet
from harness.errors import EngineUnavailable
from harness.scenario.chaos_run import ChaosRun, escalation_text
from harness.scenario.judge import Judge
from harness.scenario.rundir import RunDirectory
from harness.scenario.runner import ScenarioRun, ScenarioSpec


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
    if claim is not None and call_passed(request.node):
        run = request.node.stash.get(SCENARIO_KEY, None)
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
        run = ScenarioRun(cluster, chaos_run.on_client(spec), chaos_run.directory, chaos_run.judge,
                          scenario_id=scenario_id)
        request.node.stash[SCENARIO_KEY] = run
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
