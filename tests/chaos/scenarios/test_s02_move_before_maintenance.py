"""S2 Moving single-replica partitions away before maintenance.

The remedy for S1: a replication-factor-1 partition lives on one broker, so before that
broker is stopped for maintenance its partitions are reassigned (the reassignment
admin path, ``/admin/reassign_partitions``) to other brokers and the move is awaited.
Afterwards the broker holds nothing of the topic and stopping it - here with kill -9,
the harshest stop, so a clean shutdown cannot be what hides a failure - costs no send
and no message.

The same two producers as S1 (one for the partitions that move, one for the rest) show
that even the moved partitions never fail, including across their leader change.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from faults import BrokerId, Kill, Reassign
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios.conftest import brief, warm_up

pytestmark = pytest.mark.chaos

PARTITIONS = 6
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
ACCEPT: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                           "duplicate": "any", "reordered": "any", "unseen": 0}
REASSIGN_TIMEOUT_S = 60.0
DEREGISTER_TIMEOUT_S = 30.0
# Far below the 6 s ZooKeeper session timeout: no stall may come from the dead broker.
MAX_STALL_S = 3.0


def test_s2_partitions_moved_off_a_broker_survive_its_kill_without_a_failed_send(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    victim = spare_brokers[0]
    assignment = {p: [brokers[p % len(brokers)]] for p in range(PARTITIONS)}
    moving = [p for p, replicas in assignment.items() if replicas == [victim]]
    others = [b for b in brokers if b != victim]
    # One moving partition to each other broker, so the load stays spread.
    targets = {p: others[i % len(others)] for i, p in enumerate(moving)}
    staying = [p for p in assignment if p not in moving]
    spec = ScenarioSpec(
        sample_interval_s=0.1,
        id="s2-move-before-maintenance", title="S2 moving single-replica partitions before maintenance",
        description=f"RF 1, {PARTITIONS} partitions spread over all brokers. Reassign broker {victim}'s "
                    f"partitions {moving} to brokers {[targets[p] for p in moving]} and await the moves; "
                    f"then kill -9 broker {victim} (not the controller) and restart it.",
        expected="Stopping the broker after the move causes no send failure and no loss.",
        topic=TopicSpec(replication_factor=1, assignment=assignment),
        producers=(ProducerSpec("pmoved", "a", PRODUCER, rate_per_s=60, partitions=moving),
                   ProducerSpec("pstay", "a", PRODUCER, rate_per_s=120, partitions=staying)),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT,
    )
    with scenario(spec) as run:
        zk = run.cluster_state
        topic = run.topic
        warm_up(run)
        run.settle(1)
        for p in moving:
            before = cluster.state([topic]).partitions[(topic, p)]
            run.inject(Reassign(topic, p, [targets[p]], timeout_s=REASSIGN_TIMEOUT_S))
            moved = run.log.events[-1]
            after = cluster.state([topic]).partitions[(topic, p)]
            run.window(f"p{p} reassignment {victim} -> {targets[p]}", time.monotonic() - moved.mono)
            assert run.check(f"p{p} moved to broker {targets[p]}: replicas, leader and ISR",
                             after.replicas == (targets[p],) and after.leader == targets[p]
                             and after.isr == (targets[p],) and after.leader_epoch > before.leader_epoch,
                             f"{brief(before)} -> {brief(after)}")
        settled = cluster.state([topic])
        assert run.check(f"broker {victim} holds no replica of the topic",
                         all(victim not in s.replicas for s in settled.topic(topic)),
                         "; ".join(brief(s) for s in settled.topic(topic)))
        run.settle(2)

        stop = Kill(BrokerId(victim))
        run.inject(stop)
        stopped = run.log.events[-1]
        gone = zk.wait_for(lambda s: victim not in s.live_brokers, DEREGISTER_TIMEOUT_S, stopped.mono)
        assert gone is not None, f"broker {victim} never left /brokers/ids"
        run.settle(2)  # past the session expiry: the controller has handled the death
        during = [s for _, s in zk.between(stopped.mono)]
        unchanged = all(s.partitions == settled.partitions for s in during)
        assert run.check(f"after broker {victim}'s death (session expired after "
                         f"{gone[0] - stopped.mono:.1f} s) no leader, epoch or ISR changed",
                         bool(during) and unchanged, f"{len(during)} samples")
        run.heal(stop)
        restarted = run.log.events[-1]
        run.settle(2)
        verdict = run.finish()

        acks = ClientLog.of(run)
        stalls = {p: acks.partition_gap(p, stopped.ts, restarted.ts) for p in assignment}
        for p in assignment:
            run.window(f"p{p} longest stretch without an acknowledged write while broker {victim} "
                       "was down", stalls[p])
        totals = verdict.findings.totals
        assert run.check("no send failed or timed out, from the first move to the end",
                         totals.get("failed", 0) == 0 and totals.get("unknown", 0) == 0,
                         f"{totals}, errors {acks.errors}")
        print(f"\nS2 moved {moving} off broker {victim}: counts {verdict.findings.counts()}, "
              f"totals {totals}, stalls " + ", ".join(f"p{p} {g:.2f} s" for p, g in stalls.items()))
    assert verdict.passed, verdict.to_dict()["rules"]
    assert verdict.findings.counts()["lost"] == 0
    assert totals.get("acked", 0) > 1000
    worst = max(stalls.values())
    assert worst < MAX_STALL_S, f"a partition stalled {worst:.1f} s: {stalls}"
