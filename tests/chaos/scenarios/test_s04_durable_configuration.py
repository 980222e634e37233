"""S4 The durable configuration: acks=all, RF 3, min.insync.replicas=2, no unclean
election. Killing the leader loses nothing; killing two replicas makes writes fail
rather than be acknowledged; lowering min.insync.replicas trades that safety away."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults import Kill, LeaderOf
from harness.cluster import Cluster
from harness.history import Rule
from harness.scenario import ScenarioRun, ScenarioSpec, TopicSpec, measure_until
from harness.workload import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

DURABLE_PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
DURABLE_TOPIC = TopicSpec(partitions=3, replication_factor=3,
                          config={"min.insync.replicas": 2, "unclean.leader.election.enable": False})
# Duplicates are possible with retries and idempotence off; nothing acknowledged may go.
ACCEPT: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
          "duplicate": "any", "reordered": "any", "unseen": "any"}


def test_s4_killing_the_leader_elects_from_the_isr_and_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    spec = ScenarioSpec(
        id="s4-kill-leader", title="S4 durable configuration: kill the leader",
        description="acks=all, RF 3, min.insync.replicas=2, unclean election off; kill -9 the "
                    "leader of partition 0 under load.",
        expected="A new leader comes from the ISR; zero acknowledged messages lost.",
        topic=DURABLE_TOPIC,
        producers=(ProducerSpec("pa", "a", DURABLE_PRODUCER, rate_per_s=200),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT,
    )
    with scenario(spec) as run:
        run.settle(3)
        before = cluster.state([run.topic]).partitions[(run.topic, 0)]
        (killed,) = run.inject(Kill(LeaderOf(run.topic, 0)))
        killed_id = int(killed.removeprefix("kafka-"))

        def new_leader() -> bool:
            now = cluster.state([run.topic]).partitions[(run.topic, 0)]
            return now.leader not in (-1, killed_id)

        gap = measure_until(new_leader, timeout_s=30)
        assert gap is not None, "no new leader within 30 s"
        run.window("p0 leader unavailable after kill -9 (ZooKeeper)", gap)
        after = cluster.state([run.topic]).partitions[(run.topic, 0)]
        assert run.check("new leader was in the ISR", after.leader in before.isr,
                         f"leader {before.leader} -> {after.leader}, isr before {list(before.isr)}")
        assert run.check("leader epoch rose", after.leader_epoch > before.leader_epoch,
                         f"{before.leader_epoch} -> {after.leader_epoch}")
        run.settle(3)
        verdict = run.finish()
    counts = verdict.findings.counts()
    assert verdict.passed, verdict.to_dict()["rules"]
    assert counts["lost"] == 0
    assert verdict.findings.totals.get("acked", 0) > 500
