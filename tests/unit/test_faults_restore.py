"""Healing a process fault of several nodes starts them all before waiting for any.

A ZooKeeper node serves only in a quorum: after a power loss of the whole ensemble, one
node started and waited for alone never serves, and the others would never be started
(the first whole-ensemble power loss on a real cluster timed out that way)."""

from __future__ import annotations

from typing import Any

import pytest

from faults import ControlledShutdown, Kill, PowerLoss, nodes
from faults.events import EventLog
from faults.nodes import START_TIMEOUT_S
from faults.targets import AllZooKeepers, Node
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

    def quorum_roles(self) -> dict[str, str]:
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


class _EnsembleAfterPowerLoss(_Ensemble):
    """After a power loss zk-a and zk-c hold synced logs and no snapshot: each exits at
    start unless told to trust an empty snapshot, and then replays its logs."""

    def __init__(self) -> None:
        super().__init__()
        self.files = {z: {"/var/lib/zookeeper/myid": 2, "/var/lib/zookeeper/version-2/log.100000001": 640}
                      for z in self.zookeepers}
        self.files["zk-b"]["/var/lib/zookeeper/version-2/snapshot.100000000"] = 588
        self.logs: dict[str, str] = dict.fromkeys(self.zookeepers, "")
        self.trusting: set[str] = set()

    def start_node(self, node: str, timeout_s: float = 60.0) -> bool:
        if node in self.running:
            return False
        if node not in self.trusting and not any("/snapshot." in p for p in self.files[node]):
            self.logs[node] += "java.io.IOException: No snapshot found, but there are log entries.\n"
            return True  # started, and exited at once
        self.running.add(node)
        return True

    @property
    def zookeeper(self) -> _EnsembleAfterPowerLoss:  # its ZooKeeper-only operations are its own
        return self

    def start_from_logs(self, node: str) -> None:
        self.trusting.add(node)
        self.start_node(node)

    def reset_config(self, node: str) -> None:
        self.trusting.discard(node)

    def node_log(self, node: str, lines: int = 200) -> str:
        return self.logs[node]


def test_zookeeper_nodes_left_without_a_snapshot_replay_their_logs_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nodes.wait_back, "__defaults__", (min(START_TIMEOUT_S, 2.0),))
    monkeypatch.setattr("faults.power.ZK_SETTLE_S", 0.2)
    cluster = _EnsembleAfterPowerLoss()
    cluster.running.clear()
    said = PowerLoss(AllZooKeepers())._restore(cluster, tuple(cluster.zookeepers))  # type: ignore[arg-type]
    assert cluster.running == set(cluster.zookeepers)
    assert cluster.trusting == set(), "each gets its own configuration back"
    assert all("/var/lib/zookeeper/version-2/log.100000001" in f for f in cluster.files.values())
    for node in ("zk-a", "zk-c"):
        assert f"{node} refused to start (No snapshot found" in said, said
    assert "zk-b refused" not in said


class _TwoFaults:
    """Brokers whose process state the test sets; records every signal and start."""

    def __init__(self, status: dict[str, str], stopped: frozenset[str] = frozenset()) -> None:
        self.topology = load_topology()
        self.run_id = "unit-two-faults"
        self.status = status
        self.stopped = stopped
        self.done: list[str] = []

    def stopped_nodes(self) -> frozenset[str]:
        return self.stopped

    def node_status(self, node: str) -> str:
        return self.status.get(node, "running")

    def broker_id_of(self, node: str) -> int | None:
        return int(node.rsplit("-", 1)[1]) if node.startswith("kafka-") else None

    def signal_node(self, node: str, signal: str) -> None:
        self.done.append(f"{signal} {node}")
        if signal == "SIGKILL":
            self.status[node] = "exited"

    def start_node(self, node: str, timeout_s: float = 60.0) -> bool:
        self.done.append(f"start {node}")
        return True


@pytest.mark.parametrize(("status", "stopped"), [({"kafka-0": "exited"}, frozenset()),
                                                 ({}, frozenset({"kafka-0"}))])
def test_a_node_another_fault_holds_is_left_to_it(status: dict[str, str], stopped: frozenset[str]) -> None:
    """A controller killed by one fault is still /controller for a session timeout; a
    controlled shutdown of 'the controller' then must not signal it (Docker refuses to
    signal an exited container; a stopped JVM would wait for the other fault's heal),
    nor start it at its own heal."""
    cluster = _TwoFaults(status, stopped)
    log = EventLog()
    shutdown = ControlledShutdown(Node("kafka-0"))
    assert shutdown.inject(cluster, log) == ()  # type: ignore[arg-type]
    assert "kafka-0 left alone: already down or stopped by another fault" in log.events[-1].outcome
    shutdown.heal(cluster, log)  # type: ignore[arg-type]
    assert cluster.done == [], "nothing signalled, nothing started"


def test_a_kill_still_reaches_a_stopped_node_but_not_an_exited_one() -> None:
    log = EventLog()
    stopped = _TwoFaults({}, frozenset({"kafka-0"}))
    assert Kill(Node("kafka-0")).inject(stopped, log) == ("kafka-0",)  # type: ignore[arg-type]
    assert stopped.done == ["SIGKILL kafka-0"]
    exited = _TwoFaults({"kafka-0": "exited"})
    assert Kill(Node("kafka-0")).inject(exited, log) == ()  # type: ignore[arg-type]
    assert exited.done == []
