"""S1 Single-replica topic, broker killed.

With replication factor 1 a partition is exactly one broker: kill -9 it and there is no
replica to fail over to. ZooKeeper shows the partition offline (leader -1, the ISR
keeping only the dead broker) from the moment the broker's session expires, sends to it
fail, and sends to the partitions of the other brokers are untouched. The data is not
lost, only unavailable: the broker's log survives the process, and the partitions come
back with it. The unavailability window is measured per partition, from ZooKeeper and
from the producers' acknowledgements.

Sends to the dead broker's partitions and to the others come from two producers, so a
queue of undeliverable messages for one set can never delay the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from faults import BrokerId, Kill
from faults.nodes import session_timeout_s
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios.conftest import await_partition, brief, offline_span, warm_up

pytestmark = pytest.mark.chaos

PARTITIONS = 6
# A 5 s delivery timeout (the harness default is 15 s): the dead partitions stay down
# longer than that, so their sends visibly fail instead of waiting out the outage in the
# producer's queue; no live partition ever needs that long.
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647, "message.timeout.ms": 5000}
# Retries may duplicate or reorder; unavailability must not lose anything acknowledged.
ACCEPT: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                           "duplicate": "any", "reordered": "any", "unseen": 0}
DOWN_AFTER_OFFLINE_S = 3.0
TIMEOUT_S = 30.0
START_TIMEOUT_S = 90.0


def spread_over_brokers(brokers: int) -> dict[int, list[int]]:
    """Partition p on broker p mod brokers: every broker holds the same number."""
    return {p: [p % brokers] for p in range(PARTITIONS)}


def test_s1_killing_a_broker_takes_exactly_its_single_replica_partitions_offline(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    victim = spare_brokers[0]
    assignment = spread_over_brokers(len(cluster.topology.brokers))
    dead = [p for p, replicas in assignment.items() if replicas == [victim]]
    live = [p for p in assignment if p not in dead]
    spec = ScenarioSpec(
        sample_interval_s=0.1,
        id="s1-single-replica-kill", title="S1 single-replica topic, broker killed",
        description=f"RF 1, {PARTITIONS} partitions spread over all brokers; kill -9 broker {victim} "
                    f"(not the controller), which holds partitions {dead}; restart it.",
        expected="Its partitions go offline (leader -1, ISR only the dead broker); sends to them fail, "
                 "sends to the others keep succeeding; after the restart nothing acknowledged is "
                 "missing. Unavailability reported per partition.",
        topic=TopicSpec(replication_factor=1, assignment=assignment),
        producers=(ProducerSpec("pdead", "a", PRODUCER, rate_per_s=60, partitions=dead),
                   ProducerSpec("plive", "a", PRODUCER, rate_per_s=120, partitions=live)),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT,
    )
    with scenario(spec) as run:
        zk = run.cluster_state
        topic = run.topic
        warm_up(run)
        run.settle(1)
        before = cluster.state([topic])
        kill = Kill(BrokerId(victim))
        run.inject(kill)
        killed = run.log.events[-1]
        for p in dead:
            _, offline = await_partition(zk, topic, p, lambda s: s.leader == -1, TIMEOUT_S, killed.mono,
                                         f"p{p} going offline")
            assert run.check(f"p{p} offline: leader -1, ISR only the dead broker {victim}",
                             offline.isr == (victim,), brief(offline))
        run.settle(DOWN_AFTER_OFFLINE_S)
        moved = [(p, s.partitions[(topic, p)]) for _, s in zk.between(killed.mono) for p in live]
        assert run.check(f"partitions {live} of the other brokers kept their leader throughout",
                         bool(moved) and all(state.leader == assignment[p][0] for p, state in moved),
                         f"{len(moved)} samples")

        run.heal(kill)
        restarted = run.log.events[-1]
        zk_windows: dict[int, float] = {}
        for p in dead:
            back_at, back = await_partition(zk, topic, p, lambda s: s.leader == victim, START_TIMEOUT_S,
                                            restarted.mono, f"p{p} back after the restart")
            span = offline_span(zk, topic, p, killed.mono)
            assert span is not None
            zk_windows[p] = back_at - killed.mono
            run.window(f"p{p} offline in ZooKeeper (leader -1)", span[1] - span[0])
            run.window(f"p{p} kill -9 to leader back in ZooKeeper", zk_windows[p])
            assert run.check(f"p{p} back with broker {victim} as leader, leader epoch rose",
                             back.leader_epoch > before.partitions[(topic, p)].leader_epoch, brief(back))
        run.settle(3)
        ended = time.time()
        verdict = run.finish()

        acks = ClientLog.of(run)
        gaps = {p: acks.partition_gap(p, killed.ts, ended) for p in assignment}
        for p in assignment:
            run.window(f"p{p} longest stretch without an acknowledged write", gaps[p])
        sends = {p: (verdict.findings.partition(topic, p) or pytest.fail(f"no findings for p{p}")).sends
                 for p in assignment}
        not_acked = {p: sends[p]["failed"] + sends[p]["unknown"] for p in assignment}
        assert run.check(f"sends to the dead partitions {dead} failed",
                         all(not_acked[p] > 0 for p in dead),
                         "; ".join(f"p{p} {sends[p]} errors {acks.errors.get(p, {})}" for p in dead))
        assert run.check(f"sends to the live partitions {live} all succeeded",
                         all(not_acked[p] == 0 for p in live),
                         "; ".join(f"p{p} {sends[p]}" for p in live))
        print(f"\nS1 kill -9 broker {victim}: counts {verdict.findings.counts()}")
        for p in assignment:
            where = "dead" if p in dead else "live"
            zk_part = f", ZooKeeper {zk_windows[p]:.1f} s" if p in zk_windows else ""
            print(f"  p{p} ({where}): no ack for {gaps[p]:.1f} s{zk_part}, sends {sends[p]}")
    assert verdict.passed, verdict.to_dict()["rules"]
    assert verdict.findings.counts()["lost"] == 0
    worst_live = max(gaps[p] for p in live)
    assert worst_live < session_timeout_s(cluster), f"live partitions stalled {worst_live:.1f} s"
    assert min(gaps[p] for p in dead) > 4 * worst_live, f"dead {gaps} vs live {worst_live:.1f} s"
    assert all(gaps[p] >= zk_windows[p] - 1.0 for p in dead), f"client {gaps} vs ZooKeeper {zk_windows}"
