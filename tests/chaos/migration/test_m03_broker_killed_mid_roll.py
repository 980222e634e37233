"""M3 A broker killed while the brokers roll to KRaft.

While broker 0 is down for its restart as a KRaft broker (the roll stops it only once
every ISR is full, so the first ISR short in the roll is its doing), broker 2 - still a
broker in migration mode, led by the KRaft controller - is killed with kill -9 and
started again 20 s later. For a while one broker is up. The KRaft controller must fence broker 2 once
its heartbeats stop, move its leaderships to the in-sync replicas left, take broker 0
back as a KRaft broker, and take broker 2 back into every ISR when it returns. With
``acks=all`` and ``min.insync.replicas=2`` no write is acknowledged while one replica is
up (the producer retries within its delivery timeout); none that was acknowledged is
lost. The roll goes on only once the cluster is whole again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, LeavesIsr
from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.scenario.checks import Eventually, inject
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec import TOPIC
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import DUAL_WRITE_HOLD_S, DURABLE_TOPIC, migration_spec

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

DOWN_S = 20.0
# The controllers fence a broker whose heartbeats stop after broker.session.timeout.ms
# (6 s) and take it out of every ISR; its ZooKeeper session (6 s) ends as soon. Twice
# over, with the sampler's lag.
FENCED_WITHIN_S = 20.0


def m3_spec() -> ScenarioSpec:
    return migration_spec(
        id="m3-broker-killed-mid-roll",
        title="M3 a broker in migration mode killed while broker 0 restarts as a KRaft broker",
        description="M1's cluster and workload; in the broker roll, once broker 0 is down for its restart as "
                    f"a KRaft broker, kill -9 broker 2 (still in migration mode) and start it again "
                    f"{DOWN_S:g} s later.",
        expected="Broker 2 leaves every ISR; no write is acknowledged while one replica is up, and "
                 "nothing acknowledged is lost or written twice; the roll completes once broker 2 is "
                 "back; the metadata is carried over.",
        schedule=({"start_s": 0, "duration_s": DOWN_S, "fault": "kill", "target": {"broker": 2},
                   "when": {"all": [{"migration_phase": "broker_roll"}, {"not": "isr_full"}]}},),
        checks=(Eventually(AllOf(tuple(LeavesIsr(TOPIC, p, 2) for p in range(DURABLE_TOPIC.partitions))),
                           inject(1), within_s=FENCED_WITHIN_S, label="broker 2 leaves every ISR"),),
        migration=MigrationSpec(hold_s=DUAL_WRITE_HOLD_S),
    )


def test_m3_a_broker_killed_mid_roll_is_taken_back_and_nothing_is_lost(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(m3_spec(), scenario)
    assert run.passed, run.failures()
    assert cluster.metadata.migration().brokers_on_kraft
