"""The metadata comparison across a migration, on made-up readings: every lost, added or
changed path is one difference, and a group's offset moving on is none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.cluster.migration.snapshot import (
    Difference,
    MetadataSnapshot,
    TopicMetadata,
    differences,
    with_topic_config,
)
from harness.cluster.migration.znodes import MigrationRecord, migration_record, topic_metadata

ORDERS = TopicMetadata("q1w2e3", {0: (0, 1, 2), 1: (1, 2, 0)},
                       {"min.insync.replicas": "2", "retention.ms": "600000"})
BEFORE = MetadataSnapshot(
    "zookeeper", {"orders": ORDERS, "audit": TopicMetadata("z9x8", {0: (2, 0, 1)})},
    broker_configs={"1": {"log.cleaner.threads": "2"}, "": {"log.retention.ms": "900000"}},
    group_offsets={"billing": {"orders-0": 120, "orders-1": 80}},
)


def test_the_same_metadata_read_twice_differs_nowhere() -> None:
    assert differences(BEFORE, replace(BEFORE, source="kraft")) == []


def test_a_topic_config_removed_in_between_is_one_difference_with_its_path() -> None:
    stripped = replace(ORDERS, configs={"min.insync.replicas": "2"})
    after = replace(BEFORE, source="kraft", topics={**BEFORE.topics, "orders": stripped})
    found = differences(BEFORE, after)
    assert found == [Difference("topics/orders/configs/retention.ms", "600000", None)]
    assert found[0].describe() == "topics/orders/configs/retention.ms: '600000' before, gone after"


def test_a_lost_topic_a_new_id_a_moved_replica_and_a_dynamic_config_are_each_found() -> None:
    moved = TopicMetadata("NEW-ID", {0: (0, 1, 2), 1: (1, 0, 2)}, ORDERS.configs)
    after = replace(BEFORE, source="kraft", topics={"orders": moved},
                    broker_configs={"1": {"log.cleaner.threads": "1"}, "": {"log.retention.ms": "900000"}})
    paths = {d.path: (d.before, d.after) for d in differences(BEFORE, after)}
    assert paths == {
        "topics/audit/id": ("z9x8", None),
        "topics/audit/partition_count": (1, None),
        "topics/audit/partitions/0/replicas": ([2, 0, 1], None),
        "topics/orders/id": ("q1w2e3", "NEW-ID"),
        "topics/orders/partitions/1/replicas": ([1, 2, 0], [1, 0, 2]),
        "brokers/1/configs/log.cleaner.threads": ("2", "1"),
    }


def test_a_group_offset_that_moved_on_is_kept_and_one_that_went_back_or_vanished_is_not() -> None:
    after = replace(BEFORE, source="kraft", group_offsets={"billing": {"orders-0": 150, "orders-1": 79}})
    assert differences(BEFORE, after) == [Difference("groups/billing/offsets/orders-1", 80, 79)]
    gone = replace(BEFORE, source="kraft", group_offsets={})
    assert [d.describe() for d in differences(BEFORE, gone)] == [
        "groups/billing/offsets/orders-0: 120 before, gone after",
        "groups/billing/offsets/orders-1: 80 before, gone after"]


def test_the_migration_znode_says_the_copy_is_done_only_once_an_offset_is_recorded() -> None:
    created = {"version": 0, "kraft_controller_id": -1, "kraft_controller_epoch": -1,
               "kraft_metadata_offset": -1, "kraft_metadata_epoch": -1}
    assert migration_record(None) is None
    empty = migration_record(created)
    assert empty is not None and not empty.copied
    copied = migration_record({**created, "kraft_controller_id": 101, "kraft_controller_epoch": 3,
                               "kraft_metadata_offset": 412, "kraft_metadata_epoch": 3})
    assert copied == MigrationRecord(101, 3, 412, 3) and copied.copied
    with pytest.raises(ValueError, match="version 1"):
        migration_record({**created, "version": 1})


def test_a_topic_reads_from_its_assignment_and_config_znodes_as_the_snapshot_holds_it() -> None:
    assignment = {"version": 3, "topic_id": "q1w2e3", "partitions": {"1": [1, 2, 0], "0": [0, 1, 2]},
                  "adding_replicas": {}, "removing_replicas": {}}
    config = {"version": 1, "config": {"min.insync.replicas": "2", "retention.ms": "600000"}}
    assert topic_metadata(assignment, config) == ORDERS
    assert topic_metadata({"partitions": {"0": [2, 0, 1]}}, None) == TopicMetadata(None, {0: (2, 0, 1)})


def test_a_change_made_in_dual_write_is_expected_after_and_missing_it_is_a_difference() -> None:
    expected = with_topic_config(BEFORE, "orders", "retention.ms", "604800123")
    carried = replace(expected, source="kraft")
    assert differences(expected, carried) == []
    assert differences(expected, replace(BEFORE, source="kraft")) == [
        Difference("topics/orders/configs/retention.ms", "604800123", "600000")]
    assert BEFORE.topics["orders"].configs["retention.ms"] == "600000"  # the reading itself untouched


def test_a_topic_id_from_the_admin_api_reads_as_zookeeper_writes_it() -> None:
    from confluent_kafka import Uuid

    from harness.cluster.migration.readers import kafka_uuid

    # The M1 control's topic: ZooKeeper held gWp-uDusTQex4-yv3rJLtA, the Admin API printed
    # it with '+' for '-'.
    assert kafka_uuid("gWp+uDusTQex4+yv3rJLtA") == "gWp-uDusTQex4-yv3rJLtA"
    uuid = Uuid(-1, -2)  # every bit set but the last: both base64 alphabets differ here
    assert kafka_uuid(str(uuid)) == "_____________________g" and "/" in str(uuid)
