"""Power loss: a node's process dies at once and its disk keeps only what was made durable.

``kill -9`` is not a power loss: a killed JVM's writes are in the host's page cache,
which outlives it. Here the node is killed (SIGKILL, every node of the target at the same
moment, as one power cut takes them together), and then, while it is down, each file of
its data directory is cut back to what the node's sync journal says its JVM made durable
(:mod:`faults.durability`: the worst case, nothing reached the disk that was not synced).
Healing is the power coming back: the node starts on what is left and recovers as after
any unclean shutdown (Kafka truncates at the first invalid batch and rebuilds indexes;
ZooKeeper replays its synced transaction log).

``cuts`` keeps, per node, the cut applied (for tests and the event's outcome).

A ZooKeeper node can come back unable to start: a node that has only ever led wrote its
snapshot without a sync (followers sync the snapshot their leader sends), so the cut
leaves it transaction logs and no snapshot, which ZooKeeper refuses ("No snapshot found,
but there are log entries"). The heal then does what an operator does, and says so in
its outcome: it empties that node's ``version-2`` directory (its ``myid`` stays) and
starts it again, to resync from the quorum, which holds every acknowledged transaction
(each was logged and synced by a majority before it was acknowledged).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from faults import nodes
from faults.durability import Cut, cut_plan, durable_sizes, lost_bytes
from faults.process import Kill
from faults.spec import check_keys
from faults.targets import Target, target_from
from faults.waiting import wait_until

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl

# ZooKeeper's words (3.5.5 and later) for a data directory with logs and no snapshot.
NO_SNAPSHOT = "No snapshot found, but there are log entries"
ZK_DATABASE = "/version-2/"  # what a ZooKeeper node resyncs from its quorum when emptied


class PowerLoss(Kill):
    """Every node of the target loses power at once: a kill, then unsynced data is gone."""

    kind = "power_loss"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.cuts: dict[str, list[Cut]] = {}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> PowerLoss:
        check_keys(spec, ["fault", "target"], "fault 'power_loss'")
        return cls(target_from(spec, "target", "fault 'power_loss'"))

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        super()._apply(cluster, resolved)  # every node dies at the same moment
        said = []
        for node in resolved:
            files = cluster.node_data_files(node)
            plan = cut_plan(durable_sizes(cluster.node_journal(node)), files)
            cluster.cut_node_files(node, {c.path: c.size for c in plan})
            self.cuts[node] = plan
            cut = [c for c in plan if not c.removes]
            removed = [c for c in plan if c.removes]
            said.append(f"{node}: {len(cut)} file(s) cut ({lost_bytes(cut, files)} bytes), "
                        f"{len(removed)} removed ({lost_bytes(removed, files)} bytes; preallocated "
                        "index files count at their full size)")
        return "; ".join(said)

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        """Power back on for every node; a ZooKeeper node that refuses to start for want
        of a snapshot is emptied and started again (see the module's docstring)."""
        for node in resolved:
            nodes.ensure_running(cluster, node)
        emptied = [node for node in resolved if _refused_for_no_snapshot(cluster, node)]
        for node in emptied:
            files = cluster.node_data_files(node)
            cluster.cut_node_files(node, {path: None for path in files if ZK_DATABASE in path})
        said = super()._restore(cluster, resolved)
        if not emptied:
            return said
        repaired = (f"{node} refused to start ({NO_SNAPSHOT}: no snapshot had been synced), so its "
                    "ZooKeeper database was emptied to resync from the quorum" for node in emptied)
        return "; ".join([said, *repaired])


def _refused_for_no_snapshot(cluster: ClusterControl, node: str) -> bool:
    """Whether a just-started ZooKeeper node exited because it found logs and no
    snapshot: waits until it serves or exits (its database loads in seconds)."""
    if cluster.broker_id_of(node) is not None:
        return False

    def settled() -> bool:
        return cluster.node_status(node) != "running" or nodes.serving(cluster, node)

    wait_until(settled, nodes.START_TIMEOUT_S, f"{node} serving or exiting")
    return cluster.node_status(node) != "running" and NO_SNAPSHOT in cluster.node_log(node)
