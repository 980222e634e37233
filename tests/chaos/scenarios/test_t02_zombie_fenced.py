"""T2 A zombie producer is fenced.

Kafka's promise to a transactional producer that stalls: once its transaction coordinator
has given up on it, nothing it wrote in the open transaction becomes readable, and a new
instance with the same transactional.id carries on in its place. When the zombie wakes
up and tries to commit, it is told it was fenced.

The zombie commits transactions of ten, then holds one open: it flushes it (every
record is acknowledged and on the log), then calls nothing on its client. A
transactional producer sends no heartbeat, and with nothing queued librdkafka has
nothing to send, so to the coordinator the zombie looks stopped. Its transaction
times out ``transaction.timeout.ms`` after it began. The coordinator finds it at its
next sweep, bumps the producer epoch and writes abort markers. A second producer with
the same transactional.id (``fresh``) then calls ``init_transactions`` and commits
transactions of its own. Only after that does the zombie's commit come, and librdkafka
reports it fenced (``_FENCED``, whether straight from the commit or from the abort that
an epoch error led to). The zombie records the transaction ``unknown`` and stops.

The judge leaves ``unknown`` transactions alone, because Kafka may have gone either way.
Here the scenario knows which way it went, and the ``never_visible`` check says what
must follow from that: at least one of the held transaction's records was acknowledged,
no read_committed consumer polled any of them, and the read_committed drain of the
final log was given none of them. Every anomaly kind must be 0.

Timing is anchored on the brokers' sweep for timed-out transactions,
``transaction.abort.timed.out.transaction.cleanup.interval.ms``. Its default differs
between releases (60 s in the oldest, 10 s in later ones), so the topology pins it to
1 s, and the spec declares it so that every broker is asked for it when the run starts.
If the zombie's ``init_transactions`` is slow (a first one makes a broker create
``__transaction_state``), ``fresh`` may arrive while the held transaction is still open.
Its ``init_transactions`` then fences the zombie itself, by aborting the open
transaction. The checks hold on that path too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

import harness.history as hist
from harness.history import Rule
from harness.scenario.checks import CountRange, NeverVisible, Polls, TransactionOutcomes
from harness.scenario.runner import ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

ZOMBIE, FRESH = "zombie", "fresh"
CONSUMERS = ("cb", "cc")
TRANSACTION_SIZE = 10
CLEAN: dict[str, Rule] = dict.fromkeys(hist.ANOMALY_KINDS, 0)

# The coordinator's sweep for timed-out transactions, pinned in topologies/three_az.toml.
CLEANUP_INTERVAL_MS = 1000
BROKER_SETTINGS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": CLEANUP_INTERVAL_MS}
TRANSACTION_TIMEOUT_MS = 5000
# librdkafka refuses a transactional producer whose explicit message.timeout.ms exceeds
# transaction.timeout.ms (the harness default is 15000), or whose socket.timeout.ms
# exceeds it by more than 100 ms. Both are set well inside the timeout.
ZOMBIE_TIMEOUTS = {"transaction.timeout.ms": TRANSACTION_TIMEOUT_MS, "message.timeout.ms": 4500,
                   "socket.timeout.ms": 4000}
SETTINGS = {"acks": "all", "enable.idempotence": True}

# The zombie's timeline, in seconds after its init_transactions returned. It holds the
# first transaction that fills after HOLD_AT_S. That transaction began within about 50 ms
# of HOLD_AT_S (ten messages at 200 a second). The coordinator counts its timeout from
# then, and the first sweep after the timeout aborts it.
HOLD_AT_S = 3.0
TIMED_OUT_BY_S = HOLD_AT_S + (TRANSACTION_TIMEOUT_MS + CLEANUP_INTERVAL_MS) / 1000
# fresh starts this long after the workload does, a margin past the abort (the zombie's
# clock starts a little later than the workload's, by however long its init took).
FRESH_START_S = TIMED_OUT_BY_S + 4.0
# The zombie wakes once fresh has had several seconds to commit.
FRESH_ALONE_S = 5.0
HOLD_S = FRESH_START_S + FRESH_ALONE_S - HOLD_AT_S
# The workload runs past the zombie's wake-up, with time for its commit to be refused.
# Should it still be holding when the workload stops, the stop ends the hold, and the
# commit is still made after fresh's init_transactions.
WARMUP_S = 3.0
COOLDOWN_S = HOLD_AT_S + HOLD_S + 12.0 - WARMUP_S


def t2_spec(transactional_id: str) -> ScenarioSpec:
    """A zombie under ``transactional_id`` that holds one transaction open past its
    timeout, and a fresh instance of the same id that starts once it timed out."""
    shared = {**SETTINGS, "transactional.id": transactional_id}
    return ScenarioSpec(
        id="t2-zombie-fenced",
        title="T2 a zombie producer is fenced",
        description=f"Three partitions, RF 3, min.insync.replicas=2. A transactional producer "
                    f"'{ZOMBIE}' (zone a, transactional.id {transactional_id}, transactions of "
                    f"{TRANSACTION_SIZE}, transaction.timeout.ms={TRANSACTION_TIMEOUT_MS}) commits, then "
                    f"flushes the first transaction that fills {HOLD_AT_S:g} s after its init and calls "
                    f"nothing on its client for {HOLD_S:g} s before committing it. '{FRESH}' (zone b, same "
                    f"transactional.id) starts {FRESH_START_S:g} s into the run, once the coordinator "
                    f"(sweeping every {CLEANUP_INTERVAL_MS} ms) has aborted the held transaction. Two "
                    "read_committed consumers (zones b, c). No broker is touched.",
        expected=f"The held transaction is aborted by its coordinator. '{FRESH}' commits. The zombie's "
                 "commit is refused as fenced, and it records the transaction unknown and stops. No record "
                 "of the held transaction is given to a read_committed reader, live or in the final drain. "
                 "Every committed transaction of either instance is readable whole, and nothing is lost, "
                 "duplicated or reordered.",
        topic=TopicSpec(partitions=3, config={"min.insync.replicas": 2}),
        producers=(
            ProducerSpec(ZOMBIE, "a", {**shared, **ZOMBIE_TIMEOUTS}, rate_per_s=200,
                         transaction_size=TRANSACTION_SIZE, hold_at_s=HOLD_AT_S, hold_s=HOLD_S),
            ProducerSpec(FRESH, "b", shared, rate_per_s=200, transaction_size=TRANSACTION_SIZE,
                         start_after_s=FRESH_START_S),
        ),
        consumers=tuple(ConsumerSpec(name, name[-1], {"isolation.level": hist.READ_COMMITTED})
                        for name in CONSUMERS),
        expectations=CLEAN, broker_settings=BROKER_SETTINGS, warmup_acked=100, warmup_s=WARMUP_S,
        cooldown_s=COOLDOWN_S,
        checks=(
            # The zombie stops transacting at its one unknown transaction, so every commit
            # of its came before the hold.
            TransactionOutcomes("committed", CountRange(at_least=1), producers=(ZOMBIE,),
                                label="the zombie committed transactions before it held one open"),
            TransactionOutcomes("unknown", CountRange(1, 1), producers=(ZOMBIE,), errors=("_FENCED",),
                                label="the zombie's held transaction ended unknown, its producer told it "
                                      "was fenced"),
            TransactionOutcomes("committed", CountRange(at_least=1), producers=(FRESH,),
                                label="the fresh instance committed transactions"),
            TransactionOutcomes("unknown", CountRange(0, 0), producers=(FRESH,),
                                label="the fresh instance was never fenced and no commit of it gave up"),
            NeverVisible((ZOMBIE,), label="no record of the zombie's held transaction is visible at "
                                          "read_committed"),
            Polls(CONSUMERS, CountRange(at_least=1),
                  label="both read_committed consumers read, so their polls could have shown it"),
        ),
    )


def test_t2_a_zombie_producer_is_fenced_and_none_of_its_held_writes_become_visible(
    scenario: Callable[[ScenarioSpec], ScenarioRun],
) -> None:
    # A transactional.id of this run's own: an id registered by an earlier run on the same
    # cluster holds an epoch and state that have nothing to do with this one.
    run = run_spec(t2_spec(f"kafka-chaos-t2-{uuid.uuid4().hex[:8]}"), scenario)
    assert run.passed, run.failures()
