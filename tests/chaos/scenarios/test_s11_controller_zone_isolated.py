"""S11 The controller's zone isolated.

The controller is put on broker 0 and zone a is cut off. The controller's claim is the
ephemeral ``/controller`` znode, so the majority gets a new controller only when broker
0's ZooKeeper session expires; the new controller writes a higher ``/controller_epoch``.
Broker 0 cannot reach ZooKeeper and never hears of it: it still names itself controller
in its metadata - two controllers at once, told apart only by the epoch that fences the
old one's requests. After the heal broker 0 finds its session expired, resigns, and is
brought back into the ISRs by the new controller.

On KRaft the controller is the quorum's leader, zone a's voter. The majority's voters
stop hearing from it and elect one of themselves with a higher epoch, which fences broker
0 once its broker session passes without a heartbeat. The isolated leader, no longer
fetched from by a majority, gives its leadership up on its own (Kafka's check-quorum), so
two quorum leaders exist for moments, and no broker's metadata names the controller at
all: what the test asserts there is the quorum's side, zone a's voter cut off and then
following again. Before Kafka 4.0's pre-vote, a voter that stood alone for election kept
raising its epoch and may force one more election when it returns; it cannot win it (its
log is behind), so the check after the heal is that the controller stays on the majority.

Two variants. ``leaders-elsewhere`` (the scenario proper): the partitions are led by
brokers 1 and 2, producers use acks=all with min.insync.replicas=2, and nothing
acknowledged is lost. ``controller-leads-acks-1``: broker 0 also leads both partitions,
so S10's split brain happens together with the dual controllers, with S10's outcome
for acks=1: writes the isolated broker acknowledged are truncated and caught.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pytest

from faults.conditions import (
    AllOf,
    BrokerGone,
    Condition,
    ControllerChanged,
    ControllerIs,
    JoinsIsr,
    LeaderIs,
    Not,
    Offline,
    QuorumServing,
)
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import Check, CountRange, Eventually, Seen, Sends, Throughout, heal, inject
from harness.scenario.probes import Probe
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller, quorum_members
from tests.chaos.scenarios._isolation import ISOLATION_IN_FORCE_S
from topologies.model import KRAFT, ZOOKEEPER

pytestmark = pytest.mark.chaos

OLD_CONTROLLER = 0  # the broker beside the controller: itself, or zone a's voter
MAJORITY = (1, 2)
ZOOKEEPER_MEMBERS = {"a": "zk-a", "b": "zk-b", "c": "zk-c"}  # the default cluster's
REJOIN_S = 60.0  # broker 0 resigning, its session renewed, its replicas caught up


@dataclass(frozen=True)
class Variant:
    """Who leads the partitions, and the producer setting whose outcome is asserted."""

    assignment: dict[int, tuple[int, ...]]
    acks: str
    min_isr: int

    @property
    def controller_leads(self) -> bool:
        return all(replicas[0] == OLD_CONTROLLER for replicas in self.assignment.values())


VARIANTS = {
    "leaders-elsewhere": Variant({0: (1, 2, 0), 1: (2, 1, 0)}, acks="all", min_isr=2),
    "controller-leads-acks-1": Variant({0: (0, 1, 2), 1: (0, 2, 1)}, acks="1", min_isr=1),
}


def two_controllers(mode: str, controller: int) -> tuple[Check, ...]:
    """What each metadata mode shows of the isolated old controller, and after the heal."""
    return {
        ZOOKEEPER: (
            Seen("b0-split", ControllerIs(controller), label="two controllers: broker 0 still names itself"),
            *(Seen(f"b{b}-majority", Not(ControllerIs(controller)),
                   label=f"... while broker {b} names the new controller") for b in MAJORITY),
            Seen("b0-late", ControllerIs(controller),
                 label="broker 0 still names itself controller at the end of the isolation"),
            Seen("b0-healed", Not(ControllerIs(controller)),
                 label="after the heal broker 0 has resigned and names the new controller"),
            Throughout(Not(ControllerChanged()), heal(1),
                       label="controller stays on the majority; no further election"),
        ),
        KRAFT: (
            Throughout(Not(ControllerIs(controller)), heal(1),
                       label="controller stays on the majority: the returning voter never leads again"),
        ),
    }[mode]


def s11_spec(variant: Variant, session_timeout_s: float, controller: int = OLD_CONTROLLER,
             members: Mapping[str, str] = ZOOKEEPER_MEMBERS, mode: str = ZOOKEEPER) -> ScenarioSpec:
    """Isolate zone a, whose broker 0 is (or is beside) the controller, for three session
    timeouts and a little; look at what broker 0, the majority and the quorum show during
    and after. ``controller`` is the active controller's id, ``members`` each zone's quorum
    member, ``mode`` the metadata mode whose view of two controllers is checked."""
    session = session_timeout_s
    split = variant.controller_leads
    partitions = tuple(variant.assignment)
    elected = 2 * session  # broker 0's session expired; a new controller and leaders
    producer = {"acks": variant.acks, "enable.idempotence": False, "retries": 2147483647}
    accept: dict[str, Rule] = {"aborted_read": 0, "unexpected": 0, "duplicate": "any", "reordered": "any",
                               "unseen": 0}
    accept.update({"lost": "at_least_one", "truncated": "at_least_one"} if split
                  else {"lost": 0, "truncated": 0})
    moved: tuple[Condition, ...] = tuple(c for p in partitions for c in (
        Not(LeaderIs(TOPIC, p, broker=OLD_CONTROLLER)), Not(Offline(TOPIC, p))))
    leaders: tuple[Check, ...] = (
        (Eventually(AllOf(moved), inject(1), within_s=elected,
                    label="the new controller elects leaders on the majority"),
         Seen("b0-split", AllOf(tuple(LeaderIs(TOPIC, p, broker=OLD_CONTROLLER) for p in partitions)),
              label="and two leaders: broker 0 still leads in its own view"))
        if split else
        tuple(Throughout(LeaderIs(TOPIC, p, broker=variant.assignment[p][0]), inject(1),
                         label=f"p{p}: leader stays on the majority") for p in partitions))
    return ScenarioSpec(
        id="s11-controller-zone-isolated", title="S11 the controller's zone isolated",
        description=f"Controller {controller} beside broker 0 (zone a); partitions {variant.assignment}; "
                    f"isolate zone a; acks={variant.acks}, min.insync.replicas={variant.min_isr}.",
        expected="New controller on the majority with a higher epoch while the old one, cut off, still "
                 "believes it leads (ZooKeeper mode: broker 0 names itself controller; KRaft: until its "
                 f"check-quorum resigns it); {members['a']} stops serving; zone a's clients fail, the "
                 "others keep working; after the heal broker 0 rejoins the ISRs. "
                 + ("Broker 0 also leads, so S10's split brain follows: its acks=1 writes are truncated "
                    "and caught." if split else "Nothing acknowledged is lost."),
        topic=TopicSpec(assignment=variant.assignment, config={"min.insync.replicas": variant.min_isr}),
        producers=(ProducerSpec("pa", "a", producer, rate_per_s=70),
                   ProducerSpec("pb", "b", producer, rate_per_s=70),
                   ProducerSpec("pc", "c", producer, rate_per_s=70)),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=accept, min_acked=1000, warmup_acked=100,
        schedule=({"start_s": 0, "duration_s": 3 * session + 5, "fault": "isolate",
                   "target": {"zone": "a"}},),
        probes=(Probe("b0-split", OLD_CONTROLLER, inject(1), after_s=elected + 1),
                *(Probe(f"b{b}-majority", b, inject(1), after_s=elected + 1) for b in MAJORITY),
                Probe("b0-late", OLD_CONTROLLER, inject(1), after_s=3 * session + 3),
                Probe("b0-healed", OLD_CONTROLLER, heal(1), after_s=3 * session)),
        checks=(
            Eventually(AllOf((ControllerChanged(), Not(ControllerIs(controller)),
                              BrokerGone(OLD_CONTROLLER))), inject(1), within_s=elected,
                       label="majority elected a new controller with a higher epoch"),
            Eventually(AllOf(tuple(Not(JoinsIsr(TOPIC, p, OLD_CONTROLLER)) for p in partitions)), inject(1),
                       within_s=elected, label="the new controller drops broker 0 from the ISRs"),
            *leaders,
            Eventually(Not(QuorumServing(members["a"])), inject(1), within_s=elected,
                       label=f"{members['a']} cut off from the quorum's majority"),
            *two_controllers(mode, controller),
            Eventually(AllOf(tuple(JoinsIsr(TOPIC, p, OLD_CONTROLLER) for p in partitions)), heal(1),
                       within_s=REJOIN_S, label="broker 0 back in every ISR"),
            Eventually(QuorumServing(members["a"]), heal(1), within_s=REJOIN_S,
                       label=f"after the heal {members['a']} serves again"),
            *(Sends("acked", CountRange(at_least=60), producers=(name,), start=inject(1), settle_s=elected,
                    until=heal(1), timed_by="ack", label=f"{name} keeps producing on the majority side")
              for name in ("pb", "pc")),
            Sends("acked", CountRange(at_least=1) if split else CountRange(0, 0), producers=("pa",),
                  start=inject(1), settle_s=elected if split else ISOLATION_IN_FORCE_S, until=heal(1),
                  timed_by="ack",
                  label="zone a's clients still get acks=1 writes acknowledged by broker 0" if split
                  else "zone a's clients fail"),
        ),
    )


@pytest.mark.parametrize("variant_name", list(VARIANTS))
def test_s11_controller_zone_isolated(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, variant_name: str,
) -> None:
    placed = place_controller(cluster, OLD_CONTROLLER)
    spec = s11_spec(VARIANTS[variant_name], cluster.session_timeout_s, placed.node,
                    quorum_members(cluster.topology), cluster.topology.metadata)
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()
