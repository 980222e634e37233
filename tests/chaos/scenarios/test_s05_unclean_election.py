"""S5 Unclean leader election loses acknowledged data.

RF 2, min.insync.replicas=1, acks=all: once the follower is down the ISR is the leader
alone, and acks=all means "acknowledged by the ISR", i.e. by one broker. If that broker
dies and the stale follower is the first to come back, unclean.leader.election.enable
decides between availability and the acknowledged writes: off, the partition waits
offline for the old leader; on, the follower leads with a log that never had them and
the old leader truncates them away when it returns.

The steps are spaced by the brokers' ZooKeeper session timeout, and the leader's kill
also waits for ZooKeeper to show the ISR shrunk, so the run is the same sequence each
time; the checks say so if a step ever came too late.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, BrokerRegistered, IsrIs, LeaderChanged, LeaderIs, Offline
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import Check, CountRange, Eventually, Sends, Throughout, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
RATE_PER_S = 100
# Retries without idempotence may write a message twice or out of order; neither is what
# this scenario is about, so both are accepted on both sides.
TOLERATED: dict[str, Rule] = {"duplicate": "any", "reordered": "any", "unseen": "any",
                              "aborted_read": 0, "unexpected": 0}
SAFE: dict[str, Rule] = {**TOLERATED, "lost": 0, "truncated": 0}
UNSAFE: dict[str, Rule] = {**TOLERATED, "lost": "at_least_one", "truncated": "any"}
START_S = 90.0  # a JVM start and a registration on a loaded machine


def s5_spec(leader: int, follower: int, unclean: bool, session_timeout_s: float) -> ScenarioSpec:
    """Follower down, leader alone acknowledges, leader down, stale follower back first."""
    session = session_timeout_s
    leader_killed = 1 + 2 * session  # the follower's session expired and the ISR shrank
    follower_back = leader_killed + 2 * session  # the leader's session expired: offline
    # The stale follower is alone long enough after its start to be elected or not.
    leader_back = follower_back + START_S / 3 + 2 * session
    expected_leader = follower if unclean else leader
    stale_follower: tuple[Check, ...] = (
        (Eventually(AllOf((LeaderIs(TOPIC, 0, broker=follower), IsrIs(TOPIC, 0, brokers=(follower,)),
                           LeaderChanged(TOPIC, 0))), heal(1), within_s=START_S,
                    label="stale follower elected (unclean), leader epoch rose"),)
        if unclean else
        (Eventually(BrokerRegistered(follower), heal(1), within_s=START_S),
         Throughout(AllOf((Offline(TOPIC, 0), IsrIs(TOPIC, 0, brokers=(leader,)))), heal(1), heal(2),
                    label="stale follower back: the partition stays offline until the old leader returns")))
    return ScenarioSpec(
        id="s5-unclean-election", title=f"S5 unclean leader election {'enabled' if unclean else 'disabled'}",
        description=f"RF 2 (leader {leader}, follower {follower}, neither the controller), "
                    "min.insync.replicas=1, acks=all. Kill the follower; once ZooKeeper shows the "
                    "ISR shrunk to the leader, keep writing; kill the leader; start the stale "
                    "follower first; then the old leader.",
        expected="unclean election off: offline (leader -1) until the old leader returns; nothing "
                 "lost." if not unclean else
                 "unclean election on: the stale follower leads, the old leader truncates, and the "
                 "messages acknowledged while the follower was down are reported lost.",
        topic=TopicSpec(partitions=1, replication_factor=2, assignment={0: (leader, follower)},
                        config={"min.insync.replicas": 1, "unclean.leader.election.enable": unclean}),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cc", "c"),),
        expectations=UNSAFE if unclean else SAFE,
        sample_interval_s=0.1, warmup_acked=100,
        schedule=(
            {"start_s": 1, "duration_s": follower_back - 1, "fault": "kill",
             "target": {"broker": follower}},
            {"start_s": leader_killed, "when_timeout_s": START_S,
             "when": {"isr_is": {"brokers": [leader], "topic": TOPIC, "partition": 0}},
             "duration_s": leader_back - leader_killed, "fault": "kill", "target": {"broker": leader}},
        ),
        checks=(
            Eventually(AllOf((LeaderIs(TOPIC, 0, broker=leader), IsrIs(TOPIC, 0, brokers=(leader,)))),
                       inject(1), within_s=2 * session,
                       label="follower down: ISR shrank to the leader alone"),
            Sends("acked", CountRange(at_least=RATE_PER_S), start=inject(1), until=inject(2),
                  timed_by="ack", label="the leader alone keeps acknowledging acks=all writes"),
            Eventually(AllOf((Offline(TOPIC, 0), IsrIs(TOPIC, 0, brokers=(leader,)))), inject(2),
                       within_s=2 * session, label="leader down: offline, ISR keeps only the dead leader"),
            *stale_follower,
            Eventually(AllOf((LeaderIs(TOPIC, 0, broker=expected_leader),
                              IsrIs(TOPIC, 0, brokers=(leader, follower)))), heal(2), within_s=START_S,
                       label=f"after the old leader's return broker {expected_leader} leads, ISR full"),
        ),
    )


@pytest.mark.parametrize("unclean", [False, True], ids=["unclean-off", "unclean-on"])
def test_s5_stale_follower_first_back_after_the_leader_dies(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...],
    unclean: bool,
) -> None:
    leader, follower = spare_brokers[:2]
    run = run_spec(s5_spec(leader, follower, unclean, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
