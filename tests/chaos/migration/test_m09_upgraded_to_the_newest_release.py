"""M9 The migrated cluster upgraded under load to the newest 4.x release.

Kafka 4 has no ZooKeeper mode, so a ZooKeeper cluster reaches it only through the
migration and then an upgrade. M1's walk is finalized, then the cluster is upgraded as
Kafka's upgrade notes say: each node stopped cleanly and started on the new release with
its configuration and data (the controllers first, then the brokers), each on a healthy
cluster, and ``metadata.version`` raised to the newest level once every node runs the
new release. The producer and the group go on throughout; nothing acknowledged is lost or
written twice, and the metadata carried over from ZooKeeper is still what KRaft holds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.cluster.versions import supported_versions
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import DUAL_WRITE_HOLD_S, migration_spec

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

NEWEST = supported_versions()[-1]


def m9_spec() -> ScenarioSpec:
    return migration_spec(
        id="m9-upgraded-to-the-newest-release",
        title=f"M9 the migrated cluster upgraded under load to Kafka {NEWEST}",
        description="M1's cluster, workload and walk, finalized; then every node restarted on Kafka "
                    f"{NEWEST}, controllers first, then brokers, and metadata.version raised to the newest "
                    "level.",
        expected="Every phase and the upgrade complete; the metadata read from KRaft after it is ZooKeeper's "
                 "before the migration, with the change made in dual-write; nothing acknowledged is lost, "
                 "truncated, duplicated or reordered.",
        migration=MigrationSpec(hold_s=DUAL_WRITE_HOLD_S, upgrade_to=NEWEST),
    )


def test_m9_the_migrated_cluster_upgraded_to_the_newest_release_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m9_spec(), scenario)
    assert run.passed, run.failures()
    images = {node: cluster.container(node).attrs["Config"]["Image"]
              for node in ("kraft-a", "kraft-b", "kraft-c", "kafka-0", "kafka-1", "kafka-2")}
    assert set(images.values()) == {f"kafka-chaos/kafka:{NEWEST}"}, images
