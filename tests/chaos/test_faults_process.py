"""Process faults on a real cluster: kill -9, controlled shutdown, pause, bounce.

Every assertion is read from ZooKeeper (through the observer links, which faults never
touch), sampled while the fault unfolds so that gaps can be measured and printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from faults import Bounce, ControlledShutdown, EventLog, FollowerOf, Kill, LeaderOf, Pause, Restart
from faults.nodes import broker_id, session_timeout_s
from faults.waiting import wait_until
from harness.cluster.lifecycle import Cluster
from harness.cluster.node_config import KAFKA_DATA_DIR
from harness.cluster.sampler import StateSampler
from harness.cluster.state import ClusterState
from tests.support.trickle import Trickle, unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]


def _broker(cluster: Cluster, node: str) -> int:
    found = broker_id(cluster, node)
    assert found is not None, f"{node} is not a broker"
    return found


def _registration(cluster: Cluster, broker: int) -> list[str]:
    data, _ = cluster.zk.client.get(f"/brokers/ids/{broker}")
    return sorted(json.loads(data)["endpoints"])


def _on_disk(cluster: Cluster, node: str) -> tuple[str, set[str]]:
    """The broker's identity (meta.properties) and the entries of its data directory."""
    container = cluster.container(node)
    meta = container.exec_run(["cat", f"{KAFKA_DATA_DIR}/meta.properties"]).output.decode()
    entries = container.exec_run(["ls", KAFKA_DATA_DIR]).output.decode().split()
    return str(meta), set(entries)


def _moved_off(topic: str, partition: int, broker: int) -> Callable[[ClusterState], bool]:
    def moved(state: ClusterState) -> bool:
        now = state.partitions[(topic, partition)]
        return now.leader not in (broker, -1)

    return moved


@pytest.mark.metadata("zookeeper")
@pytest.mark.core(strikes=("kill",))
def test_kill_9_of_a_leader_is_noticed_only_after_the_session_timeout(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("kill")
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    session_s = session_timeout_s(cluster)
    kill = Kill(LeaderOf(topic, 0))
    with StateSampler.for_cluster(cluster, [topic]) as recorder:
        before = recorder.wait_for(lambda s: True, 10)
        assert before is not None
        victim = LeaderOf(topic, 0).resolve(cluster)[0]
        broker = _broker(cluster, victim)
        endpoints, disk = _registration(cluster, broker), _on_disk(cluster, victim)
        led = [p for p in before[1].topic(topic) if p.leader == broker]

        assert kill.inject(cluster, fault_log) == (victim,)
        killed_at = fault_log.events[-1].mono
        gone = recorder.wait_for(lambda s: broker not in s.live_brokers, session_s + 15, killed_at)
        assert gone is not None, f"{victim} never left /brokers/ids"
        new_leaders = {}
        for p in led:
            found = recorder.wait_for(_moved_off(topic, p.partition, broker), 30, killed_at)
            assert found is not None, f"{topic}-{p.partition} got no new leader"
            new_leaders[p.partition] = found
    # /brokers/ids keeps the dead broker until ZooKeeper expires its session.
    dereg_gap = gone[0] - killed_at
    # The client pings every third of the timeout, so expiry comes 2/3..1 timeout after the kill.
    assert dereg_gap >= session_s / 2, f"deregistered after {dereg_gap:.2f} s < half the session timeout"
    gaps = {}
    for p in led:
        taken, state = new_leaders[p.partition]
        now = state.partitions[(topic, p.partition)]
        assert now.leader in p.isr, f"new leader {now.leader} of p{p.partition} was not in the ISR {p.isr}"
        assert now.leader_epoch > p.leader_epoch
        assert taken >= gone[0] - recorder.interval_s * 2, "a leader moved before the session expired"
        gaps[p.partition] = taken - killed_at
    print(
        f"\nkill -9 {victim}: left /brokers/ids after {dereg_gap:.2f} s (session timeout {session_s:.0f} s); "
        f"new leaders after " + ", ".join(f"p{p} {g:.2f} s" for p, g in sorted(gaps.items()))
    )
    # Restarted in place: same id, same advertised endpoints, same data directory.
    kill.heal(cluster, fault_log)
    assert _registration(cluster, broker) == endpoints
    # The same directory: the same identity, and everything it held is still there (a
    # partition created meanwhile, __consumer_offsets on a fresh cluster, may add an entry).
    meta, entries = _on_disk(cluster, victim)
    assert meta == disk[0], "the broker came back with another identity"
    assert disk[1] <= entries, f"gone from the data directory: {sorted(disk[1] - entries)}"
    assert [e.action for e in fault_log] == ["inject", "heal"] and all(e.ok for e in fault_log)


@pytest.mark.core(strikes=("controlled_shutdown", "kill"))
def test_controlled_shutdown_moves_leaders_before_exit_far_faster_than_kill_9(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("clean")
    cluster.create_topic(topic, partitions=6, replication_factor=3)
    stop = ControlledShutdown(LeaderOf(topic, 0))
    with StateSampler.for_cluster(cluster, [topic]) as recorder:
        before = cluster.state([topic]).topic(topic)
        (node,) = stop.inject(cluster, fault_log)
        broker = _broker(cluster, node)
        signalled, deregistered, exited = stop.timeline[node]
        led = [p for p in before if p.leader == broker]

        def handed_over(state: ClusterState) -> bool:
            parts = state.topic(topic)
            return all(p.leader != broker and p.leader in p.isr and broker not in p.isr for p in parts)

        done = recorder.first(handed_over, signalled)
        assert done is not None, "leadership never fully moved off the stopping broker"
        assert done[0] < exited, (
            f"leaders moved and ISRs shrank {done[0] - signalled:.2f} s after SIGTERM, "
            f"but the process exited after {exited - signalled:.2f} s"
        )
        clean_gaps = {}
        for p in led:
            found = recorder.first(_moved_off(topic, p.partition, broker), signalled)
            assert found is not None
            now = found[1].partitions[(topic, p.partition)]
            assert now.leader in p.isr and now.leader_epoch > p.leader_epoch
            clean_gaps[p.partition] = found[0] - signalled

        # The same topic, now with a hard kill of the broker leading partition 0.
        kill = Kill(LeaderOf(topic, 0))
        mid = cluster.state([topic]).topic(topic)
        (victim,) = kill.inject(cluster, fault_log)
        killed_at = fault_log.events[-1].mono
        dead = _broker(cluster, victim)
        kill_gaps = {}
        for p in (p for p in mid if p.leader == dead):
            found = recorder.wait_for(
                _moved_off(topic, p.partition, dead), session_timeout_s(cluster) + 20, killed_at
            )
            assert found is not None, f"{topic}-{p.partition} got no leader after the kill"
            kill_gaps[p.partition] = found[0] - killed_at
    print(
        f"\ncontrolled shutdown of {node}: deregistered {deregistered - signalled:.2f} s, exited "
        f"{exited - signalled:.2f} s after SIGTERM; leaders moved after "
        + ", ".join(f"p{p} {g:.2f} s" for p, g in sorted(clean_gaps.items()))
        + f"\nkill -9 of {victim}: leaders moved after "
        + ", ".join(f"p{p} {g:.2f} s" for p, g in sorted(kill_gaps.items()))
    )
    assert clean_gaps and kill_gaps
    assert max(clean_gaps.values()) * 2 < min(kill_gaps.values()), "controlled shutdown is not << kill -9"


@pytest.mark.core(strikes=("pause",))
def test_a_follower_paused_past_the_lag_time_leaves_the_isr_and_returns_on_resume(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("pause")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    lag_s = int(cluster.broker_settings()["replica.lag.time.max.ms"]) / 1000
    pause = Pause(FollowerOf(topic, 0))
    with Trickle(cluster, topic), StateSampler.for_cluster(cluster, [topic]) as recorder:
        (node,) = pause.inject(cluster, fault_log)
        paused_at = fault_log.events[-1].mono
        broker = _broker(cluster, node)
        out = recorder.wait_for(
            lambda s: broker not in s.partitions[(topic, 0)].isr, lag_s * 3 + 10, paused_at
        )
        assert out is not None, f"{node} stayed in the ISR while paused"
        how = "lag (still registered)" if broker in out[1].live_brokers else "its session expiring"
        pause.heal(cluster, fault_log)
        resumed_at = fault_log.events[-1].mono
        back = recorder.wait_for(lambda s: broker in s.partitions[(topic, 0)].isr, 60, resumed_at)
        assert back is not None, f"{node} did not rejoin the ISR after SIGCONT"
    left = out[0] - paused_at
    print(
        f"\npaused {node}: left the ISR after {left:.2f} s via {how} (lag time {lag_s:.0f} s); "
        f"rejoined {back[0] - resumed_at:.2f} s after resume"
    )
    assert left >= lag_s * 0.6, f"left the ISR after {left:.2f} s, before the lag time could pass"


@pytest.mark.core(strikes=("bounce",))
def test_a_clean_bounce_chases_the_leader(cluster: Cluster, fault_log: EventLog) -> None:
    topic = unique_topic("bounce")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    bounce = Bounce(LeaderOf(topic, 0), times=2, clean=True)
    epoch_before = cluster.state([topic]).topic(topic)[0].leader_epoch
    first = bounce.inject(cluster, fault_log)
    assert bounce.bounced[0] == first[0]
    assert bounce.bounced[0] != bounce.bounced[1], "the second round must hit the new leader"
    state = cluster.state([topic]).topic(topic)[0]
    assert state.leader_epoch >= epoch_before + 2 and set(state.isr) == {0, 1, 2}
    wait_until(lambda: cluster.state().live_brokers == (0, 1, 2), 30, "all brokers registered")
    print(f"\nclean bounce x2 chased the leader: {fault_log.events[-1].outcome}")


@pytest.mark.metadata("zookeeper")
@pytest.mark.core(strikes=("restart",))
def test_a_clean_restart_of_a_follower_brings_it_back_with_a_new_session_and_into_the_isr(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("restart")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    node = FollowerOf(topic, 0).resolve(cluster)[0]
    broker = _broker(cluster, node)
    session_before = cluster.zk.ephemeral_owner(f"/brokers/ids/{broker}")
    # Clean: the controlled shutdown closes the old session, so the broker registered after
    # the inject can only be the new process (a hard stop leaves the old znode until expiry).
    restart = Restart(FollowerOf(topic, 0), clean=True, downtime_s=2.0)
    with Trickle(cluster, topic), StateSampler.for_cluster(cluster, [topic]) as recorder:
        assert restart.inject(cluster, fault_log) == (node,)
        back_at = fault_log.events[-1].mono
        # The inject returns once the broker is registered again: a new process, a new session.
        session_after = cluster.zk.ephemeral_owner(f"/brokers/ids/{broker}")
        rejoined = recorder.wait_for(lambda s: broker in s.partitions[(topic, 0)].isr,
                                     session_timeout_s(cluster) + 60, back_at)
    restart.heal(cluster, fault_log)
    print(f"\nclean restart of {node}: {fault_log.events[-2].outcome}; session 0x{session_before or 0:x} -> "
          f"0x{session_after or 0:x}")
    assert session_before is not None and session_after is not None
    assert session_after != session_before, "the broker kept its ZooKeeper session: it never restarted"
    assert rejoined is not None, f"{node} did not rejoin the ISR after its restart"
