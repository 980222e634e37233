"""S3 Controlled shutdown versus hard kill.

The same broker, leading the same partitions, is stopped twice: first with SIGTERM,
whose shutdown hook asks the controller to move every leadership to another in-sync
replica and to drop the broker from every ISR before the process exits; then, after it
is back and leads again (preferred-leader election), with SIGKILL, after which nothing
moves until ZooKeeper expires its session. acks=all with min.insync.replicas=2 loses
nothing either way.

The order is proven from single ZooKeeper snapshots: the sampler reads the partitions'
state before /brokers/ids, over one session, so a snapshot showing a partition led by
another broker while the victim is still registered shows leadership moved before the
victim's session closed (controlled), and no such snapshot may exist after a kill.
Unavailability is bounded by the session timeout on both sides: the controlled stop
moves each leadership within half a session and no partition waits longer than that for
an acknowledgement; the kill moves nothing for half a session and leaves its partitions
without an acknowledgement for at least two thirds of one (the session expires a timeout
after the last heartbeat, sent every third of the timeout).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import (
    AllOf,
    BrokerRegistered,
    JoinsIsr,
    LeaderChanged,
    LeaderIs,
    NewLeaderFromIsr,
    Not,
)
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import Eventually, SecondsRange, Throughout, Unavailable, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.client_settings import JAVA
from harness.workload.driver import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

PARTITIONS = 6
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
ACCEPT: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                           "duplicate": "any", "reordered": "any", "unseen": 0}
START_S = 90.0  # a JVM start and a registration on a loaded machine


def rotated(brokers: list[int]) -> dict[int, tuple[int, ...]]:
    """Replica lists rotating over the brokers: each broker is the preferred leader of
    PARTITIONS / len(brokers) partitions and a follower of the rest."""
    n = len(brokers)
    return {p: tuple(brokers[(p + i) % n] for i in range(n)) for p in range(PARTITIONS)}


def s3_spec(victim: int, brokers: list[int], session_timeout_s: float) -> ScenarioSpec:
    """SIGTERM ``victim``, start it, give its leaderships back once every ISR is full,
    then kill -9 it and start it again."""
    session = session_timeout_s
    assignment = rotated(brokers)
    led = tuple(p for p, replicas in assignment.items() if replicas[0] == victim)
    # After a kill the controller elects the first live replica of the list that is in the ISR.
    successor = {p: assignment[p][1] for p in led}
    return ScenarioSpec(
        id="s3-controlled-vs-kill", title="S3 controlled shutdown versus hard kill",
        description=f"RF 3, min.insync.replicas=2, acks=all; broker {victim} (not the controller) leads "
                    f"partitions {list(led)}. SIGTERM it, restart it, give it its leaderships back "
                    "(preferred-leader election), then kill -9 it, and restart it.",
        expected="Controlled shutdown: leadership moves to an in-sync replica and the broker leaves "
                 "every ISR before its session closes; near-zero unavailability. kill -9: nothing moves "
                 "until the session expires, then the first live ISR replica leads. No acknowledged loss.",
        topic=TopicSpec(replication_factor=3, assignment=assignment,
                        config={"min.insync.replicas": 2, "unclean.leader.election.enable": False}),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=240),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT, sample_interval_s=0.05, warmup_acked=100,
        schedule=(
            {"start_s": 1, "duration_s": 2 * session, "fault": "controlled_shutdown",
             "target": {"broker": victim}},
            {"after": 1, "start_s": 0, "when": "isr_full", "when_timeout_s": START_S, "duration_s": 0,
             "fault": "preferred_election", "topic": TOPIC, "partitions": list(led)},
            {"after": 2, "start_s": 2, "duration_s": 3 * session, "fault": "kill",
             "target": {"broker": victim}},
        ),
        checks=(
            *(Eventually(AllOf((NewLeaderFromIsr(TOPIC, p), BrokerRegistered(victim))), inject(1),
                         within_s=session / 2,
                         label=f"controlled: p{p} led by an in-sync replica within half a session, before "
                               f"broker {victim}'s session closed") for p in led),
            Eventually(AllOf((*(Not(JoinsIsr(TOPIC, p, victim)) for p in assignment),
                              BrokerRegistered(victim))), inject(1), within_s=session,
                       label=f"controlled: broker {victim} left every ISR before its session closed"),
            Unavailable(SecondsRange(at_most=session / 2), partitions=led, start=inject(1), until=heal(1),
                        label="controlled: no led partition without an acknowledgement for half a session"),
            *(Eventually(LeaderIs(TOPIC, p, broker=victim), inject(2), within_s=session,
                         label=f"preferred-leader election gave broker {victim} p{p} back") for p in led),
            *(Throughout(LeaderIs(TOPIC, p, broker=victim), inject(3), for_s=session / 2,
                         label=f"kill: p{p} keeps its dead leader for half a session") for p in led),
            *(Throughout(Not(AllOf((Not(LeaderIs(TOPIC, p, broker=victim)), BrokerRegistered(victim)))),
                         inject(3), heal(3),
                         label=f"kill: p{p}'s leadership moved only after broker {victim}'s session closed")
              for p in led),
            *(Eventually(AllOf((LeaderIs(TOPIC, p, broker=successor[p]), LeaderChanged(TOPIC, p))), inject(3),
                         within_s=3 * session, label=f"kill: p{p} led by the first live ISR replica "
                                                     f"({successor[p]}) after the session expired")
              for p in led),
            # A session expires a timeout after the broker's last heartbeat, which it sends
            # every third of the timeout: so at least two thirds of a session after the kill.
            Unavailable(SecondsRange(at_least=2 * session / 3), partitions=led, start=inject(3),
                        until=heal(3),
                        label="kill: the led partitions without an acknowledgement for two thirds of a "
                              "session or more"),
        ),
    )


def test_s3_controlled_shutdown_moves_leadership_far_sooner_than_a_kill(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    run = run_spec(s3_spec(spare_brokers[0], brokers, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()


def test_s3_java_client_controlled_shutdown_against_a_kill(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    """The same two stops with Kafka's Java client producing and consuming: the bounds on
    unavailability are the cluster's, so they hold for any client that follows the leader."""
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    run = run_spec(s3_spec(spare_brokers[0], brokers, cluster.session_timeout_s).on_client(JAVA), scenario)
    assert run.passed, run.failures()
