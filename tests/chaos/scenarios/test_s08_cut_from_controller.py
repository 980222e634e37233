"""S8 A broker cut off from the controller only.

In ZooKeeper mode a broker learns who leads what only from the controller's
UpdateMetadata and LeaderAndIsr requests; it never reads partition state from ZooKeeper
itself. So a broker whose links to the controller are cut keeps serving - ZooKeeper
session, replication and clients are all up - until leadership changes; from then on
its metadata is stale and it tells clients that a dead broker leads. The test makes
that visible three ways: ZooKeeper (new leader, epoch up, controller unchanged), each
broker's own Metadata answer (they disagree, and the leader broker 1 names does not
answer), and real clients (one in a zone cut from broker 1, bootstrapped at broker 2,
produces; one in a zone cut from broker 2, bootstrapped at broker 1, has only broker 1's
stale metadata and fails every send).

On KRaft the controller is the quorum's leader, a node of its own, and a broker's
heartbeats and metadata fetches both go to it. Cut from it, broker 1 keeps its
replication and its clients but is fenced once its broker session passes without a
heartbeat: it leaves the ISRs (in ZooKeeper mode it stays registered and in sync, its
session being up), and its metadata, fetched from the controller, goes stale from the
cut on. What follows the kill is the same in both modes: broker 2 leads, broker 1 still
names the dead broker 0, and a client that only has broker 1's metadata fails.

Placement is fixed so the meaning never changes between runs: the controller beside
broker 2 (broker 2 itself, or zone c's voter), broker 1 cut off from it, broker 0 leads
the partitions (replicas [0, 2, 1], so broker 2 becomes the new leader and broker 1 stays
a follower).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import (
    AllOf,
    BrokerGone,
    BrokerRegistered,
    ControllerChanged,
    ControllerIs,
    JoinsIsr,
    LeaderChanged,
    LeaderIs,
    NewLeaderFromIsr,
    Not,
)
from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import Check, CountRange, Eventually, Seen, Sends, Throughout, heal, inject
from harness.scenario.probes import Probe
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller
from topologies.model import KRAFT, ZOOKEEPER

pytestmark = pytest.mark.chaos

LEADER, STALE, CONTROLLER = 0, 1, 2
REPLICAS = (LEADER, CONTROLLER, STALE)
PARTITIONS = (0, 1)
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
# acks=all on the probe partition waits for broker 1 (cut from broker 2, the new leader)
# until broker 2 shrinks the ISR after replica.lag.time.max.ms (5 s); a probe timeout
# close to that raced the shrink on a loaded machine, so it allows three times as much.
PROBE_COUNT, PROBE_TIMEOUT_S = 20, 15.0
STABLE_S = 6.0  # leadership stable with broker 1 cut off, before the kill
REJOIN_S = 40.0
FENCED_WITHIN_S = 15.0  # past the broker session: a heartbeat check on a loaded machine


def cut_off_broker(mode: str, session_timeout_s: float) -> Check:
    """What the cut does to broker 1's registration, in each metadata mode."""
    return {
        ZOOKEEPER: Throughout(BrokerRegistered(STALE), inject(1), heal(1),
                              label="broker 1 stays registered: its ZooKeeper session is up"),
        KRAFT: Eventually(AllOf((BrokerGone(STALE), *(Not(JoinsIsr(TOPIC, p, STALE)) for p in PARTITIONS))),
                          inject(1), within_s=session_timeout_s + FENCED_WITHIN_S,
                          label="broker 1 fenced and out of the ISRs: its heartbeats went to the controller"),
    }[mode]


def s8_spec(session_timeout_s: float, controller: int = CONTROLLER, mode: str = ZOOKEEPER) -> ScenarioSpec:
    """Cut broker 1 from the controller; kill the leader; ask every broker what it
    believes; produce through broker 2, then through broker 1 alone; heal. ``controller``
    is the active controller's id (broker 2, or in KRaft zone c's voter), ``mode`` the
    metadata mode whose expectation for broker 1's registration is checked."""
    session = session_timeout_s
    elected = 2 * session + 1  # broker 0's session expired, broker 2 elected, metadata sent
    blind_at = STABLE_S + elected
    blind_s = PROBE_TIMEOUT_S + 10
    cut_s = blind_at + blind_s + 4
    stale_leads = LeaderIs(TOPIC, 0, broker=LEADER)
    brokers = (LEADER, STALE, CONTROLLER)
    metadata = [Probe(f"stable-b{b}", b, inject(1), after_s=STABLE_S - 1) for b in brokers]
    stable = STABLE_S - 3  # sends made in the last seconds before the kill may meet it
    return ScenarioSpec(
        id="s8-cut-from-controller", title="S8 a broker cut off from the controller only",
        description=f"Controller {controller} beside broker 2; cut broker 1 <-> the controller (both "
                    "directions); then kill -9 "
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
        min_acked=1000, warmup_acked=100,
        schedule=(
            {"start_s": 0, "duration_s": cut_s, "fault": "cut",
             "links": {"from": {"broker": STALE}, "to": "active_controller", "both_ways": True}},
            {"start_s": STABLE_S, "duration_s": cut_s + 2 * session, "fault": "kill",
             "target": {"broker": LEADER}},
            # For the probe through broker 1: zone b's clients cannot reach broker 2, so
            # broker 1's metadata is all they can ever have.
            {"start_s": blind_at, "duration_s": blind_s, "fault": "cut",
             "links": {"from": {"zone_clients": "b"}, "to": {"broker": CONTROLLER}, "both_ways": True}},
            # For the probe through broker 2: a client that has learnt every broker may
            # ask any of them for metadata, and one that asks broker 1 stays on the dead
            # leader; zone c's clients are cut from broker 1 a second before the probe.
            {"start_s": blind_at - 1, "duration_s": blind_s + 1, "fault": "cut",
             "links": {"from": {"zone_clients": "c"}, "to": {"broker": STALE}, "both_ways": True}},
        ),
        probes=(*metadata,
                *(Probe(f"b{b}-after-kill", b, inject(2), after_s=elected) for b in brokers),
                Probe("via-b2", CONTROLLER, inject(2), after_s=elected, look="produce", zone="c",
                      count=PROBE_COUNT, timeout_s=PROBE_TIMEOUT_S),
                Probe("via-b1", STALE, inject(3), after_s=1, look="produce", zone="b", count=PROBE_COUNT,
                      timeout_s=PROBE_TIMEOUT_S),
                Probe("b1-still", STALE, inject(3), after_s=PROBE_TIMEOUT_S + 6),
                Probe("b1-healed", STALE, heal(1), after_s=2 * session)),
        checks=(
            *(Seen(probe.name, stale_leads,
                   label=f"with stable leadership broker {probe.broker} names broker 0 as leader")
              for probe in metadata),
            Throughout(AllOf((ControllerIs(controller), Not(ControllerChanged()))), inject(1),
                       label=f"controller unchanged ({controller}, same epoch)"),
            cut_off_broker(mode, session),
            *(Eventually(AllOf((LeaderIs(TOPIC, p, broker=CONTROLLER), NewLeaderFromIsr(TOPIC, p),
                                LeaderChanged(TOPIC, p))), inject(2), within_s=elected,
                         label=f"p{p}: controller elected broker 2 from the ISR, epoch up")
              for p in PARTITIONS),
            Seen("b2-after-kill", LeaderIs(TOPIC, 0, broker=CONTROLLER),
                 label="broker 2 names itself leader ..."),
            Seen("b1-after-kill", AllOf((stale_leads, BrokerRegistered(LEADER))),
                 label="... while broker 1 still names the dead broker 0, and lists it as live"),
            Seen("b0-after-kill", None, label="the leader broker 1 names cannot be reached"),
            Seen("via-b2", acked=CountRange(PROBE_COUNT, PROBE_COUNT),
                 label="a client bootstrapped at broker 2 produces"),
            Seen("via-b1", acked=CountRange(0, 0),
                 label="a client with only broker 1's metadata fails every send"),
            Seen("b1-still", stale_leads, label="broker 1 still disagrees while cut off"),
            Seen("b1-healed", AllOf(tuple(LeaderIs(TOPIC, p, broker=CONTROLLER) for p in PARTITIONS)),
                 label="after the heal broker 1's metadata names the new leader"),
            Eventually(AllOf(tuple(JoinsIsr(TOPIC, p, STALE) for p in PARTITIONS)), heal(1),
                       within_s=REJOIN_S, label="broker 1 follows the new leader and rejoins the ISRs"),
            *(check for name in ("pa", "pb", "pc") for check in (
                Sends("not_acked", CountRange(0, 0), producers=(name,), start=inject(1), for_s=stable,
                      label=f"{name} unaffected while leadership was stable: no send failed"),
                Sends("acked", CountRange(at_least=30), producers=(name,), start=inject(1), for_s=stable,
                      label=f"{name} unaffected while leadership was stable: sends acknowledged"))),
        ),
    )


def test_s8_broker_cut_from_controller_keeps_stale_metadata(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    placed = place_controller(cluster, CONTROLLER)
    run = run_spec(s8_spec(cluster.session_timeout_s, placed.node, cluster.topology.metadata), scenario)
    assert run.passed, run.failures()
