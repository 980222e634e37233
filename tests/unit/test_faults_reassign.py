"""A reassignment of a partition whose replica another fault holds down is requested and
not waited for: the wait would hold up the schedule, and with it that fault's heal, which
is what lets the reassignment finish (an exploration round was lost to that)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from faults.zookeeper import Reassign
from harness.cluster.zkstate import PartitionState
from topologies.loader import load_topology


class _Cluster:
    """ZooKeeper holding p1 on brokers 1, 0, 2; a reassignment finishes once requested,
    unless a replica is held (then it never does)."""

    def __init__(self, stopped: frozenset[str] = frozenset(), exited: frozenset[str] = frozenset()) -> None:
        self.topology = load_topology()
        self.stopped, self.exited = stopped, exited
        self.replicas: tuple[int, ...] = (1, 0, 2)
        self.requested: list[bytes] = []
        self.zk = SimpleNamespace(pending_reassignment=lambda: bool(self.stopped or self.exited))

    def stopped_nodes(self) -> frozenset[str]:
        return self.stopped

    def node_status(self, node: str) -> str:
        return "exited" if node in self.exited else "running"

    def create_znode(self, path: str, data: bytes) -> None:
        self.requested.append(data)
        if not (self.stopped or self.exited):
            self.replicas = (0, 2, 1)

    def state(self, topics: list[str]) -> Any:
        part = PartitionState("t", 1, self.replicas[0], 1, self.replicas, 1, self.replicas)
        return SimpleNamespace(topic=lambda name: [part])


def test_a_reassignment_is_awaited_when_every_replica_is_up() -> None:
    cluster = _Cluster()
    said = Reassign("t", 1, [0, 2, 1], timeout_s=5)._apply(cluster, ("t/1",))  # type: ignore[arg-type]
    assert said.startswith("replicas [1, 0, 2] -> [0, 2, 1] in ")
    assert len(cluster.requested) == 1


def test_a_reassignment_is_not_awaited_while_a_replica_is_paused_or_down() -> None:
    for cluster in (_Cluster(stopped=frozenset({"kafka-1"})), _Cluster(exited=frozenset({"kafka-2"}))):
        started = time.monotonic()
        said = Reassign("t", 1, [0, 2, 1], timeout_s=5)._apply(cluster, ("t/1",))  # type: ignore[arg-type]
        assert time.monotonic() - started < 1.0, "it must not wait out its timeout"
        assert len(cluster.requested) == 1, "the reassignment is still requested"
        held = next(iter(cluster.stopped | cluster.exited))
        assert said == (f"replicas [1, 0, 2] -> [0, 2, 1] requested; completion not awaited: {held} "
                        "already down or stopped by another fault")
