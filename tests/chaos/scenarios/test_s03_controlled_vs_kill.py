"""S3 Controlled shutdown versus hard kill.

The same broker, leading the same partitions, is stopped twice: first with SIGTERM,
whose shutdown hook asks the controller to move every leadership to another in-sync
replica and to drop the broker from every ISR before the process exits; then, after it
is back and leads again (preferred-leader election), with SIGKILL, after which nothing
moves until ZooKeeper expires its session. Each partition's unavailability is measured
both in ZooKeeper (signal to a new leader) and as the producer lived it (longest stretch
without an acknowledgement), and the test asserts controlled << kill. acks=all with
min.insync.replicas=2 loses nothing either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from faults import BrokerId, ControlledShutdown, Kill, PreferredLeaderElection
from faults.nodes import session_timeout_s
from harness.cluster.lifecycle import Cluster
from harness.cluster.zkstate import ClusterState
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec
from tests.chaos.scenarios._client_log import ClientLog
from tests.chaos.scenarios.conftest import (
    await_partition,
    brief,
    partition_state_zxid,
    registration_closed_zxid,
    warm_up,
)

pytestmark = pytest.mark.chaos

PARTITIONS = 6
PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
ACCEPT: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                           "duplicate": "any", "reordered": "any", "unseen": 0}
TIMEOUT_S = 30.0
START_TIMEOUT_S = 90.0


def rotated(brokers: list[int]) -> dict[int, list[int]]:
    """Replica lists rotating over the brokers: each broker is the preferred leader of
    PARTITIONS / len(brokers) partitions and a follower of the rest."""
    n = len(brokers)
    return {p: [brokers[(p + i) % n] for i in range(n)] for p in range(PARTITIONS)}


def leaders_moved(state: ClusterState, topic: str, partitions: list[int], broker: int) -> bool:
    return all(state.partitions[(topic, p)].leader not in (broker, -1) for p in partitions)


def test_s3_controlled_shutdown_moves_leadership_far_sooner_than_a_kill(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, spare_brokers: tuple[int, ...]
) -> None:
    brokers = sorted(b.broker_id for b in cluster.topology.brokers)
    victim = spare_brokers[0]
    assignment = rotated(brokers)
    led = [p for p, replicas in assignment.items() if replicas[0] == victim]
    spec = ScenarioSpec(
        sample_interval_s=0.05,
        id="s3-controlled-vs-kill", title="S3 controlled shutdown versus hard kill",
        description=f"RF 3, min.insync.replicas=2, acks=all; broker {victim} (not the controller) leads "
                    f"partitions {led}. SIGTERM it, restart it, give it its leaderships back "
                    "(preferred-leader election), then kill -9 it, and restart it.",
        expected="Controlled shutdown: leadership moves to an in-sync replica and the broker leaves "
                 "every ISR before it exits; near-zero unavailability. kill -9: nothing moves until "
                 "the session expires, then the first live ISR replica leads. controlled << kill; "
                 "no acknowledged loss.",
        topic=TopicSpec(replication_factor=3, assignment=assignment,
                        config={"min.insync.replicas": 2, "unclean.leader.election.enable": False}),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=240),),
        consumers=(ConsumerSpec("cb", "b"),),
        expectations=ACCEPT,
    )
    session_s = session_timeout_s(cluster)
    with scenario(spec) as run:
        zk = run.cluster_state
        topic = run.topic
        warm_up(run)
        run.settle(1)

        # -- controlled shutdown ----------------------------------------------------------
        before = cluster.state([topic])
        stop = ControlledShutdown(BrokerId(victim))
        (node,) = run.inject(stop)
        terminated = run.log.events[-1]  # its ts: wall time just before the SIGTERM
        signalled, deregistered, exited = stop.timeline[node]
        clean_zk: dict[int, float] = {}
        for p in led:
            moved_at, now = await_partition(zk, topic, p, lambda s: s.leader not in (victim, -1), TIMEOUT_S,
                                            signalled, f"p{p} leadership moving off broker {victim}")
            clean_zk[p] = moved_at - signalled
            was = before.partitions[(topic, p)]
            assert run.check(f"controlled: p{p} led by an in-sync replica before broker {victim} exited",
                             now.leader in was.isr and now.leader_epoch > was.leader_epoch
                             and moved_at <= exited, f"{brief(was)} -> {brief(now)}, moved "
                             f"{moved_at - signalled:.2f} s, exited {exited - signalled:.2f} s after SIGTERM")
        left = zk.first(lambda s: all(victim not in p.isr for p in s.topic(topic)), signalled)
        when = "never" if left is None else f"{left[0] - signalled:.2f} s"
        assert run.check(f"controlled: broker {victim} left every ISR before it exited",
                         left is not None and left[0] <= exited,
                         f"after SIGTERM: left the ISRs {when}, deregistered "
                         f"{deregistered - signalled:.2f} s, exited {exited - signalled:.2f} s")
        # The proof that does not depend on sampling or clocks: ZooKeeper's order of writes.
        # The broker's registration went when its session closed; each of its partitions'
        # state (leader and ISR) must have been written before that.
        session_closed = registration_closed_zxid(cluster)
        for p in led:
            written = partition_state_zxid(cluster, topic, p)
            assert run.check(f"controlled: p{p}'s leadership moved before broker {victim}'s ZooKeeper "
                             "session closed (zxid order)", written < session_closed,
                             f"partition state last written at zxid {written:#x}, registration deleted "
                             f"at zxid {session_closed:#x}")
        clean_ended = time.time()
        run.heal(stop)
        restarted = run.log.events[-1]
        for p in assignment:
            await_partition(zk, topic, p, lambda s: victim in s.isr, START_TIMEOUT_S, restarted.mono,
                            f"broker {victim} back in the ISR of p{p}")
        run.inject(PreferredLeaderElection(topic, led))
        back = cluster.state([topic])
        assert run.check(f"preferred-leader election gave broker {victim} its partitions back",
                         all(back.partitions[(topic, p)].leader == victim for p in led),
                         "; ".join(brief(back.partitions[(topic, p)]) for p in led))
        run.settle(2)

        # -- kill -9 ------------------------------------------------------------------------
        kill = Kill(BrokerId(victim))
        run.inject(kill)
        killed = run.log.events[-1]
        kill_zk: dict[int, float] = {}
        for p in led:
            moved_at, now = await_partition(zk, topic, p, lambda s: s.leader not in (victim, -1), TIMEOUT_S,
                                            killed.mono, f"p{p} leadership moving off broker {victim}")
            kill_zk[p] = moved_at - killed.mono
            was = back.partitions[(topic, p)]
            first_live = next(r for r in was.replicas if r != victim and r in was.isr)
            assert run.check(f"kill: p{p} led by the first live ISR replica ({first_live}) only after "
                             f"the session expired", now.leader == first_live and kill_zk[p] > session_s / 2,
                             f"{brief(was)} -> {brief(now)} after {kill_zk[p]:.2f} s")
        # The same zxid comparison the other way round: after kill -9 the controller can
        # only move leadership once the expired session has deleted the registration.
        session_closed = registration_closed_zxid(cluster)
        for p in led:
            written = partition_state_zxid(cluster, topic, p)
            assert run.check(f"kill: p{p}'s leadership moved only after broker {victim}'s ZooKeeper "
                             "session closed (zxid order)", written > session_closed,
                             f"partition state last written at zxid {written:#x}, registration deleted "
                             f"at zxid {session_closed:#x}")
        run.heal(kill)
        kill_ended = run.log.events[-1].ts
        run.settle(2)
        verdict = run.finish()

        acks = ClientLog.of(run)
        clean_client = {p: acks.partition_gap(p, terminated.ts, clean_ended) for p in led}
        kill_client = {p: acks.partition_gap(p, killed.ts, kill_ended) for p in led}
        for p in led:
            run.window(f"p{p} controlled shutdown: SIGTERM to new leader (ZooKeeper)", clean_zk[p])
            run.window(f"p{p} kill -9: SIGKILL to new leader (ZooKeeper)", kill_zk[p])
            run.window(f"p{p} controlled shutdown: longest stretch without an ack", clean_client[p])
            run.window(f"p{p} kill -9: longest stretch without an ack", kill_client[p])
        print(f"\nS3 broker {victim}: ZooKeeper controlled {clean_zk} kill {kill_zk}; "
              f"clients controlled {clean_client} kill {kill_client}; counts {verdict.findings.counts()}")
    assert verdict.passed, verdict.to_dict()["rules"]
    assert verdict.findings.counts()["lost"] == 0
    assert max(clean_zk.values()) < min(kill_zk.values()) / 3, f"controlled {clean_zk} vs kill {kill_zk}"
    # The clients' side includes a metadata refresh and retry backoff in both cases, so
    # its ratio is smaller than ZooKeeper's; it must still be clearly below.
    assert max(clean_client.values()) < min(kill_client.values()) / 2, \
        f"clients: controlled {clean_client} vs kill {kill_client}"
