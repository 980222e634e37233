"""A topic's settings changed at run time, and put back by the heal, on a real cluster."""

from __future__ import annotations

import pytest

from faults import EventLog, TopicConfig
from harness.cluster.lifecycle import Cluster
from harness.workload.clients import make_producer, send_batch
from tests.support.trickle import unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]

# Each send waits this long for its acknowledgement before it counts as failed.
TIMEOUT_MS = 5000


@pytest.mark.core(strikes=("topic_config",))
def test_a_min_isr_above_the_replicas_refuses_acks_all_writes_until_the_heal_puts_it_back(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("config")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    producer = make_producer(cluster, "a", {"acks": "all", "message.timeout.ms": TIMEOUT_MS})
    timeout_s = TIMEOUT_MS / 1000 + 5
    before = send_batch(producer, topic, 20, prefix="before", timeout_s=timeout_s)
    # Three replicas can never make four in sync: every acks=all write is refused.
    raised = TopicConfig(topic, {"min.insync.replicas": 4})
    raised.inject(cluster, fault_log)
    during = send_batch(producer, topic, 20, prefix="during", timeout_s=timeout_s)
    raised.heal(cluster, fault_log)
    after = send_batch(producer, topic, 20, prefix="after", timeout_s=timeout_s)
    print(f"\nmin.insync.replicas=4 on 3 replicas: {len(during.acked)} of 20 acknowledged "
          f"({sorted(set(during.failed.values()))}); before {len(before.acked)}, after the heal "
          f"{len(after.acked)}")
    assert len(before.acked) == 20 and len(after.acked) == 20
    assert not during.acked and len(during.failed) == 20, "writes went through a min.insync.replicas of 4"
