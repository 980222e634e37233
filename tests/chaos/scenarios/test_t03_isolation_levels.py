"""T3 read_committed against read_uncommitted: what each isolation level hands over.

A transactional producer writes its messages in transactions of ten and aborts about a
third of them on purpose; two consumers read every partition from the start. The
brokers are never touched: the transactions are the subject.

- read_committed (librdkafka's default): a consumer is never given a record of an
  aborted transaction, nor one of a transaction not yet committed; every committed
  transaction is readable whole, and the final read_committed drain agrees.
- read_uncommitted: the same consumers are given the aborted transactions' records too.
  The judge must catch that (``txn_aborted_read`` at least one), or it could not see the
  difference at all.

On both sides the committed transactions' records are neither lost nor partial, and the
control records that end every transaction leave offset gaps the judge must not mistake
for anything.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow.parquet as pq
import pytest

import harness.history as hist
from harness.history import Rule
from harness.scenario.runner import ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

TRANSACTION_SIZE = 10
ABORT_RATIO = 0.3
PRODUCER = {"acks": "all", "enable.idempotence": True}
CLEAN: dict[str, Rule] = dict.fromkeys(hist.ANOMALY_KINDS, 0)
EXPECT: dict[str, dict[str, Rule]] = {
    hist.READ_COMMITTED: CLEAN,
    hist.READ_UNCOMMITTED: {**CLEAN, "txn_aborted_read": "at_least_one"},
}


def t3_spec(isolation: str) -> ScenarioSpec:
    """Transactions, a third of them aborted, read by two consumers at ``isolation``."""
    return ScenarioSpec(
        id=f"t3-isolation-{isolation.replace('_', '-')}",
        title=f"T3 transactions read at {isolation}",
        description=f"A transactional producer (transactions of {TRANSACTION_SIZE}, about "
                    f"{ABORT_RATIO:.0%} aborted on purpose), two consumers at isolation.level={isolation}; "
                    "no fault.",
        expected=("Consumers are given no aborted or uncommitted record; every committed transaction is "
                  "readable whole." if isolation == hist.READ_COMMITTED
                  else "Consumers are given the aborted transactions' records too: caught as "
                       "txn_aborted_read. Committed transactions are readable whole."),
        topic=TopicSpec(partitions=3, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("tx", "a", PRODUCER, rate_per_s=200, transaction_size=TRANSACTION_SIZE,
                                abort_ratio=ABORT_RATIO),),
        consumers=tuple(ConsumerSpec(f"c{zone}", zone, {"isolation.level": isolation})
                        for zone in ("b", "c")),
        expectations=EXPECT[isolation], warmup_acked=100, warmup_s=3, cooldown_s=12,
    )


@pytest.mark.parametrize("isolation", [
    pytest.param(hist.READ_COMMITTED, marks=pytest.mark.core(judges=("messages", "transactions"))),
    hist.READ_UNCOMMITTED])
def test_t3_read_committed_never_sees_aborted_records_read_uncommitted_does(
    scenario: Callable[[ScenarioSpec], ScenarioRun], isolation: str,
) -> None:
    run = run_spec(t3_spec(isolation), scenario)
    assert run.passed, run.failures()
    history = run.dir / "history"
    outcomes = pq.read_table(history / "transactions", columns=["outcome"]).column("outcome").to_pylist()
    committed, aborted = outcomes.count(hist.TXN_COMMITTED), outcomes.count(hist.TXN_ABORTED)
    assert committed >= 10 and aborted >= 3, f"{committed} committed, {aborted} aborted transactions"
    polls = pq.read_table(history / "polls", columns=["isolation"]).column("isolation").to_pylist()
    assert set(polls) == {isolation}, set(polls)
    log = pq.read_table(history / "final_log", columns=["read_committed"]).column("read_committed")
    hidden = log.to_pylist().count(False)
    assert hidden >= aborted, f"{hidden} records hidden from the read_committed drain, {aborted} aborts"
