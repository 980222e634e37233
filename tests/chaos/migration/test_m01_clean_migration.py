"""M1 A clean ZooKeeper-to-KRaft migration under load: the control of the M scenarios.

Kafka's documented steps, walked one at a time while an idempotent producer writes at
acks=all and a consumer group commits: the KRaft controllers provisioned with the
migration enabled, the brokers rolled into migration mode, the copy of ZooKeeper's
metadata, dual-write, the brokers rolled to KRaft, and the controllers rolled off
ZooKeeper. Every phase completes; nothing acknowledged is lost or written twice; the
cluster ends healthy, its state read from the KRaft quorum."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec, Phase
from harness.cluster.waiting import wait_until
from harness.scenario.runner import METADATA_CHECK, ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import (
    DUAL_WRITE_HOLD_S,
    migration_spec,
)

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

# The workload's warm-up and the controllers' provisioning come first.
PLANT_WITHIN_S = 300.0


def m1_spec() -> ScenarioSpec:
    return migration_spec(
        id="m1-clean-migration", title="M1 a clean ZooKeeper-to-KRaft migration under load",
        description="Three zones, three brokers and three ZooKeeper nodes on Kafka 3.9.1, three dedicated "
                    "KRaft controllers provisioned beside them; an idempotent producer at acks=all, RF 3, "
                    "min.insync.replicas=2, and a consumer group that commits. Kafka's migration steps "
                    f"walked one at a time under load, {DUAL_WRITE_HOLD_S:g} s in dual-write, then "
                    "finalized.",
        expected="Every phase completes within Kafka's timeouts; a config set through KRaft in dual-write "
                 "reaches ZooKeeper; the metadata read from KRaft after it is ZooKeeper's before it, with "
                 "that change; nothing acknowledged is lost, truncated, duplicated or reordered; the "
                 "cluster ends healthy on KRaft.",
        migration=MigrationSpec(hold_s=DUAL_WRITE_HOLD_S),
    )


def test_m1_a_clean_migration_under_load_loses_nothing_and_ends_on_kraft(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m1_spec(), scenario)
    assert run.passed, run.failures()
    assert cluster.metadata.migration().brokers_on_kraft


def test_m1_control_a_topic_config_removed_from_zookeeper_before_the_copy_is_found(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    """The metadata check can fail: ``min.insync.replicas`` is removed from the topic's
    ``/config/topics`` znode after the snapshot and before the copy (what KAFKA-16206 did
    to topic configs), so KRaft never gets it; the check must name that path."""
    spec = replace(m1_spec(), id="m1-control-config-removed", must_fail=(METADATA_CHECK,),
                   title="M1 control: a topic config removed from ZooKeeper before the copy")
    mode = cluster.metadata.migration()
    planted: list[str] = []

    def plant(topic: str) -> None:
        wait_until(lambda: mode.phase is Phase.ENTER_MIGRATION, PLANT_WITHIN_S, "the migration to begin")
        observer = mode.zookeeper().observer
        path = f"/config/topics/{topic}"
        held = observer.read_json(path) or {}
        kept = {k: v for k, v in (held.get("config") or {}).items() if k != "min.insync.replicas"}
        observer.client.set(path, json.dumps({**held, "config": kept}).encode())
        planted.append(f"topics/{topic}/configs/min.insync.replicas")

    def start(planted_spec: ScenarioSpec) -> ScenarioRun:
        run = scenario(planted_spec)
        threading.Thread(target=plant, args=(run.topic,), daemon=True).start()
        return run

    run = run_spec(spec, start)
    assert run.passed, run.failures()
    assert planted, "the config was never removed"
    found = json.loads((run.dir / "metadata.json").read_text())["differences"]
    assert [d["path"] for d in found] == planted
