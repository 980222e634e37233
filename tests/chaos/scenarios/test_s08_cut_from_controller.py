"""S8 A broker cut off from the controller only.

In ZooKeeper mode a broker learns who leads what only from the controller's
UpdateMetadata and LeaderAndIsr requests; it never reads partition state from ZooKeeper
itself. So a broker whose links to the controller are cut keeps serving - ZooKeeper
session, replication and clients are all up - until leadership changes; from then on
its metadata is stale and it tells clients that a dead broker leads. The test makes
that visible three ways: ZooKeeper (new leader, epoch up, controller unchanged), each
broker's own Metadata answer (they disagree, and the leader broker 1 names does not
answer), and real clients (one bootstrapped at broker 2 produces; one in a zone cut
from broker 2, bootstrapped at broker 1, has only broker 1's stale metadata and fails
every send).

Placement is fixed so the meaning never changes between runs: controller on broker 2,
broker 1 cut off from it, broker 0 leads the partitions (replicas [0, 2, 1], so the
controller itself becomes the new leader and broker 1 stays a follower).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from faults import BrokerId, Kill, ZoneClients, cut_between
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios._network_helpers import (
    Mark,
    all_in_isr,
    leader_seen_by,
    place_controller,
    probe,
    single_broker_bootstrap,
    wait_for,
)

pytestmark = pytest.mark.chaos

LEADER, STALE, CONTROLLER = 0, 1, 2
REPLICAS = [LEADER, CONTROLLER, STALE]
PARTITIONS = (0, 1)
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
# acks=all on the probe partition waits for broker 1 (cut from broker 2, the new leader)
# until broker 2 shrinks the ISR after replica.lag.time.max.ms (5 s); a probe timeout
# close to that raced the shrink on a loaded machine, so it allows three times as much.
PROBE_COUNT, PROBE_TIMEOUT_S = 20, 15.0


def test_s8_broker_cut_from_controller_keeps_stale_metadata(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    placed = place_controller(cluster, CONTROLLER)
    # A second topic, with the same replicas, for the probe clients: their records must
    # not show up in the scenario's log as messages nobody sent.
    probe_topic = f"s8-probe-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(probe_topic, assignment={0: REPLICAS})
    spec = ScenarioSpec(
        id="s8-cut-from-controller", title="S8 a broker cut off from the controller only",
        description="Controller on broker 2; cut broker 1 <-> broker 2 (both directions); then kill -9 "
                    "broker 0, leader of both partitions (replicas [0, 2, 1]); acks=all producers in "
                    "every zone.",
        expected="Producing unaffected while leadership is stable; after the kill the controller elects "
                 "broker 2 but cannot tell broker 1, whose metadata names the dead broker: brokers "
                 "disagree and a client using broker 1's metadata fails. After the heal metadata "
                 "converges; nothing acknowledged is lost.",
        topic=TopicSpec(assignment={p: REPLICAS for p in PARTITIONS}),
        producers=tuple(ProducerSpec(f"p{z}", z, PRODUCER, rate_per_s=70) for z in ("a", "b", "c")),
        consumers=(ConsumerSpec("cc", "c"),),
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                      "duplicate": "any", "reordered": "any", "unseen": 0},
    )
    with scenario(spec) as run:
        run.settle(2)
        cut = cut_between(BrokerId(STALE), BrokerId(CONTROLLER))
        run.inject(cut)
        cut_at = Mark.now()
        run.settle(6)  # leadership stable, broker 1 cut off from the controller
        stable = {b: leader_seen_by(cluster, b, run.topic, 0) for b in (LEADER, STALE, CONTROLLER)}
        assert run.check("with stable leadership every broker names broker 0 as leader",
                         set(stable.values()) == {LEADER}, f"views {stable}")
        before = cluster.state([run.topic])
        kill = Kill(BrokerId(LEADER))
        run.inject(kill)
        killed_at = Mark.now()

        def elected() -> bool:
            return all(cluster.state([run.topic]).partitions[(run.topic, p)].leader == CONTROLLER
                       for p in PARTITIONS)

        election = wait_for(elected, 40, "broker 2 elected leader in ZooKeeper")
        run.window("kill -9 of the leader -> new leader in ZooKeeper", election)

        def disagree() -> bool:
            return (leader_seen_by(cluster, CONTROLLER, run.topic, 0) == CONTROLLER
                    and leader_seen_by(cluster, STALE, run.topic, 0) == LEADER)

        wait_for(disagree, 10, "brokers 1 and 2 disagreeing about the leader")
        disagree_at = Mark.now()
        after = cluster.state([run.topic])
        for p in PARTITIONS:
            old, new = before.partitions[(run.topic, p)], after.partitions[(run.topic, p)]
            assert run.check(f"p{p}: controller elected broker 2 from the ISR, epoch up",
                             new.leader == CONTROLLER and new.leader_epoch > old.leader_epoch
                             and CONTROLLER in old.isr,
                             f"leader {old.leader}/{old.leader_epoch} -> {new.leader}/{new.leader_epoch}")
        assert run.check("controller unchanged (broker 2, same epoch)",
                         (after.controller, after.controller_epoch) == (CONTROLLER, placed.epoch),
                         f"controller {after.controller} epoch {after.controller_epoch}")
        views = {b: leader_seen_by(cluster, b, run.topic, 0) for b in (STALE, CONTROLLER)}
        assert run.check("brokers disagree: broker 1 still names the dead broker 0",
                         views == {STALE: LEADER, CONTROLLER: CONTROLLER}, f"views {views}, ZooKeeper 2")
        stale_view = cluster.broker_view(STALE, [run.topic])
        assert run.check("broker 1 still lists dead broker 0 as live", LEADER in stale_view.brokers,
                         f"broker 1 knows brokers {stale_view.brokers}, ZooKeeper {after.live_brokers}")
        # A client that follows broker 1's metadata goes to broker 0, which is dead: it
        # cannot connect (asked directly, not through a client library's choices).
        assert run.check("the leader broker 1 names cannot be reached",
                         leader_seen_by(cluster, LEADER, run.topic, 0) is None,
                         "broker 0 does not answer a Metadata request")
        via_controller = probe(single_broker_bootstrap(cluster, "c", CONTROLLER), probe_topic, 0,
                               PROBE_COUNT, PROBE_TIMEOUT_S)
        assert run.check("a client bootstrapped at broker 2 produces",
                         len(via_controller.acked) == PROBE_COUNT, f"{len(via_controller.acked)} acked")
        # A client bootstrapped at broker 1 could still open a connection to broker 2 for a
        # metadata refresh and recover; with zone b's clients cut from broker 2 for the
        # probe, broker 1's metadata is all it can ever have, and every send must fail.
        blind = cut_between(ZoneClients("b"), BrokerId(CONTROLLER))
        run.inject(blind)
        try:
            via_stale = probe(single_broker_bootstrap(cluster, "b", STALE), probe_topic, 0,
                              PROBE_COUNT, PROBE_TIMEOUT_S)
        finally:
            run.heal(blind)
        assert run.check("a client with only broker 1's metadata fails every send",
                         not via_stale.acked and len(via_stale.failed) == PROBE_COUNT,
                         f"{len(via_stale.acked)} of {PROBE_COUNT} acked, "
                         f"errors {sorted(set(via_stale.failed.values()))}")
        assert run.check("broker 1 still disagrees while cut off",
                         leader_seen_by(cluster, STALE, run.topic, 0) == LEADER)
        healed_at = Mark.now()
        run.heal(cut)
        converge = wait_for(lambda: all(leader_seen_by(cluster, STALE, run.topic, p) == CONTROLLER
                                        for p in PARTITIONS), 30, "broker 1's metadata converging")
        run.window("heal -> broker 1's metadata names the new leader", converge)
        run.window("brokers disagree about the leader (observed)",
                   healed_at.mono - disagree_at.mono + converge)
        rejoin = wait_for(lambda: all_in_isr(cluster, run.topic, PARTITIONS, STALE), 40,
                          "broker 1 following the new leader and rejoining the ISRs")
        run.window("heal -> broker 1 back in the ISRs", rejoin)
        run.settle(2)
        verdict = run.finish()
        clients = ClientLog.of(run)
        for producer in ("pa", "pb", "pc"):
            # Sends of the last seconds before the kill may still be in flight when the
            # leader dies (acks take longer on a loaded machine): judge only older ones.
            outcomes = clients.outcomes_sent_between(producer, cut_at.wall, killed_at.wall - 3)
            assert run.check(f"{producer} unaffected while leadership was stable",
                             outcomes["acked"] > 100 and outcomes["failed"] == outcomes["unknown"] == 0,
                             f"sends with the cut in place, before the kill: {outcomes}")
    counts = verdict.findings.counts()
    assert verdict.passed, verdict.to_dict()["rules"]
    assert counts["lost"] == 0 and counts["truncated"] == 0
    assert verdict.findings.totals.get("acked", 0) > 1000
