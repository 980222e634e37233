"""S4 The durable configuration: acks=all, RF 3, min.insync.replicas=2, no unclean
election. Killing the leader loses nothing; killing two replicas makes writes fail
rather than be acknowledged; lowering min.insync.replicas trades that safety away."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, IsrIs, LeaderChanged, NewLeaderFromIsr
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import Attempts, CountRange, Eventually, Seen, Sends, heal, inject
from harness.scenario.probes import Probe
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.client_settings import JAVA
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller

pytestmark = pytest.mark.chaos

DURABLE_PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
DURABLE_TOPIC = TopicSpec(partitions=3, replication_factor=3,
                          config={"min.insync.replicas": 2, "unclean.leader.election.enable": False})
# Duplicates are possible with retries and idempotence off; nothing acknowledged may go.
ACCEPT: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
          "duplicate": "any", "reordered": "any", "unseen": 0}


def s4_kill_leader_spec(session_timeout_s: float) -> ScenarioSpec:
    """Kill -9 partition 0's leader under load; start it again a while after."""
    return ScenarioSpec(
        id="s4-kill-leader", title="S4 durable configuration: kill the leader",
        description="acks=all, RF 3, min.insync.replicas=2, unclean election off; kill -9 the "
                    "leader of partition 0 under load.",
        expected="A new leader comes from the ISR; zero acknowledged messages lost.",
        topic=DURABLE_TOPIC,
        producers=(ProducerSpec("pa", "a", DURABLE_PRODUCER, rate_per_s=200),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT, min_acked=500, warmup_acked=100,
        schedule=({"start_s": 0, "duration_s": session_timeout_s * 3, "fault": "kill",
                   "target": {"leader_of": [TOPIC, 0]}},),
        checks=(Eventually(AllOf((NewLeaderFromIsr(TOPIC, 0), LeaderChanged(TOPIC, 0))), inject(1),
                           within_s=session_timeout_s * 3),),
    )


@pytest.mark.core(strikes=("kill",), judges=("messages",))
def test_s4_killing_the_leader_elects_from_the_isr_and_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(s4_kill_leader_spec(cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()


# Long enough past the ISR shrink that sends made after it outlive the producer's
# message.timeout.ms (15 s, harness.workload.clients) while every attempt is refused.
REFUSED_S = 22.0
LOWERED_S = 8.0
REJOIN_S = 90.0  # two brokers started again and caught up, on a loaded machine


def s4_two_down_spec(session_timeout_s: float) -> ScenarioSpec:
    """Kill both followers of the one partition; once the ISR is the leader alone and
    writes have been refused past the producer's timeout, lower min.insync.replicas to 1;
    start the followers again; put the setting back once they are in sync."""
    session = session_timeout_s
    shrunk = 2 * session  # both followers' sessions expired: the ISR is the leader alone
    lowered_at = shrunk + REFUSED_S
    back_at = lowered_at + LOWERED_S
    return ScenarioSpec(
        id="s4-two-replicas-down", title="S4 durable configuration: two of three replicas down",
        description="acks=all, RF 3, min.insync.replicas=2, unclean election off, one partition led by "
                    "broker 0; kill -9 its two followers, then lower min.insync.replicas to 1 at run time.",
        expected="While one replica is in sync, writes are refused with NOT_ENOUGH_REPLICAS, never "
                 "acknowledged, and reads continue from the survivor; lowered to 1, writes are "
                 "acknowledged again; after both return nothing acknowledged is lost and no refused "
                 "send is read.",
        topic=TopicSpec(assignment={0: (0, 1, 2)}, config=dict(DURABLE_TOPIC.config)),
        producers=(ProducerSpec("pa", "a", DURABLE_PRODUCER, rate_per_s=100),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT, warmup_acked=100,
        schedule=(
            *({"start_s": 0, "duration_s": back_at, "fault": "kill", "target": {"broker": b}}
              for b in (1, 2)),
            {"start_s": lowered_at, "duration_s": LOWERED_S + REJOIN_S / 3, "fault": "topic_config",
             "topic": TOPIC, "settings": {"min.insync.replicas": 1}},
        ),
        probes=(Probe("read-back", -1, inject(1), after_s=shrunk + 2, look="read", zone="b", partition=0,
                      timeout_s=20),),
        checks=(
            Eventually(IsrIs(TOPIC, 0, brokers=(0,)), inject(1), within_s=shrunk,
                       label="both followers down: the ISR is the leader alone"),
            Seen("read-back", reads_acked=True,
                 label="reads continue from the survivor while writes are refused"),
            Sends("acked", CountRange(0, 0), timed_by="ack", start=inject(1), settle_s=shrunk + 1,
                  until=inject(3),
                  label="writes refused, never acknowledged, while the ISR was the leader alone"),
            Attempts(("pa",), CountRange(at_least=1), inject(1), for_s=lowered_at,
                     errors=("NOT_ENOUGH_REPLICAS",), label="... refused with NOT_ENOUGH_REPLICAS"),
            Sends("failed", CountRange(at_least=1), start=inject(1), settle_s=shrunk + 1, until=inject(3),
                  label="refused sends end definitively failed (and none is read: aborted_read 0)"),
            Sends("acked", CountRange(at_least=100), start=inject(3), until=heal(1), timed_by="ack",
                  label="min.insync.replicas=1 lets writes through with one replica in sync"),
            Eventually(IsrIs(TOPIC, 0, brokers=(0, 1, 2)), heal(1), within_s=REJOIN_S,
                       label="both followers back in the ISR"),
        ),
    )


def test_s4_two_replicas_down_refuses_writes_until_min_isr_is_lowered(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    # Broker 0 leads p0 and the controller is beside it (broker 0 itself, or zone a's
    # KRaft voter): killing 1 and 2 shrinks the ISR to the leader without a controller
    # election in the way.
    place_controller(cluster, 0)
    run = run_spec(s4_two_down_spec(cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()


def test_s4_java_client_killing_the_leader_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    """The leader's kill with Kafka's Java client producing and consuming."""
    run = run_spec(s4_kill_leader_spec(cluster.session_timeout_s).on_client(JAVA), scenario)
    assert run.passed, run.failures()
