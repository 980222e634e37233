"""Kafka clients placed in a zone: confluent-kafka producers, consumers and quick checks.

A client in zone x bootstraps through zone x's proxies and so only ever learns zone x's
advertised addresses (see :mod:`harness.cluster.fabric`); cutting a zone's client links cuts
exactly that zone's clients. Timeouts default short so a chaos test notices failure in
seconds rather than in Kafka's default two minutes.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from harness.cluster.waiting import Problems, WaitTimeout, wait_until_clear


class ZonePlacement(Protocol):
    """Anything that can give a zone's bootstrap list (a running Cluster does)."""

    def bootstrap_servers(self, zone: str) -> str: ...


PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": False,
    "linger.ms": 5,
    "message.timeout.ms": 15000,
    "request.timeout.ms": 5000,
    "socket.timeout.ms": 5000,
    "metadata.max.age.ms": 5000,
    "topic.metadata.refresh.interval.ms": 2000,
    "reconnect.backoff.max.ms": 1000,
    "log_level": 3,  # librdkafka logs every refused connection at info; faults make many
}

CONSUMER_DEFAULTS: dict[str, Any] = {
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "session.timeout.ms": 10000,
    "socket.timeout.ms": 5000,
    "metadata.max.age.ms": 5000,
    "topic.metadata.refresh.interval.ms": 2000,
    "reconnect.backoff.max.ms": 1000,
    "enable.partition.eof": False,
    "log_level": 3,
}


def make_producer(placement: ZonePlacement, zone: str, settings: Mapping[str, Any] | None = None) -> Producer:
    config = {**PRODUCER_DEFAULTS, **(settings or {}),
              "bootstrap.servers": placement.bootstrap_servers(zone),
              "client.id": f"kafka-chaos-producer-{zone}"}
    return Producer(config)


def make_consumer(placement: ZonePlacement, zone: str, settings: Mapping[str, Any] | None = None) -> Consumer:
    config = {**CONSUMER_DEFAULTS, "group.id": f"kafka-chaos-{uuid.uuid4().hex[:8]}",
              **(settings or {}),
              "bootstrap.servers": placement.bootstrap_servers(zone),
              "client.id": f"kafka-chaos-consumer-{zone}"}
    return Consumer(config)


def isolation_level(settings: Mapping[str, Any]) -> str:
    """The isolation.level a consumer with these settings reads at: librdkafka's default is
    read_committed, as the Java client's is not."""
    return str(settings.get("isolation.level", "read_committed"))


def decode_value(value: bytes | None) -> str | None:
    """A record's value as the message id it carries; None when it is not text."""
    if value is None:
        return None
    try:
        return value.decode()
    except UnicodeDecodeError:
        return None


@dataclass
class SendTally:
    """What a batch of sends came to, as the producer saw it."""

    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> (partition, offset)
    failed: dict[bytes, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.acked) + len(self.failed)


def send_batch(
    producer: Producer,
    topic: str,
    count: int,
    prefix: str = "m",
    partition: int | None = None,
    timeout_s: float = 60.0,
) -> SendTally:
    """Send ``count`` distinct values and wait for every delivery report."""
    tally = SendTally()

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        value = msg.value() or b""
        if err is None:
            tally.acked[value] = (int(msg.partition() or 0), int(msg.offset() or 0))
        else:
            tally.failed[value] = err.name()

    for i in range(count):
        value = f"{prefix}-{i}".encode()
        while True:
            try:
                if partition is None:
                    producer.produce(topic, value=value, on_delivery=on_delivery)
                else:
                    producer.produce(topic, value=value, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    started = time.monotonic()

    def unreported() -> Problems:
        if tally.total < count:
            producer.poll(0.1)  # serves the delivery reports
        left = count - tally.total
        return f"{left} of {count} delivery reports outstanding" if left > 0 else None

    with contextlib.suppress(WaitTimeout):  # the tally says what was acknowledged by then
        wait_until_clear(unreported, timeout_s, f"the delivery reports of {count} records to {topic}",
                         interval_s=0)
    producer.flush(max(0.0, timeout_s - (time.monotonic() - started)))
    return tally


def read_values(
    consumer: Consumer,
    topic: str,
    partitions: list[int],
    expected: int,
    timeout_s: float = 60.0,
) -> list[bytes]:
    """Read from the beginning of ``partitions`` until ``expected`` records or the timeout."""
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    values: list[bytes] = []

    def unread() -> Problems:
        msg = consumer.poll(0.5) if len(values) < expected else None
        error = None if msg is None else msg.error()
        if error is not None and not (error.retriable() or error.code() == KafkaError._PARTITION_EOF):
            raise KafkaException(error)
        if msg is not None and error is None:
            values.append(msg.value() or b"")
        return f"{len(values)} of {expected} records read" if len(values) < expected else None

    with contextlib.suppress(WaitTimeout):  # the records read by then are the answer
        wait_until_clear(unread, timeout_s, f"{expected} records of {topic}", interval_s=0)
    return values


def can_produce(placement: ZonePlacement, zone: str, topic: str, timeout_s: float = 8.0) -> bool:
    """True when a fresh client in ``zone`` gets one acks=all record acknowledged in time."""
    producer = make_producer(placement, zone, {"message.timeout.ms": int(timeout_s * 1000),
                                               "request.timeout.ms": int(timeout_s * 1000)})
    tally = send_batch(producer, topic, 1, prefix=f"probe-{zone}-{uuid.uuid4().hex[:6]}",
                       timeout_s=timeout_s + 2)
    return len(tally.acked) == 1
