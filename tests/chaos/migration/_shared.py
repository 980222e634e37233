"""What the migration scenarios share: the workload that lives through the whole
migration, the topic, and the bounds taken from Kafka's settings."""

from __future__ import annotations

from typing import Any

from harness.compose.scenario import ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec

RATE_PER_S = 100
IDEMPOTENT_PRODUCER = {"acks": "all", "enable.idempotence": True}
DURABLE_TOPIC = TopicSpec(partitions=3, replication_factor=3,
                          config={"min.insync.replicas": 2, "unclean.leader.election.enable": False})
PRODUCERS = (ProducerSpec("pa", "a", IDEMPOTENT_PRODUCER, rate_per_s=RATE_PER_S),)
CONSUMERS = (ConsumerSpec("cb", "b", group="migration-readers", commit="sync"),)
# An idempotent producer that lives through every roll writes each record once, in order.
NOTHING_LOST_OR_TWICE: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                                          "duplicate": 0, "reordered": 0, "unseen": 0}
DUAL_WRITE_HOLD_S = 10.0


def migration_spec(**fields: Any) -> ScenarioSpec:
    """An M scenario: the shared workload, topic and verdict, with ``fields`` (its id,
    text, migration, schedule and checks) over them."""
    shared: dict[str, Any] = {"topic": DURABLE_TOPIC, "producers": PRODUCERS, "consumers": CONSUMERS,
                              "expectations": NOTHING_LOST_OR_TWICE, "warmup_acked": 100, "min_acked": 1000}
    return ScenarioSpec(**{**shared, **fields})
