"""S9 A zone isolated, the partition leaders and the controller elsewhere.

Zone a (broker 0, ZooKeeper zk-a and zone a's clients) is cut from zones b and c. The
majority keeps its ZooKeeper quorum, its controller and its leaders, so the only thing
that changes in ZooKeeper is broker 0 leaving: its session expires and the leaders
drop it from their ISRs (through AlterPartition to the controller, which is why the
controller must be outside zone a). Nobody needs a new controller or a new leader.
The minority side freezes: zk-a stops serving, broker 0 keeps the metadata it had, and
zone a's clients, who can only reach broker 0, cannot produce or consume.

Placement is fixed: controller on broker 2, p0 led by broker 1 and p1 by broker 2,
broker 0 a follower of both.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults import isolate_zone
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios._network_helpers import (
    Mark,
    all_in_isr,
    none_in_isr,
    place_controller,
    wait_for,
)

pytestmark = pytest.mark.chaos

ISOLATED, CONTROLLER = 0, 2
ASSIGNMENT = {0: [1, 2, 0], 1: [2, 1, 0]}
PARTITIONS = tuple(ASSIGNMENT)
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
# Zone a's producer gives up on a record after 4 s, so its failure during the isolation
# shows as failed sends, not merely as sends that waited for the heal.
ZONE_A_PRODUCER = {**PRODUCER, "message.timeout.ms": 4000, "request.timeout.ms": 3000}


def test_s9_zone_isolated_leader_elsewhere(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    placed = place_controller(cluster, CONTROLLER)
    spec = ScenarioSpec(
        id="s9-zone-isolated-leader-elsewhere", title="S9 a zone isolated, the partition leader elsewhere",
        description="Controller on broker 2; p0 led by broker 1, p1 by broker 2, broker 0 follows both; "
                    "isolate zone a (broker 0, zk-a, zone a's clients); acks=all producers and consumers "
                    "in several zones.",
        expected="zk-a loses quorum; broker 0 loses its session, keeps stale metadata and leaves the ISRs; "
                 "no controller or leader election; zone a's clients fail, b and c keep working; after "
                 "the heal broker 0 rejoins; nothing acknowledged lost.",
        topic=TopicSpec(assignment=ASSIGNMENT, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", ZONE_A_PRODUCER, rate_per_s=70),
                   ProducerSpec("pb", "b", PRODUCER, rate_per_s=70),
                   ProducerSpec("pc", "c", PRODUCER, rate_per_s=70)),
        consumers=(ConsumerSpec("ca", "a"), ConsumerSpec("cb", "b")),
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                      "duplicate": "any", "reordered": "any", "unseen": 0},
    )
    with scenario(spec) as run:
        run.settle(3)
        before = cluster.state([run.topic])
        isolation = isolate_zone("a")
        run.inject(isolation)
        cut_at = Mark.now()
        quorum_lost = wait_for(lambda: cluster.zookeeper_modes()["zk-a"] is None, 20, "zk-a to stop serving")
        run.window("isolation -> zk-a stops serving (no quorum)", quorum_lost)
        shrink = wait_for(lambda: none_in_isr(cluster, run.topic, PARTITIONS, ISOLATED), 40,
                          "broker 0 leaving the ISRs")
        run.window("isolation -> broker 0 out of every ISR (ZooKeeper)", shrink)
        expired = wait_for(lambda: ISOLATED not in cluster.state([]).live_brokers, 40,
                           "broker 0's session expiring")
        run.window("isolation -> broker 0 gone from /brokers/ids", expired)
        shrunk_at = Mark.now()
        run.settle(4)  # the majority works on without broker 0
        during = cluster.state([run.topic])
        modes = cluster.zookeeper_modes()
        assert run.check("majority ZooKeeper keeps quorum, zk-a does not",
                         modes["zk-a"] is None and sorted(str(modes[z]) for z in ("zk-b", "zk-c"))
                         == ["follower", "leader"], f"modes {modes}")
        assert run.check("no controller election",
                         (during.controller, during.controller_epoch) == (CONTROLLER, placed.epoch)
                         == (before.controller, before.controller_epoch),
                         f"controller {before.controller}/{before.controller_epoch} -> "
                         f"{during.controller}/{during.controller_epoch}")
        for p in PARTITIONS:
            old, new = before.partitions[(run.topic, p)], during.partitions[(run.topic, p)]
            # The leader's own ISR shrink (AlterPartition) keeps the leader epoch; if the
            # controller handles broker 0's expiry first it removes the replica itself and,
            # in ZooKeeper mode, bumps the leader epoch by one. Either way: same leader.
            assert run.check(f"p{p}: leader unchanged, broker 0 out of the ISR",
                             new.leader == old.leader and old.leader_epoch <= new.leader_epoch
                             <= old.leader_epoch + 1 and set(new.isr) == set(old.isr) - {ISOLATED},
                             f"leader {old.leader}/{old.leader_epoch} -> {new.leader}/{new.leader_epoch}, "
                             f"isr {list(old.isr)} -> {list(new.isr)}")
        stale = cluster.broker_view(ISOLATED, [run.topic])
        stale_isr = {v.partition: v.isr for v in stale.topics.get(run.topic, ())}
        assert run.check("broker 0 keeps stale metadata (itself live and in every ISR)",
                         ISOLATED in stale.brokers
                         and all(ISOLATED in stale_isr.get(p, ()) for p in PARTITIONS),
                         f"broker 0 sees brokers {stale.brokers}, isr {stale_isr}; "
                         f"ZooKeeper: brokers {during.live_brokers}, "
                         f"isr { {p: list(during.partitions[(run.topic, p)].isr) for p in PARTITIONS} }")
        heal_at = Mark.now()
        run.heal(isolation)
        back = wait_for(lambda: ISOLATED in cluster.state([]).live_brokers, 40, "broker 0 registering again")
        run.window("heal -> broker 0 back in /brokers/ids", back)
        rejoin = wait_for(lambda: all_in_isr(cluster, run.topic, PARTITIONS, ISOLATED), 60,
                          "broker 0 catching up and rejoining the ISRs")
        run.window("heal -> broker 0 back in every ISR", rejoin)
        after = cluster.state([run.topic])
        assert run.check("still no controller election after the heal",
                         (after.controller, after.controller_epoch) == (CONTROLLER, placed.epoch),
                         f"controller {after.controller}/{after.controller_epoch}")
        run.settle(2)
        verdict = run.finish()
        clients = ClientLog.of(run)
        dark_from, dark_to = cut_at.wall + 1, heal_at.wall
        failed = clients.outcomes_sent_between("pa", dark_from, dark_to - 5)  # timed out before the heal
        assert run.check("zone a's producer failed while isolated",
                         clients.acked_between("pa", dark_from, dark_to) == 0 and failed["acked"] == 0
                         and failed["unknown"] + failed["failed"] > 0,
                         f"no acks in the isolation; its sends there ended {failed}")
        assert run.check("zone a's consumer polled nothing while isolated",
                         clients.polled_between("ca", cut_at.wall + 2, dark_to) == 0,
                         f"{clients.polled_between('ca', cut_at.wall + 2, dark_to)} records")
        for producer in ("pb", "pc"):
            rate = clients.rate_between(producer, shrunk_at.wall, heal_at.wall)
            assert run.check(f"{producer} kept producing once broker 0 left the ISRs", rate > 30,
                             f"{rate:.0f} acks/s, longest gap in the isolation "
                             f"{clients.producer_gap(producer, cut_at.wall, heal_at.wall):.1f} s")
        assert run.check("zone b's consumer kept consuming", clients.polled_between("cb", shrunk_at.wall,
                                                                                      heal_at.wall) > 100,
                         f"{clients.polled_between('cb', shrunk_at.wall, heal_at.wall)} records")
    counts = verdict.findings.counts()
    assert verdict.passed, verdict.to_dict()["rules"]
    assert counts["lost"] == 0 and counts["truncated"] == 0
    assert verdict.findings.totals.get("acked", 0) > 1000
