"""The ZooKeeper-to-KRaft migration without Docker: the migrating topology, its extra
links, each node's configuration in each phase, the steps and the releases that migrate."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from harness.cluster.fabric import TOXIPROXY_HOST, LinkKind, plan_fabric
from harness.cluster.migration.plan import Action, NodeConfig, Phase, migration_steps, phase_named, phases_of
from harness.cluster.node_config import (
    broker_properties,
    controller_properties,
    migrated_broker_settings,
    migrating_broker_settings,
)
from harness.cluster.versions import check_migration, release
from harness.errors import UnsupportedVersion
from topologies import load_topology
from topologies.errors import TopologyError
from topologies.model import MIGRATION, migration_topology

SOURCE, TARGET = load_topology("three_az"), load_topology("three_az", metadata="kraft")
MIGRATING = migration_topology(SOURCE, TARGET)


def _properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def _broker_file(settings_of, broker_id: int = 0) -> dict[str, str]:
    fabric = plan_fabric(MIGRATING)
    broker = MIGRATING.broker(broker_id)
    ports = {link.name: 40000 + i for i, link in enumerate(fabric.links) if link.published}
    return _properties(broker_properties(fabric, broker, ports, settings_of(fabric, broker)))


def test_a_migrating_topology_holds_the_ensemble_and_the_controllers_that_take_over() -> None:
    assert MIGRATING.metadata == MIGRATION
    assert [z.name for z in MIGRATING.zookeepers] == ["zk-a", "zk-b", "zk-c"]
    assert [(c.node_id, c.name) for c in MIGRATING.controllers] == [(100, "kraft-a"), (101, "kraft-b"),
                                                                    (102, "kraft-c")]
    assert MIGRATING.brokers == SOURCE.brokers
    assert MIGRATING.node_names[:6] == ["zk-a", "zk-b", "zk-c", "kraft-a", "kraft-b", "kraft-c"]


@pytest.mark.parametrize(("source", "target", "says"), [
    (TARGET, TARGET, "starts from a ZooKeeper-mode topology"),
    (SOURCE, SOURCE, "ends on a KRaft topology with dedicated controllers"),
    (SOURCE, load_topology("three_az", metadata="kraft", brokers_per_zone=2), "differ in zones or brokers"),
])
def test_a_migration_between_unlike_clusters_is_refused(source, target, says) -> None:
    with pytest.raises(TopologyError, match=says):
        migration_topology(source, target)


def test_combined_controllers_cannot_be_migrated_to() -> None:
    with pytest.raises(TopologyError, match="dedicated KRaft controllers only"):
        replace(MIGRATING, controller_layout="combined")


def test_the_controllers_reach_zookeeper_and_the_brokers_through_proxies_of_their_own() -> None:
    fabric = plan_fabric(MIGRATING)
    sessions = {link.name for link in fabric.links if link.kind is LinkKind.ZK_SESSION}
    assert {"kraft-a->zk-a", "kraft-c->zk-b", "kafka-0->zk-c"} <= sessions and len(sessions) == 18
    rpc = [link.name for link in fabric.links if link.kind is LinkKind.CONTROLLER_RPC]
    assert len(rpc) == 9 and "kraft-b->kafka-2" in rpc
    assert fabric.one("kraft-b", "kafka-2", LinkKind.CONTROLLER_RPC).upstream == "kafka-2:9501"
    # Neither plain mode has these links.
    for plain in (SOURCE, TARGET):
        kinds = {link.kind for link in plan_fabric(plain).links}
        assert LinkKind.CONTROLLER_RPC not in kinds
        assert not [link for link in plan_fabric(plain).links if link.source.startswith("kraft")
                    and link.destination.startswith(("zk", "kafka"))]


def test_a_broker_in_migration_mode_keeps_zookeeper_registers_with_the_quorum_and_listens_for_it() -> None:
    fabric = plan_fabric(MIGRATING)
    conf = _broker_file(lambda f, b: migrating_broker_settings(f, b, release("3.9.1").protocol_version))
    assert conf["zookeeper.metadata.migration.enable"] == "true"
    assert conf["inter.broker.protocol.version"] == "3.9"
    session = fabric.one("kafka-0", "zk-a", LinkKind.ZK_SESSION).listen_port
    assert conf["zookeeper.connect"].split(",")[0] == f"{TOXIPROXY_HOST}:{session}"
    voter = fabric.one("kafka-0", "kraft-b", LinkKind.KRAFT_BROKER).listen_port
    assert f"101@{TOXIPROXY_HOST}:{voter}" in conf["controller.quorum.voters"].split(",")
    assert conf["controller.listener.names"] == "CONTROLLER_FROM_KAFKA_0"
    rpc = fabric.one("kraft-a", "kafka-0", LinkKind.CONTROLLER_RPC).listen_port
    assert f"FROM_KRAFT_A://{TOXIPROXY_HOST}:{rpc}" in conf["advertised.listeners"].split(",")
    assert "FROM_KRAFT_A://0.0.0.0:9500" in conf["listeners"].split(",")
    mapped = dict(entry.split(":") for entry in conf["listener.security.protocol.map"].split(","))
    assert mapped["CONTROLLER_FROM_KAFKA_0"] == mapped["FROM_KRAFT_C"] == "PLAINTEXT"
    assert "process.roles" not in conf


def test_a_broker_rolled_to_kraft_leaves_zookeeper_and_keeps_its_id_and_endpoints() -> None:
    migrating = _broker_file(lambda f, b: migrating_broker_settings(f, b, "3.9"), broker_id=1)
    migrated = _broker_file(migrated_broker_settings, broker_id=1)
    assert migrated["process.roles"] == "broker" and migrated["node.id"] == migrated["broker.id"] == "1"
    assert migrating["zookeeper.session.timeout.ms"] == "6000"  # kept until the roll
    assert migrating["broker.heartbeat.interval.ms"] == migrated["broker.heartbeat.interval.ms"] == "1000"
    assert not [k for k in migrated if k.startswith("zookeeper.") or k == "inter.broker.protocol.version"]
    kept = [e for e in migrating["advertised.listeners"].split(",") if e.startswith("FROM_KRAFT")]
    assert kept and set(kept) <= set(migrated["advertised.listeners"].split(","))
    fabric, broker = plan_fabric(MIGRATING), MIGRATING.broker(1)
    assert migrating_broker_settings(fabric, broker, "3.9").format_cluster_id is None
    assert migrated_broker_settings(fabric, broker).format_cluster_id is None


def test_a_migrating_controller_reaches_zookeeper_and_a_finalized_one_does_not() -> None:
    fabric = plan_fabric(MIGRATING)
    controller = MIGRATING.controller(101)
    during = _properties(controller_properties(fabric, controller, migrating=True))
    after = _properties(controller_properties(fabric, controller))
    session = fabric.one("kraft-b", "zk-c", LinkKind.ZK_SESSION).listen_port
    assert during["zookeeper.connect"].split(",")[2] == f"{TOXIPROXY_HOST}:{session}"
    assert during["zookeeper.metadata.migration.enable"] == "true"
    assert during["zookeeper.session.timeout.ms"] == "6000"  # the brokers' ZooKeeper session
    assert during["inter.broker.listener.name"] == "FROM_KRAFT_B"
    assert "FROM_KRAFT_B:PLAINTEXT" in during["listener.security.protocol.map"].split(",")
    # The brokers listen on it, not the controller.
    assert "FROM_KRAFT_B" not in [entry.split(":")[0] for entry in during["listeners"].split(",")]
    assert not [k for k in after if k.startswith("zookeeper.") or k == "inter.broker.listener.name"]
    assert during["controller.quorum.voters"] == after["controller.quorum.voters"]


def test_a_migration_walks_kafkas_phases_in_order_one_node_at_a_time() -> None:
    steps = migration_steps(MIGRATING)
    assert phases_of(steps) == (Phase.PROVISION, Phase.ENTER_MIGRATION, Phase.COPY, Phase.DUAL_WRITE,
                                Phase.BROKER_ROLL, Phase.FINALIZE)
    assert [s.describe() for s in steps] == [
        "provision: start kraft-a as migrating", "provision: start kraft-b as migrating",
        "provision: start kraft-c as migrating",
        "enter_migration: restart kafka-0 as migrating", "enter_migration: restart kafka-1 as migrating",
        "copy: restart kafka-2 as migrating", "copy: await copy", "dual_write: hold",
        "broker_roll: restart kafka-0 as kraft", "broker_roll: restart kafka-1 as kraft",
        "broker_roll: restart kafka-2 as kraft",
        "finalize: restart kraft-a as kraft", "finalize: restart kraft-b as kraft",
        "finalize: restart kraft-c as kraft",
    ]


def test_a_rollback_after_the_broker_roll_takes_the_brokers_back_through_migration_mode() -> None:
    steps = migration_steps(MIGRATING, rollback_after=Phase.BROKER_ROLL)
    back = [s for s in steps if s.phase is Phase.ROLLBACK]
    assert [(s.action, s.node, s.config) for s in back] == [
        *((Action.RESTART, b, NodeConfig.MIGRATING) for b in ("kafka-0", "kafka-1", "kafka-2")),
        *((Action.STOP, c, None) for c in ("kraft-a", "kraft-b", "kraft-c")),
        (Action.RELEASE_CONTROLLER, None, None),
        *((Action.RESTART, b, NodeConfig.ZOOKEEPER) for b in ("kafka-0", "kafka-1", "kafka-2")),
    ]
    early = migration_steps(MIGRATING, rollback_after=Phase.DUAL_WRITE)
    assert Phase.BROKER_ROLL not in phases_of(early)
    assert [s.config for s in early if s.phase is Phase.ROLLBACK and s.action is Action.RESTART] == \
        [NodeConfig.ZOOKEEPER] * 3


def test_no_rollback_after_finalizing_no_migration_of_a_plain_cluster_and_no_unknown_phase() -> None:
    with pytest.raises(TopologyError, match="not after finalize"):
        migration_steps(MIGRATING, rollback_after=Phase.FINALIZE)
    with pytest.raises(TopologyError, match="is not migrating"):
        migration_steps(SOURCE)
    with pytest.raises(TopologyError, match="'dual-write' is not a phase of the migration; phases: "
                                            "provision, enter_migration, copy, dual_write"):
        phase_named("dual-write")


def test_only_a_release_the_harness_migrates_on_is_accepted_with_one_sentence() -> None:
    check_migration(release("3.9.1"))
    no_zookeeper = ("Kafka 4.4.0 cannot migrate from ZooKeeper to KRaft here (it runs in kraft mode); "
                    "releases that can: 3.7.2, 3.9.1, 3.9.2")
    with pytest.raises(UnsupportedVersion, match=f"^{re.escape(no_zookeeper)}$"):
        check_migration(release("4.4.0"))
    too_early = "2.8.2 cannot migrate from ZooKeeper to KRaft here (it runs in zookeeper mode)"
    with pytest.raises(UnsupportedVersion, match=re.escape(too_early)):
        check_migration(release("2.8.2"))
    assert release("3.9.1").protocol_version == "3.9"


def test_an_upgrade_after_finalize_rolls_controllers_then_brokers_then_raises_the_metadata_version() -> None:
    steps = migration_steps(MIGRATING, upgrade_to="4.4.0")
    assert phases_of(steps)[-2:] == (Phase.FINALIZE, Phase.UPGRADE)
    assert [s.describe() for s in steps if s.phase is Phase.UPGRADE] == [
        *(f"upgrade: upgrade {node} to 4.4.0" for node in ("kraft-a", "kraft-b", "kraft-c")),
        *(f"upgrade: upgrade {node} to 4.4.0" for node in ("kafka-0", "kafka-1", "kafka-2")),
        "upgrade: raise metadata version",
    ]
    with pytest.raises(TopologyError, match="rolled back after dual_write is not upgraded"):
        migration_steps(MIGRATING, rollback_after=Phase.DUAL_WRITE, upgrade_to="4.4.0")


def test_an_upgrade_goes_to_a_newer_kraft_release_the_harness_runs() -> None:
    from harness.cluster.versions import check_upgrade

    assert check_upgrade(release("3.9.1"), "4.4.0").version == "4.4.0"
    for target in ("3.7.2", "3.9.1", "5.0.0"):
        expected = f"a cluster migrated on Kafka 3.9.1 cannot be upgraded to '{target}' here; releases it"
        with pytest.raises(UnsupportedVersion, match=f"^{re.escape(expected)} can: 3.9.2, 4.0.0, 4.4.0$"):
            check_upgrade(release("3.9.1"), target)


def test_the_migration_znode_found_at_the_start_is_absent_or_empty_and_round_trips() -> None:
    from harness.cluster.migration.plan import FoundZnode, MigrationSpec

    assert MigrationSpec.from_dict({}).migration_znode is FoundZnode.ABSENT
    assert "migration_znode" not in MigrationSpec().to_dict()
    empty = MigrationSpec.from_dict({"migration_znode": "empty"})
    assert empty.migration_znode is FoundZnode.EMPTY and MigrationSpec.from_dict(empty.to_dict()) == empty
    for bad in ("null", "", 0):
        says = f"^migration.migration_znode must be one of 'absent', 'empty', not {re.escape(repr(bad))}$"
        with pytest.raises(TopologyError, match=says):
            MigrationSpec.from_dict({"migration_znode": bad})
