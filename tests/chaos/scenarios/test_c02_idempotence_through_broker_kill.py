"""C2 Idempotence through a broker kill, on each client.

An idempotent producer (acks=all, five requests in flight, retries without end) writes
while the leader of p0 is killed with SIGKILL and stays down past its session, so the
controller elects another replica from the ISR. Batches in flight to the dead leader
get no answer; the producer retries them on the new leader under the same producer id
and sequence numbers, and the new leader, which replicated the producer's state, drops
those it already has. Kafka's promise: every send acknowledged, none written twice, none
out of order within a partition, nothing acknowledged lost. The same scenario runs on
librdkafka and on Kafka's Java client, whose retry and sequence bookkeeping are separate
implementations of the same protocol.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, LeaderChanged, NewLeaderFromIsr
from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import CountRange, Eventually, Polls, Sends, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.client_settings import JAVA, LIBRDKAFKA
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller

pytestmark = pytest.mark.chaos

CONTROLLER = 2
ASSIGNMENT = {0: (0, 1, 2), 1: (1, 2, 0), 2: (2, 0, 1)}
IDEMPOTENT = {"acks": "all", "enable.idempotence": True, "retries": 2147483647,
              "max.in.flight.requests.per.connection": 5, "message.timeout.ms": 30000}


def c2_spec(session_timeout_s: float) -> ScenarioSpec:
    """Kill p0's leader for three sessions under an idempotent producer."""
    session = session_timeout_s
    return ScenarioSpec(
        id="c2-idempotence-through-broker-kill", title="C2 idempotence through a broker kill",
        description="RF 3, min.insync.replicas=2, leaders spread; an idempotent producer (acks=all, five "
                    "requests in flight, unbounded retries) while the leader of p0 is killed with SIGKILL "
                    "and stays down for three sessions.",
        expected="A new leader from the ISR; every send acknowledged; no duplicate, no reordering, "
                 "nothing acknowledged lost.",
        topic=TopicSpec(assignment=ASSIGNMENT, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", IDEMPOTENT, rate_per_s=200),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0, "unseen": 0,
                      "duplicate": 0, "reordered": 0},
        min_acked=1000, warmup_acked=100, cooldown_s=6,
        schedule=({"start_s": 0, "duration_s": 3 * session, "fault": "kill",
                   "target": {"leader_of": [TOPIC, 0]}},),
        checks=(
            Eventually(AllOf((NewLeaderFromIsr(TOPIC, 0), LeaderChanged(TOPIC, 0))), inject(1),
                       within_s=3 * session, label="kill: p0 led by another in-sync replica, epoch up"),
            Sends("not_acked", CountRange(0, 0), label="every send acknowledged despite the kill (retried)"),
            Sends("acked", CountRange(at_least=100), start=inject(1), until=heal(1), partitions=(0,),
                  timed_by="ack", label="p0 acknowledged writes on its new leader while the old one was "
                                        "down"),
            Polls(("cb",), CountRange(at_least=100), start=heal(1), settle_s=1, partitions=(0,),
                  contiguous=True, label="cb read p0 at the next offset after the kill's heal"),
        ),
    )


@pytest.mark.parametrize("client", [
    LIBRDKAFKA,
    pytest.param(JAVA, marks=pytest.mark.core(strikes=("kill",), judges=("messages",))),
])
def test_c2_an_idempotent_producer_writes_each_message_once_through_a_leader_kill(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, client: str,
) -> None:
    place_controller(cluster, CONTROLLER)  # the kill moves p0's leader, not the controller
    run = run_spec(c2_spec(cluster.session_timeout_s).on_client(client), scenario)
    assert run.passed, run.failures()
