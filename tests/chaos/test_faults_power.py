"""Power loss on a real cluster: a broker keeps only what its JVM made durable.

Two single-replica topics on broker 0, so no other replica can cover what it loses: one
with Kafka's default flush settings (the broker never fsyncs an active segment on its
own), one with ``flush.messages=1`` (every append fsynced before the produce is
answered). Both take the same acknowledged records; then broker 0 loses power. After it
starts again, what each partition holds is read from the broker (its high watermark and
the records themselves): the default topic lost every acknowledged record (caught,
required), the flushed one none. A plain ``kill -9`` of the same broker after the same
writes to a third such topic shows that a process death alone loses nothing: the page
cache survives it.

ZooKeeper fsyncs its transaction log before it acknowledges a write (``forceSync``, on by
default), so a power loss of the whole ensemble at once loses no acknowledged znode. Its
snapshots are another matter: only a follower syncs the snapshot it is sent, so after the
power loss a node may hold logs without a snapshot, which ZooKeeper refuses to start on
(the test asserts which nodes do, from their journals, and that the logs they replay
instead hold every acknowledged znode).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from kazoo.client import KazooClient

from faults import BrokerId, EventLog, Kill, PowerLoss
from faults.durability import durable_sizes
from faults.power import NO_SNAPSHOT
from faults.targets import AllZooKeepers
from faults.waiting import wait_until
from harness.cluster.lifecycle import Cluster
from harness.workload.clients import make_consumer, make_producer, send_batch
from tests.support.trickle import unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]

RECORDS = 200
# A client whose metadata is stale after a broker's restart hears these until it refreshes;
# the broker itself answers "unknown" until it has applied the controller's LeaderAndIsr,
# and a new client whose first metadata came from a broker that had not yet learned the
# partition says so locally (_UNKNOWN_PARTITION), for a moment after the heal. On KRaft a
# broker that has not yet registered again is left out of a Metadata answer's broker list,
# and librdkafka then drops its connection to it, failing the request in flight
# (_DESTROY_BROKER).
_STALE = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError._TRANSPORT,
          KafkaError._TIMED_OUT, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
          KafkaError._DESTROY_BROKER}


def _held(cluster: Cluster, topic: str) -> tuple[int, int]:
    """(high watermark, records read) of partition 0, through zone a's clients, once
    the metadata shows broker 0 leading it again (a restarted broker serves before the
    controller has made it leader of a partition with no other replica)."""
    wait_until(lambda: cluster.state([topic]).topic(topic)[0].leader == 0, 60, f"broker 0 leading {topic}-0")
    consumer = make_consumer(cluster, "a", {"group.id": f"power-{topic}", "enable.auto.commit": False})
    try:
        high = _high_watermark(consumer, topic)
        consumer.assign([TopicPartition(topic, 0, 0)])
        read = 0
        while read < high:
            msg = consumer.poll(5)
            if msg is None:
                break
            if msg.error() is None:
                read += 1
        return int(high), read
    finally:
        consumer.close()


def _high_watermark(consumer: Consumer, topic: str, timeout_s: float = 30.0) -> int:
    """Partition 0's high watermark, asked again while the client's metadata still names
    no leader or an old one."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
        except KafkaException as err:
            error = err.args[0]
            if time.monotonic() > deadline or not (error.retriable() or error.code() in _STALE):
                raise
            time.sleep(1)


def _acknowledged(cluster: Cluster, topic: str) -> int:
    producer = make_producer(cluster, "a", {"acks": "all", "linger.ms": 5})
    tally = send_batch(producer, topic, RECORDS, prefix=topic, timeout_s=60)
    return len(tally.acked)


@pytest.mark.core(strikes=("power_loss", "kill"))
def test_a_power_loss_takes_what_was_never_synced_and_a_kill_takes_nothing(
    cluster: Cluster, fault_log: EventLog
) -> None:
    default, flushed = unique_topic("power-default"), unique_topic("power-flushed")
    cluster.create_topic(default, assignment={0: [0]})
    cluster.create_topic(flushed, assignment={0: [0]}, config={"flush.messages": 1})
    assert _acknowledged(cluster, default) == RECORDS
    assert _acknowledged(cluster, flushed) == RECORDS

    power = PowerLoss(BrokerId(0))
    power.inject(cluster, fault_log)
    (cuts,) = power.cuts.values()
    touched = {c.path for c in cuts if c.path.endswith(".log")}
    power.heal(cluster, fault_log)
    injected = next(e for e in reversed(fault_log.events) if e.action == "inject")
    print(f"\npower loss: {injected.outcome}")
    assert any(f"/{default}-0/" in path for path in touched), touched
    assert not any(f"/{flushed}-0/" in path for path in touched), touched
    assert _held(cluster, default) == (0, 0), "the default topic's unsynced records must be gone"
    assert _held(cluster, flushed) == (RECORDS, RECORDS), "every fsynced record must survive"

    # The same writes and a plain kill -9 instead: the page cache outlives the process.
    # (A new topic: a broker restarted after an unclean shutdown syncs what it recovered,
    # so the records written before the power loss above are all durable by now.)
    killed = unique_topic("power-killed")
    cluster.create_topic(killed, assignment={0: [0]})
    assert _acknowledged(cluster, killed) == RECORDS
    kill = Kill(BrokerId(0))
    kill.inject(cluster, fault_log)
    kill.heal(cluster, fault_log)
    assert _held(cluster, killed) == (RECORDS, RECORDS), "kill -9 alone must lose nothing"


ZNODES = 300


def _zk_client(cluster: Cluster) -> KazooClient:
    client = KazooClient(hosts=cluster.zookeeper.hosts(), timeout=10.0)
    client.start(timeout=60)
    return client


def _synced(journal: list[str], name: str) -> bool:
    """Whether the node's journal shows a file of this kind (``/log.``, ``/snapshot.``)
    made durable with something in it."""
    return any(name in path and size > 0 for path, size in durable_sizes(journal).items())


@pytest.mark.metadata("zookeeper")
def test_zookeeper_keeps_every_acknowledged_write_through_a_power_loss_of_the_whole_ensemble(
    cluster: Cluster, fault_log: EventLog
) -> None:
    """Every node fsyncs its transaction log before acknowledging, so the ensemble
    serves every acknowledged znode again. A node whose journal shows no synced snapshot
    (only a follower syncs the snapshot it is sent; in a fresh ensemble that may be no
    node) is left with logs and no snapshot, which ZooKeeper refuses to start on; the
    heal starts it once trusting an empty snapshot, so it replays its logs, and says so."""
    root = f"/{unique_topic('kafka-chaos-power')}"
    client = _zk_client(cluster)
    try:  # each create returns once a quorum has logged it: acknowledged
        for i in range(ZNODES):
            client.create(f"{root}/n{i:04d}", b"x" * 100, makepath=True)
    finally:
        client.stop()
        client.close()

    power = PowerLoss(AllZooKeepers())
    power.inject(cluster, fault_log)
    ensemble = sorted(power.cuts)
    assert ensemble == sorted(z.name for z in cluster.topology.zookeepers)
    journals = {node: cluster.disks.journal(node) for node in ensemble}  # read while dark
    assert all(_synced(journals[node], "/log.") for node in ensemble), "each node synced its log"
    with_snapshot = [node for node in ensemble if _synced(journals[node], "/snapshot.")]
    without = [node for node in ensemble if node not in with_snapshot]
    print(f"\nZooKeeper power loss: synced snapshot on {with_snapshot}, none on {without}")

    power.heal(cluster, fault_log)  # the power back everywhere at once; every node serving
    healed = next(e for e in reversed(fault_log.events) if e.action == "heal")
    print(f"ZooKeeper back: {healed.outcome}")
    for node in ensemble:  # the heal says which node refused to start for want of a snapshot
        refused = f"{node} refused to start ({NO_SNAPSHOT}" in healed.outcome
        assert refused == (node in without), healed.outcome

    client = _zk_client(cluster)
    try:
        kept = client.get_children(root) if client.exists(root) else []
    finally:
        client.stop()
        client.close()
    assert len(kept) == ZNODES, f"{ZNODES - len(kept)} acknowledged znode(s) lost"
