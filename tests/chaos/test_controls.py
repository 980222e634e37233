"""Control runs: the scenario suite's key checks, run where what they look for cannot
happen, must fail.

A check that passes on the real scenario proves something only if it would fail without
the behaviour it names. Each control here takes a scenario's own spec, changes one thing
so that the behaviour is impossible (a fault replaced by a no-op on the same links, a
probe aimed at a broker that is not cut off), and names in ``must_fail`` the checks that
must then fail. The run passes only when each of those was evaluated and failed and
everything else held, so the control's report page is green exactly when the checks can
fail (``ScenarioSpec.must_fail``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from harness.cluster.lifecycle import Cluster
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.scenarios._controller import place_controller
from tests.chaos.scenarios.test_p01_pipeline_crash_restarts import p1_spec
from tests.chaos.scenarios.test_s04_durable_configuration import s4_two_down_spec
from tests.chaos.scenarios.test_s08_cut_from_controller import CONTROLLER as S8_CONTROLLER
from tests.chaos.scenarios.test_s08_cut_from_controller import s8_spec
from tests.chaos.scenarios.test_s12_clients_through_leader_changes import CONTROLLER as S12_CONTROLLER
from tests.chaos.scenarios.test_s12_clients_through_leader_changes import s12_spec

pytestmark = pytest.mark.chaos


def no_op(entry: Mapping[str, Any], links: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` at the same moment and for as long, but adding no delay to ``links``:
    the schedule keeps its numbering, so every check anchored to it still finds it."""
    kept = {k: v for k, v in entry.items() if k in ("start_s", "duration_s", "after")}
    return {**kept, "fault": "latency", "links": dict(links), "latency_ms": 0}


def control(spec: ScenarioSpec, why: str, must_fail: tuple[str, ...], **changes: Any) -> ScenarioSpec:
    names = {check.name for check in spec.checks}
    run_level = ("at least ", "fault ")  # the runner's own checks, not the spec's
    unknown = [name for name in must_fail if name not in names and not name.startswith(run_level)]
    assert not unknown, f"control names checks its scenario does not have: {unknown}"
    return dataclasses.replace(spec, id=f"{spec.id}-control", title=f"Control: {spec.title}",
                               expected=why, must_fail=must_fail, **changes)


def test_s4_control_one_follower_down_writes_go_through(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    """S4 with one follower killed instead of two: the ISR keeps min.insync.replicas, so
    the checks that writes are refused with NOT_ENOUGH_REPLICAS and never acknowledged
    must fail."""
    real = s4_two_down_spec(cluster.session_timeout_s)
    first, second, lowered = real.schedule
    spec = control(
        real, "Only broker 1 is killed, so two replicas stay in sync: writes are acknowledged throughout.",
        must_fail=("both followers down: the ISR is the leader alone",
                   "writes refused, never acknowledged, while the ISR was the leader alone",
                   "... refused with NOT_ENOUGH_REPLICAS",
                   "refused sends end definitively failed (and none is read: aborted_read 0)"),
        schedule=(first, no_op(second, {"from": {"broker": 2}, "to": {"broker": 0}}), lowered))
    place_controller(cluster, 0)
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()


def test_s8_control_a_client_of_a_broker_that_is_not_cut_off_produces(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    """S8 with the stale-metadata probe bootstrapped at broker 2 (beside the controller),
    from a zone that can reach it but not broker 1: the check that such a client fails every send must
    fail. S8 cuts zone c's clients from broker 1 while the probe is taken (a client that
    asked broker 1 for metadata after the kill would stay on the dead leader)."""
    placed = place_controller(cluster, S8_CONTROLLER)
    real = s8_spec(cluster.session_timeout_s, placed.node, cluster.topology.metadata)
    probes = tuple(dataclasses.replace(p, broker=S8_CONTROLLER, zone="c") if p.name == "via-b1" else p
                   for p in real.probes)
    spec = control(real, "The probe's client can reach broker 2, whose metadata is current, and not "
                         "broker 1: it produces.",
                   must_fail=("a client with only broker 1's metadata fails every send",), probes=probes)
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()


def test_s12_control_no_leader_moves(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    """S12 with its kill and its preferred election replaced by no-ops: leadership never
    moves, so the checks of three leaders in turn and of the producers' failed attempts
    and not-leader errors must fail. A third entry whose condition never holds, and a
    minimum of acknowledgements no run reaches, show that a run fails when a scheduled
    fault never happened or too little was acknowledged."""
    real = s12_spec(True, cluster.session_timeout_s)
    kill, election = real.schedule
    links = {"from": {"broker": 0}, "to": {"broker": 1}}
    never = {"start_s": 0, "duration_s": 0, "when": {"broker_gone": S12_CONTROLLER}, "when_timeout_s": 5,
             **no_op({}, links)}
    unreachable = 10**7
    spec = control(
        real, "Nothing moves p0's leadership; a broker that never leaves gates the third entry.",
        must_fail=("kill: p0 led by another in-sync replica, epoch up",
                   "preferred election: broker 0 leads p0 again, epoch up (three leaders in turn)",
                   "producers' failed attempts and retries around the kill are in the history",
                   "... and their not-leader errors around the preferred election",
                   "fault schedule ran: 3 entries injected and healed",
                   f"at least {unreachable} sends acknowledged"),
        schedule=(no_op(kill, links), no_op({**election, "duration_s": 1}, links), never),
        min_acked=unreachable)
    place_controller(cluster, S12_CONTROLLER)
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()


def test_p1_control_members_that_never_crash_leave_no_transaction_open(
    scenario: Callable[[ScenarioSpec], ScenarioRun],
) -> None:
    """P1 exactly once with no member ever restarted: no transaction is left open, so the
    check that the members crashed with transactions open must fail."""
    real = p1_spec("exactly_once")
    calm = tuple(dataclasses.replace(p, restart_every_s=None, restart="clean") for p in real.pipelines)
    spec = control(real, "No member crashes, so every transaction ends committed: none is left open.",
                   must_fail=("the members crashed with transactions open, twice each",), pipelines=calm)
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()
