"""Exploring during a migration: faults anchored to the phases the KRaft controllers run
in, one phase each, drawn from the kinds that mean something there, aimed at the
migration's own roles and links; and every drawn entry checks on the migrating topology."""

from __future__ import annotations

import json

import pytest

from faults.conditions import parse_condition
from faults.registry import build_fault
from harness.explore.generator import (
    EXCLUDED_DURING_MIGRATION,
    MIGRATION_PHASES,
    PHASES_OF_KIND,
    Space,
    draw_schedule,
)
from topologies import load_topology
from topologies.model import migration_topology

MIGRATING = migration_topology(load_topology("three_az"), load_topology("three_az", metadata="kraft"))


def _space(**limits: object) -> Space:
    return Space.of(MIGRATING, partitions=6, phases=MIGRATION_PHASES, **limits)  # type: ignore[arg-type]


def test_every_draw_is_anchored_to_a_phase_of_its_own_and_checks_on_the_migrating_topology() -> None:
    space = _space(faults=(3, 4))
    drawn = []
    for seed in range(300):
        entries = draw_schedule(space, seed)
        assert entries, f"seed {seed} drew nothing"
        phases = [e["when"]["migration_phase"] for e in entries]
        assert len(set(phases)) == len(phases), f"seed {seed}: two entries on one phase: {phases}"
        assert phases == sorted(phases, key=MIGRATION_PHASES.index), "in walk order"
        for entry in entries:
            assert entry["start_s"] == 0.0
            assert entry["fault"] not in EXCLUDED_DURING_MIGRATION
            assert entry["when"]["migration_phase"] in PHASES_OF_KIND.get(entry["fault"], MIGRATION_PHASES)
            parse_condition(entry["when"]).check(MIGRATING)
            build_fault({k: v for k, v in entry.items() if k not in ("start_s", "duration_s", "when")}) \
                .check(MIGRATING)
            drawn.append(json.dumps(entry))
    text = "\n".join(drawn)
    for phase in MIGRATION_PHASES:
        assert f'"migration_phase": "{phase}"' in text, f"{phase} never drawn"
    for role in ('"quorum_leader"', '"controller_majority"', '"controller-rpc"', '"all_zookeepers"',
                 '"kind": "zk-session"', '"expire_session"'):
        assert role in text, f"{role} never drawn in 300 rounds"
    assert '"active_controller"' not in text, "before the copy /controller names a ZooKeeper-mode broker"


def test_a_kind_left_out_of_a_migration_is_refused_when_named() -> None:
    assert "reassign" not in _space().drawn_kinds and "delete_controller" not in _space().drawn_kinds
    assert "reassign" in Space.of(load_topology("three_az"), partitions=6).drawn_kinds
    with pytest.raises(ValueError, match="reassign are not drawn during a migration"):
        _space(kinds=("kill", "reassign"))
    with pytest.raises(ValueError, match=r"no migration phase.*provision"):
        Space.of(MIGRATING, partitions=6, phases=("provision",))


def test_a_round_of_expiries_alone_fits_the_phases_where_brokers_hold_sessions() -> None:
    space = _space(kinds=("expire_session",), faults=(4, 4))
    for seed in range(50):
        phases = [e["when"]["migration_phase"] for e in draw_schedule(space, seed)]
        assert len(phases) == 3 and set(phases) == set(PHASES_OF_KIND["expire_session"])


def test_the_same_seed_draws_the_same_migration_round() -> None:
    assert draw_schedule(_space(), 11) == draw_schedule(_space(), 11)
