"""S5 Unclean leader election loses acknowledged data.

RF 2, min.insync.replicas=1, acks=all: once the follower is down the ISR is the leader
alone, and acks=all means "acknowledged by the ISR", i.e. by one broker. If that broker
dies and the stale follower is the first to come back, unclean.leader.election.enable
decides between availability and the acknowledged writes: off, the partition waits
offline for the old leader; on, the follower leads with a log that never had them and
the old leader truncates them away when it returns.

Every step waits for ZooKeeper to show the state the next step relies on (ISR shrunk,
partition offline, follower registered), so the run is the same sequence each time
and not a race between session timeouts.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from faults import BrokerId, Kill
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios.conftest import await_partition, brief, offline_span, warm_up

pytestmark = pytest.mark.chaos

PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
RATE_PER_S = 100
# Retries without idempotence may write a message twice or out of order; neither is what
# this scenario is about, so both are accepted on both sides.
TOLERATED: dict[str, Rule] = {"duplicate": "any", "reordered": "any", "unseen": "any",
                              "aborted_read": 0, "unexpected": 0}
SAFE: dict[str, Rule] = {**TOLERATED, "lost": 0, "truncated": 0}
UNSAFE: dict[str, Rule] = {**TOLERATED, "lost": "at_least_one", "truncated": "any"}
ISR_TIMEOUT_S = 30.0
START_TIMEOUT_S = 90.0
HOLD_OFFLINE_S = 4.0


@pytest.mark.parametrize("unclean", [False, True], ids=["unclean-off", "unclean-on"])
def test_s5_stale_follower_first_back_after_the_leader_dies(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...],
    unclean: bool,
) -> None:
    """Follower down, leader alone acknowledges, leader down, stale follower back first."""
    leader, follower = spare_brokers[:2]
    spec = ScenarioSpec(
        sample_interval_s=0.1,
        id="s5-unclean-election", title=f"S5 unclean leader election {'enabled' if unclean else 'disabled'}",
        description=f"RF 2 (leader {leader}, follower {follower}, neither the controller), "
                    "min.insync.replicas=1, acks=all. Kill the follower; once ZooKeeper shows the "
                    "ISR shrunk to the leader, keep writing; kill the leader; start the stale "
                    "follower first; then the old leader.",
        expected="unclean election off: offline (leader -1) until the old leader returns; nothing "
                 "lost." if not unclean else
                 "unclean election on: the stale follower leads, the old leader truncates, and the "
                 "messages acknowledged while the follower was down are reported lost.",
        topic=TopicSpec(partitions=1, replication_factor=2, assignment={0: [leader, follower]},
                        config={"min.insync.replicas": 1, "unclean.leader.election.enable": unclean}),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cc", "c"),),
        expectations=UNSAFE if unclean else SAFE,
    )
    with scenario(spec) as run:
        zk = run.cluster_state
        assert run.workload is not None
        topic = run.topic
        warm_up(run)
        run.settle(1)

        follower_stop = Kill(BrokerId(follower))
        run.inject(follower_stop)
        follower_down = run.log.events[-1]
        _, shrunk = await_partition(zk, topic, 0, lambda p: p.isr == (leader,), ISR_TIMEOUT_S,
                                    follower_down.mono, "ISR shrinking to the leader")
        assert run.check("follower down: ISR shrank to the leader alone",
                         shrunk.leader == leader and shrunk.isr == (leader,), brief(shrunk))
        acked_at_shrink = run.workload.outcomes()["acked"]
        run.settle(3)
        alone = run.workload.outcomes()["acked"] - acked_at_shrink
        assert run.check("the leader alone keeps acknowledging acks=all writes", alone > RATE_PER_S,
                         f"{alone} acknowledged in 3 s with ISR [{leader}]")

        leader_stop = Kill(BrokerId(leader))
        run.inject(leader_stop)
        leader_down = run.log.events[-1]
        _, offline = await_partition(zk, topic, 0, lambda p: p.leader == -1, ISR_TIMEOUT_S,
                                     leader_down.mono, "partition going offline after the leader's kill")
        assert run.check("leader down: offline, ISR keeps only the dead leader",
                         offline.leader == -1 and offline.isr == (leader,), brief(offline))

        run.heal(follower_stop)  # the stale follower starts first; returns once it registered
        registered = time.monotonic()
        assert follower in cluster.state([]).live_brokers
        if unclean:
            _, elected = await_partition(zk, topic, 0, lambda p: p.leader == follower, ISR_TIMEOUT_S,
                                         registered - 1, "unclean election of the stale follower")
            assert run.check("stale follower elected (unclean), leader epoch rose",
                             elected.isr == (follower,) and elected.leader_epoch > offline.leader_epoch,
                             f"{brief(offline)} -> {brief(elected)}")
        else:
            run.settle(HOLD_OFFLINE_S)
            seen = [s.partitions[(topic, 0)] for _, s in zk.between(registered)]
            assert run.check(f"stale follower back: partition stays offline for {HOLD_OFFLINE_S:.0f} s",
                             bool(seen) and all(p.leader == -1 and p.isr == (leader,) for p in seen),
                             f"{len(seen)} samples, last {brief(seen[-1]) if seen else None}")

        run.heal(leader_stop)
        _, healed = await_partition(zk, topic, 0,
                                    lambda p: p.leader != -1 and set(p.isr) == {leader, follower},
                                    START_TIMEOUT_S, registered, "both replicas back in the ISR")
        expected_leader = follower if unclean else leader
        assert run.check(f"after the old leader's return broker {expected_leader} leads, ISR full",
                         healed.leader == expected_leader, brief(healed))
        span = offline_span(zk, topic, 0, leader_down.mono)
        assert span is not None, "ZooKeeper never showed the partition offline and back"
        run.window("p0 offline in ZooKeeper (leader -1)", span[1] - span[0])
        run.settle(2)
        verdict = run.finish()

        acks = ClientLog.of(run)
        run.window("p0 longest stretch without an acknowledged write",
                   acks.partition_gap(0, leader_down.ts, time.time()))
        acked_alone = acks.acked_on([0], follower_down.ts, leader_down.ts + 1.0)
        counts = verdict.findings.counts()
        p0 = verdict.findings.partition(topic, 0) or pytest.fail("no findings for p0")
        lost = p0.examples.get("lost", [])
        print(f"\nS5 unclean={unclean}: counts {counts}; acknowledged while the follower was down "
              f"{acked_alone}; offline {span[1] - span[0]:.1f} s")
    assert verdict.passed, verdict.to_dict()["rules"]
    if unclean:
        assert counts["lost"] > 0, "unclean election lost nothing: the checker is blind"
        assert counts["lost"] <= acked_alone, "lost more than was acknowledged while the follower was down"
        assert lost and all(e.ack_ts is not None and follower_down.ts <= e.ack_ts <= leader_down.ts + 1.0
                            for e in lost), f"lost examples outside the follower's downtime: {lost}"
    else:
        assert counts["lost"] == 0 and counts["truncated"] == 0
