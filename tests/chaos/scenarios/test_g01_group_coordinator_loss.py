"""G1 A consumer group through the loss of its coordinator.

A group's coordinator is the broker leading the group's ``__consumer_offsets`` partition:
it keeps the membership and takes every offset commit. Kill -9 it, and nothing can
commit until the controller elects another leader for that partition, which it does only
once ZooKeeper expires the dead broker's session (at least two thirds of a session: the
session ends a timeout after the last heartbeat, sent every third of it). The members
then find the new coordinator, which loads the group's committed offsets, and go on.

The topic's two replicas live on the other brokers, so the kill never stalls the data
(with a replica on the victim, every acks=all write would wait for the ISR to shrink,
and the members, with nothing new to commit, would pause their commits whatever broker
died). Three members (one per zone) commit synchronously after recording each batch.
Through the loss no member may skip an acknowledged record, read backwards within an
assignment, see its group's committed offset move back, or find an offset committed past
what the group had read; and nothing acknowledged is lost. The group id is chosen so its
coordinator is a broker other than the controller, whose loss would add an election of
its own.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.cluster.lifecycle import Cluster
from harness.history import Rule
from harness.scenario.checks import (
    CommitGap,
    Commits,
    CommitsKept,
    CountRange,
    Polls,
    SecondsRange,
    heal,
    inject,
)
from harness.scenario.runner import ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
from harness.workload.client_settings import JAVA
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._groups import group_coordinated_by

pytestmark = pytest.mark.chaos

MEMBERS = ("m-a", "m-b", "m-c")
PRODUCER = {"acks": "all", "enable.idempotence": True}
ACCEPT: dict[str, Rule] = {"lost": 0, "duplicate": 0, "truncated": 0, "unexpected": 0, "aborted_read": 0,
                           "reordered": 0, "unseen": 0, "poll_skip": 0, "nonmonotonic_poll": 0,
                           "commit_regression": 0, "commit_beyond_read": 0}


def g1_spec(group: str, coordinator: int, brokers: list[int], session_timeout_s: float) -> ScenarioSpec:
    """Kill ``group``'s coordinator (broker ``coordinator``) for two sessions while its
    three members read and commit after every batch, then start it again. The topic lives
    on the other brokers only, so the kill never stalls the data: a pause in the commits
    is the coordinator's doing."""
    session = session_timeout_s
    a, b = (broker for broker in brokers if broker != coordinator)
    assignment = {p: (a, b) if p % 2 == 0 else (b, a) for p in range(6)}
    return ScenarioSpec(
        id="g1-group-coordinator-loss", title="G1 a consumer group through the loss of its coordinator",
        description=f"RF 2 on brokers {a} and {b}, min.insync.replicas=2, acks=all with idempotence; group "
                    f"{group}'s three members (zones a, b, c) commit synchronously after each batch; kill -9 "
                    f"the group's coordinator (broker {coordinator}, the leader of its __consumer_offsets "
                    f"partition, holding no replica of the topic) for {2 * session:g} s, then restart it.",
        expected="No commit succeeds until the coordinator's session expires and its partition gets a new "
                 "leader; then the members commit again. No skipped or backward read, no commit regression "
                 "or commit beyond what was read, nothing acknowledged lost.",
        topic=TopicSpec(assignment=assignment,
                        config={"min.insync.replicas": 2, "unclean.leader.election.enable": False}),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=200),),
        consumers=tuple(ConsumerSpec(name, name[-1], group=group, commit="sync") for name in MEMBERS),
        expectations=ACCEPT, warmup_acked=100, cooldown_s=8,
        schedule=({"start_s": 1, "duration_s": 2 * session, "fault": "kill",
                   "target": {"coordinator_of": group}},),
        checks=(
            Commits("committed", CountRange(at_least=1), until=inject(1),
                    label="the members committed before the kill"),
            # Measured from the commits, not from when the kill began: a loaded machine takes
            # a moment to deliver SIGKILL, and commits go through until it lands.
            CommitGap(SecondsRange(at_least=2 * session / 3), start=inject(1), until=heal(1),
                      label="no commit went through for two thirds of a session or more after the kill"),
            Commits("committed", CountRange(at_least=1), start=heal(1),
                    label="commits went on after the restart"),
            Polls(MEMBERS, CountRange(at_least=1), start=heal(1),
                  label="every member read after the restart"),
            CommitsKept((group,), label="the new coordinator gives back the last commit of every partition"),
        ),
    )


def test_g1_a_group_loses_no_read_and_no_commit_through_its_coordinators_loss(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    coordinator = spare_brokers[0]
    group = group_coordinated_by(cluster, coordinator, "g1")
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    run = run_spec(g1_spec(group, coordinator, brokers, cluster.session_timeout_s), scenario)
    assert run.passed, run.failures()


def test_g1_java_members_lose_no_read_and_no_commit_through_the_coordinators_loss(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    """The same coordinator loss with the members on Kafka's Java client (synchronous
    commits after each batch, as on librdkafka)."""
    coordinator = spare_brokers[0]
    group = group_coordinated_by(cluster, coordinator, "g1-java")
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    spec = g1_spec(group, coordinator, brokers, cluster.session_timeout_s).on_client(JAVA)
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()
