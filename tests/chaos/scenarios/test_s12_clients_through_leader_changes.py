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

from collections.abc import Callable

import pytest

from faults import Kill, LeaderOf, PreferredLeaderElection
from harness.cluster import Cluster
from harness.history import Rule
from harness.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.workload import ConsumerSpec, ProducerSpec
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
        expectations={"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0, "unseen": "any",
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
        run.settle(2)
        run.heal(kill)  # start the broker again; it comes back as a follower
        wait_for(lambda: killed in partition_state(cluster, run.topic, MOVED).isr, 60,
                 "the restarted broker rejoining p0's ISR")
        run.settle(2)
        run.inject(PreferredLeaderElection(run.topic, [MOVED]))
        elect_at = Mark.now()
        wait_for(moved_to(lambda leader: leader == killed), 30, "the preferred replica leading again")
        history.append(partition_state(cluster, run.topic, MOVED))
        last_move = Mark.now()
        run.settle(4)
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
            assert run.check(f"{consumer} kept consuming after the last move", polled > 200,
                             f"{polled} records polled after it")
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
