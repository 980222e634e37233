"""Node-log excerpts around each fault: trimmed, merged, and written for every node."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.fabric import TOXIPROXY_HOST
from harness.cluster.log_excerpts import (
    AFTER_S,
    BEFORE_S,
    NODE_LOGS,
    Stretch,
    merged,
    trimmed,
    write_excerpts,
)
from topologies import Topology, load_topology


def test_a_long_window_keeps_its_head_and_tail_and_says_what_was_cut() -> None:
    lines = [f"line {n}" for n in range(1000)]
    kept = trimmed(lines, limit=10)
    assert kept[:5] == lines[:5] and kept[-5:] == lines[-5:]
    assert kept[5] == "... 990 lines cut ..."
    assert trimmed(lines[:10], limit=10) == lines[:10]


def test_overlapping_windows_are_read_once() -> None:
    a = Stretch("kill kafka-0", 100.0, 120.0)
    b = Stretch("cut zone a", 120.0 + AFTER_S + BEFORE_S - 1, 200.0)  # margins overlap
    c = Stretch("pause kafka-2", 500.0, 510.0)
    assert merged([c, b, a]) == [Stretch("kill kafka-0; cut zone a", 100.0, 200.0), c]


@dataclass
class _Container:
    text: bytes
    asked: list[tuple[float, float]] = field(default_factory=list)

    def logs(self, *, timestamps: bool, since: float, until: float) -> bytes:
        self.asked.append((since, until))
        return self.text


@dataclass
class _Cluster:
    topology: Topology = field(default_factory=lambda: load_topology("three_az"))
    gone: str = "kafka-1"

    def container(self, node: str) -> Any:
        if node == self.gone:
            raise RuntimeError(f"No such container: {node}")
        return _Container(f"2026-12-04T10:00:00Z {node} started\n".encode())


def test_every_node_gets_an_excerpt_and_a_vanished_one_says_so(tmp_path: Path) -> None:
    cluster = _Cluster()
    folder = write_excerpts(cluster, [Stretch("kill kafka-0", 100.0, 130.0)], tmp_path)  # type: ignore[arg-type]
    assert folder == tmp_path / NODE_LOGS
    written = sorted(p.stem for p in folder.iterdir())
    assert written == sorted([*cluster.topology.node_names, TOXIPROXY_HOST])
    assert "kafka-0 started" in (folder / "kafka-0.log").read_text()
    assert "=== kill kafka-0:" in (folder / "kafka-0.log").read_text()
    assert "could not be read: No such container: kafka-1" in (folder / "kafka-1.log").read_text()


def test_no_fault_no_excerpts(tmp_path: Path) -> None:
    assert write_excerpts(_Cluster(), [], tmp_path) is None  # type: ignore[arg-type]
    assert not (tmp_path / NODE_LOGS).exists()


def test_each_fault_is_a_stretch_and_a_scenario_without_one_keeps_its_whole_span() -> None:
    from faults.events import FaultEvent
    from harness.scenario.node_logs import fault_stretches

    kill = [FaultEvent(10.0, 0.0, "kill kafka-0", "inject", ("kafka-0",), "ok", 10.5),
            FaultEvent(25.0, 15.0, "kill kafka-0", "heal", ("kafka-0",), "ok", 40.0),
            FaultEvent(50.0, 40.0, "pause kafka-1", "inject", ("kafka-1",), "ok", 50.1)]
    assert fault_stretches(kill, 0.0, 90.0) == [Stretch("kill kafka-0 kafka-0", 10.0, 40.0),
                                                 Stretch("pause kafka-1 kafka-1 (never healed)", 50.0, 90.0)]
    [whole] = fault_stretches([], 5.0, 300.0)
    assert (whole.start, whole.end) == (5.0, 300.0) and "whole scenario" in whole.label
