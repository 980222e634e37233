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

from collections.abc import Callable
from typing import Any

import pytest

from faults.conditions import AllOf, BrokerGone, Condition, IsrIs, LeaderChanged, LeaderIs, Not
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import (
    CountRange,
    Eventually,
    SecondsRange,
    Sends,
    Throughout,
    Unavailable,
    heal,
    inject,
)
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

PARTITIONS = 6
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
ACCEPT: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                           "duplicate": "any", "reordered": "any", "unseen": 0}
REASSIGN_TIMEOUT_S = 60.0
# Far below the 6 s ZooKeeper session timeout: no stall may come from the dead broker.
MAX_STALL_S = 3.0


def s2_spec(victim: int, brokers: list[int], session_timeout_s: float) -> ScenarioSpec:
    """Reassign ``victim``'s single-replica partitions one by one to the other brokers,
    then kill -9 it once the last move is done, and start it again."""
    assignment = {p: (brokers[p % len(brokers)],) for p in range(PARTITIONS)}
    moving = tuple(p for p, replicas in assignment.items() if replicas == (victim,))
    others = [b for b in brokers if b != victim]
    # One moving partition to each other broker, so the load stays spread.
    targets = {p: others[i % len(others)] for i, p in enumerate(moving)}
    staying = tuple(p for p in assignment if p not in moving)
    after_move = {**{p: r[0] for p, r in assignment.items()}, **targets}
    moves: list[dict[str, Any]] = [
        {"start_s": 1, "duration_s": 0, "fault": "reassign", "topic": TOPIC, "partition": p,
         "replicas": [targets[p]], "timeout_s": REASSIGN_TIMEOUT_S} | ({} if i == 0 else {"after": i})
        for i, p in enumerate(moving)]
    kill = len(moves) + 1
    settled: list[Condition] = [c for p, b in after_move.items()
                                for c in (LeaderIs(TOPIC, p, broker=b), IsrIs(TOPIC, p, brokers=(b,)),
                                          Not(LeaderChanged(TOPIC, p)))]
    return ScenarioSpec(
        id="s2-move-before-maintenance", title="S2 moving single-replica partitions before maintenance",
        description=f"RF 1, {PARTITIONS} partitions spread over all brokers. Reassign broker {victim}'s "
                    f"partitions {list(moving)} to brokers {[targets[p] for p in moving]} and await the "
                    f"moves; then kill -9 broker {victim} (not the controller) and restart it.",
        expected="Stopping the broker after the move causes no send failure and no loss.",
        topic=TopicSpec(replication_factor=1, assignment=assignment),
        producers=(ProducerSpec("pmoved", "a", PRODUCER, rate_per_s=60, partitions=moving),
                   ProducerSpec("pstay", "a", PRODUCER, rate_per_s=120, partitions=staying)),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT, sample_interval_s=0.1, warmup_acked=100, min_acked=1000,
        schedule=(*moves, {"after": len(moves), "start_s": 2, "duration_s": 3 * session_timeout_s,
                           "fault": "kill", "target": {"broker": victim}}),
        checks=(
            *(Eventually(AllOf((LeaderIs(TOPIC, p, broker=targets[p]), IsrIs(TOPIC, p, brokers=(targets[p],)),
                                LeaderChanged(TOPIC, p))), inject(i), within_s=REASSIGN_TIMEOUT_S,
                         label=f"p{p} moved to broker {targets[p]}: leader and ISR, leader epoch up")
              for i, p in enumerate(moving, start=1)),
            Eventually(BrokerGone(victim), inject(kill), within_s=3 * session_timeout_s,
                       label=f"broker {victim} died: its session expired"),
            Throughout(AllOf(tuple(settled)), inject(kill), heal(kill),
                       label=f"while broker {victim} was down no leader, leader epoch or ISR changed"),
            Sends("not_acked", CountRange(0, 0), label="no send failed or timed out"),
            Unavailable(SecondsRange(at_most=MAX_STALL_S), start=inject(kill), until=heal(kill),
                        label=f"no partition without an acknowledgement for more than {MAX_STALL_S:g} s "
                              f"while broker {victim} was down"),
        ),
    )


def test_s2_partitions_moved_off_a_broker_survive_its_kill_without_a_failed_send(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    run = run_spec(s2_spec(spare_brokers[0], brokers, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
