"""S9 A zone isolated, the partition leaders and the controller elsewhere.

Zone a (broker 0, ZooKeeper zk-a and zone a's clients) is cut from zones b and c. The
majority keeps its ZooKeeper quorum, its controller and its leaders, so the only thing
that changes in ZooKeeper is broker 0 leaving: its session expires and the leaders
drop it from their ISRs (through AlterPartition to the controller, which is why the
controller must be outside zone a). Nobody needs a new controller or a new leader.
The minority side freezes: zk-a stops serving, broker 0 keeps the metadata it had, and
zone a's clients, who can only reach broker 0, cannot produce or consume.

On KRaft the same holds with the controller quorum in ZooKeeper's place: zone a's voter
kraft-a stops following, the quorum's leader (zone c's voter) stays, broker 0 misses its
heartbeats and is fenced after its broker session, which drops it from the ISRs, and its
metadata, fetched from the quorum it cannot reach, stays as it was.

Placement is fixed: the controller beside broker 2 (broker 2 itself, or zone c's voter),
p0 led by broker 1 and p1 by broker 2, broker 0 a follower of both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from faults.conditions import (
    AllOf,
    BrokerGone,
    BrokerRegistered,
    ControllerChanged,
    ControllerIs,
    IsrIs,
    JoinsIsr,
    LeaderIs,
    Not,
    QuorumServing,
)
from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import (
    Check,
    CountRange,
    Eventually,
    Polls,
    Seen,
    Sends,
    Throughout,
    heal,
    inject,
)
from harness.scenario.probes import Probe
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import controller_beside, place_controller, quorum_members
from tests.chaos.scenarios._isolation import ISOLATION_IN_FORCE_S
from topologies.model import KRAFT, ZOOKEEPER

pytestmark = pytest.mark.chaos

ISOLATED, CONTROLLER = 0, 2
ZOOKEEPER_MEMBERS = {"a": "zk-a", "b": "zk-b", "c": "zk-c"}  # the default cluster's
ASSIGNMENT = {0: (1, 2, 0), 1: (2, 1, 0)}
PARTITIONS = tuple(ASSIGNMENT)
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
# Zone a's producer gives up on a record after 4 s, so its failure during the isolation
# shows as failed sends, not merely as sends that waited for the heal.
ZONE_A_PRODUCER = {**PRODUCER, "message.timeout.ms": 4000, "request.timeout.ms": 3000}
REJOIN_S = 60.0  # a session re-established and a follower caught up, on a loaded machine


def controller_kept(mode: str, controller: int, returning: int) -> tuple[Check, ...]:
    """The controller through the isolation and after the heal, in each metadata mode.

    In ZooKeeper mode nothing asks for an election at any point. In KRaft zone a's voter
    (``returning``) keeps standing for election while it is cut off, raising its epoch
    each time; on a release without pre-vote (KIP-996, Kafka 4.0) the first vote request
    it sends after the heal carries that higher epoch, and the leader steps down for it.
    The voter cannot win (its log is behind), so the majority elects one of its own."""
    kept = AllOf((ControllerIs(controller), Not(ControllerChanged())))
    return {
        ZOOKEEPER: (
            Throughout(kept, inject(1),
                       label="no controller election, during the isolation or after the heal"),
        ),
        KRAFT: (
            Throughout(kept, inject(1), until=heal(1), label="no controller election during the isolation"),
            Throughout(Not(ControllerIs(returning)), heal(1),
                       label="after the heal zone a's returning voter never leads"),
        ),
    }[mode]


def s9_spec(session_timeout_s: float, controller: int = CONTROLLER,
            members: Mapping[str, str] = ZOOKEEPER_MEMBERS, mode: str = ZOOKEEPER,
            returning: int = ISOLATED) -> ScenarioSpec:
    """Isolate zone a for three session timeouts; look at broker 0's own metadata once
    the majority has dropped it. ``controller`` is the active controller's id (broker 2
    itself, or in KRaft zone c's voter), ``members`` each zone's quorum member, ``mode``
    the metadata mode and ``returning`` the id of zone a's controller candidate (broker 0,
    or zone a's voter), whose return :func:`controller_kept` looks at."""
    session = session_timeout_s
    settled = 2 * session  # broker 0's session expired and the ISRs shrank
    everywhere = (("pb", "b"), ("pc", "c"))
    return ScenarioSpec(
        id="s9-zone-isolated-leader-elsewhere", title="S9 a zone isolated, the partition leader elsewhere",
        description=f"Controller {controller} beside broker 2; p0 led by broker 1, p1 by broker 2, broker 0 "
                    f"follows both; isolate zone a (broker 0, {members['a']}, zone a's clients); acks=all "
                    "producers and consumers in several zones.",
        expected=f"{members['a']} stops serving; broker 0 loses its session, keeps stale metadata and leaves "
                 "the ISRs; "
                 "no controller or leader election; zone a's clients fail, b and c keep working; after "
                 "the heal broker 0 rejoins; nothing acknowledged lost.",
        topic=TopicSpec(assignment=ASSIGNMENT, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", ZONE_A_PRODUCER, rate_per_s=70),
                   *(ProducerSpec(name, zone, PRODUCER, rate_per_s=70) for name, zone in everywhere)),
        consumers=(ConsumerSpec("ca", "a"), ConsumerSpec("cb", "b")),
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                      "duplicate": "any", "reordered": "any", "unseen": 0},
        min_acked=1000, warmup_acked=100,
        schedule=({"start_s": 0, "duration_s": 3 * session, "fault": "isolate", "target": {"zone": "a"}},),
        probes=(Probe("b0-isolated", ISOLATED, inject(1), after_s=settled + 1),),
        checks=(
            Eventually(AllOf((Not(QuorumServing(members["a"])), QuorumServing(members["b"]),
                              QuorumServing(members["c"]))), inject(1), within_s=settled,
                       label=f"the majority's quorum serves, {members['a']} does not"),
            Eventually(BrokerGone(ISOLATED), inject(1), within_s=settled,
                       label="broker 0's session expired"),
            *controller_kept(mode, controller, returning),
            *(Throughout(LeaderIs(TOPIC, p, broker=ASSIGNMENT[p][0]), inject(1),
                         label=f"p{p}: leader unchanged") for p in PARTITIONS),
            *(Eventually(IsrIs(TOPIC, p, brokers=ASSIGNMENT[p][:2]), inject(1), within_s=settled,
                         label=f"p{p}: broker 0 out of the ISR") for p in PARTITIONS),
            Seen("b0-isolated", AllOf((BrokerRegistered(ISOLATED), *(JoinsIsr(TOPIC, p, ISOLATED)
                                                                    for p in PARTITIONS))),
                 label="broker 0 keeps stale metadata (itself live and in every ISR)"),
            Sends("acked", CountRange(0, 0), producers=("pa",), start=inject(1),
                  settle_s=ISOLATION_IN_FORCE_S, until=heal(1), timed_by="ack",
                  label="zone a's producer got no acknowledgement while isolated"),
            Sends("not_acked", CountRange(at_least=1), producers=("pa",), start=inject(1), settle_s=1,
                  until=heal(1), label="zone a's producer's sends failed while isolated"),
            Polls(("ca",), CountRange(0, 0), start=inject(1), settle_s=ISOLATION_IN_FORCE_S, until=heal(1),
                  label="zone a's consumer polled nothing while isolated"),
            *(Sends("acked", CountRange(at_least=60), producers=(name,), start=inject(1), settle_s=settled,
                    until=heal(1), timed_by="ack", label=f"{name} kept producing once broker 0 left the ISRs")
              for name, _ in everywhere),
            Polls(("cb",), CountRange(at_least=100), start=inject(1), settle_s=settled, until=heal(1),
                  label="zone b's consumer kept consuming"),
            Eventually(AllOf((BrokerRegistered(ISOLATED),
                              *(JoinsIsr(TOPIC, p, ISOLATED) for p in PARTITIONS))), heal(1),
                       within_s=REJOIN_S,
                       label="after the heal broker 0 registers and rejoins the ISRs"),
        ),
    )


def test_s9_zone_isolated_leader_elsewhere(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    topology = cluster.topology
    placed = place_controller(cluster, CONTROLLER)
    spec = s9_spec(cluster.session_timeout_s, placed.node, quorum_members(topology), topology.metadata,
                   topology.id_of_node(controller_beside(topology, ISOLATED)))
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()
