"""Helpers shared by the network-fault scenarios (S7-S12).

Network scenarios depend on *where* the controller sits far more than process faults do:
in Kafka 2.7+ a partition leader changes its ISR by sending AlterPartition to the
controller over the broker-to-broker links, and the controller tells brokers about new
leaders over the same links. A cut that happens to include the controller's links tests
a different scenario than the one named. So these scenarios put the controller on a
chosen broker first (:func:`place_controller`), deterministically, instead of depending
on which broker won the race at cluster start or after the previous test.

The other helpers read what the clients lived through from the closed history (per
producer, i.e. per zone), and what each broker believes from its own metadata
(:meth:`Cluster.broker_view`), the two views these scenarios compare with ZooKeeper.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
from confluent_kafka import Producer

from faults import BrokerId, Degrade, DeleteController, EventLog, Links, Zone
from faults.toxics import latency
from harness.cluster.fabric import LinkKind, client_name
from harness.cluster.lifecycle import Cluster
from harness.cluster.waiting import CLUSTER_SETTLING, WaitTimeout, wait_until
from harness.cluster.zkstate import PartitionState
from harness.workload.clients import PRODUCER_DEFAULTS, SendTally, send_batch

# Latency added to the ZooKeeper links of the brokers that must NOT win a controller
# election: the watch on /controller fires 2 x this later for them, so the chosen broker
# creates /controller first. Far below the 6 s session timeout, so no session is at risk.
_HANDICAP_MS = 400


def broker_of(node: str) -> int:
    """``kafka-2`` -> 2."""
    return int(node.removeprefix("kafka-"))


@dataclass(frozen=True)
class ControllerPlacement:
    """Where the controller ended up, and what it cost to put it there."""

    broker: int
    epoch: int
    elections: int  # how many /controller deletions it took (0: it was already there)


def place_controller(cluster: Cluster, broker: int, attempts: int = 4) -> ControllerPlacement:
    """Make ``broker`` the controller before a scenario starts.

    Deleting ``/controller`` makes every broker race to recreate it; handicapping the
    other brokers' ZooKeeper links with latency makes ``broker`` win that race, so the
    placement does not depend on luck. A few attempts cover a loaded machine.
    """
    log = EventLog()
    state = cluster.state([])
    elections = 0
    others = [b.broker_id for b in cluster.topology.brokers if b.broker_id != broker]
    while state.controller != broker:
        if elections >= attempts:
            raise AssertionError(f"controller stayed on {state.controller} after {elections} elections")
        handicaps = [Degrade(Links(BrokerId(other), Zone(zone), LinkKind.ZK_SESSION), latency(_HANDICAP_MS))
                     for other in others for zone in cluster.topology.zones]
        try:
            for handicap in handicaps:
                handicap.inject(cluster, log)
            DeleteController().inject(cluster, log)
            elections += 1
        finally:
            for handicap in handicaps:
                with contextlib.suppress(Exception):
                    handicap.heal(cluster, log)
        state = cluster.state([])
    assert state.controller_epoch is not None
    # Every broker must know the controller before the scenario starts. The harness's
    # long-lived AdminClient may still address a controller from before this or an
    # earlier test's election: its CreateTopics would then fail with NOT_CONTROLLER
    # (librdkafka does not retry that), so drop it and let Cluster.admin build a fresh one.
    wait_for(lambda: all(controller_seen_by(cluster, b.broker_id) == broker
                         for b in cluster.topology.brokers), 30, "every broker naming the controller")
    cluster._admin = None
    return ControllerPlacement(broker, state.controller_epoch, elections)


def partition_state(cluster: Cluster, topic: str, partition: int) -> PartitionState:
    """The partition as ZooKeeper holds it now."""
    state = cluster.state([topic]).partitions.get((topic, partition))
    assert state is not None, f"{topic}-{partition} is not in ZooKeeper"
    return state


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until ``predicate`` holds; fails the test (an AssertionError, since a state
    Kafka never reached is a finding, not a harness error) with ``what`` and the last
    error when it never does. Reads that fail while the cluster settles (a kazoo read while
    ZooKeeper has lost quorum, a broker that does not answer) count as "not yet"."""
    try:
        return wait_until(predicate, timeout_s, what, interval_s=0.1, transient=CLUSTER_SETTLING)
    except WaitTimeout as err:
        raise AssertionError(str(err)) from err


def leader_seen_by(cluster: Cluster, broker: int, topic: str, partition: int) -> int | None:
    """Who ``broker`` says leads the partition (its own metadata cache); None if it does not answer."""
    try:
        return cluster.broker_view(broker, [topic]).leader_of(topic, partition)
    except OSError:
        return None


def controller_seen_by(cluster: Cluster, broker: int) -> int | None:
    """Whom ``broker`` names as controller in its metadata; None if it does not answer."""
    try:
        return cluster.broker_view(broker, []).controller
    except OSError:
        return None


@dataclass(frozen=True)
class Mark:
    """A moment of the run on both clocks: wall time matches the history, monotonic measures."""

    wall: float
    mono: float

    @classmethod
    def now(cls) -> Mark:
        return cls(time.time(), time.monotonic())


def examples(verdict_dict: dict[str, object], kind: str) -> list[dict[str, object]]:
    """Every example of ``kind`` in a verdict's JSON form, over all partitions."""
    found: list[dict[str, object]] = []
    partitions = verdict_dict.get("partitions", [])
    assert isinstance(partitions, list)
    for part in partitions:
        found.extend(part.get("examples", {}).get(kind, []))
    return found


def final_log_copies(history_dir: Path, message_ids: Iterable[str]) -> dict[str, int]:
    """How many times each message id is on the final log of a closed history."""
    wanted = set(message_ids)
    table = pq.read_table(history_dir / "final_log", columns=["message_id"])
    counts = dict.fromkeys(wanted, 0)
    for message_id in table.column("message_id").to_pylist():
        if message_id in counts:
            counts[message_id] += 1
    return counts


def isr_of(cluster: Cluster, topic: str, partitions: Iterable[int]) -> dict[int, tuple[int, ...]]:
    """Each partition's ISR as ZooKeeper holds it."""
    state = cluster.state([topic])
    return {p: state.partitions[(topic, p)].isr for p in partitions}


def all_in_isr(cluster: Cluster, topic: str, partitions: Sequence[int], broker: int) -> bool:
    return all(broker in isr for isr in isr_of(cluster, topic, partitions).values())


def none_in_isr(cluster: Cluster, topic: str, partitions: Sequence[int], broker: int) -> bool:
    return all(broker not in isr for isr in isr_of(cluster, topic, partitions).values())


def single_broker_bootstrap(cluster: Cluster, zone: str, broker: int) -> str:
    """The one address through which a client in ``zone`` reaches ``broker``: a client
    bootstrapped here takes its first metadata from that broker alone."""
    link = cluster.fabric.one(client_name(zone), f"kafka-{broker}", LinkKind.CLIENT)
    return f"127.0.0.1:{cluster.host_ports[link.name]}"


def probe(bootstrap: str, topic: str, partition: int, count: int, timeout_s: float) -> SendTally:
    """Send ``count`` records with a fresh acks=all producer that knows only ``bootstrap``.

    librdkafka opens connections only to brokers it needs (sparse connections) and
    refreshes metadata from a broker it is already connected to, so a producer
    bootstrapped at one broker keeps using that broker's metadata: exactly the
    "client that takes its metadata from the stale broker" of S8.
    """
    ms = int(timeout_s * 1000)
    producer = Producer({**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap,
                         "client.id": f"kafka-chaos-probe-{uuid.uuid4().hex[:6]}",
                         "message.timeout.ms": ms, "request.timeout.ms": min(ms, 5000)})
    tally = send_batch(producer, topic, count, prefix=f"probe-{uuid.uuid4().hex[:6]}",
                       partition=partition, timeout_s=timeout_s + 5)
    if len(producer) == 0:  # closed now, so it does not retry against a removed cluster
        producer.close()
    return tally
