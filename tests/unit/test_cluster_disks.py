"""The cluster's disks (harness/cluster/disks.py), the capability the disk faults and the
power loss act through (``cluster.disks``), without Docker: each call reaches the node's
own volume in its data directory, and the refusals come before any container runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from faults.disk import FillDisk
from faults.events import EventLog
from faults.targets import BrokerId
from harness.cluster.control import ClusterControl, Disks
from harness.cluster.disks import ClusterDisks
from harness.cluster.images import ImageSet
from harness.cluster.lifecycle import Cluster
from harness.cluster.node_config import KAFKA_DATA_DIR
from harness.errors import ChaosError
from topologies import load_topology


class _Volumes:
    """NodeDisks as the disks call it: records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def journal(self, container: Any) -> list[str]:
        self.calls.append(("journal", container))
        return ["S 10 /x\n"]

    def files(self, client: Any, image: str, node: str, data_dir: str) -> dict[str, int]:
        self.calls.append(("files", image, node, data_dir))
        return {f"{data_dir}/a": 1}

    def fill(self, client: Any, image: str, node: str, data_dir: str) -> tuple[int, int]:
        self.calls.append(("fill", image, node, data_dir))
        return 1 << 20, 0

    def free(self, client: Any, image: str, node: str, data_dir: str) -> None:
        self.calls.append(("free", image, node, data_dir))

    def cut(self, client: Any, image: str, node: str, data_dir: str, sizes: Mapping[str, int | None]) -> None:
        self.calls.append(("cut", image, node, data_dir, dict(sizes)))


class _Metadata:
    def data_dir(self, node: str) -> str | None:
        return "/var/lib/zookeeper/data" if node.startswith("zk-") else None


class _Host:
    def __init__(self, disk_mb: int | None = 64, started: bool = True) -> None:
        self.docker: Any = object()
        self.images = ImageSet("base", "kafka-image", "toxiproxy") if started else None
        self.topology = dataclasses.replace(load_topology(), broker_disk_mb=disk_mb)
        self.metadata: Any = _Metadata()
        self.status: dict[str, str] = {}

    def container(self, node: str) -> str:
        return f"container of {node}"

    def node_status(self, node: str) -> str:
        return self.status.get(node, "running")

    def broker_id_of(self, node: str) -> int | None:
        return int(node.split("-")[1]) if node.startswith("kafka-") else None


def _disks(host: _Host) -> tuple[ClusterDisks, _Volumes]:
    volumes = _Volumes()
    return ClusterDisks(host, volumes), volumes  # type: ignore[arg-type]


def test_each_call_reaches_the_nodes_volume_in_its_data_directory() -> None:
    host = _Host()
    disks, volumes = _disks(host)
    assert disks.fill("kafka-1") == (1 << 20, 0)
    disks.free("kafka-1")
    assert disks.data_files("zk-a") == {"/var/lib/zookeeper/data/a": 1}
    assert disks.journal("zk-a") == ["S 10 /x\n"]
    host.status["zk-a"] = "exited"
    disks.cut_files("zk-a", {"/var/lib/zookeeper/data/a": None})
    assert volumes.calls == [
        ("fill", "kafka-image", "kafka-1", KAFKA_DATA_DIR),
        ("free", "kafka-image", "kafka-1", KAFKA_DATA_DIR),
        ("files", "kafka-image", "zk-a", "/var/lib/zookeeper/data"), ("journal", "container of zk-a"),
        ("cut", "kafka-image", "zk-a", "/var/lib/zookeeper/data", {"/var/lib/zookeeper/data/a": None}),
    ]


@pytest.mark.parametrize(("host", "call", "message"), [
    (_Host(), lambda d: d.fill("zk-a"), "zk-a has no disk of its own to fill"),
    (_Host(disk_mb=None), lambda d: d.free("kafka-0"), "only brokers do, in a topology with broker_disk_mb"),
    (_Host(), lambda d: d.cut_files("kafka-0", {}), "refusing to cut the files of kafka-0 while it runs"),
    (_Host(started=False), lambda d: d.data_files("kafka-0"), "the cluster is not started"),
])
def test_what_no_disk_allows_is_refused_before_any_container(host: _Host, call: Any, message: str) -> None:
    disks, volumes = _disks(host)
    with pytest.raises(ChaosError, match=message):
        call(disks)
    assert volumes.calls == []


def test_the_cluster_offers_its_disks_as_a_capability_not_as_methods_of_its_own() -> None:
    assert isinstance(Cluster.disks, property)
    gone = ("fill_disk", "free_disk", "cut_node_files", "node_journal", "node_data_files")
    assert not [name for name in gone if hasattr(Cluster, name)]
    for name in ("fill", "free", "data_files", "cut_files", "journal"):
        assert callable(getattr(ClusterDisks, name)) and hasattr(Disks, name)


class _FaultHost:
    """What a disk fault reaches: the disks, and the processes it restarts at heal."""

    def __init__(self) -> None:
        self.topology = dataclasses.replace(load_topology("three_az"), broker_disk_mb=64)
        self.run_id = "unit-disks"
        self.filled: list[str] = []
        self.disks = self

    def fill(self, node: str) -> tuple[int, int]:
        self.filled.append(f"fill {node}")
        return 3 << 20, 0

    def free(self, node: str) -> None:
        self.filled.append(f"free {node}")

    def stopped_nodes(self) -> frozenset[str]:
        return frozenset()

    def node_status(self, node: str) -> str:
        return "running"

    def broker_id_of(self, node: str) -> int | None:
        return 1

    def start_node(self, node: str, timeout_s: float = 60.0) -> bool:
        return False

    def live_brokers(self) -> tuple[int, ...]:
        return (0, 1, 2)


def test_the_disk_fault_fills_and_frees_through_the_capability() -> None:
    cluster: ClusterControl = _FaultHost()  # type: ignore[assignment]
    fault = FillDisk(BrokerId(1))
    log = EventLog()
    fault.inject(cluster, log)
    assert "kafka-1: 3 MiB written, 0 bytes left" in log.events[-1].outcome
    fault.heal(cluster, log)
    assert cluster.filled == ["fill kafka-1", "free kafka-1"]  # type: ignore[attr-defined]
