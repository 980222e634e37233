"""Putting the controller beside a chosen broker before a scenario starts.

Network scenarios depend on *where* the controller sits far more than process faults do.
In ZooKeeper mode the controller is a broker: a partition leader changes its ISR by
sending AlterPartition to it over the broker-to-broker links, and it tells brokers about
new leaders over the same links. In KRaft the active controller is the quorum's leader,
one voter per zone: isolating its zone costs the quorum its leader too. A cut that
happens to include the controller tests a different scenario than the one named. So
these scenarios put the controller beside a chosen broker first (:func:`place_controller`),
deterministically, instead of depending on which node won the race at cluster start or
after the previous test.

Both modes are placed the same way: the current controller gives up its role while the
other candidates' links are slowed, so the chosen one wins the race that follows. What
gives the role up, and which links carry the race, is each mode's own (:data:`ELECTIONS`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from faults import Degrade, DeleteController, EventLog, Fault, Links, Node, Pause
from faults.targets import ActiveController
from faults.toxics import latency
from harness.cluster.fabric import Fabric, Link, LinkKind
from harness.cluster.lifecycle import Cluster
from harness.cluster.waiting import CLUSTER_SETTLING, WaitTimeout, wait_until
from topologies.model import KRAFT, ZOOKEEPER, Topology

# Latency added to the race links of the candidates that must NOT win: far below the
# 6 s ZooKeeper session and the 2 s KRaft fetch timeout, so no session or follower is
# at risk, but enough that the chosen candidate's claim or vote request arrives first.
_HANDICAP_MS = 400
_ELECTED_WITHIN_S = 30.0


@dataclass(frozen=True)
class Election:
    """How one metadata mode's controller is made to give its role up for a new race."""

    race: LinkKind  # the links the candidates race over
    resign: Callable[[], Fault]  # held until a new controller is seen, then healed
    settled: Callable[[Cluster, int], None]  # the cluster ready for a scenario under it


def _every_broker_names(cluster: Cluster, controller: int) -> None:
    # The harness's long-lived AdminClient may still address a controller from before
    # this or an earlier test's election: its CreateTopics would then fail with
    # NOT_CONTROLLER (librdkafka does not retry that), so every broker must know the
    # controller, and the client is dropped so that Cluster.admin builds a fresh one.
    wait_for(lambda: all(controller_seen_by(cluster, b.broker_id) == controller
                         for b in cluster.topology.brokers), 30, "every broker naming the controller")
    cluster._admin = None


def _brokers_registered(cluster: Cluster, controller: int) -> None:
    # Brokers find the new quorum leader on their own; a paused leader may have missed
    # heartbeats, so the scenario waits until every broker is registered and unfenced.
    cluster.wait_healthy(60.0)


ELECTIONS: dict[str, Election] = {
    # Deleting /controller makes every broker race to recreate it; latency on the other
    # brokers' ZooKeeper links fires their watch later.
    ZOOKEEPER: Election(LinkKind.ZK_SESSION, DeleteController, _every_broker_names),
    # A paused quorum leader stops answering fetches; the followers time out and stand
    # for election; latency on the other voters' quorum links delays their vote requests.
    KRAFT: Election(LinkKind.KRAFT_QUORUM, lambda: Pause(ActiveController()), _brokers_registered),
}


@dataclass(frozen=True)
class ControllerPlacement:
    """Where the controller ended up, and what it cost to put it there."""

    node: int  # the active controller's id as the metadata reports it
    epoch: int
    elections: int  # how many races it took (0: it was already there)


def controller_beside(topology: Topology, broker: int) -> str:
    """The node that can be the active controller in ``broker``'s zone: the broker itself
    where brokers are the candidates (ZooKeeper mode, combined KRaft), else that zone's
    voter."""
    zone = topology.broker(broker).zone
    beside = [name for name in topology.controller_candidates if topology.zone_of(name) == zone]
    own = topology.broker(broker).name
    return own if own in beside else beside[0]


def quorum_members(topology: Topology) -> dict[str, str]:
    """The metadata-quorum member of each zone (a ZooKeeper node or a KRaft voter), for the
    checks that say which members still serve."""
    members = topology.quorum_members
    return {zone: next(m.name for m in members if m.zone == zone) for zone in topology.zones}


def race_links(fabric: Fabric, chosen: str, race: LinkKind) -> list[Link]:
    """The links the candidates other than ``chosen`` race over: each rival's own links of
    the race's kind, wherever they lead (a KRaft voter has none into its own zone, a
    ZooKeeper-mode broker has one to the ZooKeeper node beside it)."""
    rivals = {name for name in fabric.topology.controller_candidates if name != chosen}
    return [link for link in fabric.links if link.source in rivals and link.kind is race]


def place_controller(cluster: Cluster, broker: int, attempts: int = 4) -> ControllerPlacement:
    """Make the controller beside ``broker`` (:func:`controller_beside`) the active one.

    The current controller resigns (:data:`ELECTIONS`) while the other candidates' race
    links are slowed, so the placement does not depend on luck. A few attempts cover a
    loaded machine.
    """
    topology = cluster.topology
    election = ELECTIONS[topology.metadata]
    chosen = controller_beside(topology, broker)
    target = topology.id_of_node(chosen)
    log = EventLog()
    state = cluster.state([])
    elections = 0
    while state.controller != target:
        if elections >= attempts:
            raise AssertionError(f"controller stayed on {state.controller}, not {target} ({chosen}), "
                                 f"after {elections} elections")
        handicaps = [Degrade(Links(Node(link.source), Node(link.destination), election.race),
                             latency(_HANDICAP_MS))
                     for link in race_links(cluster.fabric, chosen, election.race)]
        resign = election.resign()
        before = state.controller
        try:
            for handicap in handicaps:
                handicap.inject(cluster, log)
            resign.inject(cluster, log)
            elections += 1
            wait_for(_controller_other_than(cluster, before), _ELECTED_WITHIN_S,
                     f"a controller other than {before}")
        finally:
            for fault in (resign, *handicaps):
                with contextlib.suppress(Exception):
                    fault.heal(cluster, log)
        state = cluster.state([])
    assert state.controller_epoch is not None
    election.settled(cluster, target)
    return ControllerPlacement(target, state.controller_epoch, elections)


def _controller_other_than(cluster: Cluster, before: int | None) -> Callable[[], bool]:
    return lambda: cluster.state([]).controller not in (None, before)


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until ``predicate`` holds; fails the test (an AssertionError, since a state
    Kafka never reached is a finding, not a harness error) with ``what`` and the last
    error when it never does. Reads that fail while the cluster settles (a kazoo read while
    ZooKeeper has lost quorum, a broker that does not answer) count as "not yet"."""
    try:
        return wait_until(predicate, timeout_s, what, interval_s=0.1, transient=CLUSTER_SETTLING)
    except WaitTimeout as err:
        raise AssertionError(str(err)) from err


def controller_seen_by(cluster: Cluster, broker: int) -> int | None:
    """Whom ``broker`` names as controller in its metadata; None if it does not answer."""
    try:
        return cluster.broker_view(broker, []).controller
    except OSError:
        return None
