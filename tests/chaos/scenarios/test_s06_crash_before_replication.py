"""S6 Leader and follower crash together before replication.

A follower stays in the ISR for replica.lag.time.max.ms after it stops fetching, so for
a few seconds the ISR claims a copy that does not exist. What acks=1 acknowledged in
that time lives only on the leader; if both brokers go down and the follower comes back
first, it is elected cleanly (it is in the ISR) and the old leader, returning as its
follower, truncates to the new leader's log by leader epoch. acks=all never acknowledged
those writes, because the high watermark cannot pass a member of the ISR that is not
fetching.

Determinism: the follower is held back by cutting its fetch link (not by pausing it,
which would also stop its ZooKeeper heartbeats and could make ZooKeeper drop it first),
and the two deaths are made to reach the controller in a fixed order - the leader's
first, then the follower's once ZooKeeper shows it leading. Were both killed at once,
whichever session expired first would decide whether the follower is still in the ISR.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, IsrIs, JoinsIsr, LeaderChanged, LeaderIs, Offline
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import CountRange, Eventually, Sends, Throughout, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

RATE_PER_S = 100
HOLD_BACK_S = 2.0  # well inside replica.lag.time.max.ms (5 s): the follower stays in the ISR
TOLERATED: dict[str, Rule] = {"duplicate": "any", "reordered": "any", "unseen": "any",
                              "aborted_read": 0, "unexpected": 0}
SAFE: dict[str, Rule] = {**TOLERATED, "lost": 0, "truncated": 0}
UNSAFE: dict[str, Rule] = {**TOLERATED, "lost": "at_least_one", "truncated": "any"}
START_S = 90.0  # a JVM start and a registration on a loaded machine


def s6_spec(leader: int, follower: int, acks: str, session_timeout_s: float) -> ScenarioSpec:
    """Cut the follower's fetch link, kill leader then follower, restart follower first."""
    session = session_timeout_s
    unsafe = acks == "1"
    leader_killed = 1 + HOLD_BACK_S
    follower_killed = leader_killed + 2 * session  # latest expected: once it leads
    leader_back = follower_killed + 2 * session + START_S / 3
    held = ("acks=1: the leader acknowledged writes the follower never fetched" if unsafe
            else "acks=all: nothing acknowledged while the follower was held back")
    return ScenarioSpec(
        id="s6-crash-before-replication", title=f"S6 crash before replication, acks={acks}",
        description=f"RF 2 (leader {leader}, follower {follower}, neither the controller), "
                    f"min.insync.replicas=1, acks={acks}. Cut the follower's fetch link for "
                    f"{HOLD_BACK_S:.0f} s (it stays in the ISR), kill the leader, then the follower; "
                    "restart the follower first, then the old leader.",
        expected="acks=1: the writes acknowledged after the follower fell behind are lost "
                 "(truncated from the old leader)." if unsafe else
                 "acks=all: those writes were never acknowledged; nothing acknowledged is lost.",
        topic=TopicSpec(partitions=1, replication_factor=2, assignment={0: (leader, follower)},
                        config={"min.insync.replicas": 1, "unclean.leader.election.enable": False}),
        producers=(ProducerSpec("pa", "a", {"acks": acks, "enable.idempotence": False,
                                            "retries": 2147483647}, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cc", "c"),),
        expectations=UNSAFE if unsafe else SAFE,
        sample_interval_s=0.1, warmup_acked=100,
        schedule=(
            {"start_s": 1, "duration_s": HOLD_BACK_S + 1, "fault": "cut",
             "links": {"from": {"broker": follower}, "to": {"broker": leader}, "kind": "replication"}},
            {"start_s": leader_killed, "duration_s": leader_back - leader_killed, "fault": "kill",
             "target": {"broker": leader}},
            {"start_s": leader_killed + 1, "when_timeout_s": START_S,
             "when": {"leader_is": {"broker": follower, "topic": TOPIC, "partition": 0}},
             "duration_s": 2 * session, "fault": "kill", "target": {"broker": follower}},
        ),
        checks=(
            Sends("acked", CountRange(at_least=1), until=inject(1), timed_by="ack",
                  label="writes were acknowledged before the follower was held back"),
            Throughout(AllOf((LeaderIs(TOPIC, 0, broker=leader), JoinsIsr(TOPIC, 0, follower))), inject(1),
                       inject(2), label="held-back follower still in the ISR when the leader died"),
            Sends("acked", CountRange(at_least=1) if unsafe else CountRange(0, 0), start=inject(1),
                  settle_s=0.5, until=inject(2), timed_by="ack", label=held),
            Eventually(AllOf((LeaderIs(TOPIC, 0, broker=follower), IsrIs(TOPIC, 0, brokers=(follower,)))),
                       inject(2), within_s=3 * session, label="controller elected the follower from the ISR"),
            Eventually(AllOf((Offline(TOPIC, 0), IsrIs(TOPIC, 0, brokers=(follower,)))), inject(3),
                       within_s=3 * session,
                       label="both down: offline, the follower is the ISR's last member"),
            Eventually(AllOf((LeaderIs(TOPIC, 0, broker=follower), LeaderChanged(TOPIC, 0))), heal(3),
                       within_s=START_S,
                       label="restarted follower leads again (clean election), epoch rose"),
            Eventually(AllOf((LeaderIs(TOPIC, 0, broker=follower),
                              IsrIs(TOPIC, 0, brokers=(leader, follower)))), heal(2), within_s=START_S,
                       label="old leader rejoined as follower (truncated to the new leader's log)"),
        ),
    )


@pytest.mark.parametrize("acks", ["all", "1"], ids=["acks-all", "acks-1"])
def test_s6_follower_held_back_then_both_crash_and_the_follower_returns_first(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...],
    acks: str,
) -> None:
    leader, follower = spare_brokers[:2]
    run = run_spec(s6_spec(leader, follower, acks, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
