"""M5 A broker's ZooKeeper session expired while it is in migration mode.

In dual-write every broker is still a ZooKeeper-mode broker in migration mode: it holds a
ZooKeeper session and registration and also heartbeats to the KRaft controller. Here
broker 1's ZooKeeper session is expired (its ``/brokers/ids/1`` vanishes, and it
registers again with a new epoch) while its KRaft heartbeats go on. The KRaft controller
leads the brokers by their KRaft registrations, so the broker must stay a full member:
nothing acknowledged is lost, the walk completes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import migration_spec

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

# The expiry, the new registration (up to a session timeout), and the ISRs full again.
HOLD_S = 30.0


def m5_spec() -> ScenarioSpec:
    return migration_spec(
        id="m5-session-expired-in-migration-mode",
        title="M5 a broker's ZooKeeper session expired while it is in migration mode",
        description="M1's cluster and workload; as dual-write begins, broker 1's ZooKeeper session is "
                    "expired; the fault's heal waits for its new registration.",
        expected="Broker 1 registers again in /brokers/ids; the walk completes; the metadata is carried "
                 "over; nothing acknowledged is lost or written twice.",
        schedule=({"start_s": 0, "fault": "expire_session", "target": {"broker": 1},
                   "when": {"migration_phase": "dual_write"}},),
        migration=MigrationSpec(hold_s=HOLD_S),
    )


def test_m5_a_broker_whose_session_expired_in_migration_mode_registers_again_and_nothing_is_lost(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m5_spec(), scenario)
    assert run.passed, run.failures()
