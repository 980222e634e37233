"""P2 An exactly-once pipeline through the loss of a broker it depends on.

Three members of one group (zones a, b, c) read the scenario's topic and write each
record's output in a transaction that also carries the batch's offsets. No member is
restarted. Instead a broker is killed -9 for two ZooKeeper sessions and started again:
in one run the leader of output partition 0 (the transaction's writes there stall until
a new leader is elected), in the other the group's coordinator (the leader of its
``__consumer_offsets`` partition, which takes the transactional offset commits; chosen
not to be the controller, whose loss would add an election of its own). Transactions
may abort while the broker is gone; a member aborting rejoins and resumes from the
committed offsets. Whatever aborted, every input the group committed past must have
exactly one readable output, and nothing else may be found.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.cluster.lifecycle import Cluster
from harness.scenario.checks import CommitsKept, CountRange, TransactionOutcomes, heal, inject
from harness.scenario.runner import NamedTopic, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.pipeline import PipelineSpec
from tests.chaos.scenarios._groups import group_coordinated_by

pytestmark = pytest.mark.chaos

MEMBERS = ("p-a", "p-b", "p-c")
PRODUCER = {"acks": "all", "enable.idempotence": True}
DURABLE = TopicSpec(partitions=3, replication_factor=3, config={"min.insync.replicas": 2})
VICTIMS = {
    "output-leader": "the leader of output partition 0",
    "group-coordinator": "the group's coordinator (leader of its __consumer_offsets partition)",
}


def p2_spec(victim: str, group: str, session_timeout_s: float) -> ScenarioSpec:
    target: dict[str, Any] = ({"leader_of": ["$topic:out", 0]} if victim == "output-leader"
                              else {"coordinator_of": group})
    session = session_timeout_s
    return ScenarioSpec(
        id=f"p2-pipeline-loses-{victim}", title=f"P2 an exactly-once pipeline loses {VICTIMS[victim]}",
        description=f"Three exactly-once pipeline members (zones a, b, c, group {group}) turn each record "
                    "into one output on topic 'out'; kill -9 "
                    f"{VICTIMS[victim]} for {2 * session:g} s, then restart it.",
        expected="Transactions may abort while the broker is gone; every committed input has exactly one "
                 "readable output, and nothing is lost, duplicated or orphaned.",
        topic=DURABLE, topics=(NamedTopic("out", DURABLE),),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=300),),
        pipelines=tuple(PipelineSpec(name, name[-1], group, "out") for name in MEMBERS),
        consumers=(ConsumerSpec("reader", "c", topic="out"),),
        warmup_s=2, warmup_acked=100, cooldown_s=10,
        schedule=({"start_s": 1, "duration_s": 2 * session, "fault": "kill", "target": target},),
        checks=(
            TransactionOutcomes("committed", CountRange(at_least=1), until=inject(1),
                                label="transactions committed before the kill"),
            TransactionOutcomes("committed", CountRange(at_least=1), start=heal(1),
                                label="transactions committed after the restart"),
            CommitsKept(label="the offsets of the last committed transaction are where the group resumes"),
        ),
    )


@pytest.mark.parametrize("victim", list(VICTIMS))
def test_p2_an_exactly_once_pipeline_keeps_one_output_per_input_through_a_broker_loss(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...],
    victim: str
) -> None:
    group = group_coordinated_by(cluster, spare_brokers[0], f"p2-{victim}")
    run = run_spec(p2_spec(victim, group, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
