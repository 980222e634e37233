"""Putting the controller on a chosen broker before a scenario starts.

Network scenarios depend on *where* the controller sits far more than process faults do:
in Kafka 2.7+ a partition leader changes its ISR by sending AlterPartition to the
controller over the broker-to-broker links, and the controller tells brokers about new
leaders over the same links. A cut that happens to include the controller's links tests
a different scenario than the one named. So these scenarios put the controller on a
chosen broker first (:func:`place_controller`), deterministically, instead of depending
on which broker won the race at cluster start or after the previous test.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from faults import BrokerId, Degrade, DeleteController, EventLog, Links, Zone
from faults.toxics import latency
from harness.cluster.fabric import LinkKind
from harness.cluster.lifecycle import Cluster
from harness.cluster.waiting import CLUSTER_SETTLING, WaitTimeout, wait_until

# Latency added to the ZooKeeper links of the brokers that must NOT win a controller
# election: the watch on /controller fires 2 x this later for them, so the chosen broker
# creates /controller first. Far below the 6 s session timeout, so no session is at risk.
_HANDICAP_MS = 400


@dataclass(frozen=True)
class ControllerPlacement:
    """Where the controller ended up, and what it cost to put it there."""

    broker: int
    epoch: int
    elections: int  # how many /controller deletions it took (0: it was already there)


def place_controller(cluster: Cluster, broker: int, attempts: int = 4) -> ControllerPlacement:
    """Make ``broker`` the controller before a scenario starts.

    Deleting ``/controller`` makes every broker race to recreate it; handicapping the
    other brokers' ZooKeeper links with latency makes ``broker`` win that race, so the
    placement does not depend on luck. A few attempts cover a loaded machine.
    """
    log = EventLog()
    state = cluster.state([])
    elections = 0
    others = [b.broker_id for b in cluster.topology.brokers if b.broker_id != broker]
    while state.controller != broker:
        if elections >= attempts:
            raise AssertionError(f"controller stayed on {state.controller} after {elections} elections")
        handicaps = [Degrade(Links(BrokerId(other), Zone(zone), LinkKind.ZK_SESSION), latency(_HANDICAP_MS))
                     for other in others for zone in cluster.topology.zones]
        try:
            for handicap in handicaps:
                handicap.inject(cluster, log)
            DeleteController().inject(cluster, log)
            elections += 1
        finally:
            for handicap in handicaps:
                with contextlib.suppress(Exception):
                    handicap.heal(cluster, log)
        state = cluster.state([])
    assert state.controller_epoch is not None
    # Every broker must know the controller before the scenario starts. The harness's
    # long-lived AdminClient may still address a controller from before this or an
    # earlier test's election: its CreateTopics would then fail with NOT_CONTROLLER
    # (librdkafka does not retry that), so drop it and let Cluster.admin build a fresh one.
    wait_for(lambda: all(controller_seen_by(cluster, b.broker_id) == broker
                         for b in cluster.topology.brokers), 30, "every broker naming the controller")
    cluster._admin = None
    return ControllerPlacement(broker, state.controller_epoch, elections)


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
