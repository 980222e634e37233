"""A full disk: a broker's log directory runs out of space under load.

The topology gives each broker a disk of ``broker_disk_mb`` (``harness.cluster.node_disks``);
the fault fills it with one file, so the broker's next append fails with "No space left
on device". Kafka in ZooKeeper mode then takes the log directory offline and, with its
only directory offline, shuts the broker down; its partitions fail over to the other
replicas. Healing frees the space (the file is removed) and starts the broker again if it
stopped, as an operator would: Kafka does not bring an offline log directory back by
itself.

``filled`` keeps, per node, the bytes written and the bytes that were left free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from faults.draw import broker_role
from faults.errors import TargetError
from faults.kinds import FaultDoc, fault_kind, target_param
from faults.process import NodeFault
from faults.spec import check_keys
from faults.targets import (
    AllControllers,
    AllZooKeepers,
    ControllerMajority,
    KRaftController,
    Node,
    Target,
    ZooKeeperLeader,
    target_from,
)
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl


@fault_kind(
    FaultDoc(
        "fill_disk",
        "Fills the disk of every broker the target resolves to (the topology's `broker_disk_mb`: each "
        "broker's log directory is a disk of that size) with one file, so its next append fails with "
        "\"No space left on device\"; Kafka then takes the log directory offline and, with no other, "
        "shuts the broker down.",
        "Removes the file and starts every node that is down again, as an operator would (Kafka does not "
        "bring an offline log directory back by itself); waits until each one serves.",
        (target_param({"leader_of": ["$topic", 0]}),),
        {"fault": "fill_disk", "target": {"leader_of": ["$topic", 0]}},
        10.0,
        notes=("Refused before anything runs on a topology without `broker_disk_mb` or with a ZooKeeper "
               "target. Not in kafka-chaos explore's default draw; name it in --faults to draw it.",),
    ),
    draw=lambda d: {"target": broker_role(d)},
    not_drawn_by_default="it needs a topology with broker disks",
)
class FillDisk(NodeFault):
    """Fill the disk of every broker the target resolves to; heal frees it and restarts."""

    kind = "fill_disk"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.filled: dict[str, tuple[int, int]] = {}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> FillDisk:
        check_keys(spec, ["fault", "target"], "fault 'fill_disk'")
        return cls(target_from(spec, "target", "fault 'fill_disk'"))

    def check(self, topology: Topology) -> None:
        """Refuse, before anything runs, a topology without broker disks or a target that
        is a ZooKeeper node."""
        super().check(topology)
        if topology.broker_disk_mb is None:
            raise TargetError(f"fill_disk needs broker disks of a size: topology {topology.name!r} has no "
                              "broker_disk_mb")
        brokers = {b.name for b in topology.brokers}
        quorum_only = isinstance(self.target, (ZooKeeperLeader, AllZooKeepers)) or (
            isinstance(self.target, (KRaftController, AllControllers, ControllerMajority))
            and bool(topology.dedicated_controllers))
        if quorum_only or (isinstance(self.target, Node) and self.target.name not in brokers):
            raise TargetError(f"fill_disk fills a broker's disk, not {self.target.describe()}'s")

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        said = []
        for node in resolved:
            written, free = self.filled[node] = cluster.disks.fill(node)
            said.append(f"{node}: {written // (1 << 20)} MiB written, {free} bytes left")
        return "; ".join(said)

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for node in resolved:
            cluster.disks.free(node)
        return super()._restore(cluster, resolved)


__all__ = ["FillDisk"]
