"""S1 Single-replica topic, broker killed.

With replication factor 1 a partition is exactly one broker: kill -9 it and there is no
replica to fail over to. ZooKeeper shows the partition offline (leader -1, the ISR
keeping only the dead broker) once the broker's session expires, sends to it fail, and
sends to the partitions of the other brokers are untouched. The data is not lost, only
unavailable: the broker's log survives the process, and the partitions come back with
it. Sends to the dead broker's partitions and to the others come from two producers, so
a queue of undeliverable messages for one set can never delay the other.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, IsrIs, LeaderChanged, LeaderIs, Offline
from harness.cluster.lifecycle import Cluster
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
# A 5 s delivery timeout (the harness default is 15 s): the dead partitions stay down
# longer than that, so their sends visibly fail instead of waiting out the outage in the
# producer's queue; no live partition ever needs that long.
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647, "message.timeout.ms": 5000}
RESTART_S = 90.0  # a JVM start and a registration on a loaded machine


def s1_spec(victim: int, brokers: int, session_timeout_s: float) -> ScenarioSpec:
    """Partition p on broker p mod ``brokers``; kill ``victim`` until its partitions have
    been offline for a while after its session expired, then start it again."""
    assignment = {p: (p % brokers,) for p in range(PARTITIONS)}
    dead = tuple(p for p, replicas in assignment.items() if replicas == (victim,))
    live = tuple(p for p in assignment if p not in dead)
    down_s = session_timeout_s * 3
    return ScenarioSpec(
        id="s1-single-replica-kill", title="S1 single-replica topic, broker killed",
        description=f"RF 1, {PARTITIONS} partitions spread over all brokers; kill -9 broker {victim} (not "
                    f"the controller), which holds partitions {list(dead)}; restart it {down_s:g} s later.",
        expected="Its partitions go offline (leader -1, ISR only the dead broker); sends to them fail, "
                 "sends to the others keep succeeding; after the restart nothing acknowledged is missing.",
        topic=TopicSpec(replication_factor=1, assignment=assignment),
        producers=(ProducerSpec("pdead", "a", PRODUCER, rate_per_s=60, partitions=dead),
                   ProducerSpec("plive", "a", PRODUCER, rate_per_s=120, partitions=live)),
        consumers=(ConsumerSpec("cb", "b"),),
        # Retries may duplicate or reorder; unavailability must not lose anything acknowledged.
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                      "duplicate": "any", "reordered": "any", "unseen": 0},
        sample_interval_s=0.1, warmup_acked=100,
        schedule=({"start_s": 1, "duration_s": down_s, "fault": "kill", "target": {"broker": victim}},),
        checks=(
            *(Eventually(AllOf((Offline(TOPIC, p), IsrIs(TOPIC, p, brokers=(victim,)))), inject(1),
                         within_s=session_timeout_s * 2) for p in dead),
            *(Throughout(LeaderIs(TOPIC, p, broker=assignment[p][0]), inject(1), heal(1)) for p in live),
            *(Eventually(AllOf((LeaderIs(TOPIC, p, broker=victim), LeaderChanged(TOPIC, p))), heal(1),
                         within_s=RESTART_S) for p in dead),
            Sends("not_acked", CountRange(at_least=1), partitions=dead, start=inject(1), until=heal(1)),
            Sends("not_acked", CountRange(0, 0), partitions=live),
            # The dead partitions are dark from the kill to the restart; the others never
            # wait as long as a session timeout.
            Unavailable(SecondsRange(at_least=down_s - 1), partitions=dead, start=inject(1)),
            Unavailable(SecondsRange(at_most=session_timeout_s), partitions=live, start=inject(1)),
        ),
    )


def test_s1_killing_a_broker_takes_exactly_its_single_replica_partitions_offline(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    spec = s1_spec(spare_brokers[0], len(cluster.topology.brokers), cluster.session_timeout_s)
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()
