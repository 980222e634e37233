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
first, awaited in ZooKeeper, then the follower's. Were both killed at once, whichever
session expired first would decide whether the follower is still in the ISR.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from faults import BrokerId, Kill, cut_link
from harness.cluster.fabric import LinkKind
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios.conftest import await_partition, brief, warm_up

pytestmark = pytest.mark.chaos

RATE_PER_S = 100
HOLD_BACK_S = 2.0  # well inside replica.lag.time.max.ms (5 s): the follower stays in the ISR
TOLERATED: dict[str, Rule] = {"duplicate": "any", "reordered": "any", "unseen": "any",
                              "aborted_read": 0, "unexpected": 0}
SAFE: dict[str, Rule] = {**TOLERATED, "lost": 0, "truncated": 0}
UNSAFE: dict[str, Rule] = {**TOLERATED, "lost": "at_least_one", "truncated": "any"}
ELECTION_TIMEOUT_S = 30.0
START_TIMEOUT_S = 90.0


@pytest.mark.parametrize("acks", ["all", "1"], ids=["acks-all", "acks-1"])
def test_s6_follower_held_back_then_both_crash_and_the_follower_returns_first(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...],
    acks: str,
) -> None:
    """Cut the follower's fetch link, kill leader then follower, restart follower first."""
    leader, follower = spare_brokers[:2]
    unsafe = acks == "1"
    spec = ScenarioSpec(
        sample_interval_s=0.1,
        id="s6-crash-before-replication", title=f"S6 crash before replication, acks={acks}",
        description=f"RF 2 (leader {leader}, follower {follower}, neither the controller), "
                    f"min.insync.replicas=1, acks={acks}. Cut the follower's fetch link for "
                    f"{HOLD_BACK_S:.0f} s (it stays in the ISR), kill the leader, then the follower; "
                    "restart the follower first, then the old leader.",
        expected="acks=1: the writes acknowledged after the follower fell behind are lost "
                 "(truncated from the old leader)." if unsafe else
                 "acks=all: those writes were never acknowledged; nothing acknowledged is lost.",
        topic=TopicSpec(partitions=1, replication_factor=2, assignment={0: [leader, follower]},
                        config={"min.insync.replicas": 1, "unclean.leader.election.enable": False}),
        producers=(ProducerSpec("pa", "a", {"acks": acks, "enable.idempotence": False,
                                            "retries": 2147483647}, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cc", "c"),),
        expectations=UNSAFE if unsafe else SAFE,
    )
    with scenario(spec) as run:
        zk = run.cluster_state
        topic = run.topic
        warm_up(run)
        run.settle(1)

        hold = cut_link(BrokerId(follower), BrokerId(leader), kind=LinkKind.REPLICATION)
        run.inject(hold)
        held = run.log.events[-1]
        run.settle(HOLD_BACK_S)
        leader_stop = Kill(BrokerId(leader))
        run.inject(leader_stop)
        leader_down = run.log.events[-1]
        during = [s.partitions[(topic, 0)] for _, s in zk.between(held.mono, leader_down.mono)]
        assert run.check("held-back follower still in the ISR when the leader died",
                         bool(during) and all(p.leader == leader and follower in p.isr for p in during),
                         f"{len(during)} samples, last {brief(during[-1]) if during else None}")
        run.heal(hold)  # nothing left to fetch from: the leader is dead

        _, elected = await_partition(zk, topic, 0, lambda p: p.leader == follower, ELECTION_TIMEOUT_S,
                                     leader_down.mono, "the in-sync follower taking over")
        assert run.check("controller elected the follower from the ISR", elected.isr == (follower,),
                         brief(elected))
        follower_stop = Kill(BrokerId(follower))
        run.inject(follower_stop)
        follower_down = run.log.events[-1]
        _, offline = await_partition(zk, topic, 0, lambda p: p.leader == -1, ELECTION_TIMEOUT_S,
                                     follower_down.mono, "partition going offline")
        assert run.check("both down: offline, the follower is the ISR's last member",
                         offline.isr == (follower,), brief(offline))

        run.heal(follower_stop)  # the follower restarts first
        restarted = run.log.events[-1]
        _, back = await_partition(zk, topic, 0, lambda p: p.leader != -1, START_TIMEOUT_S,
                                  restarted.mono, "the restarted follower leading")
        assert run.check("restarted follower leads again (clean election), epoch rose",
                         back.leader == follower and back.leader_epoch > offline.leader_epoch,
                         f"{brief(offline)} -> {brief(back)}")
        run.heal(leader_stop)
        _, healed = await_partition(zk, topic, 0, lambda p: set(p.isr) == {leader, follower},
                                    START_TIMEOUT_S, restarted.mono, "the old leader rejoining the ISR")
        assert run.check("old leader rejoined as follower (truncated to the new leader's log)",
                         healed.leader == follower, brief(healed))
        run.settle(2)
        verdict = run.finish()

        acks_log = ClientLog.of(run)
        early_acks = acks_log.acked_on([0], 0.0, held.ts)
        held_acks = acks_log.acked_on([0], held.ts + 0.5, leader_down.ts)
        window_acks = acks_log.acked_on([0], held.ts - 1.0, leader_down.ts + 0.5)
        run.window("follower held back before the leader died", leader_down.ts - held.ts)
        run.window("p0 longest stretch without an acknowledged write",
                   acks_log.partition_gap(0, leader_down.ts, time.time()))
        counts = verdict.findings.counts()
        p0 = verdict.findings.partition(topic, 0) or pytest.fail("no findings for p0")
        lost = p0.examples.get("lost", [])
        print(f"\nS6 acks={acks}: counts {counts}; acknowledged while held back {held_acks}")
        assert run.check("writes were acknowledged before the follower was held back", early_acks > 0,
                         f"{early_acks} acknowledged before the cut")
        if unsafe:
            assert run.check("acks=1: the leader acknowledged writes the follower never fetched",
                             held_acks > 0, f"{held_acks} acknowledged during the hold-back")
        else:
            assert run.check("acks=all: nothing acknowledged while the follower was held back",
                             held_acks == 0, f"{held_acks} acknowledged during the hold-back")
    assert verdict.passed, verdict.to_dict()["rules"]
    if unsafe:
        assert counts["lost"] > 0, "acks=1 lost nothing: the checker is blind"
        assert counts["lost"] <= window_acks, "lost more than was acknowledged around the hold-back"
        assert lost and all(e.ack_ts is not None and held.ts - 1.0 <= e.ack_ts <= leader_down.ts + 0.5
                            for e in lost), f"lost examples outside the hold-back: {lost}"
    else:
        assert counts["lost"] == 0 and counts["truncated"] == 0
