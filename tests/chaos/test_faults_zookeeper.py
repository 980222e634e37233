"""ZooKeeper-level faults on a real cluster: session expiry, controller deletion,
preferred-leader election and partition reassignment."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from faults import DeleteController, EventLog, ExpireSession, LeaderOf, PreferredLeaderElection, Reassign
from faults.waiting import wait_until
from harness.cluster.lifecycle import Cluster
from harness.cluster.sampler import StateSampler
from harness.errors import describe_error
from tests.support.trickle import unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]

REQUEST_HELD_S = 1.5  # the observer's requests held this long on their way to ZooKeeper
OBSERVER_DOWN_S = 3.0


@pytest.mark.metadata("zookeeper")
@pytest.mark.core(strikes=("delete_controller",))
def test_deleting_the_controller_znode_produces_a_new_controller_epoch(
    cluster: Cluster, fault_log: EventLog
) -> None:
    before = cluster.state(topics=[])
    delete = DeleteController()
    assert delete.inject(cluster, fault_log) == (f"kafka-{before.controller}",)
    after = cluster.state(topics=[])
    assert after.controller is not None
    assert after.controller_epoch is not None and before.controller_epoch is not None
    assert after.controller_epoch > before.controller_epoch
    print(f"\n/controller deleted: {fault_log.events[-1].outcome}")


@pytest.mark.metadata("zookeeper")
def test_deleting_the_controller_rides_out_the_observer_losing_zookeeper_mid_request(
    cluster: Cluster, fault_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the harness's own ZooKeeper connection drops, kazoo fails each request in
    flight with a bare ``ConnectionLoss``. The fault's delete is made to be in flight then
    (a latency toxic holds it on the observer links, which are disabled under it); the
    fault waits for the connection to come back instead of failing (CI once failed with
    "entry 2 (delete_controller): " and nothing more), and its retry takes exactly one
    claim."""
    links = [cluster.fabric.observer_of(z.name).name for z in cluster.topology.zookeepers]
    before = cluster.state(topics=[])
    delete_znode = cluster.zookeeper.delete_znode
    failures: list[str] = []
    armed = threading.Event()

    def observer_links(enabled: bool) -> None:
        for link in links:
            cluster.proxies.set_enabled(link, enabled)

    def heal_observer_links() -> None:
        observer_links(True)
        for link in links:
            with contextlib.suppress(Exception):
                cluster.proxies.remove_toxic(link, "held")

    cut = threading.Timer(REQUEST_HELD_S / 3, observer_links, args=(False,))
    heal = threading.Timer(OBSERVER_DOWN_S, heal_observer_links)

    def delete_in_flight_as_the_connection_drops(path: str) -> None:
        if not armed.is_set():
            armed.set()
            held = {"latency": int(REQUEST_HELD_S * 1000)}
            for link in links:
                cluster.proxies.add_toxic(link, "latency", "upstream", held, "held")
            cut.start()
            heal.start()
        try:
            delete_znode(path)
        except Exception as err:
            failures.append(describe_error(err))
            raise

    monkeypatch.setattr(cluster.zookeeper, "delete_znode", delete_in_flight_as_the_connection_drops)
    started = time.monotonic()
    try:
        assert DeleteController().inject(cluster, fault_log) == (f"kafka-{before.controller}",)
    finally:
        if armed.is_set():
            cut.join()
            heal.join()
        heal_observer_links()
    took = time.monotonic() - started
    after = cluster.state(topics=[])
    assert failures[:1] == ["ConnectionLoss"]  # the delete was in flight when the connection went
    assert after.controller is not None
    assert before.controller_epoch is not None
    assert after.controller_epoch == before.controller_epoch + 1  # one election, not two
    print(f"\n/controller deleted in {took:.1f} s, the first delete failing with {failures}: "
          f"{fault_log.events[-1].outcome}")


@pytest.mark.core(strikes=("reassign",))
def test_a_reassignment_moves_replicas_and_the_metadata_shows_the_new_assignment(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("move")
    cluster.create_topic(topic, partitions=1, replication_factor=2)
    kept, dropped = cluster.state([topic]).topic(topic)[0].replicas
    (spare,) = {0, 1, 2} - {kept, dropped}
    move = Reassign(topic, 0, [spare, kept])
    move.inject(cluster, fault_log)
    state = cluster.state([topic]).topic(topic)[0]
    assert state.replicas == (spare, kept) and set(state.isr) == {spare, kept}
    assert state.leader in (spare, kept)
    assert not cluster.metadata.reassignment_pending()
    print(f"\nreassigned {topic}-0: {fault_log.events[-1].outcome}")


@pytest.mark.metadata("zookeeper")
@pytest.mark.core(strikes=("expire_session", "preferred_election"))
def test_an_expired_session_deregisters_the_broker_which_registers_again_and_leads_after_preferred_election(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("expire")
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    before = cluster.state([topic]).topic(topic)[0]
    assert before.leader == before.replicas[0], "a new topic's leader is its preferred replica"
    expire = ExpireSession(LeaderOf(topic, 0))
    with StateSampler.for_cluster(cluster, [topic]) as recorder:
        (node,) = expire.inject(cluster, fault_log)
        expired_at = fault_log.events[-1].mono
        expire.heal(cluster, fault_log)
        old, new = expire.sessions[node]
        assert new is not None and new != old, "the broker must hold a new session"
        moved = recorder.wait_for(
            lambda s: s.partitions[(topic, 0)].leader_epoch > before.leader_epoch, 30, expired_at
        )
        assert moved is not None, "the controller never reacted to the expired session"
    print(
        f"\n{node}: session 0x{old:x} closed, re-registered as 0x{new:x}; leader epoch of p0 "
        f"{before.leader_epoch} -> {moved[1].partitions[(topic, 0)].leader_epoch} after "
        f"{moved[0] - expired_at:.2f} s (leader now {moved[1].partitions[(topic, 0)].leader})"
    )
    wait_until(
        lambda: all(set(p.isr) == {0, 1, 2} for p in cluster.state([topic]).topic(topic)),
        60,
        f"{node} rejoining every ISR",
    )
    elect = PreferredLeaderElection(topic)
    elect.inject(cluster, fault_log)
    after = cluster.state([topic]).topic(topic)
    assert all(p.leader == p.replicas[0] for p in after), [(p.partition, p.leader) for p in after]
    print(f"preferred election: {fault_log.events[-1].outcome}")
