"""The migration tests: each runs on a cluster of its own, started in ZooKeeper mode from
the migrating topology (the session's, ``three_az`` by default, with its KRaft variant's
controllers beside it) on the release the migration is built on, and removed after the
test, since a migrated cluster is not the one the next test starts from.

They start from ZooKeeper mode, so a KRaft session (``--metadata kraft``) deselects them
(their ``metadata`` marker), and a ZooKeeper session runs them on 3.9.1 whatever its own
release, then goes back to its own clusters.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.scenario.chaos_run import ChaosRun

MIGRATION_RELEASE = "3.9.1"


@pytest.fixture(scope="package", autouse=True)
def migrating(chaos_run: ChaosRun) -> Iterator[None]:
    """This package's clusters are migrating ones (module doc)."""
    chaos_run.use_topology(chaos_run.migrating_topology(), kafka_version=MIGRATION_RELEASE)
    try:
        yield
    finally:
        chaos_run.use_topology(chaos_run.base_topology)


@pytest.fixture(autouse=True)
def cluster_per_test(migrating: None, chaos_run: ChaosRun) -> Iterator[None]:
    """Each test gets a cluster that has not migrated yet: the one it used is removed."""
    yield
    chaos_run.keeper.close()
