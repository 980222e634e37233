"""S7 One broker-to-broker link cut: only broker 1 <-> broker 0 (the leader) goes down.

Nothing but replication is disturbed, so leader and controller stay put and ZooKeeper
only shows broker 1 leaving the ISR after replica.lag.time.max.ms. What the clients
live through is the stall before that: acks=all requests wait at the leader for
broker 1, time out at the client, and are retried although the leader already wrote
them - so without idempotence the same message lands twice once the ISR shrinks.

Why the duplicates are deterministic here: the client's request timeout (2 s) is well
below the time the leader needs to drop broker 1 from the ISR (>= 5 s), so every batch
sent in the first seconds of the cut is retried at least once after having been
appended. With enable.idempotence=true the broker recognises the retried batches by
producer id and sequence number and appends nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import (
    AllOf,
    ControllerChanged,
    ControllerIs,
    IsrIs,
    JoinsIsr,
    LeaderChanged,
    LeaderIs,
    Not,
)
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import CountRange, Eventually, Sends, Throughout, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller

pytestmark = pytest.mark.chaos

LEADER, CUT_OFF, CONTROLLER = 0, 1, 2
PARTITIONS = (0, 1)
REJOIN_S = 40.0  # a follower catching up after the heal, on a loaded machine


def producer_settings(idempotent: bool) -> dict[str, object]:
    """acks=all with retries; a request timeout far below the ISR shrink time (see module doc)."""
    return {"acks": "all", "retries": 2147483647, "enable.idempotence": idempotent,
            "max.in.flight.requests.per.connection": 5,
            "request.timeout.ms": 2000, "message.timeout.ms": 30000}


def s7_spec(idempotent: bool, lag_s: float, controller: int = CONTROLLER) -> ScenarioSpec:
    """Cut broker 1 <-> broker 0 (the leader of both partitions) for long enough that the
    leader drops broker 1 from the ISRs (``lag_s``: replica.lag.time.max.ms) and keeps
    writing with the other two. ``controller`` is the active controller's id: broker 2, or
    in KRaft zone c's voter."""
    settings = producer_settings(idempotent)
    cut_s = 3 * lag_s
    # Without idempotence and with 5 requests in flight, Kafka's producer documents that a
    # retried batch can land after a later one: reordering is then allowed, not promised
    # away (a CI run saw one, a batch retried while the new topic's metadata settled).
    accept: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                               "reordered": 0 if idempotent else "any", "unseen": 0,
                               "duplicate": 0 if idempotent else "at_least_one"}
    return ScenarioSpec(
        id="s7-one-link-cut", title="S7 one broker-to-broker link cut",
        description="Cut broker 1 <-> broker 0 (leader of both partitions) only; controller beside broker 2; "
                    f"acks=all, retries on, request.timeout.ms=2000, enable.idempotence={idempotent}; "
                    "producers in zones a and b both reach broker 0.",
        expected="Leader and controller unchanged; broker 1 leaves the ISRs after replica.lag.time.max.ms "
                 "and rejoins after the heal; nothing lost; "
                 + ("no duplicates, no reordering." if idempotent
                    else "retried sends duplicated, and caught; reordering allowed."),
        # Both partitions led by broker 0; broker 2 stays in sync, so min.insync.replicas=2 holds.
        topic=TopicSpec(assignment={0: (LEADER, CUT_OFF, CONTROLLER), 1: (LEADER, CONTROLLER, CUT_OFF)},
                        config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", settings, rate_per_s=100),
                   ProducerSpec("pb", "b", settings, rate_per_s=100)),
        consumers=(ConsumerSpec("cc", "c"),),
        expectations=accept, min_acked=1000, warmup_acked=100,
        schedule=({"start_s": 0, "duration_s": cut_s, "fault": "cut",
                   "links": {"from": {"broker": CUT_OFF}, "to": {"broker": LEADER}, "both_ways": True}},),
        checks=(
            Throughout(AllOf((ControllerIs(controller), Not(ControllerChanged()))), inject(1),
                       label="controller and controller epoch unchanged"),
            *(Throughout(AllOf((LeaderIs(TOPIC, p, broker=LEADER), Not(LeaderChanged(TOPIC, p)))), inject(1),
                         heal(1), label=f"p{p}: leader and leader epoch unchanged") for p in PARTITIONS),
            *(Throughout(JoinsIsr(TOPIC, p, CUT_OFF), inject(1), for_s=lag_s - 1,
                         label=f"p{p}: broker 1 stays in the ISR as long as replica.lag.time.max.ms allows")
              for p in PARTITIONS),
            *(Eventually(IsrIs(TOPIC, p, brokers=(LEADER, CONTROLLER)), inject(1), within_s=2 * lag_s,
                         label=f"p{p}: ISR is the other two") for p in PARTITIONS),
            *(Sends("acked", CountRange(at_least=50), producers=(name,), start=inject(1),
                    settle_s=2 * lag_s, until=heal(1), timed_by="ack",
                    label=f"{name} kept producing to broker 0 after the ISR shrank")
              for name in ("pa", "pb")),
            *(Eventually(JoinsIsr(TOPIC, p, CUT_OFF), heal(1), within_s=REJOIN_S,
                         label=f"p{p}: broker 1 caught up and rejoined the ISR") for p in PARTITIONS),
        ),
    )


@pytest.mark.parametrize("idempotent", [False, True], ids=["idempotence-off", "idempotence-on"])
def test_s7_one_link_cut_shrinks_isr_and_retries_duplicate(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, idempotent: bool,
) -> None:
    # The controller beside the third broker: in ZooKeeper mode the cut must not also cut
    # AlterPartition (leader -> controller) or the controller's requests, or the ISR could
    # not shrink. In KRaft no broker-to-broker link carries them; the placement is the same.
    placed = place_controller(cluster, CONTROLLER)
    lag_s = float(cluster.topology.broker_settings["replica.lag.time.max.ms"]) / 1000
    run = run_spec(s7_spec(idempotent, lag_s, placed.node), scenario)
    assert run.passed, run.failures()
