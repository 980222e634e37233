"""M2 The active KRaft controller killed as the copy of ZooKeeper's metadata begins.

Once every broker is in migration mode, the active controller copies ZooKeeper's metadata
into its log and claims ``/controller``. Killing it then hands the migration to another
controller, which must take it up from the quorum's log and ZooKeeper's ``/migration``
record: it claims ``/controller`` with a new epoch and the walk goes on. The data path does
not go through the controller: nothing acknowledged is lost."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import ControllerChanged
from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.compose.checks import Eventually, inject
from harness.compose.scenario import ScenarioRun, ScenarioSpec
from harness.compose.spec_runner import run_spec
from tests.chaos.migration._shared import (
    DUAL_WRITE_HOLD_S,
    NEW_MIGRATION_LEADER_WITHIN_S,
    migration_spec,
)

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

DOWN_S = 20.0


def m2_spec() -> ScenarioSpec:
    return migration_spec(
        id="m2-controller-killed-in-copy",
        title="M2 the active KRaft controller killed as the copy of ZooKeeper's metadata begins",
        description="M1's cluster and workload; kill -9 the controller that leads the migration as soon as "
                    f"the copy phase begins, and start it again {DOWN_S:g} s later.",
        expected="Another KRaft controller takes the migration over and claims /controller (its epoch "
                 "rises); the walk completes; the metadata is carried over; nothing acknowledged is lost "
                 "or written twice.",
        schedule=({"start_s": 0, "when": {"migration_phase": "copy"}, "duration_s": DOWN_S, "fault": "kill",
                   "target": "active_controller"},),
        checks=(Eventually(ControllerChanged(), inject(1), within_s=NEW_MIGRATION_LEADER_WITHIN_S,
                           label="another KRaft controller claims /controller"),),
        migration=MigrationSpec(hold_s=DUAL_WRITE_HOLD_S),
    )


def test_m2_the_migrations_controller_killed_in_the_copy_hands_it_on_and_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m2_spec(), scenario)
    assert run.passed, run.failures()
