"""A reassignment of a partition whose replica another fault holds down is requested and
not waited for: the wait would hold up the schedule, and with it that fault's heal, which
is what lets the reassignment finish (an exploration round was lost to that)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from faults.zookeeper import Reassign
from harness.cluster.fabric import plan_fabric
from harness.cluster.state import PartitionState
from topologies.loader import load_topology


class _Cluster:
    """The metadata holding p1 on brokers 1, 0, 2; a reassignment finishes once requested,
    unless a replica is held (then it never does)."""

    def __init__(self, stopped: frozenset[str] = frozenset(), exited: frozenset[str] = frozenset(),
                 broken: tuple[str, ...] = ()) -> None:
        self.topology = load_topology()
        self.fabric = plan_fabric(self.topology)
        self.stopped, self.exited, self.broken = stopped, exited, broken
        self.proxies = SimpleNamespace(damaged=lambda: sorted(self.broken))
        self.replicas: tuple[int, ...] = (1, 0, 2)
        self.requested: list[tuple[str, int, list[int]]] = []

    @property
    def held(self) -> bool:
        """Whether a replica cannot catch up: stopped, exited, or a replication or
        ZooKeeper link of its broken."""
        return bool(self.stopped or self.exited or [b for b in self.broken if "client" not in b])

    def stopped_nodes(self) -> frozenset[str]:
        return self.stopped

    def node_status(self, node: str) -> str:
        return "exited" if node in self.exited else "running"

    @property
    def metadata(self) -> _Cluster:  # the metadata mode's replica moves are its own
        return self

    def request_reassignment(self, topic: str, partition: int, replicas: list[int]) -> None:
        self.requested.append((topic, partition, replicas))
        if not self.held:
            self.replicas = (0, 2, 1)

    def reassignment_pending(self) -> bool:
        return self.held

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


def test_a_reassignment_is_not_awaited_while_a_replica_is_cut_off() -> None:
    """An isolated replica is alive (not held down) yet cannot catch up: a safe
    exploration's round waited 60 s for a reassignment while one was isolated."""
    cluster = _Cluster(broken=("kafka-2->zk-a", "kafka-0->kafka-2"))
    started = time.monotonic()
    said = Reassign("t", 1, [0, 2, 1], timeout_s=5)._apply(cluster, ("t/1",))  # type: ignore[arg-type]
    assert time.monotonic() - started < 1.0, "it must not wait out its timeout"
    assert said == ("replicas [1, 0, 2] -> [0, 2, 1] requested; completion not awaited: links of kafka-0, "
                    "kafka-2 broken by another fault")


def test_a_slowed_client_link_does_not_stop_the_wait() -> None:
    cluster = _Cluster(broken=("client-a->kafka-1",))
    said = Reassign("t", 1, [0, 2, 1], timeout_s=5)._apply(cluster, ("t/1",))  # type: ignore[arg-type]
    assert said.startswith("replicas [1, 0, 2] -> [0, 2, 1] in ")
