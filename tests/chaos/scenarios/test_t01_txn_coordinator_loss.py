"""T1 A transactional producer through the loss of its transaction coordinator.

A transactional producer's coordinator is the broker leading the ``__transaction_state``
partition its transactional.id hashes to: it registers every partition a transaction
writes to, and it alone can end a transaction (write the commit or abort decision to its
log, then the markers to the data partitions). Kill -9 it, and no transaction can end
until the controller elects another leader for that partition, which it does only once
ZooKeeper expires the dead broker's session (at least two thirds of a session). The new
leader loads the transaction log, finishing any decision the old one had logged, and
the producer, retrying its commit, finds it and goes on.

The topic's two replicas live on the other brokers, so the kill never stalls the data:
a pause in the commits is the coordinator's doing (as in G1). The producer writes in
transactions of ten and aborts about a fifth of them on purpose; two read_committed
consumers read every partition. Through the loss nothing may change what the isolation
level promises: no record of an aborted or not yet committed transaction is handed over,
every committed transaction is readable whole, and with idempotence on nothing is lost,
duplicated or reordered, so every anomaly kind must be 0. The producer is never fenced
and no commit gives up: every transaction ends committed or aborted. The transactional.id
is chosen so its coordinator is a broker other than the controller, whose loss would add
an election of its own.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import harness.history as hist
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import (
    CountRange,
    Polls,
    SecondsRange,
    TransactionGap,
    TransactionOutcomes,
    heal,
    inject,
)
from harness.scenario.runner import ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._transactions import transactional_id_coordinated_by

pytestmark = pytest.mark.chaos

PRODUCER = "tx"
CONSUMERS = ("cb", "cc")
TRANSACTION_SIZE = 10
ABORT_RATIO = 0.2
SETTINGS = {"acks": "all", "enable.idempotence": True}
CLEAN: dict[str, Rule] = dict.fromkeys(hist.ANOMALY_KINDS, 0)


def t1_spec(transactional_id: str, coordinator: int, brokers: list[int],
            session_timeout_s: float) -> ScenarioSpec:
    """Kill the transaction coordinator of ``transactional_id`` (broker ``coordinator``)
    for two sessions while its producer commits and aborts transactions and two
    read_committed consumers read, then start it again. The topic lives on the other
    brokers only, so a pause in the commits is the coordinator's doing."""
    session = session_timeout_s
    a, b = (broker for broker in brokers if broker != coordinator)
    assignment = {p: (a, b) if p % 2 == 0 else (b, a) for p in range(6)}
    return ScenarioSpec(
        id="t1-txn-coordinator-loss",
        title="T1 a transactional producer through the loss of its transaction coordinator",
        description=f"RF 2 on brokers {a} and {b}, min.insync.replicas=2; a transactional producer "
                    f"(transactional.id {transactional_id}, acks=all with idempotence, transactions of "
                    f"{TRANSACTION_SIZE}, about {ABORT_RATIO:.0%} aborted on purpose) in zone a; two "
                    f"read_committed consumers (zones b, c); kill -9 the transaction coordinator (broker "
                    f"{coordinator}, the leader of the id's __transaction_state partition, holding no "
                    f"replica of the topic) for {2 * session:g} s, then restart it.",
        expected="No transaction commits until the coordinator's session expires and its partition gets a "
                 "new leader; then the producer commits again through it. Every transaction ends committed "
                 "or aborted; consumers are given no aborted or uncommitted record, every committed "
                 "transaction is readable whole, nothing is lost, duplicated or reordered.",
        topic=TopicSpec(assignment=assignment,
                        config={"min.insync.replicas": 2, "unclean.leader.election.enable": False}),
        producers=(ProducerSpec(PRODUCER, "a", {**SETTINGS, "transactional.id": transactional_id},
                                rate_per_s=200, transaction_size=TRANSACTION_SIZE, abort_ratio=ABORT_RATIO),),
        consumers=tuple(ConsumerSpec(name, name[-1], {"isolation.level": hist.READ_COMMITTED})
                        for name in CONSUMERS),
        expectations=CLEAN, warmup_acked=100, cooldown_s=10,
        schedule=({"start_s": 1, "duration_s": 2 * session, "fault": "kill",
                   "target": {"txn_coordinator_of": transactional_id}},),
        checks=(
            TransactionOutcomes("committed", CountRange(at_least=1), producers=(PRODUCER,), until=inject(1),
                                label="the producer committed transactions before the kill"),
            # Measured from when the commits returned, not from when the kill began: a loaded
            # machine takes a moment to deliver SIGKILL, and commits go through until it lands.
            TransactionGap(SecondsRange(at_least=2 * session / 3), producers=(PRODUCER,), start=inject(1),
                           until=heal(1), label="no transaction committed for two thirds of a session or "
                                                "more after the kill"),
            TransactionOutcomes("committed", CountRange(at_least=1), producers=(PRODUCER,), start=heal(1),
                                label="the producer committed transactions again after the restart"),
            TransactionOutcomes("aborted", CountRange(at_least=1), producers=(PRODUCER,),
                                label="transactions were aborted too, so read_committed had records to hide"),
            TransactionOutcomes("unknown", CountRange(0, 0), producers=(PRODUCER,),
                                label="every transaction ended committed or aborted: never fenced, no "
                                      "commit gave up"),
            Polls(CONSUMERS, CountRange(at_least=1), start=heal(1),
                  label="both read_committed consumers read after the restart"),
        ),
    )


def test_t1_a_transactional_producer_commits_through_the_loss_of_its_coordinator(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    coordinator = spare_brokers[0]
    transactional_id = transactional_id_coordinated_by(cluster, coordinator, "kafka-chaos-t1")
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    run = run_spec(t1_spec(transactional_id, coordinator, brokers, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
