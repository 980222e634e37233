"""A full disk on a real broker under load: it shuts down, its partitions fail over,
nothing acknowledged is lost, and it rejoins once the disk is freed and it restarts.

The topology gives each broker a disk of ``broker_disk_mb``; ``fill_disk`` fills the
disk of the leader of partition 0 while an acks=all producer writes to a topic with RF 3
and min.insync.replicas=2. What is asserted comes from ZooKeeper (the broker leaving
/brokers/ids, leadership moving, the ISRs full again), the broker's own log (the cause:
"No space left on device"), Docker (the process exited) and the records read back.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition

from faults import EventLog, FillDisk, LeaderOf
from faults.nodes import session_timeout_s, wait_deregistered
from faults.waiting import wait_until
from harness.cluster.lifecycle import Cluster
from harness.workload.clients import make_consumer
from tests.support.trickle import Trickle, unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]


def _read_to_end(cluster: Cluster, topic: str, partitions: int, timeout_s: float = 120.0) -> set[bytes]:
    """Every record of the topic up to each partition's high watermark as it is now."""
    consumer = make_consumer(cluster, "b", {"group.id": f"read-{topic}", "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        read: set[bytes] = set()
        done: dict[int, int] = {}
        deadline = time.monotonic() + timeout_s
        while any(done.get(p, -1) + 1 < end for p, end in ends.items()) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            read.add(msg.value() or b"")
            done[int(msg.partition() or 0)] = int(msg.offset() or 0)
        short = {p: (done.get(p, -1) + 1, end) for p, end in ends.items() if done.get(p, -1) + 1 < end}
        assert not short, f"could not read {topic} to its end in {timeout_s:.0f} s: {short}"
        return read
    finally:
        consumer.close()


@pytest.mark.core(strikes=("fill_disk",))
def test_a_full_disk_stops_its_broker_loses_nothing_acknowledged_and_it_rejoins(
    cluster: Cluster, fault_log: EventLog
) -> None:
    assert cluster.topology.broker_disk_mb, "the topology must give brokers disks of a size"
    topic = unique_topic("disk")
    cluster.create_topic(topic, partitions=3, replication_factor=3, config={"min.insync.replicas": 2})
    leader = cluster.state([topic]).topic(topic)[0].leader
    node = cluster.topology.broker(leader).name
    fill = FillDisk(LeaderOf(topic, 0))
    settings = {"acks": "all", "enable.idempotence": True, "message.timeout.ms": 20000}
    with Trickle(cluster, topic, settings=settings, batch=20, interval_s=0.1) as writer:
        wait_until(lambda: len(writer.acked) >= 200, 60, "200 acknowledged writes before the fault")
        fill.inject(cluster, fault_log)
        written, free = fill.filled[node]
        assert free < 1 << 20, f"the disk must be full: {free} bytes left after {written}"
        # Its next append fails; Kafka takes the only log directory offline and stops.
        wait_deregistered(cluster, node, session_timeout_s(cluster) + 60)
        wait_until(lambda: cluster.node_status(node) != "running", 60, f"{node} stopping")
        log = cluster.container(node).logs().decode(errors="replace")
        assert "No space left on device" in log, log[-2000:]
        # The controller moves leadership once it has seen the broker leave /brokers/ids.
        wait_until(lambda: cluster.state([topic]).topic(topic)[0].leader not in (leader, -1),
                   session_timeout_s(cluster) + 30, f"p0 failing over from broker {leader}")
        before_heal = len(writer.acked)
        wait_until(lambda: len(writer.acked) >= before_heal + 100, 60, "acknowledgements with the disk full")
        fill.heal(cluster, fault_log)
        wait_until(lambda: all(p.isr and leader in p.isr for p in cluster.state([topic]).topic(topic)),
                   120, f"broker {leader} back in every ISR of {topic}")
    read = _read_to_end(cluster, topic, 3)
    lost = writer.acked - read
    print(f"\nfull disk on {node}: {written // (1 << 20)} MiB written; {len(writer.acked)} acknowledged, "
          f"{writer.failed} failed, {len(lost)} lost")
    assert not lost, f"{len(lost)} acknowledged record(s) missing, e.g. {sorted(lost)[:5]}"
