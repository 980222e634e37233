"""S4 The durable configuration: acks=all, RF 3, min.insync.replicas=2, no unclean
election. Killing the leader loses nothing; killing two replicas makes writes fail
rather than be acknowledged; lowering min.insync.replicas trades that safety away."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults import BrokerId, Kill, TopicConfig
from faults.conditions import AllOf, LeaderChanged, NewLeaderFromIsr
from harness.cluster.lifecycle import Cluster
from harness.compose.checks import Eventually, inject
from harness.compose.scenario import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.compose.spec_runner import run_spec
from harness.history import Rule
from harness.workload.clients import make_consumer, read_values
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios._network_helpers import Mark, partition_state, place_controller, wait_for

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


def test_s4_killing_the_leader_elects_from_the_isr_and_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(s4_kill_leader_spec(cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()


# Long enough past the ISR shrink that sends made after it outlive the producer's
# message.timeout.ms (15 s, harness.workload.clients) while every attempt is refused.
REFUSED_S = 22.0
LOWERED_S = 8.0


def test_s4_two_replicas_down_refuses_writes_until_min_isr_is_lowered(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    # Broker 0 leads p0 and is the controller: killing 1 and 2 shrinks the ISR to the
    # leader without a controller election in the way.
    place_controller(cluster, 0)
    spec = ScenarioSpec(
        id="s4-two-replicas-down", title="S4 durable configuration: two of three replicas down",
        description="acks=all, RF 3, min.insync.replicas=2, unclean election off, one partition led by "
                    "broker 0; kill -9 its two followers, then lower min.insync.replicas to 1 at run time.",
        expected="While one replica is in sync, writes are refused with NOT_ENOUGH_REPLICAS, never "
                 "acknowledged, and reads continue from the survivor; lowered to 1, writes are "
                 "acknowledged again; after both return nothing acknowledged is lost and no refused "
                 "send is read.",
        topic=TopicSpec(assignment={0: [0, 1, 2]}, config=dict(DURABLE_TOPIC.config)),
        producers=(ProducerSpec("pa", "a", DURABLE_PRODUCER, rate_per_s=100),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT,
    )
    with scenario(spec) as run:
        run.settle(3)
        kills = [Kill(BrokerId(1)), Kill(BrokerId(2))]
        killed = Mark.now()
        for kill in kills:
            run.inject(kill)
        wait_for(lambda: partition_state(cluster, run.topic, 0).isr == (0,), 40,
                 "the ISR shrinking to the leader")
        shrunk = Mark.now()
        run.window("kill of both followers -> ISR [0] (ZooKeeper)", shrunk.wall - killed.wall)
        assert run.workload is not None
        highest_acked = run.workload.last_acked().get(0, -1)
        reader = make_consumer(cluster, "c")
        try:
            read_back = read_values(reader, run.topic, [0], highest_acked + 1, timeout_s=30)
        finally:
            reader.close()
        assert run.check("reads continue from the survivor while writes are refused",
                         len(read_back) >= highest_acked + 1 > 0,
                         f"{len(read_back)} records read back from offset 0; offsets 0..{highest_acked} "
                         "had been acknowledged")
        run.settle(max(0.0, REFUSED_S - (Mark.now().wall - shrunk.wall)))
        refused_until = Mark.now()
        lower = TopicConfig(run.topic, {"min.insync.replicas": 1})
        run.inject(lower)
        lowered = Mark.now()
        run.settle(LOWERED_S)
        lowered_until = Mark.now()
        for kill in kills:
            run.heal(kill)
        wait_for(lambda: set(partition_state(cluster, run.topic, 0).isr) == {0, 1, 2}, 90,
                 "both followers back in the ISR")
        run.heal(lower)
        run.settle(3)
        verdict = run.finish()
        clients = ClientLog.of(run)
        # One second after the shrink: requests in flight at the shrink may still be
        # answered by a leader that appended them first (in doubt, not acknowledged).
        acked_refused = clients.acked_between("pa", shrunk.wall + 1, refused_until.wall)
        errors = clients.attempt_errors_between("pa", shrunk.wall, refused_until.wall)
        assert run.check("writes refused, never acknowledged, while the ISR was the leader alone",
                         acked_refused == 0 and errors.get("NOT_ENOUGH_REPLICAS", 0) > 0,
                         f"{acked_refused} acknowledgements in {refused_until.wall - shrunk.wall - 1:.1f} s; "
                         f"failed attempts by error: {errors}")
        counts = verdict.findings.counts()
        failed = sum(1 for outcome in clients.outcome_of.values() if outcome == "failed")
        assert run.check("refused sends end definitively failed, and none of them is read",
                         failed > 0 and counts["aborted_read"] == 0,
                         f"{failed} sends failed; {counts['aborted_read']} of them read (aborted_read)")
        acked_lowered = clients.acked_between("pa", lowered.wall, lowered_until.wall)
        assert run.check("min.insync.replicas=1 lets writes through with one replica in sync",
                         acked_lowered > 100,
                         f"{acked_lowered} acknowledgements in the {LOWERED_S:.0f} s after the change")
    assert verdict.passed, verdict.to_dict()["rules"]
    assert counts["lost"] == 0 and counts["aborted_read"] == 0
