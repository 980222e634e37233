"""Driving one node's process through Docker, and seeing it come and go in ZooKeeper.

Each node is one container whose PID 1 is the JVM, so a signal to the container is a
signal to Kafka or ZooKeeper itself: SIGKILL is ``kill -9``, SIGTERM starts the JVM's
shutdown hooks (a broker's controlled shutdown), SIGSTOP/SIGCONT freeze and thaw it the
way a long GC pause does. Signals sent from the host reach PID 1 of the container's PID
namespace even without a handler for SIGKILL and SIGSTOP. Starting the same container
again brings back the same node: hostname, network alias, configuration and data
directory live in the container, so identity and data survive restarts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faults.errors import TargetError
from faults.waiting import wait_until_clear

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl

SIGKILL = "SIGKILL"
SIGTERM = "SIGTERM"
SIGSTOP = "SIGSTOP"
SIGCONT = "SIGCONT"

# How long a node gets to come back after a start: a JVM start plus log recovery on a
# loaded two-core machine.
START_TIMEOUT_S = 90.0


def broker_id(cluster: ClusterControl, node: str) -> int | None:
    """The broker id of ``node``, or None when it is a ZooKeeper node."""
    return cluster.broker_id_of(node)


def process_nodes(cluster: ClusterControl, endpoints: tuple[str, ...], fault: str) -> tuple[str, ...]:
    """The endpoints that are processes (a zone's clients are not); refuse if none are."""
    nodes = tuple(e for e in endpoints if e in cluster.topology.node_names)
    if not nodes:
        raise TargetError(
            f"{fault} needs a broker or ZooKeeper node, but the target is {', '.join(endpoints)}"
        )
    return nodes


def signal(cluster: ClusterControl, node: str, sig: str) -> None:
    cluster.signal_node(node, sig)


def is_running(cluster: ClusterControl, node: str) -> bool:
    return cluster.node_status(node) == "running"


def held_down(cluster: ClusterControl, names: tuple[str, ...] | list[str], *, stopped: bool = True,
              exited: bool = True) -> tuple[str, ...]:
    """The nodes of ``names`` another fault holds down: stopped (paused) by the harness,
    or not running; ``stopped``/``exited`` False leave that kind out."""
    paused = cluster.stopped_nodes() if stopped else frozenset()
    return tuple(n for n in names if n in paused or (exited and not is_running(cluster, n)))


def registered(cluster: ClusterControl, broker: int) -> bool:
    return broker in cluster.live_brokers()


def serving(cluster: ClusterControl, node: str) -> bool:
    """A ZooKeeper node that answers as leader or follower (it is in a quorum)."""
    return cluster.quorum_roles().get(node) in ("leader", "follower")


def ensure_running(cluster: ClusterControl, node: str) -> bool:
    """Start (or thaw) ``node`` if it is not running; True when something was done.

    The restart policy is the cluster's (:meth:`Cluster.start_node`): a stopped broker is
    started only once ZooKeeper has expired its dead predecessor's session.
    """
    return cluster.start_node(node, START_TIMEOUT_S)


def wait_exited(cluster: ClusterControl, node: str, timeout_s: float) -> float:
    """Until Docker reports ``node``'s process gone."""
    return wait_until_clear(
        lambda: f"{node} still running" if is_running(cluster, node) else None, timeout_s, f"{node} exiting"
    )


def wait_deregistered(cluster: ClusterControl, node: str, timeout_s: float) -> float:
    """Until ``/brokers/ids/<id>`` is gone (no-op for ZooKeeper nodes)."""
    broker = broker_id(cluster, node)
    if broker is None:
        return 0.0
    return wait_until_clear(
        lambda: f"{node} still registered" if registered(cluster, broker) else None,
        timeout_s,
        f"{node} deregistering",
    )


def wait_back(cluster: ClusterControl, node: str, timeout_s: float = START_TIMEOUT_S) -> float:
    """Until a broker is in ``/brokers/ids`` again, or a ZooKeeper node serves again."""
    broker = broker_id(cluster, node)

    def not_back() -> str | None:
        back = serving(cluster, node) if broker is None else registered(cluster, broker)
        return None if back else f"{node} is {cluster.node_status(node)} but not back"

    what = "serving again" if broker is None else "registering again"
    return wait_until_clear(not_back, timeout_s, f"{node} {what}")


def session_timeout_s(cluster: ClusterControl) -> float:
    """The brokers' ZooKeeper session timeout (see :attr:`Cluster.session_timeout_s`)."""
    return cluster.session_timeout_s
