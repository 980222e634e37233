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
from collections.abc import Iterator
from types import FrameType

import pytest

from harness.cluster import Cluster
from harness.engine import ensure_engine
from harness.errors import ChaosError, EngineUnavailable
from harness.resources import RunIdentity, new_run_id
from harness.versions import DEFAULT_VERSION, release
from topologies import load_topology


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
def docker_engine() -> object:
    """A Docker client; chaos tests are skipped, with the reason, when none can be had."""
    try:
        return ensure_engine()
    except EngineUnavailable as err:
        pytest.skip(f"chaos tests need a Docker engine: {err}")


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest, docker_engine: object) -> Iterator[Cluster]:
    """The session's cluster, started once and removed at the end of the session."""
    config = request.config
    keep = bool(config.getoption("--keep-cluster"))
    cluster = Cluster(
        load_topology(config.getoption("--topology")),
        config.getoption("--kafka-version"),
        identity=RunIdentity(new_run_id(), keep=keep),
        progress=lambda line: print(f"[kafka-chaos] {line}", flush=True),
        docker_client=docker_engine,  # type: ignore[arg-type]
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(kafka_cluster: Cluster) -> Cluster:
    """The session's cluster, restored to full health before the test starts."""
    kafka_cluster.restore_health()
    return kafka_cluster
