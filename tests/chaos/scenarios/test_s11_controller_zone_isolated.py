"""S11 The controller's zone isolated.

The controller is put on broker 0 and zone a is cut off. The controller's claim is the
ephemeral ``/controller`` znode, so the majority gets a new controller only when broker
0's ZooKeeper session expires; the new controller writes a higher ``/controller_epoch``.
Broker 0 cannot reach ZooKeeper and never hears of it: it still names itself controller
in its metadata - two controllers at once, told apart only by the epoch that fences the
old one's requests. After the heal broker 0 finds its session expired, resigns, and is
brought back into the ISRs by the new controller.

Two variants. ``leaders-elsewhere`` (the scenario proper): the partitions are led by
brokers 1 and 2, producers use acks=all with min.insync.replicas=2, and nothing
acknowledged is lost. ``controller-leads-acks-1``: broker 0 also leads both partitions,
so S10's split brain happens together with the dual controllers, with S10's outcome
for acks=1: writes the isolated broker acknowledged are truncated and caught.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from faults import isolate_zone
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios._network_helpers import (
    Mark,
    all_in_isr,
    controller_seen_by,
    examples,
    leader_seen_by,
    none_in_isr,
    place_controller,
    wait_for,
)

pytestmark = pytest.mark.chaos

OLD_CONTROLLER = 0


@dataclass(frozen=True)
class Variant:
    """Who leads the partitions, and the producer setting whose outcome is asserted."""

    assignment: dict[int, list[int]]
    acks: str
    min_isr: int

    @property
    def controller_leads(self) -> bool:
        return all(replicas[0] == OLD_CONTROLLER for replicas in self.assignment.values())


VARIANTS = {
    "leaders-elsewhere": Variant({0: [1, 2, 0], 1: [2, 1, 0]}, acks="all", min_isr=2),
    "controller-leads-acks-1": Variant({0: [0, 1, 2], 1: [0, 2, 1]}, acks="1", min_isr=1),
}


@pytest.mark.parametrize("variant_name", list(VARIANTS))
def test_s11_controller_zone_isolated(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster,
    variant_name: str,
) -> None:
    variant = VARIANTS[variant_name]
    placed = place_controller(cluster, OLD_CONTROLLER)
    partitions = tuple(variant.assignment)
    split = variant.controller_leads
    producer = {"acks": variant.acks, "enable.idempotence": False, "retries": 2147483647}
    accept: dict[str, Rule] = {"aborted_read": 0, "unexpected": 0, "duplicate": "any", "reordered": "any",
                                 "unseen": 0}
    accept.update({"lost": "at_least_one", "truncated": "at_least_one"} if split
                  else {"lost": 0, "truncated": 0})
    spec = ScenarioSpec(
        id="s11-controller-zone-isolated", title="S11 the controller's zone isolated",
        description=f"Controller on broker 0 (zone a); partitions {variant.assignment}; isolate zone a; "
                    f"acks={variant.acks}, min.insync.replicas={variant.min_isr}.",
        expected="New controller on the majority with a higher controller epoch while broker 0 still "
                 "names itself controller; zone a's clients fail, the others keep working; after the heal "
                 "broker 0 resigns and rejoins the ISRs. "
                 + ("Broker 0 also leads, so S10's split brain follows: its acks=1 writes are truncated "
                    "and caught." if split else "Nothing acknowledged is lost."),
        topic=TopicSpec(assignment=variant.assignment, config={"min.insync.replicas": variant.min_isr}),
        producers=(ProducerSpec("pa", "a", producer, rate_per_s=70),
                   ProducerSpec("pb", "b", producer, rate_per_s=70),
                   ProducerSpec("pc", "c", producer, rate_per_s=70)),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=accept,
    )
    with scenario(spec) as run:
        run.settle(3)
        before = cluster.state([run.topic])
        isolation = isolate_zone("a")
        run.inject(isolation)
        cut_at = Mark.now()
        moved = wait_for(lambda: cluster.state([]).controller not in (None, OLD_CONTROLLER), 40,
                         "a new controller on the majority side")
        run.window("isolation -> new controller in ZooKeeper", moved)
        elected = cluster.state([run.topic])
        new_controller = elected.controller
        assert new_controller is not None
        assert run.check("majority elected a new controller with a higher epoch",
                         new_controller != OLD_CONTROLLER and (elected.controller_epoch or 0) > placed.epoch
                         and OLD_CONTROLLER not in elected.live_brokers,
                         f"controller {OLD_CONTROLLER}/{placed.epoch} -> "
                         f"{new_controller}/{elected.controller_epoch}, live {elected.live_brokers}")
        def settled() -> bool:
            # During failover the new controller first takes the dead broker's replicas
            # offline (writing leader -1 where broker 0 led) and only then elects, so
            # wait for online leaders as well as for broker 0 leaving the ISRs.
            state = cluster.state([run.topic])
            return none_in_isr(cluster, run.topic, partitions, OLD_CONTROLLER) and all(
                state.partitions[(run.topic, p)].leader not in (-1, OLD_CONTROLLER) for p in partitions)

        wait_for(settled, 40, "the new controller dropping broker 0 from the ISRs and electing leaders")
        majority_at = Mark.now()
        majority = cluster.state([run.topic])
        wait_for(lambda: controller_seen_by(cluster, new_controller) == new_controller, 15,
                 "the new controller naming itself in its metadata")
        views = {b: controller_seen_by(cluster, b) for b in (OLD_CONTROLLER, new_controller)}
        assert run.check("two controllers: broker 0 still names itself",
                         views == {OLD_CONTROLLER: OLD_CONTROLLER, new_controller: new_controller},
                         f"controller per broker's own metadata {views}, ZooKeeper {new_controller}")
        if split:
            leaders = {p: (leader_seen_by(cluster, OLD_CONTROLLER, run.topic, p),
                           majority.partitions[(run.topic, p)].leader) for p in partitions}
            assert run.check("and two leaders: broker 0 still leads in its own view",
                             all(old == OLD_CONTROLLER and new not in (-1, OLD_CONTROLLER)
                                 for old, new in leaders.values()),
                             f"(broker 0's view, ZooKeeper) per partition {leaders}")
        else:
            for p in partitions:
                old, new = before.partitions[(run.topic, p)], majority.partitions[(run.topic, p)]
                assert run.check(f"p{p}: leader stays on the majority", new.leader == old.leader,
                                 f"leader {old.leader}/{old.leader_epoch} -> {new.leader}/{new.leader_epoch}")
        run.settle(4)
        assert run.check("broker 0 still names itself controller at the end of the isolation",
                         controller_seen_by(cluster, OLD_CONTROLLER) == OLD_CONTROLLER)
        heal_at = Mark.now()
        run.heal(isolation)
        resigned = wait_for(lambda: controller_seen_by(cluster, OLD_CONTROLLER) == new_controller, 60,
                            "broker 0 resigning and learning the new controller")
        run.window("heal -> broker 0 names the new controller (old one resigned)", resigned)
        run.window("two controllers (observed)", heal_at.mono - cut_at.mono - moved + resigned)
        rejoin = wait_for(lambda: all_in_isr(cluster, run.topic, partitions, OLD_CONTROLLER), 60,
                          "broker 0 back in the ISRs")
        run.window("heal -> broker 0 back in every ISR", rejoin)
        after = cluster.state([run.topic])
        assert run.check("controller stays on the majority; no further election",
                         (after.controller, after.controller_epoch)
                         == (new_controller, elected.controller_epoch),
                         f"controller epochs {placed.epoch} -> {elected.controller_epoch} -> "
                         f"{after.controller_epoch}")
        run.settle(2)
        verdict = run.finish()
        clients = ClientLog.of(run)
        for producer_id in ("pb", "pc"):
            rate = clients.rate_between(producer_id, majority_at.wall, heal_at.wall)
            assert run.check(f"{producer_id} keeps producing on the majority side", rate > 30,
                             f"{rate:.0f} acks/s once the new controller shrank the ISRs")
        zone_a_acks = clients.acked_between("pa", majority_at.wall, heal_at.wall)
        if split:
            assert run.check("zone a's clients still get acks=1 writes acknowledged by broker 0",
                             zone_a_acks > 0, f"pa: {zone_a_acks} acks")
        else:
            assert run.check("zone a's clients fail", clients.acked_between("pa", cut_at.wall + 1,
                                                                             heal_at.wall) == 0,
                             "no acks between the isolation and the heal")
        # acks=1 writes broker 0 acknowledged while cut off existed on broker 0 alone.
        acked_alone = clients.acked_between("pa", cut_at.wall + 0.5, heal_at.wall)
    counts = verdict.findings.counts()
    record = verdict.to_dict()
    assert verdict.passed, record["rules"]
    if split:
        assert counts["lost"] >= acked_alone > 0
        assert examples(record, "lost") and examples(record, "truncated")
    else:
        assert counts["lost"] == 0 and counts["truncated"] == 0
    assert verdict.findings.totals.get("acked", 0) > 1000
