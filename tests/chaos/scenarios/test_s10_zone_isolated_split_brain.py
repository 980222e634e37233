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

On KRaft the majority's controller (zone c's voter, placed beside broker 2) fences broker
0 once its broker session passes without a heartbeat, and elects the same new leaders;
broker 0 cannot fetch the metadata log from the quorum and is never told, so the split
and both outcomes are the same.

Replicas [0, 1, 2] and [0, 2, 1]: broker 0 is the preferred leader of both, so a
preferred-leader election after the heal gives it leadership back.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import (
    AllOf,
    BrokerGone,
    ControllerChanged,
    ControllerIs,
    JoinsIsr,
    LeaderChanged,
    LeaderIs,
    Not,
)
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import CountRange, Eventually, Seen, Sends, Throughout, heal, inject
from harness.scenario.probes import Probe
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller
from tests.chaos.scenarios._isolation import ISOLATION_IN_FORCE_S

pytestmark = pytest.mark.chaos

OLD_LEADER, CONTROLLER = 0, 2
ASSIGNMENT = {0: (0, 1, 2), 1: (0, 2, 1)}
PARTITIONS = tuple(ASSIGNMENT)
NEW_LEADER = {p: replicas[1] for p, replicas in ASSIGNMENT.items()}  # first live replica of the ISR
REJOIN_S = 60.0  # broker 0 truncating, catching up and rejoining, on a loaded machine


def s10_spec(acks: str, min_isr: int, session_timeout_s: float, controller: int = CONTROLLER) -> ScenarioSpec:
    """Isolate zone a (broker 0, leader of both partitions) for three session timeouts
    and a little; once broker 0 is back in every ISR, a preferred-leader election.
    ``controller`` is the active controller's id: broker 2, or in KRaft zone c's voter."""
    session = session_timeout_s
    unsafe = acks == "1"
    elected = 2 * session  # broker 0's session expired and the majority elected
    producer = {"acks": acks, "enable.idempotence": False, "retries": 2147483647}
    accept: dict[str, Rule] = {"aborted_read": 0, "unexpected": 0, "duplicate": "any", "reordered": "any",
                               "unseen": 0}
    accept.update({"lost": "at_least_one", "truncated": "at_least_one"} if unsafe
                  else {"lost": 0, "truncated": 0})
    rejoined = AllOf(tuple(JoinsIsr(TOPIC, p, OLD_LEADER) for p in PARTITIONS))
    still_leads = AllOf(tuple(LeaderIs(TOPIC, p, broker=OLD_LEADER) for p in PARTITIONS))
    return ScenarioSpec(
        id="s10-split-brain", title="S10 a zone isolated with the partition leader inside: split brain",
        description=f"Broker 0 leads both partitions, controller beside broker 2; isolate zone a; "
                    f"acks={acks}, min.insync.replicas={min_isr}; producers and consumers in zones a and b.",
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
        expectations=accept, min_acked=1000, warmup_acked=100,
        schedule=(
            {"start_s": 0, "duration_s": 3 * session + 5, "fault": "isolate", "target": {"zone": "a"}},
            {"after": 1, "start_s": 0, "when": rejoined.to_spec(), "when_timeout_s": REJOIN_S,
             "duration_s": 0, "fault": "preferred_election", "topic": TOPIC},
        ),
        probes=(Probe("b0-split", OLD_LEADER, inject(1), after_s=elected + 1),
                *(Probe(f"p{p}-new-leader", NEW_LEADER[p], inject(1), after_s=elected + 1)
                  for p in PARTITIONS),
                Probe("b0-late", OLD_LEADER, inject(1), after_s=3 * session + 3)),
        checks=(
            Eventually(AllOf((BrokerGone(OLD_LEADER), ControllerIs(controller), Not(ControllerChanged()))),
                       inject(1), within_s=elected, label="broker 0's session expired; controller unchanged"),
            *(Eventually(AllOf((LeaderIs(TOPIC, p, broker=NEW_LEADER[p]), LeaderChanged(TOPIC, p),
                                Not(JoinsIsr(TOPIC, p, OLD_LEADER)))), inject(1), within_s=elected,
                         label=f"p{p}: majority elected broker {NEW_LEADER[p]} with a higher leader epoch")
              for p in PARTITIONS),
            Seen("b0-split", still_leads, label="two leaders at once: broker 0 still believes it leads"),
            *(Seen(f"p{p}-new-leader", LeaderIs(TOPIC, p, broker=NEW_LEADER[p]),
                   label=f"... while broker {NEW_LEADER[p]} knows it leads p{p}") for p in PARTITIONS),
            Seen("b0-late", still_leads, label="broker 0 still believes it leads at the end of the split"),
            Eventually(rejoined, heal(1), within_s=REJOIN_S,
                       label="after the heal broker 0 truncates, catches up and rejoins the ISRs"),
            *(Throughout(LeaderIs(TOPIC, p, broker=NEW_LEADER[p]), heal(1), inject(2),
                         label=f"p{p}: broker 0 follows broker {NEW_LEADER[p]} until the preferred election")
              for p in PARTITIONS),
            *(Eventually(AllOf((LeaderIs(TOPIC, p, broker=OLD_LEADER), LeaderChanged(TOPIC, p))), inject(2),
                         within_s=session,
                         label=f"p{p}: preferred-leader election makes broker 0 leader again")
              for p in PARTITIONS),
            Sends("acked", CountRange(at_least=100), producers=("pb",), start=inject(1), settle_s=elected,
                  until=heal(1), timed_by="ack", label="the majority's clients write to the new leaders"),
            Sends("acked", CountRange(at_least=10) if unsafe else CountRange(0, 0), producers=("pa",),
                  start=inject(1), settle_s=elected if unsafe else ISOLATION_IN_FORCE_S, until=heal(1),
                  timed_by="ack",
                  label="zone a's clients still write to the old leader (acks=1 acknowledged)" if unsafe
                  else "the isolated leader acknowledged nothing (acks=all, min.insync.replicas=2)"),
        ),
    )


@pytest.mark.parametrize(("acks", "min_isr"), [("1", 1), ("all", 2)], ids=["acks-1", "acks-all-minisr-2"])
def test_s10_zone_isolated_split_brain(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, acks: str, min_isr: int,
) -> None:
    placed = place_controller(cluster, CONTROLLER)
    run = run_spec(s10_spec(acks, min_isr, cluster.session_timeout_s, placed.node), scenario)
    assert run.passed, run.failures()
