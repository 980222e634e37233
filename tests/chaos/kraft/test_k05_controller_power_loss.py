"""K5 Power loss of every KRaft controller under load.

The quorum writes a record only once a majority has it on disk (each controller syncs
its metadata log before it acknowledges), so a power cut that keeps only what was synced
loses nothing the quorum committed. The controllers come back on what is left of their
logs, elect a leader (the epoch rises), and the cluster's metadata is as it was: the
topic, its partitions and full ISRs. The brokers keep serving writes throughout, and
nothing acknowledged is lost.

The quorum's new leader starts every broker's session afresh, and a broker that does not
reach it with a heartbeat within ``broker.session.timeout.ms`` is fenced, and unfenced as
soon as one arrives: on 3.9.1 two of three brokers were fenced one session after the
quorum's return, which shrank every ISR to the third broker for a moment. The run goes on
past that (``cooldown_s``), so the final health check reads the cluster settled, not the
moment of the fence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, ControllerChanged, IsrIs
from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import CountRange, Eventually, Sends, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.kraft._bounds import (
    DURABLE_PRODUCER,
    DURABLE_TOPIC,
    NOTHING_LOST,
    QUORUM_BACK_WITHIN_S,
    RATE_PER_S,
)

pytestmark = pytest.mark.chaos

DARK_S = 12.0
# After the heal: the quorum back, a broker session for the fences it may bring, and the
# unfenced brokers' catch-up into the ISRs on a busy machine.
CATCH_UP_MARGIN_S = 15.0


def k5_spec(session_timeout_s: float) -> ScenarioSpec:
    full = (0, 1, 2)
    return ScenarioSpec(
        id="k5-controller-power-loss", title="K5 every KRaft controller loses power",
        description="KRaft, three dedicated controllers; acks=all, RF 3, min.insync.replicas=2. All three "
                    f"controllers lose power together under load (each one's files cut to what it synced) "
                    f"and come back {DARK_S:g} s later.",
        expected="The brokers keep acknowledging writes while the controllers are dark; the quorum comes "
                 "back on its synced logs and elects a leader (the epoch rises); every partition is there "
                 "with its full ISR; nothing acknowledged is lost.",
        topic=DURABLE_TOPIC,
        producers=(ProducerSpec("pa", "a", DURABLE_PRODUCER, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=NOTHING_LOST, warmup_acked=100, min_acked=500,
        cooldown_s=QUORUM_BACK_WITHIN_S + session_timeout_s + CATCH_UP_MARGIN_S,
        schedule=({"start_s": 0, "duration_s": DARK_S, "fault": "power_loss", "target": "all_controllers"},),
        checks=(
            Sends("acked", CountRange(at_least=RATE_PER_S), start=inject(1), until=heal(1), timed_by="ack",
                  label="writes acknowledged while every controller was dark"),
            Eventually(AllOf((ControllerChanged(), *(IsrIs(TOPIC, p, brokers=full) for p in range(3)))),
                       inject(1), within_s=DARK_S + QUORUM_BACK_WITHIN_S,
                       label="a new quorum leader, and every partition with its full ISR"),
        ),
    )


def test_k5_the_controllers_lose_power_and_the_metadata_and_data_survive(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(k5_spec(cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
