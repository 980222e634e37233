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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from faults.durability import Cut, cut_plan, durable_sizes, lost_bytes
from faults.process import Kill
from faults.spec import check_keys
from faults.targets import Target, target_from

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl


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
