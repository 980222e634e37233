"""Healing a process fault of several nodes starts them all before waiting for any.

A ZooKeeper node serves only in a quorum: after a power loss of the whole ensemble, one
node started and waited for alone never serves, and the others would never be started
(the first whole-ensemble power loss on a real cluster timed out that way)."""

from __future__ import annotations

from typing import Any

import pytest

from faults import Kill, nodes
from faults.nodes import START_TIMEOUT_S
from faults.targets import AllZooKeepers
from topologies import load_topology


class _Ensemble:
    """A cluster whose ZooKeeper nodes serve once a majority of them runs."""

    def __init__(self) -> None:
        self.topology = load_topology()
        self.zookeepers = [z.name for z in self.topology.zookeepers]
        self.running = set(self.zookeepers)
        self.fabric: Any = None

    def broker_id_of(self, node: str) -> int | None:
        return None

    def node_status(self, node: str) -> str:
        return "running" if node in self.running else "exited"

    def signal_node(self, node: str, signal: str) -> None:
        self.running.discard(node)

    def stop_node(self, node: str) -> None:
        self.running.discard(node)

    def start_node(self, node: str, timeout_s: float = 60.0) -> bool:
        if node in self.running:
            return False
        self.running.add(node)
        return True

    def zookeeper_modes(self) -> dict[str, str]:
        quorum = len(self.running) > len(self.zookeepers) // 2
        return {z: ("follower" if quorum and z in self.running else "not serving") for z in self.zookeepers}

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


def test_a_kill_of_the_whole_ensemble_heals_with_every_node_started_before_any_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nodes.wait_back, "__defaults__", (min(START_TIMEOUT_S, 2.0),))  # fail fast
    cluster = _Ensemble()
    kill = Kill(AllZooKeepers())
    kill._apply(cluster, tuple(cluster.zookeepers))  # type: ignore[arg-type]
    assert cluster.running == set()
    said = kill._restore(cluster, tuple(cluster.zookeepers))  # type: ignore[arg-type]
    assert cluster.running == set(cluster.zookeepers)
    assert said.count("back after") == 3, said
