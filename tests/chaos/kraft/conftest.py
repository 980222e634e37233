"""The KRaft tests: every test of this package runs on a KRaft cluster, whatever the
session's mode.

In a KRaft session (``--metadata kraft``) that is the session's own cluster. In a
ZooKeeper session it is ``three_az_kraft`` on the session's release if that release runs
KRaft, else on 3.9.1 (the last release with ZooKeeper mode, and KRaft too); the package's
tests run one after another, so the session switches clusters once, and its own clusters
come back after the package.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.cluster.versions import release
from harness.scenario.chaos_run import ChaosRun
from topologies import load_topology
from topologies.model import KRAFT

BOTH_MODES_RELEASE = "3.9.1"
KRAFT_TOPOLOGY = "three_az_kraft"


@pytest.fixture(scope="package", autouse=True)
def kraft(chaos_run: ChaosRun) -> Iterator[None]:
    """This package's clusters are KRaft clusters (module doc)."""
    if chaos_run.base_topology.metadata == KRAFT:
        yield
        return
    version = chaos_run.kafka_version
    if KRAFT not in release(version).metadata_modes:
        version = BOTH_MODES_RELEASE
    chaos_run.use_topology(load_topology(KRAFT_TOPOLOGY), kafka_version=version)
    try:
        yield
    finally:
        chaos_run.use_topology(chaos_run.base_topology)
