"""D1 A zone loses power with a partition's leader and a follower inside it.

acks=all, RF 3, min.insync.replicas=2, unclean election off, Kafka's default flush
settings, on ``three_az_two_in_a`` (brokers 0 and 1 in zone a, 2 in b, 3 in c). Partition
0 is pinned to brokers 0 (leader), 1 and 2, so zone a holds two of its three replicas.

* Third replica out of the ISR: broker 2 is paused until the ISR is zone a's two
  replicas, records are acknowledged by those two alone, then zone a loses power (its
  brokers and its ZooKeeper node or KRaft controller die together and keep only what their JVMs synced).
  Nothing in sync is left, so p0 is offline (unclean election is off); when the power is
  back a zone-a broker leads again on what it synced: acknowledged records are lost, and
  the judge must say so (required).
* Third replica in sync: the same power loss with broker 2 in the ISR: broker 2 takes
  over, holding every acknowledged record, and nothing is lost.

Replication covers one machine's power loss, never a correlated one of every replica
in sync; these two runs show both sides of that line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from faults.conditions import IsrIs, LeaderIs, Offline
from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.chaos_run import ChaosRun, escalation_text
from harness.scenario.checks import Check, CountRange, Eventually, Sends, inject
from harness.scenario.runner import TOPIC, ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.driver import ConsumerSpec, ProducerSpec
from topologies import load_topology

pytestmark = pytest.mark.chaos

TOPOLOGY = "three_az_two_in_a"
# A delivery timeout past p0's time without a leader (DARK_S and the restart): a record that
# times out makes librdkafka bump the epoch and may write a retried batch twice
# (docs/SCENARIOS.md, client bugs), a duplicate this scenario is not about.
PRODUCER = {"acks": "all", "enable.idempotence": True, "message.timeout.ms": 120_000}
# Leader 0 and follower 1 in zone a, follower 2 in zone b; broker 3 (zone c) holds no
# replica, so it can be the controller that sees zone a go.
TOPIC_SPEC = TopicSpec(assignment={0: (0, 1, 2)},
                       config={"min.insync.replicas": 2, "unclean.leader.election.enable": False})
ZONE_A = {"zone": "a"}
WRITES_S = 5.0  # acknowledged by zone a's replicas alone before the power goes
DARK_S = 15.0  # zone a without power: past a session timeout, so the controller acts


@pytest.fixture(scope="module")
def two_in_a(chaos_run: ChaosRun) -> Iterator[None]:
    """This module's clusters have two brokers in zone a, in the session's metadata mode;
    the session's topology after."""
    chaos_run.use_topology(load_topology(TOPOLOGY, metadata=chaos_run.base_topology.metadata))
    try:
        yield
    finally:
        chaos_run.use_topology(chaos_run.base_topology)


@pytest.fixture
def cluster(two_in_a: None, chaos_run: ChaosRun, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The harness's per-test cluster fixture, on this module's topology."""
    yield chaos_run.begin(request.node.nodeid)
    escalation = chaos_run.end(request.node.nodeid)
    if escalation is not None:
        pytest.fail(escalation_text(escalation), pytrace=False)


def _spec(name: str, title: str, expected: str, schedule: tuple[dict[str, object], ...],
          checks: tuple[Check, ...], expectations: dict[str, Rule]) -> ScenarioSpec:
    return ScenarioSpec(
        id=f"d1-{name}", title=f"D1 zone power loss: {title}",
        description="acks=all, RF 3, min.insync.replicas=2, unclean election off, default flush; "
                    "p0 on brokers 0 and 1 (zone a) and 2 (zone b); zone a loses power.",
        expected=expected, topic=TOPIC_SPEC,
        producers=(ProducerSpec("pc", "c", PRODUCER, rate_per_s=200),),
        consumers=(ConsumerSpec("cc", "c"),),
        expectations=expectations, warmup_acked=100,
        schedule=schedule, checks=checks,
    )


def third_out_of_isr_spec(session_timeout_s: float) -> ScenarioSpec:
    shrunk = 2 * session_timeout_s  # broker 2's session expired and its fetches stopped
    dark_at = shrunk + WRITES_S
    return _spec(
        "third-replica-out-of-isr", "the third replica out of the ISR",
        "p0 offline while zone a is dark (no replica in sync survives, unclean election off); "
        "acknowledged records lost: the verdict must report lost (at_least_one).",
        schedule=(
            # Broker 2 resumes while zone a is still dark: alive, out of sync, never elected.
            {"start_s": 0, "duration_s": dark_at + DARK_S / 3, "fault": "pause", "target": {"broker": 2}},
            {"start_s": dark_at, "duration_s": DARK_S, "fault": "power_loss", "target": ZONE_A},
        ),
        checks=(
            Eventually(IsrIs(TOPIC, 0, brokers=(0, 1)), inject(1), within_s=shrunk,
                       label="broker 2 paused: the ISR is zone a's two replicas"),
            Sends("acked", CountRange(at_least=1), partitions=(0,), timed_by="ack", start=inject(1),
                  settle_s=shrunk, until=inject(2),
                  label="records acknowledged by zone a's replicas alone before the power loss"),
            Eventually(Offline(TOPIC, 0), inject(2), within_s=DARK_S,
                       label="zone a dark: p0 offline, its out-of-sync replica not elected"),
        ),
        expectations={"lost": "at_least_one", "truncated": "any", "unseen": "any"},
    )


def third_in_sync_spec(session_timeout_s: float) -> ScenarioSpec:
    return _spec(
        "third-replica-in-sync", "the third replica in sync",
        "Broker 2 (zone b, in sync) leads p0 after zone a's power loss; nothing acknowledged lost.",
        schedule=({"start_s": 0, "duration_s": DARK_S, "fault": "power_loss", "target": ZONE_A},),
        checks=(
            Eventually(LeaderIs(TOPIC, 0, broker=2), inject(1), within_s=DARK_S,
                       label="broker 2, in sync in zone b, leads p0 while zone a is dark"),
        ),
        expectations={"lost": 0, "truncated": 0, "unseen": 0},
    )


def test_d1_zone_power_loss_with_the_third_replica_out_of_sync_loses_acknowledged_records(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(third_out_of_isr_spec(cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()


@pytest.mark.core(strikes=("power_loss",), judges=("messages",))
def test_d1_zone_power_loss_with_the_third_replica_in_sync_loses_nothing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(third_in_sync_spec(cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()
