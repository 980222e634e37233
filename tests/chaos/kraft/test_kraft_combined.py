"""The KRaft cluster tests on the combined layout (``three_az_combined``: each broker a
controller too): healthy with every connection through its proxy, and a killed node
fenced after its broker session and back at once. When the killed node is the active
controller, the other two elect another leader first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.scenario.chaos_run import ChaosRun
from tests.chaos.kraft.test_kraft_cluster import (
    test_a_killed_broker_is_fenced_after_its_session_and_registers_again_at_once,
    test_a_kraft_cluster_is_healthy_and_every_connection_passes_a_proxy,
)
from topologies import load_topology

pytestmark = pytest.mark.chaos

__all__ = [
    "test_a_killed_broker_is_fenced_after_its_session_and_registers_again_at_once",
    "test_a_kraft_cluster_is_healthy_and_every_connection_passes_a_proxy",
]


@pytest.fixture(scope="module", autouse=True)
def combined(chaos_run: ChaosRun) -> Iterator[None]:
    """This module's clusters have combined nodes; the package's own after it."""
    before, version = chaos_run.topology, chaos_run.cluster_version
    chaos_run.use_topology(load_topology("three_az_combined"), kafka_version=version)
    try:
        yield
    finally:
        chaos_run.use_topology(before, kafka_version=version)
