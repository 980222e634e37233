"""The escalation ladder of :class:`harness.cluster.recovery.ClusterKeeper`, with stand-in clusters,
and the broker-restart policy of :meth:`Cluster.start_node` that every restart goes through.

The real ladder runs in tests/chaos/test_recovery.py; here each rung is forced to fail
or succeed so that every path (heal only, restart, replace, nothing works) is seen. The
restart policy is checked on a real :class:`Cluster` object whose containers and
ZooKeeper are stand-ins: a killed broker is started only once ZooKeeper no longer holds
its old registration, and never by deleting that registration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss

from harness.cluster.lifecycle import Cluster, HealthReport
from harness.cluster.metadata import zookeeper as zookeeper_mode
from harness.cluster.recovery import ClusterKeeper
from harness.cluster.waiting import WaitTimeout
from harness.errors import ClusterUnhealthy
from topologies import load_topology


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


# -- the restart policy ------------------------------------------------------------------
@dataclass
class FakeContainer:
    """A node's container: what was done to it, in order, into a log shared by all nodes."""

    name: str
    status: str
    log: list[str]

    def start(self) -> None:
        self.log.append(f"start {self.name}")
        self.status = "running"

    def unpause(self) -> None:
        self.log.append(f"unpause {self.name}")
        self.status = "running"

    def kill(self, signal: str) -> None:
        self.log.append(f"{signal} {self.name}")
        if signal == "SIGKILL":
            self.status = "exited"

    def wait(self, timeout: int) -> None:
        pass


class FakeZooKeeper:
    """``/brokers/ids/<id>`` held by a dead session for ``held_for`` reads, then expired.

    A read can fail first (``settling``), as while the ensemble elects a leader. Deleting
    is an error: the policy never removes a znode a session owns.
    """

    def __init__(self, held_for: int, settling: int = 0, owner: int = 0x1A2B) -> None:
        self.held_for = held_for
        self.settling = settling
        self.owner = owner
        self.reads = 0
        self.client = self

    def ephemeral_owner(self, path: str) -> int | None:
        self.reads += 1
        if self.reads <= self.settling:
            raise ConnectionLoss()
        if self.reads <= self.settling + self.held_for:
            return self.owner
        return None

    def delete(self, path: str) -> None:
        raise AssertionError(f"the restart policy deleted {path}")


def policy_cluster(zk: FakeZooKeeper, statuses: dict[str, str], log: list[str]) -> Cluster:
    """A Cluster of the default topology with a 0.1 s session timeout and stand-in nodes."""
    cluster = Cluster(load_topology(broker_settings={"zookeeper.session.timeout.ms": 100}))
    containers = {name: FakeContainer(name, status, log) for name, status in statuses.items()}
    cluster.container = containers.__getitem__  # type: ignore[assignment, method-assign]
    cluster.zookeeper._observer = zk  # type: ignore[assignment]
    return cluster


def test_a_killed_broker_is_started_only_after_its_old_session_expired() -> None:
    log: list[str] = []
    zk = FakeZooKeeper(held_for=2, settling=1)
    cluster = policy_cluster(zk, {"kafka-1": "exited"}, log)
    assert cluster.start_node("kafka-1") is True
    assert zk.reads == 4, "a failed read is 'not yet'; the registration was seen twice, then gone"
    assert log == ["start kafka-1"]


def test_a_registration_that_outlives_the_session_timeout_blocks_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zookeeper_mode, "SESSION_EXPIRY_MARGIN_S", 0.3)
    log: list[str] = []
    cluster = policy_cluster(FakeZooKeeper(held_for=10**6), {"kafka-2": "exited"}, log)
    with pytest.raises(WaitTimeout, match=r"/brokers/ids/2 still held by session 0x1a2b") as caught:
        cluster.start_node("kafka-2", timeout_s=60)
    assert caught.value.timeout_s == pytest.approx(0.4), "bounded by the session timeout plus margin"
    assert log == [], "a broker that cannot register is not started"


def test_zookeeper_nodes_running_and_paused_nodes_need_no_wait() -> None:
    log: list[str] = []
    zk = FakeZooKeeper(held_for=10**6)
    cluster = policy_cluster(zk, {"zk-a": "exited", "kafka-0": "running", "kafka-1": "paused"}, log)
    assert cluster.start_node("zk-a") is True
    assert cluster.start_node("kafka-0") is False
    assert cluster.start_node("kafka-1") is True
    assert log == ["start zk-a", "SIGCONT kafka-0", "unpause kafka-1"]
    assert zk.reads == 0


def test_a_restart_kills_the_broker_then_waits_for_its_session_before_starting_it() -> None:
    log: list[str] = []
    zk = FakeZooKeeper(held_for=1)
    cluster = policy_cluster(zk, {"kafka-0": "running"}, log)
    cluster.restart_node("kafka-0")
    assert log == ["SIGKILL kafka-0", "start kafka-0"]
    assert zk.reads == 2, "the killed broker's registration was seen, then waited out"
