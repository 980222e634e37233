"""Healing everything with one call, so no test leaves damage for the next.

Faults depend on each other's healing: a killed broker cannot re-register while the
ZooKeeper leader is dead and another zone is cut off, so healing faults one at a time,
each waiting for its own recovery, can wait on a fault not healed yet. heal_all
therefore works in three steps:

1. stop running schedules (so nothing injects again behind our back) and undo all
   damage at once without waiting: reset every proxy, and start, unpause or SIGCONT
   every node (a SIGSTOPped JVM still looks "running" to Docker, so the cluster's own
   restore would not see it);
2. heal every fault still registered through its own heal, which now only confirms the
   recovery and records the heal event with its targets;
3. :meth:`Cluster.restore_health`, the backstop that waits for full ISRs.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from faults.base import active_faults
from faults.events import EventLog
from faults.nodes import ensure_running
from faults.schedule import running_schedules

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl

# The one-line reason a heal by heal_all gives in its event: the harness, not the fault's
# schedule, ended it.
HARNESS_HEAL = "healed by the harness when the test ended: it was still in force"


def heal_all(cluster: ClusterControl, log: EventLog | None = None, timeout_s: float = 120.0) -> float:
    """Undo every fault on ``cluster`` and wait for full health; return seconds taken.

    A fault whose heal fails has the error in its heal event and does not stop the
    rest; restore_health raises ClusterUnhealthy if the cluster still does not recover.
    """
    for run in running_schedules(cluster):
        run.stop()
    undo_damage(cluster)
    for fault in reversed(active_faults(cluster)):
        with contextlib.suppress(Exception):  # its heal event records the error
            fault.heal(cluster, log, reason=HARNESS_HEAL)
    return cluster.restore_health(timeout_s)


def undo_damage(cluster: ClusterControl) -> None:
    """Every proxy clean and every node process running, without waiting for recovery."""
    cluster.proxies.reset()
    # ZooKeeper first: a stopped broker is only started once ZooKeeper has expired its
    # old session (Cluster.start_node), which needs a serving ensemble.
    for node in cluster.topology.node_names:
        with contextlib.suppress(Exception):  # restore_health reports what stays broken
            ensure_running(cluster, node)
