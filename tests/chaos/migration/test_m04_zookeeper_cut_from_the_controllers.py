"""M4 ZooKeeper cut off from the KRaft controllers during dual-write.

In dual-write the KRaft controller leads the brokers and writes every metadata change to
ZooKeeper too. Here every controller's link to every ZooKeeper node goes silent
(blackhole) for 20 s, longer than their ZooKeeper session (6 s), and the harness makes
its change through KRaft 5 s into the cut. The controllers keep leading the brokers
(their links to the brokers stay up), so the data path is unaffected. The change is
committed in KRaft at once but can reach ZooKeeper only after the heal, when the
controller has a session again: dual-write must catch ZooKeeper up, not drop what it
could not write."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.scenario.runner import MIRROR_CHECK, ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import migration_spec

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

CUT_S = 20.0
CHANGE_AT_S = 5.0
# The cut, the controller's new session, and its next write, inside dual-write.
HOLD_S = CUT_S + 30.0


def m4_spec() -> ScenarioSpec:
    return migration_spec(
        id="m4-zookeeper-cut-from-the-controllers",
        title="M4 ZooKeeper cut off from the KRaft controllers during dual-write",
        description="M1's cluster and workload; as dual-write begins, every KRaft controller's link to every "
                    f"ZooKeeper node goes silent for {CUT_S:g} s; {CHANGE_AT_S:g} s into it a topic config "
                    "is set through KRaft.",
        expected="The change reaches ZooKeeper once the links are back, not before; the walk completes; the "
                 "metadata is carried over; nothing acknowledged is lost or written twice.",
        schedule=({"start_s": 0, "duration_s": CUT_S, "fault": "cut", "mode": "blackhole",
                   "links": {"from": "all_controllers", "to": "all_zookeepers", "kind": "zk-session"},
                   "when": {"migration_phase": "dual_write"}},),
        migration=MigrationSpec(hold_s=HOLD_S, change_at_s=CHANGE_AT_S),
    )


def test_m4_a_change_made_while_zookeeper_is_cut_off_reaches_it_after_the_heal(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m4_spec(), scenario)
    assert run.passed, run.failures()
    mirrored = next(c for c in run.checks if c.name == MIRROR_CHECK)
    found = re.search(r"after ([0-9.]+) s", mirrored.detail)
    assert found, mirrored.detail
    # Made 5 s into a 20 s cut: ZooKeeper cannot have it before the heal.
    assert float(found.group(1)) >= CUT_S - CHANGE_AT_S - 1.0, mirrored.detail
