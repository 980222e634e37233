"""What a migration must carry over, and every way two readings of it differ.

A :class:`MetadataSnapshot` is the cluster's metadata as an operator would check it after
a migration: each topic's id, partitions and replica assignment, its configs, each
broker's dynamic configs, and each group's committed offsets. One is read from ZooKeeper
before the migration and one from KRaft after it; :func:`differences` lists every path
whose value is not the same in both, with the value before and after, so a finding says
exactly what the migration lost, added or changed. Pure: reading a snapshot from a
cluster is the driver's part.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

# Paths are "/"-joined; a value that is absent on one side is shown as this.
ABSENT = None


@dataclass(frozen=True)
class TopicMetadata:
    """One topic: its id, each partition's replica list, and the configs set on it."""

    topic_id: str | None
    replicas: Mapping[int, tuple[int, ...]]
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MetadataSnapshot:
    """The metadata a migration must carry over, as read from one side."""

    source: str  # where it was read: "zookeeper" or "kraft"
    topics: Mapping[str, TopicMetadata]
    # Dynamic broker configs by broker id ("0"; "" for the cluster-wide default).
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Committed offsets: group -> "topic-partition" -> offset.
    group_offsets: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def flat(self) -> dict[str, Any]:
        """Every leaf of the snapshot by its path, e.g. ``topics/orders/partitions/2/replicas``."""
        return dict(_leaves(self))


def _leaves(snapshot: MetadataSnapshot) -> Iterator[tuple[str, Any]]:
    for name, topic in snapshot.topics.items():
        yield f"topics/{name}/id", topic.topic_id
        yield f"topics/{name}/partition_count", len(topic.replicas)
        for partition, replicas in topic.replicas.items():
            yield f"topics/{name}/partitions/{partition}/replicas", list(replicas)
        for key, value in topic.configs.items():
            yield f"topics/{name}/configs/{key}", value
    for broker, configs in snapshot.broker_configs.items():
        for key, value in configs.items():
            yield f"brokers/{broker or 'default'}/configs/{key}", value
    for group, offsets in snapshot.group_offsets.items():
        for topic_partition, offset in offsets.items():
            yield f"groups/{group}/offsets/{topic_partition}", offset


def with_topic_config(snapshot: MetadataSnapshot, topic: str, key: str, value: str) -> MetadataSnapshot:
    """``snapshot`` with ``key=value`` set on ``topic``: what a reading must show once a
    change made meanwhile (dual-write's mirrored config) is carried over too."""
    was = snapshot.topics[topic]
    changed = replace(was, configs={**was.configs, key: value})
    return replace(snapshot, topics={**snapshot.topics, topic: changed})


@dataclass(frozen=True)
class Difference:
    """One path whose value the two readings disagree on (``None``: absent there)."""

    path: str
    before: Any
    after: Any

    def describe(self) -> str:
        if self.after is ABSENT:
            return f"{self.path}: {self.before!r} before, gone after"
        if self.before is ABSENT:
            return f"{self.path}: absent before, {self.after!r} after"
        return f"{self.path}: {self.before!r} before, {self.after!r} after"


def differences(before: MetadataSnapshot, after: MetadataSnapshot) -> list[Difference]:
    """Every path whose value differs between ``before`` and ``after``, in path order. A
    topic that is gone shows each of its paths gone, so the count says how much went.

    A group's committed offset may move on between the readings while its consumers
    run: only one that went back, or vanished, is a difference."""
    old, new = before.flat(), after.flat()
    return [Difference(path, old.get(path, ABSENT), new.get(path, ABSENT))
            for path in sorted(old.keys() | new.keys())
            if _differs(path, old.get(path, ABSENT), new.get(path, ABSENT))]


def _differs(path: str, before: Any, after: Any) -> bool:
    if path.startswith("groups/") and before is not ABSENT and after is not ABSENT:
        return bool(after < before)
    return bool(before != after)


__all__ = ["ABSENT", "Difference", "MetadataSnapshot", "TopicMetadata", "differences", "with_topic_config"]
