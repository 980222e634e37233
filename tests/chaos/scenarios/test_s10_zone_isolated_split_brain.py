"""S10 A zone isolated with the partition leader inside: split brain.

Zone a is cut off while broker 0 leads both partitions and the controller (broker 2)
is outside. The majority sees broker 0's session expire and elects new leaders with a
higher leader epoch; broker 0 cannot reach ZooKeeper, is never told, and keeps
accepting writes from zone a's clients, who can reach nobody else. For a while the
partition has two leaders, each with its own clients.

Which side's acknowledged writes survive depends on acks. With acks=1 broker 0 acks
each write alone, and when it rejoins it truncates its log to the new leader's (by
leader epoch), so what it acknowledged in the split is gone: the checker must report
those writes as lost and truncated, with examples acknowledged to zone a's producer
during the isolation. With acks=all and min.insync.replicas=2 broker 0 cannot complete
a write without followers (Kafka 3.x leaders keep the old ISR until the controller
accepts a shrink, and the controller is unreachable), so nothing it wrote is ever
acknowledged and nothing acknowledged is lost.

Replicas [0, 1, 2] and [0, 2, 1]: broker 0 is the preferred leader of both, so a
preferred-leader election after the heal gives it leadership back.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults import PreferredLeaderElection, isolate_zone
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios._network_helpers import (
    Mark,
    all_in_isr,
    examples,
    leader_seen_by,
    partition_state,
    place_controller,
    wait_for,
)

pytestmark = pytest.mark.chaos

OLD_LEADER, CONTROLLER = 0, 2
ASSIGNMENT = {0: [0, 1, 2], 1: [0, 2, 1]}
PARTITIONS = tuple(ASSIGNMENT)
NEW_LEADER = {p: replicas[1] for p, replicas in ASSIGNMENT.items()}  # first live replica of the ISR


@pytest.mark.parametrize(("acks", "min_isr"), [("1", 1), ("all", 2)], ids=["acks-1", "acks-all-minisr-2"])
def test_s10_zone_isolated_split_brain(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster,
    acks: str, min_isr: int,
) -> None:
    placed = place_controller(cluster, CONTROLLER)
    unsafe = acks == "1"
    producer = {"acks": acks, "enable.idempotence": False, "retries": 2147483647}
    accept: dict[str, Rule] = {"aborted_read": 0, "unexpected": 0, "duplicate": "any", "reordered": "any",
                                 "unseen": 0}
    accept.update({"lost": "at_least_one", "truncated": "at_least_one"} if unsafe
                  else {"lost": 0, "truncated": 0})
    spec = ScenarioSpec(
        id="s10-split-brain", title="S10 a zone isolated with the partition leader inside: split brain",
        description=f"Broker 0 leads both partitions, controller on broker 2; isolate zone a; acks={acks}, "
                    f"min.insync.replicas={min_isr}; producers and consumers in zones a and b.",
        expected="New leaders elected on the majority (epoch up) while broker 0 still leads for zone a. "
                 + ("acks=1: writes broker 0 acknowledged in the split are truncated away and caught as "
                    "lost/truncated." if unsafe else
                    "acks=all, min.insync.replicas=2: broker 0 acknowledges nothing; nothing acknowledged "
                    "is lost.")
                 + " After the heal broker 0 follows, catches up, rejoins the ISRs and leads again after a "
                   "preferred-leader election.",
        topic=TopicSpec(assignment=ASSIGNMENT, config={"min.insync.replicas": min_isr}),
        producers=(ProducerSpec("pa", "a", producer, rate_per_s=100),
                   ProducerSpec("pb", "b", producer, rate_per_s=100)),
        consumers=(ConsumerSpec("ca", "a"), ConsumerSpec("cb", "b")),
        expectations=accept,
    )
    with scenario(spec) as run:
        run.settle(3)
        before = cluster.state([run.topic])
        isolation = isolate_zone("a")
        run.inject(isolation)
        cut_at = Mark.now()

        def elected() -> bool:
            state = cluster.state([run.topic])
            return all(state.partitions[(run.topic, p)].leader == NEW_LEADER[p] for p in PARTITIONS)

        election = wait_for(elected, 40, "new leaders elected on the majority side")
        run.window("isolation -> new leaders in ZooKeeper (session expiry + election)", election)
        elected_at = Mark.now()
        during = cluster.state([run.topic])
        assert run.check("broker 0's session expired; controller unchanged",
                         OLD_LEADER not in during.live_brokers
                         and (during.controller, during.controller_epoch) == (CONTROLLER, placed.epoch),
                         f"live {during.live_brokers}, "
                         f"controller {during.controller}/{during.controller_epoch}")
        for p in PARTITIONS:
            old, new = before.partitions[(run.topic, p)], during.partitions[(run.topic, p)]
            assert run.check(f"p{p}: majority elected broker {NEW_LEADER[p]} with a higher leader epoch",
                             new.leader_epoch > old.leader_epoch and OLD_LEADER not in new.isr,
                             f"leader {old.leader}/{old.leader_epoch} -> {new.leader}/{new.leader_epoch}, "
                             f"isr {list(new.isr)}")
        # ZooKeeper changes first; the controller's LeaderAndIsr reaches the new leaders
        # a moment later (and never reaches broker 0).
        wait_for(lambda: all(leader_seen_by(cluster, NEW_LEADER[p], run.topic, p) == NEW_LEADER[p]
                             for p in PARTITIONS), 15, "the new leaders learning of their election")
        views = {p: (leader_seen_by(cluster, OLD_LEADER, run.topic, p),
                     leader_seen_by(cluster, NEW_LEADER[p], run.topic, p)) for p in PARTITIONS}
        assert run.check("two leaders at once: broker 0 still believes it leads",
                         all(views[p] == (OLD_LEADER, NEW_LEADER[p]) for p in PARTITIONS),
                         f"(broker 0's view, new leader's view) per partition: {views}")
        run.settle(5)  # both brains take writes
        assert run.check("broker 0 still believes it leads at the end of the split",
                         all(leader_seen_by(cluster, OLD_LEADER, run.topic, p) == OLD_LEADER
                             for p in PARTITIONS))
        heal_at = Mark.now()
        run.heal(isolation)
        rejoin = wait_for(lambda: all_in_isr(cluster, run.topic, PARTITIONS, OLD_LEADER), 60,
                          "broker 0 truncating, catching up and rejoining the ISRs")
        run.window("heal -> broker 0 back in every ISR as a follower", rejoin)
        rejoined_at = Mark.now()
        healed = cluster.state([run.topic])
        assert run.check("after the heal broker 0 follows the new leaders",
                         all(healed.partitions[(run.topic, p)].leader == NEW_LEADER[p] for p in PARTITIONS)
                         and all(leader_seen_by(cluster, OLD_LEADER, run.topic, p) == NEW_LEADER[p]
                                 for p in PARTITIONS),
                         f"leaders {[healed.partitions[(run.topic, p)].leader for p in PARTITIONS]}")
        run.inject(PreferredLeaderElection(run.topic))
        for p in PARTITIONS:
            state = partition_state(cluster, run.topic, p)
            previous = healed.partitions[(run.topic, p)]
            assert run.check(f"p{p}: preferred-leader election makes broker 0 leader again",
                             state.leader == OLD_LEADER and state.leader_epoch > previous.leader_epoch,
                             f"leader {previous.leader}/{previous.leader_epoch} -> "
                             f"{state.leader}/{state.leader_epoch}")
        run.settle(2)
        verdict = run.finish()
        clients = ClientLog.of(run)
        # Broker 0 keeps acknowledging zone a's writes until the controller's LeaderAndIsr
        # reaches it after the heal, so the split lasts until it is a follower again.
        split_acks = clients.acked_between("pa", elected_at.wall, rejoined_at.wall)
        majority_acks = clients.acked_between("pb", elected_at.wall, heal_at.wall)
        assert run.check("the majority's clients write to the new leaders", majority_acks > 100,
                         f"pb: {majority_acks} acks between the election and the heal")
        if unsafe:
            assert run.check("zone a's clients still write to the old leader (acks=1 acknowledged)",
                             split_acks > 20, f"pa: {split_acks} acks from broker 0 after the new election")
        else:
            assert run.check("the isolated leader acknowledged nothing (acks=all, min.insync.replicas=2)",
                             clients.acked_between("pa", cut_at.wall + 1, heal_at.wall) == 0,
                             "0 acks in the isolation; pa's sends made in it ended "
                             f"{clients.outcomes_sent_between('pa', cut_at.wall + 1, heal_at.wall)} "
                             "(acknowledged by the new leaders after the heal)")
        # Every write broker 0 acknowledged while cut off was on broker 0 alone, so the
        # checker must report at least all of those as lost.
        acked_alone = clients.acked_between("pa", cut_at.wall + 0.5, heal_at.wall)
    counts = verdict.findings.counts()
    record = verdict.to_dict()
    assert verdict.passed, record["rules"]
    if unsafe:
        lost, truncated = examples(record, "lost"), examples(record, "truncated")
        assert counts["lost"] > 0 and counts["truncated"] > 0 and lost and truncated
        assert counts["lost"] >= acked_alone > 0, (counts, acked_alone)
        assert all(e["final_message_id"] != e["message_id"] for e in lost), lost
    else:
        assert counts["lost"] == 0 and counts["truncated"] == 0
    assert verdict.findings.totals.get("acked", 0) > 1000
