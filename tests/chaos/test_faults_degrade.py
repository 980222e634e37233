"""Link degradations that slow a zone's clients without cutting them: a bandwidth cap,
a stream sliced into small delayed pieces, and connections whose close is delayed. Each
is held to what it does on a real cluster: the toxic sits on exactly the links it
selected and on none after its heal, every record written through it arrives whole, and
where the toxic sets a rate the writes through it cannot beat that rate."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from faults import EventLog, build_fault
from harness.cluster.lifecycle import Cluster
from harness.workload.clients import make_consumer, make_producer, read_values
from tests.support.trickle import unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]

RECORDS = 48
RECORD_BYTES = 4096
PAYLOAD_KB = RECORDS * RECORD_BYTES / 1024
ZONE_A_CLIENTS = {"isolate": {"zone_clients": "a"}}
# A bandwidth cap of 24 KB/s: the 192 KB batch needs at least 8 s through it.
BANDWIDTH = {"fault": "bandwidth", "rate_kb_s": 24}
# Slices of about 256 bytes, each held 2 ms: at least 1.5 s for the batch, one way.
SLICER = {"fault": "slicer", "average_size": 256, "size_variation": 64, "delay_us": 2000}
SLOW_CLOSE = {"fault": "slow_close", "delay_ms": 3000}


def least_time_s(spec: dict[str, Any]) -> float:
    """The shortest time the batch can cross the degraded link, from the toxic's own
    settings (zero for a toxic that sets no rate)."""
    if spec["fault"] == "bandwidth":
        return PAYLOAD_KB / spec["rate_kb_s"]
    if spec["fault"] == "slicer":
        return RECORDS * RECORD_BYTES / spec["average_size"] * spec["delay_us"] / 1e6
    return 0.0


def write(producer: Producer, topic: str, values: list[bytes]) -> tuple[int, float]:
    """Write ``values`` with acks=all and wait for every report: (acknowledged, seconds)."""
    acked = 0
    failed: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal acked
        if err is None:
            acked += 1
        else:
            failed.append(str(err))

    started = time.monotonic()
    for value in values:
        producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
        producer.poll(0)
    left = producer.flush(300)
    assert left == 0 and not failed, f"{left} unreported, failures {failed[:3]}"
    return acked, time.monotonic() - started


@pytest.mark.parametrize("spec", [
    pytest.param(s, id=str(s["fault"]), marks=pytest.mark.core(strikes=(s["fault"],)))
    for s in (BANDWIDTH, SLICER, SLOW_CLOSE)])
def test_a_degraded_zone_keeps_every_record_whole_at_no_more_than_the_toxics_rate(
    cluster: Cluster, fault_log: EventLog, spec: dict[str, Any]
) -> None:
    topic = unique_topic(spec["fault"].replace("_", "-"))
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    # Long enough for the batch through the slowest toxic here, with room for a loaded
    # machine: a send that times out would count as a failure of the toxic's.
    # Each request may take as long as the whole batch (the harness's 5 s request timeout
    # would retry a slow request for ever).
    patience_ms = int((4 * least_time_s(spec) + 60) * 1000)
    settings = {"acks": "all", "compression.type": "none", "linger.ms": 5, "message.timeout.ms": patience_ms,
                "request.timeout.ms": patience_ms, "socket.timeout.ms": patience_ms}
    control = make_producer(cluster, "b", settings)
    slowed = make_producer(cluster, "a", settings)
    # Connections open before the fault, so the batch measures the toxic, not a reconnect.
    assert write(slowed, topic, [b"warm-a"])[0] == 1 and write(control, topic, [b"warm-b"])[0] == 1

    fault = build_fault({**spec, "links": ZONE_A_CLIENTS})
    links = fault.inject(cluster, fault_log)
    proxies = cluster.proxies.state()
    carrying = sorted(name for name, proxy in proxies.items()
                      if any(t["type"] == spec["fault"] for t in proxy.get("toxics", [])))
    assert carrying == sorted(links) and links and all(link.startswith("client-a->") for link in links), (
        carrying, links)

    values_a = [f"a-{i}-".encode() + os.urandom(RECORD_BYTES // 2).hex().encode()[: RECORD_BYTES - 8]
                for i in range(RECORDS)]
    values_b = [f"b-{i}-".encode() + os.urandom(RECORD_BYTES // 2).hex().encode()[: RECORD_BYTES - 8]
                for i in range(RECORDS)]
    acked_a, took_a = write(slowed, topic, values_a)
    acked_b, took_b = write(control, topic, values_b)
    fault.heal(cluster, fault_log)
    assert cluster.proxies.damaged() == [], "the heal must take every toxic it added away"

    reader = make_consumer(cluster, "a")
    try:
        read = read_values(reader, topic, [0], 2 + 2 * RECORDS, timeout_s=60)
    finally:
        reader.close()
    slowed.flush(10)
    control.flush(10)
    least = least_time_s(spec)
    print(f"\n{fault.describe()} on {len(links)} links: zone a wrote {PAYLOAD_KB:.0f} KB in {took_a:.2f} s "
          f"(at least {least:.2f} s by the toxic), zone b in {took_b:.2f} s")
    assert acked_a == acked_b == RECORDS
    assert set(values_a) | set(values_b) <= set(read), "a record written through the toxic arrived changed"
    assert took_a >= least * 0.9, f"{took_a:.2f} s is faster than the toxic allows ({least:.2f} s)"
