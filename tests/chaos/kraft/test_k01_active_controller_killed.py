"""K1 The active KRaft controller killed under load.

The data path does not go through the controller: while the quorum elects another
leader, the partitions' leaders keep acknowledging writes, and nothing acknowledged is
lost. The quorum's new leader comes within Kafka's quorum timeouts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import ControllerChanged
from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import CountRange, Eventually, Sends, heal, inject
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.kraft._bounds import (
    DURABLE_PRODUCER,
    DURABLE_TOPIC,
    NEW_QUORUM_LEADER_WITHIN_S,
    NOTHING_LOST,
    RATE_PER_S,
)

pytestmark = pytest.mark.chaos

DOWN_S = 20.0


def k1_spec() -> ScenarioSpec:
    return ScenarioSpec(
        id="k1-active-controller-killed", title="K1 the active KRaft controller killed under load",
        description="KRaft, three dedicated controllers. acks=all, RF 3, min.insync.replicas=2; kill -9 the "
                    f"quorum's leader under load and start it again {DOWN_S:g} s later.",
        expected="Another controller leads the quorum within the quorum timeouts (the controller epoch "
                 "rises); the brokers keep acknowledging writes throughout; nothing acknowledged is lost.",
        topic=DURABLE_TOPIC,
        producers=(ProducerSpec("pa", "a", DURABLE_PRODUCER, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=NOTHING_LOST, warmup_acked=100, min_acked=500,
        schedule=({"start_s": 0, "duration_s": DOWN_S, "fault": "kill", "target": "active_controller"},),
        checks=(
            Eventually(ControllerChanged(), inject(1), within_s=NEW_QUORUM_LEADER_WITHIN_S,
                       label="another controller leads the quorum"),
            Sends("acked", CountRange(at_least=RATE_PER_S), start=inject(1), until=heal(1), timed_by="ack",
                  label="writes acknowledged while the old leader was down"),
        ),
    )


def test_k1_killing_the_active_controller_elects_another_and_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(k1_spec(), scenario)
    assert run.passed, run.failures()
