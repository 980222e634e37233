"""A topic's settings changed at run time, and put back by the heal, on a real cluster."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, Message, Producer

from faults import EventLog, TopicConfig
from harness.cluster.lifecycle import Cluster
from harness.workload.clients import make_producer
from tests.support.trickle import unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]

RECORD_BYTES = 4096
SMALLEST = 1024  # the topic's max.message.bytes while the fault is in force
# How long a changed setting may take to reach the partition's leader: the admin API
# answers once the change is stored, and each broker applies it when ZooKeeper's change
# notification reaches it.
IN_FORCE_WITHIN_S = 60.0


def write(producer: Producer, topic: str, count: int, prefix: str) -> tuple[int, set[str]]:
    """``count`` records of RECORD_BYTES: how many were acknowledged, and the errors of
    the others."""
    acked = 0
    errors: set[str] = set()

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        nonlocal acked
        if err is None:
            acked += 1
        else:
            errors.add(err.name())

    for i in range(count):
        value = f"{prefix}-{i}-".encode().ljust(RECORD_BYTES, b"x")
        producer.produce(topic, value=value, on_delivery=on_delivery)
    assert producer.flush(60) == 0, "a delivery report never came"
    return acked, errors


def until(accepted: bool, producer: Producer, topic: str) -> float:
    """Write one record at a time until writes are ``accepted`` (or refused); seconds taken."""
    started = time.monotonic()
    probe = 0
    while (write(producer, topic, 1, f"probe-{probe}")[0] == 1) != accepted:
        still = "refused" if accepted else "accepted"
        assert time.monotonic() - started < IN_FORCE_WITHIN_S, (
            f"{RECORD_BYTES}-byte writes still {still} {IN_FORCE_WITHIN_S:.0f} s after the change")
        probe += 1
        time.sleep(0.2)
    return time.monotonic() - started


@pytest.mark.core(strikes=("topic_config",))
def test_a_smaller_max_message_bytes_refuses_larger_records_until_the_heal_puts_it_back(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("config")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    producer = make_producer(cluster, "a", {"acks": "all", "compression.type": "none"})
    before = write(producer, topic, 20, "before")
    shrunk = TopicConfig(topic, {"max.message.bytes": SMALLEST})
    shrunk.inject(cluster, fault_log)
    refused_after = until(False, producer, topic)
    during = write(producer, topic, 20, "during")
    shrunk.heal(cluster, fault_log)
    accepted_after = until(True, producer, topic)
    after = write(producer, topic, 20, "after")
    print(f"\nmax.message.bytes={SMALLEST}: {RECORD_BYTES}-byte records refused {refused_after:.1f} s after "
          f"the change, then {during[0]} of 20 acknowledged ({sorted(during[1])}); accepted again "
          f"{accepted_after:.1f} s after the heal; before {before[0]}, after {after[0]} of 20")
    assert before[0] == 20 and after[0] == 20
    assert during[0] == 0 and during[1] == {"MSG_SIZE_TOO_LARGE"}, during
