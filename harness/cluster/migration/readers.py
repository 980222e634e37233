"""Reading a :class:`~harness.cluster.migration.snapshot.MetadataSnapshot` off a cluster.

Before a migration the metadata is read where ZooKeeper mode keeps it: each topic's id
and assignment from ``/brokers/topics/<topic>``, its configs from ``/config/topics``,
the dynamic broker configs from ``/config/brokers``. After it, the same things are asked
of the KRaft cluster through the Admin API: topic ids (DescribeTopics), replica lists
(Metadata), configs whose source is dynamic (DescribeConfigs, with their synonyms, so
a broker's own value and the cluster-wide default are told apart). Committed group
offsets live in ``__consumer_offsets`` in both modes and are read through the Admin API
on both sides (ListConsumerGroups, then a consumer's committed-offsets look-up). Sensitive configs, which
the API never returns in clear, are left out on both sides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from harness.cluster.migration.snapshot import MetadataSnapshot, TopicMetadata
from harness.cluster.migration.znodes import entity_configs, topic_metadata
from harness.errors import ChaosError, describe_error

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

    from harness.cluster.zkstate import ZkObserver

T = TypeVar("T")
REQUEST_TIMEOUT_S = 15.0
DEFAULT_BROKER = "<default>"  # ZooKeeper's entity name for the cluster-wide broker default


def zookeeper_snapshot(observer: ZkObserver, admin: AdminClient, bootstrap: str) -> MetadataSnapshot:
    """The metadata as ZooKeeper holds it (the group offsets from the brokers)."""
    topics: dict[str, TopicMetadata] = {}
    for name in observer.call(observer.client.get_children, "/brokers/topics"):
        assignment = observer.read_json(f"/brokers/topics/{name}") or {}
        topics[name] = topic_metadata(assignment, observer.read_json(f"/config/topics/{name}"))
    brokers: dict[str, dict[str, str]] = {}
    if observer.stat("/config/brokers") is not None:
        for entity in observer.call(observer.client.get_children, "/config/brokers"):
            configs = entity_configs(observer.read_json(f"/config/brokers/{entity}"))
            if configs:
                brokers["" if entity == DEFAULT_BROKER else entity] = configs
    return MetadataSnapshot("zookeeper", dict(sorted(topics.items())), brokers,
                            group_offsets(admin, bootstrap, topics))


def kraft_snapshot(admin: AdminClient, bootstrap: str, broker_ids: Iterable[int]) -> MetadataSnapshot:
    """The metadata as a KRaft cluster answers for it through the Admin API."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    listed = step("Metadata", lambda: admin.list_topics(timeout=REQUEST_TIMEOUT_S).topics)
    names = sorted(listed)

    def topic_ids() -> dict[str, str]:
        described = admin.describe_topics(TopicCollection(names), request_timeout=REQUEST_TIMEOUT_S)
        return {name: kafka_uuid(str(future.result(timeout=REQUEST_TIMEOUT_S).topic_id))
                for name, future in described.items()}

    ids = step("DescribeTopics", topic_ids)
    levels = step("DescribeConfigs of the topics",
                  lambda: _config_levels(admin, [ConfigResource(ResourceType.TOPIC, name) for name in names]))
    topics = {
        name: TopicMetadata(ids.get(name),
                            {p: tuple(meta.replicas) for p, meta in sorted(listed[name].partitions.items())},
                            {key: value for source, key, value in levels.get(name, ())
                             if source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value})
        for name in names
    }
    brokers: dict[str, dict[str, str]] = {}
    # One broker a call: DescribeConfigs takes at most one BROKER resource per request.
    levels_by_broker: dict[str, list[tuple[int, str, str]]] = {}
    for broker_id in broker_ids:
        resource = ConfigResource(ResourceType.BROKER, str(broker_id))
        levels_by_broker[str(broker_id)] = step(f"DescribeConfigs of broker {broker_id}",
                                                partial(_config_levels, admin, [resource]))[str(broker_id)]
    for broker, found in levels_by_broker.items():
        for source, key, value in found:
            if source == ConfigSource.DYNAMIC_BROKER_CONFIG.value:
                brokers.setdefault(broker, {})[key] = value
            elif source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value:
                brokers.setdefault("", {})[key] = value
    return MetadataSnapshot("kraft", topics, dict(sorted(brokers.items())),
                            group_offsets(admin, bootstrap, topics))


def kafka_uuid(text: str) -> str:
    """A topic id as Kafka writes it (``Uuid.toString``: URL-safe base64, no padding), the
    form ``/brokers/topics`` holds; confluent-kafka prints the standard alphabet's ``+``
    and ``/`` (the M1 control's topic id read back as another id before this)."""
    return text.replace("+", "-").replace("/", "_").rstrip("=")


class MetadataUnread(ChaosError):
    """One request of a snapshot's reading failed; its text names the request."""


def step(what: str, read: Callable[[], T]) -> T:
    """``read()``, its failure raised as :class:`MetadataUnread` naming ``what``, so a
    reading that failed says which request did."""
    try:
        return read()
    except Exception as err:
        raise MetadataUnread(f"{what}: {describe_error(err)}") from err


def _config_levels(admin: AdminClient, resources: list[Any]) -> dict[str, list[tuple[int, str, str]]]:
    """Per resource name, every level a config is set at, in clear: (source, name, value)
    of each entry and of its synonyms (a broker's entry shows the value in force, its
    synonyms each level that sets one, its own and the cluster-wide default apart)."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    if not resources:
        return found
    for resource, future in admin.describe_configs(resources, request_timeout=REQUEST_TIMEOUT_S).items():
        levels: set[tuple[int, str, str]] = set()
        for entry in future.result(timeout=REQUEST_TIMEOUT_S).values():
            if entry.is_sensitive:
                continue
            for level in [entry, *(entry.synonyms or {}).values()]:
                if level.value is not None:
                    levels.add((_source(level.source), str(level.name), str(level.value)))
        found[resource.name] = sorted(levels)
    return found


def _source(source: Any) -> int:
    """A config source as its number (confluent-kafka hands an enum, or a plain int)."""
    return int(getattr(source, "value", source))


def group_offsets(admin: AdminClient, bootstrap: str,
                  topics: Mapping[str, TopicMetadata]) -> dict[str, dict[str, int]]:
    """Every group's committed offsets on ``topics``' partitions, ``topic-partition`` ->
    offset. Asked through a consumer that names the group and never subscribes (so it
    does not join it), not through the Admin API's coordinator calls, which librdkafka
    can abort on under faults (tests/unit/test_client_hazards.py)."""
    from confluent_kafka import Consumer, TopicPartition

    listed = step("ListConsumerGroups", lambda: admin.list_consumer_groups(
        request_timeout=REQUEST_TIMEOUT_S).result(timeout=REQUEST_TIMEOUT_S))
    partitions = [TopicPartition(name, p) for name, topic in topics.items() if not name.startswith("__")
                  for p in topic.replicas]
    offsets: dict[str, dict[str, int]] = {}
    for group in sorted(g.group_id for g in listed.valid):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                             "log_level": 3})
        try:
            committed = step(f"the committed offsets of {group}",
                             partial(consumer.committed, partitions, timeout=REQUEST_TIMEOUT_S))
        finally:
            consumer.close()
        offsets[group] = {f"{tp.topic}-{tp.partition}": tp.offset for tp in committed
                          if tp.error is None and tp.offset >= 0}
    return offsets


__all__ = ["MetadataUnread", "group_offsets", "kafka_uuid", "kraft_snapshot", "step", "zookeeper_snapshot"]
