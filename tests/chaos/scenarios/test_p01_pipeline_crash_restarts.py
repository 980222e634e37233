"""P1 A consume-transform-produce pipeline whose members crash, by guarantee.

Three members of one group (zones a, b, c) read the scenario's topic and write one output
per record to a second topic, 50 records to a batch. Each crashes every 9, 11 and 13 s
for the length of the storm, always with a batch in hand and always at the point its
guarantee is weakest (harness/workload/pipeline.py): no LeaveGroup, no abort, the clients
simply dropped. The group keeps the ghost until its session (6 s, the broker's minimum)
times out, and its partitions then move. The brokers are never touched: the crashes are
the fault. A read_committed reader in zone c reads the outputs, so acknowledged outputs
nobody could read are caught too.

- ``exactly_once``: the outputs and the offsets commit in one transaction. The next
  incarnation's ``init_transactions`` (same transactional.id) aborts what the ghost left
  open, so its outputs never become readable: every kind 0.
- ``at_least_once``: outputs acknowledged, then the offsets committed: a crash between
  makes the next owner transform the batch again. Duplicate outputs must be caught.
- ``at_most_once``: offsets committed, then the outputs produced: a crash between loses
  the batch. Inputs the group committed past without output must be caught.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow.parquet as pq
import pytest

from harness.history import Rule
from harness.scenario.checks import Commits, CommitsKept, CountRange, Polls, TransactionOutcomes
from harness.scenario.runner import NamedTopic, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.pipeline import ABANDONED, PipelineSpec

pytestmark = pytest.mark.chaos

MEMBERS = {"p-a": 9.0, "p-b": 11.0, "p-c": 13.0}  # member (zone from its last letter) -> crash period
STORM_S = 40.0
SESSION_MS = 6000  # the broker's group.min.session.timeout.ms: a ghost goes quickly
PRODUCER = {"acks": "all", "enable.idempotence": True}
DURABLE = TopicSpec(partitions=3, replication_factor=3, config={"min.insync.replicas": 2})
EXPECT: dict[str, dict[str, Rule]] = {
    "exactly_once": {},
    "at_least_once": {"pipeline_duplicate": "at_least_one"},
    "at_most_once": {"pipeline_lost": "at_least_one"},
}
EXPECTED = {
    "exactly_once": "Every input committed has exactly one readable output; nothing else.",
    "at_least_once": "Inputs transformed twice: duplicate outputs caught; nothing lost.",
    "at_most_once": "Inputs committed without output: losses caught; no duplicates.",
}
WEAK_POINT = {
    "exactly_once": "after the offsets were sent to the transaction, before its commit",
    "at_least_once": "after every output was acknowledged, before the offsets' commit",
    "at_most_once": "after the offsets' commit, before the first output",
}


def p1_spec(guarantee: str) -> ScenarioSpec:
    group = f"p1-{guarantee.replace('_', '-')}"
    checks = [Commits("committed", CountRange(at_least=1), label="the members' commits went through"),
              Polls(tuple(MEMBERS), CountRange(at_least=1), label="every member read"),
              CommitsKept(label="the broker keeps the last commit of every partition through the crashes")]
    if guarantee == "exactly_once":  # each crash leaves its transaction open, recorded unknown
        checks.append(TransactionOutcomes("unknown", CountRange(at_least=2 * len(MEMBERS)),
                                          errors=(ABANDONED,),
                                          label="the members crashed with transactions open, twice each"))
    return ScenarioSpec(
        id=f"p1-pipeline-crashes-{guarantee.replace('_', '-')}",
        title=f"P1 a pipeline whose members crash ({guarantee})",
        description=f"Three pipeline members (zones a, b, c, group {group}) turn each record of the topic "
                    f"into one output on topic 'out', {guarantee}, 50 records a batch; each crashes every "
                    f"{', '.join(f'{s:g}' for s in MEMBERS.values())} s for {STORM_S:g} s, "
                    f"{WEAK_POINT[guarantee]}; a read_committed reader in zone c reads the outputs.",
        expected=EXPECTED[guarantee],
        topic=DURABLE, topics=(NamedTopic("out", DURABLE),),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=300),),
        pipelines=tuple(PipelineSpec(name, name[-1], group, "out", guarantee=guarantee, batch=50,
                                     restart_every_s=period, restart="crash",
                                     consumer_settings={"session.timeout.ms": SESSION_MS})
                        for name, period in MEMBERS.items()),
        consumers=(ConsumerSpec("reader", "c", topic="out"),),
        expectations=EXPECT[guarantee], warmup_s=2, warmup_acked=100, cooldown_s=STORM_S,
        checks=tuple(checks),
    )


@pytest.mark.parametrize("guarantee", [
    pytest.param("exactly_once",
                 marks=pytest.mark.core(judges=("messages", "groups", "transactions", "pipelines"))),
    "at_least_once", "at_most_once"])
def test_p1_only_exactly_once_survives_crashing_pipeline_members(
    scenario: Callable[[ScenarioSpec], ScenarioRun], guarantee: str
) -> None:
    run = run_spec(p1_spec(guarantee), scenario)
    sends = pq.read_table(run.dir / "history" / "sends", columns=["producer_id", "source_offset"]).to_pylist()
    outputs = {m: sum(1 for s in sends if s["producer_id"] == m and s["source_offset"] is not None)
               for m in MEMBERS}  # fmt: skip
    assert min(outputs.values()) > 0, f"outputs per member: {outputs}"
    assert run.passed, run.failures()
