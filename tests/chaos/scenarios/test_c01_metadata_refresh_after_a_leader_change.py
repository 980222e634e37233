"""C1 Metadata refresh after a leader change, on each client.

A client caches where each partition's leader is and refreshes that cache on a timer:
librdkafka every ``topic.metadata.refresh.interval.ms``, the Java client once its cache
is ``metadata.max.age.ms`` old. Both are set to five minutes here (the clients' own
defaults), far longer than the run. Under load, p0's preferred replica is changed from
broker 0 to broker 1 (a reassignment that only reorders the replicas) and a
preferred-leader election hands p0 to broker 1 while broker 0 stays up. The old leader
answers the next produce and fetch with NOT_LEADER_OR_FOLLOWER, and a client that
refreshes its metadata on that answer, rather than waiting for its timer, writes and
reads on at the new leader within a request's time. The bound is the request timeout
plus a margin, a sixtieth of the refresh interval: a client that waited for its timer
would stall p0 for minutes and fail it. Nothing may be lost, written twice (the producer
is idempotent) or skipped by the consumer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from faults.conditions import AllOf, LeaderChanged, LeaderIs
from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import CountRange, Eventually, Polls, SecondsRange, Sends, Unavailable, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.client_settings import JAVA, LIBRDKAFKA
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller

pytestmark = pytest.mark.chaos

CONTROLLER = 2
ASSIGNMENT = {0: (0, 1, 2), 1: (1, 2, 0), 2: (2, 0, 1)}
NEW_LEADER = 1
REFRESH_MS = 300_000  # both clients' own default refresh interval
REQUEST_TIMEOUT_S = 5.0  # the harness's request.timeout.ms on both clients
# A request's time to learn of the move, and as much again for the refresh and the retry
# on a loaded machine: far below the refresh interval.
BOUND_S = 2 * REQUEST_TIMEOUT_S


def refresh_settings(client: str) -> dict[str, Any]:
    """The clients' timed refresh set to its default, in the setting each client has."""
    if client == LIBRDKAFKA:
        return {"topic.metadata.refresh.interval.ms": REFRESH_MS, "metadata.max.age.ms": 3 * REFRESH_MS}
    return {"metadata.max.age.ms": REFRESH_MS}


def c1_spec(session_timeout_s: float, client: str = LIBRDKAFKA) -> ScenarioSpec:
    """Reorder p0's replicas so broker 1 is preferred, then elect it, under ``client``."""
    refresh = refresh_settings(client)
    producer = {"acks": "all", "enable.idempotence": True, "retries": 2147483647,
                "max.in.flight.requests.per.connection": 5, "message.timeout.ms": 30000, **refresh}
    spec = ScenarioSpec(
        id="c1-metadata-refresh-after-a-leader-change", title="C1 metadata refresh after a leader change",
        description="RF 3, min.insync.replicas=2, leaders spread; the clients' timed metadata refresh at "
                    "five minutes; under load p0's replicas are reordered so broker 1 is preferred and a "
                    "preferred-leader election moves p0 from broker 0 (still up) to broker 1.",
        expected=f"The old leader refuses the next request; the clients refresh their metadata on that "
                 f"answer and p0 goes at most {BOUND_S:g} s without an acknowledgement; nothing lost, "
                 "no duplicate, the consumer reads p0 on at the next offset.",
        topic=TopicSpec(assignment=ASSIGNMENT, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", producer, rate_per_s=200),),
        consumers=(ConsumerSpec("cb", "b", refresh),),
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0, "unseen": 0,
                      "duplicate": 0, "reordered": 0},
        min_acked=1000, warmup_acked=200, cooldown_s=15,
        schedule=(
            {"start_s": 0, "duration_s": 0, "fault": "reassign", "topic": TOPIC, "partition": 0,
             "replicas": [NEW_LEADER, 2, 0]},
            {"after": 1, "start_s": 2, "duration_s": 0, "fault": "preferred_election", "topic": TOPIC,
             "partitions": [0]},
        ),
        checks=(
            Eventually(AllOf((LeaderIs(TOPIC, 0, broker=NEW_LEADER), LeaderChanged(TOPIC, 0))), inject(2),
                       within_s=session_timeout_s,
                       label=f"the election moved p0 to broker {NEW_LEADER}, epoch up"),
            Unavailable(SecondsRange(at_most=BOUND_S), partitions=(0,), start=inject(2),
                        label=f"p0 without an acknowledgement for at most {BOUND_S:g} s after the move "
                              f"(the timed refresh is {REFRESH_MS // 1000} s away)"),
            Sends("not_acked", CountRange(0, 0), label="every send acknowledged"),
            Polls(("cb",), CountRange(at_least=200), start=inject(2), settle_s=1, partitions=(0,),
                  contiguous=True, label="cb read p0 on at the next offset from its new leader"),
        ),
    )
    return spec if client == LIBRDKAFKA else spec.on_client(client)


@pytest.mark.parametrize("client", [LIBRDKAFKA, JAVA])
def test_c1_clients_find_a_moved_leader_on_its_refusal_not_on_their_timer(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, client: str,
) -> None:
    place_controller(cluster, CONTROLLER)  # the election moves p0's leader, not the controller
    run = run_spec(c1_spec(cluster.session_timeout_s, client), scenario)
    assert run.passed, run.failures()
