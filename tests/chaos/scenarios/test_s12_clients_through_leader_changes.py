"""S12 Clients through leader changes.

Under steady load leadership of p0 is moved three times: kill -9 of its leader (the
controller elects another after the session timeout), restart of that broker (it
rejoins as a follower), and a preferred-leader election (it leads again). Producers
get not-leader errors or lose their connection, refresh metadata and retry on the new
leader; consumers' fetches and offset look-ups do the same. The test checks the moves
in ZooKeeper (each a new leader with a higher epoch) and what the clients lived
through (every send ends acknowledged, consumers keep reading after the last move).

What the retries may do to the log depends on idempotence. With
enable.idempotence=true the leader deduplicates retried batches by producer id and
sequence and rejects out-of-order ones, so the checker must find no duplicate and no
reordering. With idempotence off and five requests in flight, a batch whose response
was lost in the kill is written again, and a retried batch can land behind batches
sent after it: the checker may report duplicates and reordering. Whether a given kill
catches a request in flight is a race, so that side accepts "any" and the test records
which anomalies it saw (S7 shows duplicates deterministically).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import TopicPartition

from faults import Kill, LeaderOf, PreferredLeaderElection
from harness.cluster.lifecycle import Cluster
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.clients import make_consumer
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios._network_helpers import (
    Mark,
    broker_of,
    examples,
    partition_state,
    place_controller,
    wait_for,
)

pytestmark = pytest.mark.chaos

CONTROLLER = 2
ASSIGNMENT = {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}
MOVED = 0  # the partition whose leadership moves
# Errors a producer gets while a partition's leadership moves away from a live broker.
NOT_LEADER = {"NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE"}


def resume_from_lookup(cluster: Cluster, topic: str, since: float) -> tuple[int, int | None, int]:
    """A consumer that must look up where to start: the offset of the first record of
    ``topic``-MOVED written at or after ``since`` (ListOffsets by timestamp, answered by
    the partition's current leader), then reads from it. Returns the offset looked up,
    the first offset read, and the first record's timestamp in milliseconds."""
    consumer = make_consumer(cluster, "c")
    try:
        (found,) = consumer.offsets_for_times([TopicPartition(topic, MOVED, int(since * 1000))], timeout=20)
        consumer.assign([TopicPartition(topic, MOVED, found.offset)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                return found.offset, msg.offset(), msg.timestamp()[1]
        return found.offset, None, -1
    finally:
        consumer.close()


def offset_steps(history_dir: Path, consumer: str) -> list[tuple[int, int]]:
    """Where ``consumer``'s reads of MOVED did not go on at the next offset: (from, to)."""
    polls = pq.read_table(history_dir / "polls", columns=["consumer_id", "partition", "offset", "poll_ts"])
    offsets = [r["offset"] for r in sorted(polls.to_pylist(), key=lambda r: r["poll_ts"])
               if r["consumer_id"] == consumer and r["partition"] == MOVED]
    return [(a, b) for a, b in itertools.pairwise(offsets) if b != a + 1]


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotence-on", "idempotence-off"])
def test_s12_clients_through_leader_changes(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster,
    idempotent: bool,
) -> None:
    # Not the broker that is killed: the kill must move one partition's leader, not
    # also trigger a controller election.
    place_controller(cluster, CONTROLLER)
    producer = {"acks": "all", "enable.idempotence": idempotent, "retries": 2147483647,
                "max.in.flight.requests.per.connection": 5, "message.timeout.ms": 30000}
    tolerated: Rule = 0 if idempotent else "any"
    spec = ScenarioSpec(
        id="s12-clients-through-leader-changes", title="S12 clients through leader changes",
        description="RF 3, min.insync.replicas=2, leaders spread; under load, kill -9 the leader of p0, "
                    "restart it, then a preferred-leader election; acks=all, five requests in flight, "
                    f"enable.idempotence={idempotent}.",
        expected="Every move shows in ZooKeeper as a new leader with a higher epoch; producers and "
                 "consumers follow the leader; nothing lost; "
                 + ("no duplicates and no reordering." if idempotent
                    else "duplicates and reordering may appear, and are reported."),
        topic=TopicSpec(assignment=ASSIGNMENT, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", producer, rate_per_s=100),
                   ProducerSpec("pb", "b", producer, rate_per_s=100)),
        consumers=(ConsumerSpec("cb", "b"), ConsumerSpec("cc", "c")),
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0, "unseen": 0,
                      "duplicate": tolerated, "reordered": tolerated},
    )
    with scenario(spec) as run:
        run.settle(3)
        history = [partition_state(cluster, run.topic, MOVED)]

        def moved_to(accept: Callable[[int], bool]) -> Callable[[], bool]:
            def check() -> bool:
                now = partition_state(cluster, run.topic, MOVED)
                return now.leader_epoch > history[-1].leader_epoch and accept(now.leader)
            return check

        kill = Kill(LeaderOf(run.topic, MOVED))
        (killed_node,) = run.inject(kill)
        killed = broker_of(killed_node)
        kill_at = Mark.now()
        failover = wait_for(moved_to(lambda leader: leader not in (-1, killed)), 40,
                            "a new leader after the kill")
        run.window("kill -9 of p0's leader -> new leader (ZooKeeper)", failover)
        history.append(partition_state(cluster, run.topic, MOVED))
        lookups = [("after the kill", kill_at.wall + failover + 1)]
        run.settle(2)
        run.heal(kill)  # start the broker again; it comes back as a follower
        wait_for(lambda: killed in partition_state(cluster, run.topic, MOVED).isr, 60,
                 "the restarted broker rejoining p0's ISR")
        run.settle(2)
        elect_at = Mark.now()
        run.inject(PreferredLeaderElection(run.topic, [MOVED]))
        wait_for(moved_to(lambda leader: leader == killed), 30, "the preferred replica leading again")
        history.append(partition_state(cluster, run.topic, MOVED))
        last_move = Mark.now()
        lookups.append(("after the preferred election", last_move.wall + 1))
        run.settle(4)
        for when, since in lookups:
            looked_up, first_read, first_ts = resume_from_lookup(cluster, run.topic, since)
            assert run.check(f"a consumer resumes from the offset it looked up on p0's leader {when}",
                             looked_up >= 0 and first_read == looked_up and first_ts >= int(since * 1000),
                             f"looked up offset {looked_up} for {since:.3f}; first read offset "
                             f"{first_read}, written at {first_ts / 1000:.3f}")
        moves = [f"{s.leader}/{s.leader_epoch}" for s in history]
        assert run.check("three leaders of p0 in turn, each with a higher epoch",
                         [s.leader for s in history] == [killed, history[1].leader, killed]
                         and history[0].leader_epoch < history[1].leader_epoch < history[2].leader_epoch,
                         f"leader/epoch {' -> '.join(moves)}")
        verdict = run.finish()
        clients = ClientLog.of(run)
        for producer_id in ("pa", "pb"):
            outcomes = clients.outcomes_sent_between(producer_id, 0, float("inf"))
            assert run.check(f"{producer_id}: every send acknowledged despite the moves (retried)",
                             outcomes["failed"] == outcomes["unknown"] == 0 and outcomes["acked"] > 500,
                             f"{outcomes}")
        run.window("p0 longest stretch without an ack around the kill",
                   clients.partition_gap(MOVED, kill_at.wall, kill_at.wall + failover + 5))
        run.window("p0 longest stretch without an ack around the preferred election",
                   clients.partition_gap(MOVED, elect_at.wall - 1, last_move.wall + 2))
        for consumer in ("cb", "cc"):
            polled = clients.polled_between(consumer, last_move.wall, float("inf"))
            steps = offset_steps(run.dir / "history", consumer)
            assert run.check(f"{consumer} kept consuming p0 after the last move, each read at the next "
                             "offset (positions kept across leaders, none skipped or read twice)",
                             polled > 200 and not steps, f"{polled} records polled after it; "
                             f"jumps (from, to): {steps[:5]}")
        moves = {"the kill": (kill_at.wall, kill_at.wall + failover + 5),
                 "the preferred election": (elect_at.wall, last_move.wall + 2)}
        errors = {(producer_id, name): clients.attempt_errors_between(producer_id, *window)
                  for producer_id in ("pa", "pb") for name, window in moves.items()}
        shown = "; ".join(f"{p} around {name}: {e or 'none'}" for (p, name), e in errors.items())
        assert run.check("producers' failed attempts and retries around each move are in the history",
                         all(any(errors[(p, name)] for p in ("pa", "pb")) for name in moves)
                         and any(set(errors[(p, "the preferred election")]) & NOT_LEADER
                                 for p in ("pa", "pb")),
                         shown)
        counts = verdict.findings.counts()
        record = verdict.to_dict()
        observed = {k: counts[k] for k in ("duplicate", "reordered")}
        shown = {k: [e["message_id"] for e in examples(record, k)][:3] for k in observed}
        seen = ", ".join(f"{n} {k}" for k, n in observed.items() if n) or "neither"
        if idempotent:
            assert run.check("no duplicates or reorders with idempotence on", not any(observed.values()),
                             f"counts {observed}; examples {shown}")
        else:
            # Whatever the race produced, each kind counted has examples to show and each
            # kind with examples was counted: the side says which anomalies it saw.
            assert run.check(f"anomalies the retries left, with examples: {seen}",
                             all((observed[k] > 0) == bool(shown[k]) for k in observed),
                             f"counts {observed}; examples {shown}")
    assert verdict.passed, record["rules"]
    assert counts["lost"] == 0 and counts["truncated"] == 0
