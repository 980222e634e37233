"""The 3-AZ cluster itself, proven on real containers: it comes up, carries messages,
and its fabric cuts exactly what it is told to cut."""

from __future__ import annotations

import time
import uuid

import pytest

from harness.cluster.fabric import LinkKind
from harness.cluster.lifecycle import Cluster
from harness.cluster.waiting import wait_until
from harness.workload.clients import can_produce, make_consumer, make_producer, read_values, send_batch

pytestmark = pytest.mark.chaos


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.core
@pytest.mark.smoke
def test_three_az_cluster_comes_up_and_carries_messages_across_zones(cluster: Cluster) -> None:
    state = cluster.state()
    assert state.live_brokers == (0, 1, 2)
    assert state.controller is not None
    assert cluster.topology.node_of_id(state.controller) in cluster.topology.controller_candidates
    assert state.controller_epoch is not None and state.controller_epoch >= 1
    modes = cluster.quorum_roles()
    assert sorted(str(mode) for mode in modes.values()) == ["follower", "follower", "leader"]

    topic = _topic("carry")
    cluster.create_topic(topic, partitions=6, replication_factor=3)
    partitions = cluster.state([topic]).topic(topic)
    assert [p.partition for p in partitions] == list(range(6))
    for p in partitions:
        assert p.leader in (0, 1, 2)
        assert set(p.isr) == {0, 1, 2} == set(p.replicas)
    # Brokers sit in their zones (broker.rack), so replicas span all three zones.
    assert {b.broker_id: b.zone for b in cluster.topology.brokers} == {0: "a", 1: "b", 2: "c"}

    tally = send_batch(make_producer(cluster, "a", {"acks": "all"}), topic, 10_000)
    assert len(tally.acked) == 10_000, f"failed sends: {list(tally.failed.items())[:5]}"
    values = read_values(make_consumer(cluster, "b"), topic, list(range(6)), expected=10_000)
    assert len(values) == 10_000
    assert set(values) == set(tally.acked)


@pytest.mark.core
def test_cutting_one_directed_link_drops_only_that_follower_from_only_that_leaders_isrs(
    cluster: Cluster,
) -> None:
    topic = _topic("link")
    cluster.create_topic(topic, partitions=6, replication_factor=3)
    before = cluster.state([topic]).topic(topic)
    led_by_0 = {p.partition for p in before if p.leader == 0}
    assert led_by_0, "replica placement gives broker 0 leadership of some partitions"
    link = cluster.fabric.one("kafka-1", "kafka-0", LinkKind.REPLICATION)
    lag_ms = int(cluster.topology.broker_settings["replica.lag.time.max.ms"])

    cluster.proxies.set_enabled(link.name, False)
    # Keep producing so the leader has something broker 1 fails to fetch.
    producer = make_producer(cluster, "a")

    def broker_1_left_isrs_of_broker_0() -> bool:
        send_batch(producer, topic, 20, prefix=f"during-{time.monotonic()}")
        state = {p.partition: p for p in cluster.state([topic]).topic(topic)}
        return all(1 not in state[p].isr for p in led_by_0)

    waited = wait_until(broker_1_left_isrs_of_broker_0, lag_ms / 1000 * 4 + 10,
                        "broker 1 leaving the ISRs broker 0 leads", interval_s=0.25)
    print(f"broker 1 left broker 0's ISRs {waited:.1f} s after the cut (lag time {lag_ms} ms)")
    after = {p.partition: p for p in cluster.state([topic]).topic(topic)}
    for partition, state in after.items():
        assert state.leader == next(p.leader for p in before if p.partition == partition)
        if partition in led_by_0:
            assert set(state.isr) == {0, 2}
        else:
            assert set(state.isr) == {0, 1, 2}, f"partition {partition} lost a replica: {state}"
    for zone in ("a", "b", "c"):
        assert can_produce(cluster, zone, topic), f"a client in zone {zone} stopped working"

    cluster.proxies.set_enabled(link.name, True)
    wait_until(
        lambda: all(set(p.isr) == {0, 1, 2} for p in cluster.state([topic]).topic(topic)),
        30,
        "broker 1 rejoining every ISR",
        interval_s=0.25,
    )


def test_cutting_a_zones_client_links_fails_only_that_zones_clients(cluster: Cluster) -> None:
    topic = _topic("zoneclients")
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    for link in cluster.fabric.clients_of("c"):
        cluster.proxies.set_enabled(link.name, False)
    assert not can_produce(cluster, "c", topic, timeout_s=5), "zone c client should be cut off"
    assert can_produce(cluster, "a", topic), "zone a client should be unaffected"
    # The cut is on the client side only: the cluster itself stays whole.
    state = cluster.state([topic])
    assert state.live_brokers == (0, 1, 2)
    assert all(p.isr_full for p in state.topic(topic))
