"""The znodes a migration is read from, decoded: pure functions over their JSON.

``/migration`` is where the KRaft controller records how far it has carried ZooKeeper's
metadata. It is created when the controller's migration driver starts, with every field
-1; the controller sets the KRaft log offset and epoch only once the copy of ZooKeeper's
metadata is committed to its log (Kafka 3.9's ``KRaftMigrationDriver``: "Finished
initial migration of ZK metadata to KRaft"), and moves them on with each dual write. So
an offset of 0 or more says the copy is done.

``/brokers/topics/<topic>`` holds a topic's id and replica assignment, and
``/config/topics/<topic>`` (or ``/config/brokers/<id>``) the configs set on it, as
``{"version": 1, "config": {...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.cluster.migration.snapshot import TopicMetadata

MIGRATION_ZNODE = "/migration"


@dataclass(frozen=True)
class MigrationRecord:
    """The ``/migration`` znode: which KRaft controller (and epoch) last wrote to
    ZooKeeper, and the KRaft log position ZooKeeper has caught up with."""

    controller_id: int
    controller_epoch: int
    metadata_offset: int
    metadata_epoch: int

    @property
    def copied(self) -> bool:
        """True once the controller has committed its copy of ZooKeeper's metadata."""
        return self.metadata_offset >= 0


def migration_record(data: Mapping[str, Any] | None) -> MigrationRecord | None:
    """``/migration`` decoded; None when the znode does not exist (no migration began)."""
    if data is None:
        return None
    if data.get("version") != 0:
        raise ValueError(f"/migration has version {data.get('version')!r}; this harness reads version 0")
    return MigrationRecord(int(data["kraft_controller_id"]), int(data["kraft_controller_epoch"]),
                           int(data["kraft_metadata_offset"]), int(data["kraft_metadata_epoch"]))


def entity_configs(data: Mapping[str, Any] | None) -> dict[str, str]:
    """The configs of a ``/config/<type>/<name>`` znode (none when it is absent)."""
    if data is None:
        return {}
    return {key: str(value) for key, value in (data.get("config") or {}).items()}


def topic_metadata(assignment: Mapping[str, Any], configs: Mapping[str, Any] | None) -> TopicMetadata:
    """A topic as ZooKeeper holds it, from its ``/brokers/topics`` and ``/config/topics`` znodes."""
    replicas = {int(p): tuple(int(r) for r in rs) for p, rs in (assignment.get("partitions") or {}).items()}
    return TopicMetadata(assignment.get("topic_id"), dict(sorted(replicas.items())), entity_configs(configs))


__all__ = ["MIGRATION_ZNODE", "MigrationRecord", "entity_configs", "migration_record", "topic_metadata"]
