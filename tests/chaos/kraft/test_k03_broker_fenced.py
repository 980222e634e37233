"""K3 A broker fenced while its clients still reach it.

Only the broker's links to the controllers are cut (registration, heartbeats, metadata
fetches): its clients and the other brokers still reach it. The controllers fence it once
its broker session passes without a heartbeat and elect new leaders for its partitions,
but nobody can tell the fenced broker, which still believes it leads. Both sides are
asserted:
- acks=all with min.insync.replicas=2: its followers now fetch from the new leader, so
  the old leader cannot gather the ISR's acknowledgement; no acknowledged write is lost.
- acks=1: the old leader acknowledges what it alone wrote, and truncates it away when it
  learns of the new leader; the checker reports those writes lost.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, BrokerGone, BrokerRegistered, IsrIs, NewLeaderFromIsr
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import Eventually, heal, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.kraft._bounds import DURABLE_TOPIC, NOTHING_LOST, QUORUM_BACK_WITHIN_S, RATE_PER_S

pytestmark = pytest.mark.chaos

FENCED = 1  # leads partition 0; its clients are in zone a, which still reaches it
UNSAFE: dict[str, Rule] = {**NOTHING_LOST, "lost": "at_least_one", "truncated": "any", "unseen": "any"}
SESSION_MARGIN_S = 15.0  # a heartbeat check and a loaded machine past the broker session


def k3_spec(acks: str, session_timeout_s: float) -> ScenarioSpec:
    fenced_for_s = 3 * session_timeout_s + 10
    return ScenarioSpec(
        id="k3-broker-fenced", title=f"K3 a broker fenced while clients reach it (acks={acks})",
        description=f"KRaft; RF 3, min.insync.replicas=2, acks={acks}; partition 0 led by broker {FENCED}. "
                    f"Cut broker {FENCED}'s links to every controller (kraft-broker) for {fenced_for_s:g} s; "
                    "clients and the other brokers still reach it.",
        expected=f"Broker {FENCED} is fenced after its broker session and partition 0 gets a leader from its "
                 "ISR; " + ("nothing acknowledged is lost." if acks == "all" else
                            "the writes the fenced leader acknowledged alone are truncated away: reported "
                            "lost."),
        topic=TopicSpec(assignment={0: (FENCED, 0, 2), 1: (0, 2, FENCED), 2: (2, FENCED, 0)},
                        config=dict(DURABLE_TOPIC.config)),
        producers=(ProducerSpec("pa", "a", {"acks": acks, "enable.idempotence": False,
                                            "retries": 2147483647}, rate_per_s=RATE_PER_S),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=NOTHING_LOST if acks == "all" else UNSAFE, warmup_acked=100, min_acked=500,
        schedule=({"start_s": 0, "duration_s": fenced_for_s, "fault": "cut",
                   "links": {"from": {"broker": FENCED}, "to": "all_controllers", "kind": "kraft-broker"}},),
        checks=(
            Eventually(AllOf((BrokerGone(FENCED), NewLeaderFromIsr(TOPIC, 0))), inject(1),
                       within_s=session_timeout_s + SESSION_MARGIN_S,
                       label=f"broker {FENCED} fenced, partition 0 led from its ISR"),
            Eventually(AllOf((BrokerRegistered(FENCED), IsrIs(TOPIC, 0, brokers=(0, FENCED, 2)))), heal(1),
                       within_s=QUORUM_BACK_WITHIN_S, label=f"broker {FENCED} unfenced and back in the ISR"),
        ),
    )


@pytest.mark.parametrize("acks", ["all", "1"], ids=["acks-all", "acks-1"])
def test_k3_a_fenced_leader_loses_nothing_at_acks_all_and_its_own_writes_at_acks_1(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, acks: str
) -> None:
    run = run_spec(k3_spec(acks, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
