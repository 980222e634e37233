"""What a scenario ran with, written beside its history before the workload starts.

``config.json`` holds the spec, the cluster it met and the effective configuration:
every setting brokers, topics and clients ran with and the layer its value came from
(default, topology, scenario, release, harness), so a report answers "was that the
default?" without anyone reading harness code. ``scenario.toml`` is the spec as a
scenario file, replayable with ``kafka-chaos run FILE``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli_w

from harness.cluster.node_config import format_value
from harness.files import write_json
from harness.scenario.spec import ScenarioSpec, TopicSpec, substitute
from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.pipeline import EXACTLY_ONCE, default_transactional_id

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster


@dataclass(frozen=True)
class RunTopics:
    """The real names a run gave the spec's topics: its own, and each further topic's
    name -> (real name, partitions)."""

    topic: str
    named: Mapping[str, tuple[str, list[int]]]


def write_run_config(directory: Path, cluster: Cluster, spec: ScenarioSpec, scenario_id: str,
                     topics: RunTopics) -> None:
    """``config.json``, ``schedule.json`` (when the spec has a schedule) and
    ``scenario.toml`` in ``directory``."""
    settings = cluster.topology.broker_settings
    write_json(directory / "config.json", {
        "scenario": {"id": scenario_id, "title": spec.title,
                     "description": spec.description, "expected": spec.expected},
        "kafka_version": cluster.kafka_version,
        "metadata": cluster.metadata.describe(),
        "topology": cluster.topology.describe(),
        "broker_settings": {k: format_value(v) for k, v in cluster.broker_settings().items()},
        "topic": spec.topic.to_dict(topics.topic),
        "producer": [p.to_dict() for p in spec.producers],
        "consumer": [c.to_dict() for c in spec.consumers],
        "schedule": substitute(list(spec.schedule), topics.topic),
        "expectations": dict(spec.expectations),
        "effective_config": effective_config(cluster, spec, topics),
        "test_timeouts": {k: settings[k] for k in (
            "zookeeper.session.timeout.ms", "replica.lag.time.max.ms") if k in settings},
    })
    if spec.schedule:
        spec.for_topic(topics.topic)[0].save(directory / "schedule.json")
    # The spec itself, replayable as it ran: `kafka-chaos run <this folder>/scenario.toml`.
    (directory / "scenario.toml").write_text(
        f"# {spec.title}: the spec this scenario ran, replayable with `kafka-chaos run FILE`.\n"
        + tomli_w.dumps(spec.to_dict()))


def effective_config(cluster: Cluster, spec: ScenarioSpec, topics: RunTopics) -> dict[str, Any]:
    """Every setting brokers, topics and clients ran with, each with the layer its value
    came from and the value it replaced."""
    from harness.workload.attempts import attempt_logging_shown
    from harness.workload.client_settings import (
        CONSUMER,
        JAVA,
        JAVA_DEFAULTS,
        LIBRDKAFKA,
        PRODUCER,
        own_settings,
    )
    from harness.workload.clients import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS
    from harness.workload.group_member import member_settings

    running = cluster.broker_settings()
    extra = cluster.release.extra_broker_settings
    scenario = {k: format_value(v) for k, v in spec.broker_settings.items()}
    topology = {k: format_value(v) for k, v in running.items() if k not in scenario and k not in extra}
    topic_defaults = {key: format_value(running[broker_key])
                      for key, broker_key in TOPIC_BROKER_DEFAULTS.items() if broker_key in running}

    def harness(zone: str) -> dict[str, Any]:
        return {"bootstrap.servers": cluster.bootstrap_servers(zone), "client.id": None}

    def member(c: ConsumerSpec) -> dict[str, Any]:
        return {} if c.group is None else member_settings(c.group, c.commit, c.settings)

    def client(spec: ProducerSpec | ConsumerSpec) -> str:
        if spec.client == LIBRDKAFKA:
            return LIBRDKAFKA
        return f"{spec.client} {spec.client_version or cluster.kafka_version}"

    def java(role: str, spec: ProducerSpec | ConsumerSpec, imposed: Mapping[str, Any]) -> dict[str, Any]:
        """A Java client's layers, in its own names: the harness's defaults, the scenario's
        settings (mapped), and what the driver sets itself."""
        who = f"{role} {spec.name}"
        return {"role": role, "name": spec.name, "zone": spec.zone, "client": client(spec),
                "settings": layered_settings([
                    ("default", JAVA_DEFAULTS[role]),
                    ("scenario", own_settings(JAVA, role, spec.settings, who)),
                    ("harness", {"bootstrap.servers": cluster.bootstrap_servers(spec.zone),
                                 "client.id": f"kafka-chaos-{role}-{spec.name}", **imposed})])}

    clients = [java(PRODUCER, p, {}) if p.client == JAVA else
               {"role": "producer", "name": p.name, "zone": p.zone, "client": LIBRDKAFKA,
                "settings": layered_settings(
                    [("default", PRODUCER_DEFAULTS), ("scenario", p.settings),
                     ("harness", {**harness(p.zone), **attempt_logging_shown(p.settings)})])}
               for p in spec.producers]
    clients += [java(CONSUMER, c, {} if c.group is None else {"group.id": c.group})
                if c.client == JAVA else
                {"role": "consumer", "name": c.name, "zone": c.zone, "client": LIBRDKAFKA,
                 "settings": layered_settings(
                     [("default", CONSUMER_DEFAULTS), ("harness", {"group.id": None}),
                      ("scenario", c.settings), ("harness", {**harness(c.zone), **member(c)})])}
                for c in spec.consumers]
    for pipe in spec.pipelines:  # a member is a consumer and a producer
        consuming = member_settings(pipe.group, "none" if pipe.guarantee == EXACTLY_ONCE else "sync",
                                    pipe.consumer_settings)
        producing: dict[str, Any] = {"enable.idempotence": True, "acks": "all"}
        if pipe.guarantee == EXACTLY_ONCE:
            producing["transactional.id"] = pipe.transactional_id or default_transactional_id(
                pipe.group, pipe.name)
        clients += [
            {"role": "consumer", "name": pipe.name, "zone": pipe.zone, "settings": layered_settings(
                [("default", CONSUMER_DEFAULTS), ("scenario", pipe.consumer_settings),
                 ("harness", {**harness(pipe.zone), **consuming})])},
            {"role": "producer", "name": pipe.name, "zone": pipe.zone, "settings": layered_settings(
                [("default", PRODUCER_DEFAULTS), ("harness", producing),
                 ("scenario", pipe.producer_settings), ("harness", harness(pipe.zone))])},
        ]
    return {
        "brokers": layered_settings([("topology", topology), ("scenario", scenario),
                                     ("release", {k: format_value(v) for k, v in extra.items()})]),
        # The scenario's own topic first, then each further topic (a pipeline's output).
        "topics": [topic_config(topics.topic, spec.topic, topic_defaults),
                   *(topic_config(topics.named[t.name][0], t.spec, topic_defaults) for t in spec.topics)],
        "clients": clients,
    }


# Topic settings whose default is a broker setting (Kafka's "server default property"),
# shown beside the topic so its effective durability settings read in one place.
TOPIC_BROKER_DEFAULTS = {
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "segment.bytes": "log.segment.bytes",
    "retention.ms": "log.retention.ms",
    "message.timestamp.type": "log.message.timestamp.type",
}


def topic_config(name: str, spec: TopicSpec, broker_defaults: Mapping[str, Any]) -> dict[str, Any]:
    """One topic as the effective configuration shows it: its size, and its settings over
    the broker defaults they replace."""
    return {"name": name, "partitions": spec.partition_count, "replication_factor": spec.replicas,
            "settings": layered_settings([("broker", broker_defaults), ("scenario", spec.config)])}


def layered_settings(layers: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Settings merged lowest layer first, as ``{**a, **b}`` merges them, one row per
    setting: its winning value, the layer it came from and, if it replaced a value of a
    lower layer, that value and layer. Values that are not JSON (a Python logger handed
    to librdkafka) are shown by name."""
    rows: dict[str, dict[str, Any]] = {}
    for source, settings in layers:
        for key, value in settings.items():
            row: dict[str, Any] = {"key": str(key), "value": shown(value), "source": source}
            if key in rows:
                row["replaced"], row["replaced_source"] = rows[key]["value"], rows[key]["source"]
            rows[key] = row
    return list(rows.values())


def shown(value: Any) -> Any:
    """A setting's value as JSON: plain values as they are; an object by its type and
    name (``Logger kafka-chaos.attempts.pa``), since its repr would be noise."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): shown(v) for k, v in value.items()}
    name = getattr(value, "name", None) or getattr(value, "__qualname__", None)
    return f"{type(value).__name__} {name}" if isinstance(name, str) else type(value).__name__
