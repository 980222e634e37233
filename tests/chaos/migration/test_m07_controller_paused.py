"""M7 The migration's controller frozen past its timeouts during dual-write.

The KRaft controller named in ``/controller`` is sent SIGSTOP for 25 s: past the
quorum's fetch timeout (2 s), its ZooKeeper session (6 s) and the brokers' session (6 s).
The other controllers elect a leader, which may claim ``/controller`` only once the frozen
one's session has ended; the harness makes its change through KRaft 3 s into the pause.
When the frozen controller wakes, it must find itself no longer leading and write
nothing more to ZooKeeper: the controller epoch there rises once, to the new leader's,
and the change made through the new leader reaches ZooKeeper."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import ControllerChanged
from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.scenario.checks import Eventually, inject
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import migration_spec

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

PAUSED_S = 25.0
CHANGE_AT_S = 3.0
HOLD_S = PAUSED_S + 15.0
# The frozen controller's ZooKeeper session (6 s) ends, then the new leader claims
# /controller: the session timeout and an election, three times over for a loaded machine.
CLAIMED_WITHIN_S = 30.0


def m7_spec() -> ScenarioSpec:
    return migration_spec(
        id="m7-controller-paused",
        title="M7 the migration's KRaft controller frozen past its timeouts during dual-write",
        description="M1's cluster and workload; as dual-write begins, SIGSTOP the KRaft controller named in "
                    f"/controller and SIGCONT it {PAUSED_S:g} s later; {CHANGE_AT_S:g} s into the pause a "
                    "topic config is set through KRaft.",
        expected="Another KRaft controller claims /controller (the controller epoch in ZooKeeper rises) "
                 "within 30 s; the change reaches ZooKeeper; the walk completes; the metadata is carried "
                 "over; nothing acknowledged is lost or written twice.",
        schedule=({"start_s": 0, "duration_s": PAUSED_S, "fault": "pause", "target": "active_controller",
                   "when": {"migration_phase": "dual_write"}},),
        checks=(Eventually(ControllerChanged(), inject(1), within_s=CLAIMED_WITHIN_S,
                           label="another KRaft controller claims /controller"),),
        migration=MigrationSpec(hold_s=HOLD_S, change_at_s=CHANGE_AT_S),
    )


def test_m7_a_frozen_controller_is_replaced_and_writes_nothing_when_it_wakes(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m7_spec(), scenario)
    assert run.passed, run.failures()
