"""P3 A pipeline's input isolation: read_committed against read_uncommitted members.

A transactional producer writes the pipeline's input in transactions of 10 records and
aborts three in ten of them on purpose. Three exactly-once pipeline members transform
every record they are handed. At ``read_committed`` (librdkafka's default) they are never
handed an aborted record, so every output has a readable source and nothing counts. At
``read_uncommitted`` they are handed the aborted records too, as that level allows, and
commit outputs of them: visible outputs whose source the log does not hold readably
(``pipeline_orphan``), and aborted records a reader was given (``txn_aborted_read``).
Both must be caught.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.history import READ_COMMITTED, READ_UNCOMMITTED, Rule
from harness.scenario.checks import CountRange, TransactionOutcomes
from harness.scenario.runner import NamedTopic, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.pipeline import PipelineSpec

pytestmark = pytest.mark.chaos

MEMBERS = ("p-a", "p-b", "p-c")
DURABLE = TopicSpec(partitions=3, replication_factor=3, config={"min.insync.replicas": 2})
EXPECT: dict[str, dict[str, Rule]] = {
    READ_COMMITTED: {},
    READ_UNCOMMITTED: {"pipeline_orphan": "at_least_one", "txn_aborted_read": "at_least_one"},
}


def p3_spec(isolation: str) -> ScenarioSpec:
    short = isolation.replace("_", "-")
    return ScenarioSpec(
        id=f"p3-pipeline-input-{short}", title=f"P3 pipeline members reading their input {isolation}",
        description="A transactional producer writes the input in transactions of 10, aborting 3 in 10 on "
                    f"purpose; three exactly-once pipeline members read it {isolation} and write one output "
                    "per record to topic 'out'.",
        expected=("No aborted input is transformed; nothing counts." if isolation == READ_COMMITTED else
                  "Aborted inputs are handed over and transformed: orphan outputs and aborted reads caught."),
        topic=DURABLE, topics=(NamedTopic("out", DURABLE),),
        producers=(ProducerSpec("tx", "a", {"acks": "all", "enable.idempotence": True}, rate_per_s=200,
                                transaction_size=10,
                                abort_ratio=0.3),),
        pipelines=tuple(PipelineSpec(name, name[-1], f"p3-{short}", "out",
                                     consumer_settings={"isolation.level": isolation})
                        for name in MEMBERS),
        consumers=(ConsumerSpec("reader", "c", topic="out"),),
        expectations=EXPECT[isolation], warmup_s=2, warmup_acked=100, cooldown_s=15,
        checks=(TransactionOutcomes("aborted", CountRange(at_least=1), producers=("tx",),
                                    label="the input producer aborted transactions"),),
    )


@pytest.mark.parametrize("isolation", [READ_COMMITTED, READ_UNCOMMITTED])
def test_p3_only_read_uncommitted_members_transform_aborted_input(
    scenario: Callable[[ScenarioSpec], ScenarioRun], isolation: str
) -> None:
    run = run_spec(p3_spec(isolation), scenario)
    assert run.passed, run.failures()
