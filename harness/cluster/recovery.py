"""Getting a healthy cluster back after a test, escalating until one is had.

A chaos suite shares one cluster between tests for speed, so one test that leaves damage
``heal_all`` cannot undo would otherwise make every later test error at setup: a cascade
that hides which test broke the cluster and turns one failure into many. Recovery
therefore escalates in three steps, each tried only when the one before left the cluster
unhealthy:

1. heal: the caller's healer (``faults.heal.heal_all``: every fault undone, full ISRs);
2. restart the nodes that block health (:attr:`HealthReport.blocking`): a fresh JVM
   re-reads its log and ZooKeeper state where the old one got stuck;
3. replace the cluster: remove it and start a fresh one from the same topology.

Every escalation is recorded (:class:`Escalation`) for the run's report, so a reviewer
sees that a cluster was restarted or replaced, and after which test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.cluster.lifecycle import Cluster
from harness.errors import ClusterUnhealthy

Healer = Callable[[Cluster], object]
ClusterFactory = Callable[[], Cluster]
Progress = Callable[[str], None]

# After a restart, brokers must re-register and replicas catch up; the bound is the
# session timeout plus replica lag, with ample margin for a loaded two-core machine.
RESTART_RECOVERY_S = 120.0


@dataclass
class Escalation:
    """What recovery had to do beyond healing, after which test, and whether it worked."""

    after: str
    problems: list[str]
    actions: list[str] = field(default_factory=list)
    healthy: bool = False
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quiet(_: str) -> None:
    pass


class ClusterKeeper:
    """The session's cluster: started on first use, healed between tests, replaced if need be.

    ``healer`` is a parameter, not an import, so the cluster layer never depends on the
    faults that break it.
    """

    def __init__(self, factory: ClusterFactory, healer: Healer, progress: Progress = _quiet) -> None:
        self._factory = factory
        self._healer = healer
        self._progress = progress
        self._cluster: Cluster | None = None
        self.escalations: list[Escalation] = []
        self.replacements = 0
        # True while a test holds the cluster: still true at the next hand-over means
        # the last holder never gave it back healed (an interrupted teardown).
        self.handed_out = False

    @property
    def started(self) -> bool:
        return self._cluster is not None

    def current(self) -> Cluster:
        """The live cluster, started now if this is its first use."""
        if self._cluster is None:
            self._cluster = self._factory().start()
        return self._cluster

    def recover(self, after: str,
                before_escalating: Callable[[Cluster], None] | None = None) -> Escalation | None:
        """Make the cluster healthy again; None when healing alone was enough.

        ``before_escalating`` sees the cluster as healing left it, before anything is
        restarted (to keep its logs and znodes). Raises ClusterUnhealthy only when even a
        fresh cluster did not come up healthy. The returned escalation is also kept in
        :attr:`escalations`.
        """
        cluster = self.current()
        try:
            self._healer(cluster)
            return None
        except Exception as err:  # whatever the healer hit, the next steps decide
            report = cluster.health()
            escalation = Escalation(after, report.problems or [f"healing failed: {err}"])
        self.escalations.append(escalation)
        if before_escalating is not None:
            before_escalating(cluster)
        self._progress(f"cluster unhealthy after {after}: {'; '.join(escalation.problems[:3])}")
        if report.blocking and self._restart(cluster, sorted(report.blocking), escalation):
            return escalation
        self._replace(escalation)
        return escalation

    def _restart(self, cluster: Cluster, nodes: list[str], escalation: Escalation) -> bool:
        escalation.actions.append(f"restarted {', '.join(nodes)}")
        self._progress(f"restarting {', '.join(nodes)}")
        try:
            for node in nodes:
                cluster.restart_node(node)
            self._healer(cluster)
            cluster.wait_healthy(RESTART_RECOVERY_S)
        except Exception as err:
            escalation.actions.append(f"still unhealthy after the restart: {err}")
            return False
        escalation.healthy = True
        return True

    def _replace(self, escalation: Escalation) -> None:
        escalation.actions.append("replaced the cluster with a fresh one")
        self._progress("replacing the cluster with a fresh one")
        self.close()
        self.replacements += 1
        try:
            self.current()
        except Exception as err:
            escalation.actions.append(f"the fresh cluster did not start: {err}")
            raise ClusterUnhealthy(f"no healthy cluster after {escalation.after}: {err}") from err
        escalation.healthy = True

    def close(self) -> None:
        if self._cluster is not None:
            cluster, self._cluster = self._cluster, None
            cluster.close()
