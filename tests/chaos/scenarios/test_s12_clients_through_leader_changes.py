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
catches a request in flight is a race, so that side accepts "any" and the report shows
which anomalies it saw (S7 shows duplicates deterministically).

Consumers: the two in the workload must read p0 at the next offset every time, across
all three leaders; and look-up probes start a fresh consumer after each move, which
must find the first record written after a given time (ListOffsets by timestamp,
answered by the partition's new leader) and read from exactly that offset.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faults.conditions import AllOf, LeaderChanged, LeaderIs, NewLeaderFromIsr
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import Attempts, CountRange, Eventually, Polls, Seen, Sends, inject
from harness.scenario.probes import Probe
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.client_settings import JAVA, LIBRDKAFKA
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._controller import place_controller

pytestmark = pytest.mark.chaos

CONTROLLER = 2
ASSIGNMENT = {0: (0, 1, 2), 1: (1, 2, 0), 2: (2, 0, 1)}
MOVED = 0  # the partition whose leadership moves
PREFERRED = ASSIGNMENT[MOVED][0]
# Errors a producer gets while a partition's leadership moves away from a live broker.
NOT_LEADER = ("NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE")
REJOIN_S = 60.0  # the restarted broker back in p0's ISR, on a loaded machine


def s12_spec(idempotent: bool, session_timeout_s: float, client: str = LIBRDKAFKA) -> ScenarioSpec:
    """Kill p0's leader, start it again, and once it is back in the ISR give it p0 back
    with a preferred-leader election; on ``client``. The Java client reports no failed
    attempt (only a send's final outcome), so its run has no attempts checks."""
    session = session_timeout_s
    producer = {"acks": "all", "enable.idempotence": idempotent, "retries": 2147483647,
                "max.in.flight.requests.per.connection": 5, "message.timeout.ms": 30000}
    tolerated: Rule = 0 if idempotent else "any"
    return ScenarioSpec(
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
        min_acked=1000, warmup_acked=100, cooldown_s=6,
        schedule=(
            {"start_s": 0, "duration_s": 2 * session + 2, "fault": "kill",
             "target": {"leader_of": [TOPIC, MOVED]}},
            {"after": 1, "start_s": 2, "when_timeout_s": REJOIN_S,
             "when": {"joins_isr": {"broker": PREFERRED, "topic": TOPIC, "partition": MOVED}},
             "duration_s": 0, "fault": "preferred_election", "topic": TOPIC, "partitions": [MOVED]},
        ),
        probes=(Probe("after-kill", -1, inject(1), after_s=2 * session + 1, look="lookup", zone="c",
                      partition=MOVED, since_s=1),
                Probe("after-election", -1, inject(2), after_s=4, look="lookup", zone="c", partition=MOVED,
                      since_s=2)),
        checks=(
            Eventually(AllOf((NewLeaderFromIsr(TOPIC, MOVED), LeaderChanged(TOPIC, MOVED))), inject(1),
                       within_s=3 * session, label="kill: p0 led by another in-sync replica, epoch up"),
            Eventually(AllOf((LeaderIs(TOPIC, MOVED, broker=PREFERRED), LeaderChanged(TOPIC, MOVED))),
                       inject(2), within_s=session,
                       label="preferred election: broker 0 leads p0 again, epoch up (three leaders in turn)"),
            *(Sends("not_acked", CountRange(0, 0), producers=(name,),
                    label=f"{name}: every send acknowledged despite the moves (retried)")
              for name in ("pa", "pb")),
            *((Attempts(("pa", "pb"), CountRange(at_least=1), inject(1), for_s=3 * session,
                        label="producers' failed attempts and retries around the kill are in the history"),
               Attempts(("pa", "pb"), CountRange(at_least=1), inject(2), for_s=10, errors=NOT_LEADER,
                        label="... and their not-leader errors around the preferred election"))
              if client == LIBRDKAFKA else ()),
            Seen("after-kill", resumes=True,
                 label="a consumer resumes from the offset it looked up on p0's leader after the kill"),
            Seen("after-election", resumes=True,
                 label="a consumer resumes from the offset it looked up after the preferred election"),
            Polls(("cb", "cc"), CountRange(at_least=200), start=inject(2), settle_s=1, partitions=(MOVED,),
                  contiguous=True, label="cb and cc kept consuming p0 after the last move, each read at the "
                                         "next offset (positions kept across leaders)"),
        ),
    )


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotence-on", "idempotence-off"])
def test_s12_clients_through_leader_changes(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, idempotent: bool,
) -> None:
    # Beside a broker that is not killed: the kill must move one partition's leader, not
    # also trigger a controller election (in KRaft the controllers are nodes of their own;
    # the placement keeps the run the same).
    place_controller(cluster, CONTROLLER)
    run = run_spec(s12_spec(idempotent, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotence-on", "idempotence-off"])
def test_s12_java_clients_through_leader_changes(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, idempotent: bool,
) -> None:
    """The same moves with Kafka's Java client producing and consuming."""
    place_controller(cluster, CONTROLLER)
    run = run_spec(s12_spec(idempotent, cluster.session_timeout_s, JAVA).on_client(JAVA), scenario)
    assert run.passed, run.failures()
