"""What the migration scenarios share: the workload that lives through the whole
migration, the topic, and the bounds taken from Kafka's settings."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

from harness.history import Rule
from harness.scenario.runner import ScenarioSpec, TopicSpec
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


def every_m_spec() -> list[ScenarioSpec]:
    """Every M scenario's spec, from each ``test_mNN_*.py`` module's ``mN_spec`` (for the
    unit tests that parse and spell them all)."""
    specs: list[ScenarioSpec] = []
    for module_path in sorted(Path(__file__).parent.glob("test_m[0-9][0-9]_*.py")):
        module = importlib.import_module(f"{__package__}.{module_path.stem}")
        makers = [getattr(module, name) for name in dir(module) if re.fullmatch(r"m[0-9]+_spec", name)]
        specs.extend(maker() for maker in makers)
    return specs
