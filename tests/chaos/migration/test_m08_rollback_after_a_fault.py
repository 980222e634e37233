"""M8 A rollback to ZooKeeper after the migration's controller was killed in dual-write.

Before finalization Kafka's migration can be undone: the KRaft controllers are stopped,
``/controller`` is deleted so that a broker becomes the ZooKeeper-mode controller again,
and the brokers are rolled back to plain ZooKeeper mode. That only works if ZooKeeper
holds every change made through KRaft meanwhile, so dual-write mirrors each one; here the
active controller is killed in dual-write first, and a change is made through KRaft
after. The ZooKeeper-mode cluster at the end holds the metadata it had before, with that
change, and loses nothing acknowledged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec, NodeConfig, Phase
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import migration_spec

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

DOWN_S = 15.0
# The change is made through KRaft once the killed controller is back (a new leader took
# over when it died), and mirrored before the rollback starts.
CHANGE_AT_S = DOWN_S + 10.0
HOLD_S = CHANGE_AT_S + 15.0


def m8_spec() -> ScenarioSpec:
    return migration_spec(
        id="m8-rollback-after-a-fault",
        title="M8 a rollback to ZooKeeper after the migration's controller was killed in dual-write",
        description="M1's cluster and workload, walked to dual-write; kill -9 the KRaft controller that "
                    f"leads the migration as dual-write begins and start it again {DOWN_S:g} s later; "
                    f"{CHANGE_AT_S:g} s into dual-write a topic config is set through KRaft; then roll back: "
                    "controllers stopped, /controller and /migration deleted, brokers rolled to ZooKeeper "
                    "mode.",
        expected="Every phase and the rollback complete; a config set through KRaft in dual-write reaches "
                 "ZooKeeper; the ZooKeeper-mode cluster at the end holds the metadata it had before, with "
                 "that change; nothing acknowledged is lost or written twice.",
        schedule=({"start_s": 0, "when": {"migration_phase": "dual_write"}, "duration_s": DOWN_S,
                   "fault": "kill", "target": "active_controller"},),
        migration=MigrationSpec(hold_s=HOLD_S, rollback_after=Phase.DUAL_WRITE, change_at_s=CHANGE_AT_S),
    )


def test_m8_a_rollback_after_a_fault_keeps_every_change_and_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m8_spec(), scenario)
    assert run.passed, run.failures()
    mode = cluster.metadata.migration()
    assert mode.provisioned == () and set(mode.configs.values()) == {NodeConfig.ZOOKEEPER}
