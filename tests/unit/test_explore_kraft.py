"""Exploring a KRaft cluster: the kinds it can take, and targets drawn from its roles."""

from __future__ import annotations

import dataclasses
import json

import pytest

from faults.registry import build_fault, kinds_for
from harness.explore.generator import Space, draw_schedule, leave_isr_s
from topologies import load_topology

KRAFT = load_topology("three_az_kraft")
ZOOKEEPER = load_topology("three_az")


def test_a_kraft_cluster_takes_every_kind_but_zookeepers_own() -> None:
    assert set(kinds_for(ZOOKEEPER)) - set(kinds_for(KRAFT)) == {"expire_session", "delete_controller"}
    space = Space.of(KRAFT, partitions=6)
    assert "expire_session" not in space.drawn_kinds and "kill" in space.drawn_kinds
    with pytest.raises(ValueError, match="expire_session cannot run on this cluster"):
        Space.of(KRAFT, partitions=6, kinds=("kill", "expire_session"))


def test_kraft_draws_aim_at_the_quorums_roles_and_every_one_checks_on_the_topology() -> None:
    space = Space.of(KRAFT, partitions=6, faults=(3, 4))
    specs = []
    for seed in range(300):
        for entry in draw_schedule(space, seed):
            fault = build_fault({k: v for k, v in entry.items() if k not in ("start_s", "duration_s")})
            fault.check(KRAFT)
            specs.append(json.dumps(entry))
    drawn = "\n".join(specs)
    for role in ('"active_controller"', '"controller_majority"', '{"controller": 10', '"kraft-broker"',
                 '"kraft-quorum"', '"zone_of": "active_controller"'):
        assert role in drawn, f"{role} never drawn in 300 rounds"
    assert '"target": "controller"' not in drawn, "a dedicated controller is not a broker role"
    assert "zookeeper" not in drawn and "zk-" not in drawn


def test_the_isr_leave_bound_uses_the_kraft_broker_session() -> None:
    assert leave_isr_s(KRAFT) == leave_isr_s(ZOOKEEPER) == 12.5, "6 s sessions both, lag 5 s"
    long_session = dataclasses.replace(KRAFT, controller_settings={"broker.session.timeout.ms": 20_000})
    assert leave_isr_s(long_session) == 25.0, "the session, not Kafka's ZooKeeper default of 18 s"
