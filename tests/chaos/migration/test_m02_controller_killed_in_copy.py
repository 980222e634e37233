"""M2 The KRaft quorum's leader killed as the copy of ZooKeeper's metadata begins.

The copy phase starts with the last broker's restart in migration mode; once it has
registered, the quorum's leader copies ZooKeeper's metadata into its log and claims
``/controller``. Killing the leader then hands the migration to another controller,
which must take it up from the quorum's log and ZooKeeper's ``/migration`` record: a KRaft
controller claims ``/controller`` with a new epoch and the walk goes on. The data path does
not go through the controllers: nothing acknowledged is lost."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import ControllerChanged
from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.scenario.checks import Eventually, inject
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import DUAL_WRITE_HOLD_S, migration_spec

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

DOWN_S = 20.0
# A quorum elects a new leader within a few rounds of its fetch (2 s) and election (1 s)
# timeouts; the new leader then waits for every broker's registration before it claims
# /controller. The K scenarios' bound, doubled, for the claim on a loaded machine.
CLAIMED_WITHIN_S = 30.0


def m2_spec() -> ScenarioSpec:
    return migration_spec(
        id="m2-quorum-leader-killed-in-copy",
        title="M2 the KRaft quorum's leader killed as the copy of ZooKeeper's metadata begins",
        description="M1's cluster and workload; kill -9 the KRaft controller that leads the quorum as soon "
                    f"as the copy phase begins, and start it again {DOWN_S:g} s later.",
        expected="A KRaft controller claims /controller (the controller epoch in ZooKeeper rises); the walk "
                 "completes; the metadata is carried over; nothing acknowledged is lost or written twice.",
        schedule=({"start_s": 0, "when": {"migration_phase": "copy"}, "duration_s": DOWN_S, "fault": "kill",
                   "target": "quorum_leader"},),
        checks=(Eventually(ControllerChanged(), inject(1), within_s=CLAIMED_WITHIN_S,
                           label="a KRaft controller claims /controller"),),
        migration=MigrationSpec(hold_s=DUAL_WRITE_HOLD_S),
    )


def test_m2_the_quorum_leader_killed_in_the_copy_hands_the_migration_on_and_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m2_spec(), scenario)
    assert run.passed, run.failures()
