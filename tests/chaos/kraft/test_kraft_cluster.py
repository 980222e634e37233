"""A KRaft cluster (the ``kraft`` fixture's: ``three_az_kraft`` on the session's release
where it runs KRaft, else on 3.9.1): healthy, every connection through
its proxy, a new active controller when the old one is cut off, and a killed broker fenced
after its session.

The timing bounds come from the topology's and Kafka's settings: the controllers' broker
session (``broker.session.timeout.ms``, 6 s here), and Kafka's own quorum timeouts
(``controller.quorum.fetch.timeout.ms`` 2 s and ``controller.quorum.election.timeout.ms``
1 s, defaults), each with a margin for a loaded two-core machine.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from harness.cluster.fabric import TOXIPROXY_HOST
from harness.cluster.lifecycle import Cluster
from harness.cluster.state import ClusterState
from harness.cluster.waiting import CLUSTER_SETTLING, wait_until_clear

pytestmark = pytest.mark.chaos

QUORUM_FETCH_TIMEOUT_S, QUORUM_ELECTION_TIMEOUT_S = 2.0, 1.0  # Kafka's defaults
NEW_LEADER_WITHIN_S = 5 * (QUORUM_FETCH_TIMEOUT_S + QUORUM_ELECTION_TIMEOUT_S)
MARGIN_S = 15.0


def _addresses(cluster: Cluster) -> dict[str, str]:
    """Each container's address on the run's network -> its node name."""
    found = {}
    for node in [TOXIPROXY_HOST, *cluster.topology.node_names]:
        networks = cluster.container(node).attrs["NetworkSettings"]["Networks"]
        found.update({n["IPAddress"]: node for n in networks.values()})
    return found


def _peers(cluster: Cluster, node: str, addresses: dict[str, str]) -> set[str]:
    """The nodes ``node`` has established TCP connections with (from /proc/net/tcp)."""
    table = cluster.container(node).exec_run(["cat", "/proc/net/tcp"]).output.decode().splitlines()[1:]
    peers = set()
    for line in table:
        fields = line.split()
        if fields[3] != "01":  # ESTABLISHED
            continue
        remote = socket.inet_ntoa(struct.pack("<I", int(fields[2].split(":")[0], 16)))
        if remote != "127.0.0.1":
            peers.add(addresses.get(remote, remote))
    return peers


def test_a_kraft_cluster_is_healthy_and_every_connection_passes_a_proxy(cluster: Cluster) -> None:
    """A quorum leader among the voters, every broker registered, and no node talking to
    another directly."""
    state = cluster.state([])
    voters = {c.node_id for c in cluster.topology.controllers}
    assert state.controller in voters and state.live_brokers == (0, 1, 2), state
    assert sorted(str(r) for r in cluster.quorum_roles().values()) == ["follower", "follower", "leader"]
    assert cluster.metadata.describe()["mode"] == "kraft"
    # No node talks to another directly: a cut of one link is a cut of that link alone.
    addresses = _addresses(cluster)
    seen = {node: _peers(cluster, node, addresses) for node in cluster.topology.node_names}
    direct = {node: peers - {TOXIPROXY_HOST, node} for node, peers in seen.items()}  # itself: no link
    assert all(TOXIPROXY_HOST in peers for peers in seen.values()), seen
    assert not any(direct.values()), f"direct connections: {direct}"


def test_cutting_the_active_controller_off_elects_another_and_the_brokers_stay_unfenced(
    cluster: Cluster
) -> None:
    before = cluster.state([])
    assert before.controller is not None and before.controller_epoch is not None
    leader = next(c.name for c in cluster.topology.controllers if c.node_id == before.controller)
    links = [link.name for link in cluster.fabric.touching(leader)]
    began = time.monotonic()
    for link in links:
        cluster.proxies.set_enabled(link, False)
    seen: list[ClusterState] = []

    def no_new_leader() -> str | None:
        state = cluster.state([])
        seen.append(state)
        return None if state.controller not in (None, before.controller) else f"controller {state.controller}"

    try:
        wait_until_clear(no_new_leader, NEW_LEADER_WITHIN_S, "a new active controller",
                         transient=CLUSTER_SETTLING)
        took = time.monotonic() - began
        after = seen[-1]
        assert after.controller_epoch is not None and after.controller_epoch > before.controller_epoch
        assert after.live_brokers == (0, 1, 2), "the brokers heartbeat to the new leader"
        assert cluster.quorum_roles()[leader] is None, "the cut-off controller is out of the quorum"
    finally:
        for link in links:
            cluster.proxies.set_enabled(link, True)
    print(f"{leader} cut off: controller {before.controller} (epoch {before.controller_epoch}) -> "
          f"{after.controller} (epoch {after.controller_epoch}) in {took:.1f} s")


def test_a_killed_broker_is_fenced_after_its_session_and_registers_again_at_once(cluster: Cluster) -> None:
    session_s = cluster.session_timeout_s
    heartbeat_s = int(cluster.broker_settings().get("broker.heartbeat.interval.ms", 2000)) / 1000
    cluster.signal_node("kafka-2", "SIGKILL")
    killed = time.monotonic()
    wait_until_clear(lambda: "still live" if 2 in cluster.live_brokers() else None, session_s + MARGIN_S,
                     "broker 2 fenced", transient=CLUSTER_SETTLING)
    fenced_after = time.monotonic() - killed
    # The controllers waited for the session: not fenced at the kill (a clean shutdown
    # would have been), but once no heartbeat came for the session timeout.
    assert fenced_after >= session_s - 2 * heartbeat_s, f"fenced after {fenced_after:.1f} s"
    assert cluster.metadata.registration_holder(2) is None, "KRaft needs no wait before a restart"
    started = time.monotonic()
    assert cluster.start_node("kafka-2")
    wait_until_clear(lambda: None if 2 in cluster.live_brokers() else "not registered", session_s + MARGIN_S,
                     "broker 2 registered again", transient=CLUSTER_SETTLING)
    print(f"broker 2 fenced {fenced_after:.1f} s after its kill (session {session_s:g} s), "
          f"back {time.monotonic() - started:.1f} s after its start")
