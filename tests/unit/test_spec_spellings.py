"""Python and TOML are two spellings of one scenario spec: every S-scenario spec written
out as a scenario file reads back as the same spec, and so does every built-in file."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli_w

from harness.cluster.migration.plan import MigrationSpec, Phase
from harness.scenario.file_format import ScenarioFileError, load_scenario_file, parse_scenario
from harness.scenario.runner import ScenarioSpec
from harness.workload.client_settings import JAVA
from tests.chaos.scenarios.test_c01_metadata_refresh_after_a_leader_change import c1_spec
from tests.chaos.scenarios.test_c02_idempotence_through_broker_kill import c2_spec
from tests.chaos.scenarios.test_g01_group_coordinator_loss import g1_spec
from tests.chaos.scenarios.test_g02_rebalance_storm import g2_crash_spec, g2_spec
from tests.chaos.scenarios.test_p01_pipeline_crash_restarts import p1_spec
from tests.chaos.scenarios.test_p02_pipeline_broker_loss import VICTIMS, p2_spec
from tests.chaos.scenarios.test_p03_pipeline_input_isolation import p3_spec
from tests.chaos.scenarios.test_s01_single_replica_kill import s1_spec
from tests.chaos.scenarios.test_s02_move_before_maintenance import s2_spec
from tests.chaos.scenarios.test_s03_controlled_vs_kill import s3_spec
from tests.chaos.scenarios.test_s04_durable_configuration import s4_kill_leader_spec, s4_two_down_spec
from tests.chaos.scenarios.test_s05_unclean_election import s5_spec
from tests.chaos.scenarios.test_s06_crash_before_replication import s6_spec
from tests.chaos.scenarios.test_s07_one_link_cut import s7_spec
from tests.chaos.scenarios.test_s08_cut_from_controller import s8_spec
from tests.chaos.scenarios.test_s09_zone_isolated_leader_elsewhere import s9_spec
from tests.chaos.scenarios.test_s10_zone_isolated_split_brain import s10_spec
from tests.chaos.scenarios.test_s11_controller_zone_isolated import VARIANTS, s11_spec
from tests.chaos.scenarios.test_s12_clients_through_leader_changes import s12_spec
from tests.chaos.scenarios.test_t01_txn_coordinator_loss import t1_spec
from tests.chaos.scenarios.test_t02_zombie_fenced import t2_spec

SESSION_S = 6.0
PYTHON_SPECS = {
    "s1": s1_spec(0, 3, SESSION_S),
    "s2": s2_spec(0, [0, 1, 2], SESSION_S),
    "s3": s3_spec(1, [0, 1, 2], SESSION_S),
    "s4-kill-leader": s4_kill_leader_spec(SESSION_S),
    "s4-two-down": s4_two_down_spec(SESSION_S),
    "s5-unclean-off": s5_spec(0, 1, False, SESSION_S),
    "s5-unclean-on": s5_spec(0, 1, True, SESSION_S),
    "s6-acks-all": s6_spec(1, 0, "all", SESSION_S),
    "s6-acks-1": s6_spec(1, 0, "1", SESSION_S),
    "s7-idempotence-off": s7_spec(False, 5.0),
    "s7-idempotence-on": s7_spec(True, 5.0),
    "s8": s8_spec(SESSION_S),
    "s9": s9_spec(SESSION_S),
    "s10-acks-1": s10_spec("1", 1, SESSION_S),
    "s10-acks-all": s10_spec("all", 2, SESSION_S),
    **{f"s11-{name}": s11_spec(variant, SESSION_S) for name, variant in VARIANTS.items()},
    "s12-idempotence-on": s12_spec(True, SESSION_S),
    "s12-idempotence-off": s12_spec(False, SESSION_S),
    "s12-java": s12_spec(True, SESSION_S, JAVA).on_client(JAVA),
    "c1": c1_spec(SESSION_S),
    "c1-java": c1_spec(SESSION_S, JAVA),
    "c2": c2_spec(SESSION_S),
    "c2-java-4.0.0": c2_spec(SESSION_S).on_client(JAVA, "4.0.0"),
    "g1": g1_spec("g1-7", 1, [0, 1, 2], SESSION_S),
    "t1": t1_spec("kafka-chaos-t1-2", 1, [0, 1, 2], SESSION_S),
    **{f"p2-{victim}": p2_spec(victim, "p2-3", SESSION_S) for victim in VICTIMS},
}
# Specs whose fault is in their clients (a rebalance storm), not in a schedule.
CLIENT_FAULT_SPECS = {"g2-auto": g2_spec("auto"), "g2-sync": g2_spec("sync"), "g2-crash": g2_crash_spec(),
                      **{f"p1-{g}": p1_spec(g) for g in ("exactly_once", "at_least_once", "at_most_once")}}
# Specs whose fault is a producer's own timing: a zombie holding a transaction open, and
# a second instance of its transactional.id starting late.
CLIENT_TIMED_SPECS = {"t2": t2_spec("kafka-chaos-t2-0123abcd")}
FILES = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("spec", PYTHON_SPECS.values(), ids=list(PYTHON_SPECS))
def test_a_python_spec_written_as_a_file_reads_back_as_the_same_spec(spec: ScenarioSpec) -> None:
    text = tomli_w.dumps(spec.to_dict())
    assert parse_scenario(text, "written") == spec
    assert spec.checks and spec.schedule, "a declarative scenario has a schedule and checks"


@pytest.mark.parametrize("spec", CLIENT_FAULT_SPECS.values(), ids=list(CLIENT_FAULT_SPECS))
def test_a_client_fault_spec_written_as_a_file_reads_back_as_the_same_spec(spec: ScenarioSpec) -> None:
    assert parse_scenario(tomli_w.dumps(spec.to_dict()), "written") == spec
    restarting = [c.restart_every_s for c in spec.consumers] + [p.restart_every_s for p in spec.pipelines]
    assert spec.checks and any(restarting)


@pytest.mark.parametrize("spec", CLIENT_TIMED_SPECS.values(), ids=list(CLIENT_TIMED_SPECS))
def test_a_client_timed_spec_written_as_a_file_reads_back_as_the_same_spec(spec: ScenarioSpec) -> None:
    data = spec.to_dict()
    assert parse_scenario(tomli_w.dumps(data), "written") == spec
    assert spec.checks and not spec.schedule
    assert any(p.hold is not None for p in spec.producers)
    assert any(p.start_after_s is not None for p in spec.producers)
    assert {"hold_at_s", "hold_s"} <= set(data["producers"][0]) and "start_after_s" in data["producers"][1]
    assert data["brokers"]["settings"], "the broker setting its timing rests on is declared"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_scenario_file_written_back_reads_as_the_same_spec(path: Path) -> None:
    spec = load_scenario_file(path).spec
    assert parse_scenario(tomli_w.dumps(spec.to_dict()), "written") == spec


def test_a_changed_spelling_is_a_different_spec() -> None:
    spec = PYTHON_SPECS["s1"]
    data = spec.to_dict()
    data["checks"][0]["within_s"] = 99.0
    assert parse_scenario(tomli_w.dumps(data), "edited") != spec


def test_a_check_naming_a_missing_schedule_entry_is_refused_when_the_file_is_read() -> None:
    data = PYTHON_SPECS["s1"].to_dict()
    data["checks"][0]["after"] = {"inject": 2}
    with pytest.raises(ScenarioFileError, match="entry 2's inject - the schedule has 1 entry"):
        parse_scenario(tomli_w.dumps(data), "edited")


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_a_pipeline_isolation_spec_written_as_a_file_reads_back_as_the_same_spec(isolation: str) -> None:
    spec = p3_spec(isolation)
    assert parse_scenario(tomli_w.dumps(spec.to_dict()), "written") == spec
    assert {p.consumer_settings["isolation.level"] for p in spec.pipelines} == {isolation}


def test_a_migration_scenario_written_as_a_file_reads_back_as_the_same_spec() -> None:
    from tests.chaos.migration._shared import every_m_spec

    for spec in every_m_spec():
        data = spec.to_dict()
        assert parse_scenario(tomli_w.dumps(data), "written") == spec, spec.id
        assert "migration" in data
    rollback = MigrationSpec(40.0, Phase.DUAL_WRITE)
    assert rollback.to_dict() == {"hold_s": 40.0, "rollback_after": "dual_write"}
    assert MigrationSpec.from_dict(rollback.to_dict()) == rollback
    late_change = MigrationSpec(40.0, change_at_s=25.0)
    assert MigrationSpec.from_dict(late_change.to_dict()) == late_change
    assert "migration" not in PYTHON_SPECS["s1"].to_dict()
