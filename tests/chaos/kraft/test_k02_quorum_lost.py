"""K2 The KRaft controller quorum lost: a majority of its voters killed.

Without a quorum no metadata change can be committed, yet the brokers keep serving what
their metadata image holds. Both sides are asserted:
- what still works: writes to partitions whose replicas all live are acknowledged;
- what must not: once a broker dies, nothing changes for it. The partition it led keeps
  it as leader (no election), and the partitions it follows keep it in their ISRs (an ISR
  shrink is a metadata change too), so their acks=all writes stall until the quorum is
  back. Then the first gets a leader from its ISR and the others' ISRs shrink.
Nothing acknowledged is lost; the stalled writes' retries are written twice (duplicates,
accepted here: idempotence is off)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, IsrIs, LeaderIs, NewLeaderFromIsr
from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import CountRange, Eventually, Sends, Throughout, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
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

LEADER = 0  # leads partition 0 (the first of its assignment)
LEADER_KILLED_S = 8.0  # into the quorum's loss
# Acknowledgements of writes the dead broker had fetched before it died still arrive.
STALL_SETTLE_S = 2.0


def k2_spec(session_timeout_s: float) -> ScenarioSpec:
    quorum_down_s = LEADER_KILLED_S + 3 * session_timeout_s
    return ScenarioSpec(
        id="k2-quorum-lost", title="K2 the KRaft controller quorum lost",
        description="KRaft, three dedicated controllers; acks=all, RF 3, min.insync.replicas=2, partition 0 "
                    f"led by broker {LEADER}. Kill -9 two of the three controllers (the leader first) for "
                    f"{quorum_down_s:g} s; {LEADER_KILLED_S:g} s in, kill -9 broker {LEADER} as well.",
        expected="With no quorum, writes are acknowledged while every broker lives. Once broker "
                 f"{LEADER} dies it stays partition 0's leader in the metadata (no election without a "
                 "quorum) and stays in the ISRs of partitions 1 and 2, whose acks=all writes stall; once "
                 "the quorum is back partition 0 gets a leader from its ISR; nothing acknowledged is lost.",
        topic=TopicSpec(assignment={0: (LEADER, 1, 2), 1: (1, 2, 0), 2: (2, 0, 1)},
                        config=dict(DURABLE_TOPIC.config)),
        producers=(ProducerSpec("pa", "a", DURABLE_PRODUCER, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=NOTHING_LOST, warmup_acked=100, min_acked=500,
        schedule=(
            {"start_s": 0, "duration_s": quorum_down_s, "fault": "kill", "target": "controller_majority"},
            {"start_s": LEADER_KILLED_S, "fault": "kill", "target": {"broker": LEADER},
             "duration_s": quorum_down_s + 2 * session_timeout_s - LEADER_KILLED_S},
        ),
        checks=(
            Sends("acked", CountRange(at_least=RATE_PER_S // 3), start=inject(1), settle_s=1,
                  until=inject(2), timed_by="ack",
                  label="with no quorum, acks=all writes are acknowledged while every broker lives"),
            Throughout(LeaderIs(TOPIC, 0, broker=LEADER), inject(2), until=heal(1),
                       label=f"no leader change without a quorum: dead broker {LEADER} stays the leader"),
            Throughout(AllOf(tuple(IsrIs(TOPIC, p, brokers=(0, 1, 2)) for p in (1, 2))), inject(2),
                       until=heal(1),
                       label=f"no ISR change without a quorum: dead broker {LEADER} stays in every ISR"),
            Sends("acked", CountRange(0, 0), partitions=(1, 2), start=inject(2), settle_s=STALL_SETTLE_S,
                  until=heal(1), timed_by="ack",
                  label="... so acks=all writes to the partitions it follows stall until the quorum is back"),
            Eventually(NewLeaderFromIsr(TOPIC, 0), heal(1), within_s=QUORUM_BACK_WITHIN_S + session_timeout_s,
                       label="the quorum back, partition 0 gets a leader from its ISR"),
        ),
    )


def test_k2_without_a_quorum_live_leaders_write_and_no_leader_changes_until_it_returns(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(k2_spec(cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
