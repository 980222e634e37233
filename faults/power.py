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

A ZooKeeper node can come back unable to start. Only a follower syncs the snapshot its
leader sends; a node that has led since the ensemble formed (and, in a fresh ensemble,
possibly every node) has written its snapshots without a sync, so the cut leaves it
synced transaction logs and no snapshot, which ZooKeeper refuses ("No snapshot found,
but there are log entries"). Nothing acknowledged is gone: every acknowledged
transaction was logged and synced by a majority. The heal then does what an operator
does, and says so in its outcome: it starts that node once with
``snapshot.trust.empty``, so it replays its logs onto an empty tree (as the ZooKeeper of
Kafka 2.8.2 and of 3.7.2 did on real clusters), and gives it its own configuration back
once the ensemble serves.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from faults import nodes
from faults.draw import isolation_target
from faults.durability import Cut, cut_plan, durable_sizes, lost_bytes
from faults.kinds import FaultDoc, fault_kind, target_param
from faults.process import Kill
from faults.spec import check_keys
from faults.targets import Target, target_from
from faults.waiting import wait_until

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl

# ZooKeeper's words (3.5.5 and later) for a data directory with logs and no snapshot.
NO_SNAPSHOT = "No snapshot found, but there are log entries"
# How long started ZooKeeper nodes get to load their database (or refuse to) before the
# ones that exited are taken as refused and the ones running but not serving as waiting
# for them: a JVM start and a log replay, with margin for a busy machine.
ZK_SETTLE_S = 20.0


@fault_kind(
    FaultDoc(
        "power_loss",
        "The nodes the target resolves to lose power together: SIGKILL to all of them at once, then, while "
        "they are down, every file of each node's data directory cut back to what its JVM had made "
        "durable (its sync journal: the sizes at its last fsync/fdatasync), and every file never synced "
        "removed. The worst case a power cut allows; see docs/design/power-loss.md for the model and its "
        "assumptions.",
        "Starts every node that is down again (the power is back) and waits until each one serves: a "
        "broker recovers its log as after any unclean shutdown.",
        (target_param({"zone_of": {"leader_of": ["$topic", 0]}}),),
        {"fault": "power_loss", "target": {"zone_of": {"leader_of": ["$topic", 0]}}},
        5.0,
        notes=("Not in kafka-chaos explore's default draw: a correlated power loss loses acknowledged "
               "records on any configuration that does not fsync (Kafka's default), which is the trade "
               "to show, not an invariant to break; name it in --faults to draw it.",),
    ),
    draw=lambda d: {"target": isolation_target(d)},
    not_drawn_by_default="a power loss of two replicas at once loses acknowledged records under Kafka's "
                         "default flush settings: a trade of the configuration, not a breach of what it "
                         "promises",
)
class PowerLoss(Kill):
    """Every node of the target loses power at once: a kill, then unsynced data is gone."""

    kind = "power_loss"
    acts_on_exited = True  # a dead node's unsynced files are lost to a power cut all the same

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
            files = cluster.disks.data_files(node)
            plan = cut_plan(durable_sizes(cluster.disks.journal(node)), files)
            cluster.disks.cut_files(node, {c.path: c.size for c in plan})
            self.cuts[node] = plan
            cut = [c for c in plan if not c.removes]
            removed = [c for c in plan if c.removes]
            said.append(f"{node}: {len(cut)} file(s) cut ({lost_bytes(cut, files)} bytes), "
                        f"{len(removed)} removed ({lost_bytes(removed, files)} bytes)")
        said.append("(sizes are the files' lengths: a preallocated index or log counts in full)")
        return "; ".join(said)

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        """Power back on for every node; a ZooKeeper node that refuses to start for want
        of a snapshot replays its logs instead (see the module's docstring)."""
        # The metadata quorum first (ZooKeeper nodes, KRaft controllers): a broker starts
        # once its old session has expired, or registers with a quorum, which takes a
        # serving quorum.
        quorum = [node for node in resolved if cluster.broker_id_of(node) is None]
        for node in quorum:
            nodes.ensure_running(cluster, node)
        ensemble = {z.name for z in cluster.topology.zookeepers}
        refused = _refused_for_no_snapshot(cluster, [node for node in quorum if node in ensemble])
        for node in refused:
            cluster.zookeeper.start_from_logs(node)
        try:
            said = super()._restore(cluster, resolved)  # the brokers started, every node back
        finally:
            for node in refused:
                cluster.zookeeper.reset_config(node)
        repaired = (f"{node} refused to start ({NO_SNAPSHOT}: no snapshot had been synced), so it "
                    "was started once with snapshot.trust.empty, which loads its logs without one"
                    for node in refused)
        return "; ".join(part for part in [said, *repaired] if part)


def _refused_for_no_snapshot(cluster: ClusterControl, zookeepers: list[str]) -> list[str]:
    """The just-started ZooKeeper nodes that exited because they found logs and no
    snapshot. Waits until every one serves, or until ZK_SETTLE_S have passed with some
    exited (those still running then wait for a quorum the exited ones belong to)."""
    if not zookeepers:
        return []
    began = time.monotonic()

    def settled() -> bool:
        modes = cluster.quorum_roles()
        running = [n for n in zookeepers if cluster.node_status(n) == "running"]
        if all(modes.get(n) in ("leader", "follower") for n in running) and len(running) == len(zookeepers):
            return True
        return len(running) < len(zookeepers) and time.monotonic() - began >= ZK_SETTLE_S

    wait_until(settled, nodes.START_TIMEOUT_S, f"{', '.join(zookeepers)} serving or refusing to start")
    return [n for n in zookeepers
            if cluster.node_status(n) != "running" and NO_SNAPSHOT in cluster.node_log(n)]
