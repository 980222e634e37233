"""The escalation ladder of :class:`harness.cluster.recovery.ClusterKeeper`, with stand-in clusters.

The real ladder runs in tests/chaos/test_recovery.py; here each rung is forced to fail
or succeed so that every path (heal only, restart, replace, nothing works) is seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.cluster.lifecycle import HealthReport
from harness.cluster.recovery import ClusterKeeper
from harness.errors import ClusterUnhealthy


@dataclass
class FakeCluster:
    """Healthy once ``restarts_needed`` of its blocking nodes were restarted."""

    name: str
    blocking: set[str] = field(default_factory=set)
    restarts_needed: int = 0
    restarted: list[str] = field(default_factory=list)
    closed: bool = False
    started: bool = False

    def start(self) -> FakeCluster:
        self.started = True
        return self

    def health(self) -> HealthReport:
        report = HealthReport()
        if len(self.restarted) < self.restarts_needed or self.restarts_needed < 0:
            for node in sorted(self.blocking):
                report.add(f"{node} out of the ISR", node)
            if not self.blocking:
                report.add("no controller")
        return report

    def restart_node(self, node: str) -> None:
        self.restarted.append(node)

    def wait_healthy(self, timeout_s: float) -> None:
        if not self.health().healthy:
            raise ClusterUnhealthy(f"{self.name} still unhealthy")

    def close(self) -> None:
        self.closed = True


def heal(cluster: Any) -> None:
    cluster.wait_healthy(1)


def keeper_of(*clusters: FakeCluster) -> ClusterKeeper:
    made = iter(clusters)
    return ClusterKeeper(lambda: next(made), heal)  # type: ignore[arg-type, return-value]


def test_a_healthy_cluster_needs_no_escalation() -> None:
    first = FakeCluster("first")
    keeper = keeper_of(first)
    assert keeper.recover("t1") is None
    assert keeper.escalations == []
    assert first.started and not first.closed


def test_restarting_the_blocking_nodes_is_tried_before_replacing() -> None:
    first = FakeCluster("first", blocking={"kafka-1", "kafka-2"}, restarts_needed=2)
    keeper = keeper_of(first)
    seen: list[list[str]] = []
    escalation = keeper.recover("t1", before_escalating=lambda c: seen.append(c.health().problems))
    assert escalation is not None and escalation.healthy
    assert escalation.actions == ["restarted kafka-1, kafka-2"]
    assert escalation.after == "t1" and len(escalation.problems) == 2
    assert first.restarted == ["kafka-1", "kafka-2"] and not first.closed
    assert seen and seen[0], "diagnostics must see the cluster before anything is restarted"
    assert keeper.current() is first


def test_a_cluster_a_restart_cannot_fix_is_replaced() -> None:
    first = FakeCluster("first", blocking={"kafka-0"}, restarts_needed=-1)
    second = FakeCluster("second")
    keeper = keeper_of(first, second)
    keeper.current()
    escalation = keeper.recover("t2")
    assert escalation is not None and escalation.healthy
    assert escalation.actions[0] == "restarted kafka-0"
    assert escalation.actions[-1] == "replaced the cluster with a fresh one"
    assert first.closed and keeper.current() is second and keeper.replacements == 1


def test_a_problem_no_node_explains_goes_straight_to_replacement() -> None:
    first = FakeCluster("first", restarts_needed=-1)  # "no controller": nobody to restart
    second = FakeCluster("second")
    keeper = keeper_of(first, second)
    keeper.current()
    escalation = keeper.recover("t3")
    assert escalation is not None
    assert escalation.actions == ["replaced the cluster with a fresh one"]
    assert first.restarted == []


def test_when_even_a_fresh_cluster_fails_recovery_raises_and_says_so() -> None:
    first = FakeCluster("first", blocking={"kafka-0"}, restarts_needed=-1)

    def broken() -> FakeCluster:
        raise ClusterUnhealthy("ZooKeeper quorum not reached")

    made = iter([first])
    keeper = ClusterKeeper(lambda: next(made, None) or broken(), heal)  # type: ignore[arg-type, return-value]
    keeper.current()
    with pytest.raises(ClusterUnhealthy, match="no healthy cluster after t4"):
        keeper.recover("t4")
    assert keeper.escalations[-1].healthy is False
    assert "did not start" in keeper.escalations[-1].actions[-1]
