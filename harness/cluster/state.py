"""What a cluster's metadata says, whichever mode keeps it: the one model of cluster state.

A ZooKeeper-mode cluster keeps it in znodes (:mod:`harness.cluster.zkstate` reads them);
conditions, checks, the sampler, health and the explorer's cluster rules read only these
objects, so they hold in every metadata mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# The two counts a controller epoch comes from (ClusterState.epoch_count).
EPOCHS_OF_ZOOKEEPER = "zookeeper's controller epoch"
EPOCHS_OF_THE_QUORUM = "the quorum's leader epoch"


@dataclass(frozen=True)
class PartitionState:
    """One partition as the controller last wrote it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    replicas: tuple[int, ...]

    @property
    def online(self) -> bool:
        return self.leader >= 0

    @property
    def isr_full(self) -> bool:
        return set(self.isr) == set(self.replicas)


@dataclass(frozen=True)
class ClusterState:
    """A snapshot of what the cluster's metadata says about the whole cluster."""

    live_brokers: tuple[int, ...]
    controller: int | None
    controller_epoch: int | None
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    # Each ZooKeeper node's mode ("leader", "follower"; None when it does not serve) as
    # the sampler last read it, when known. Not part of the snapshot's identity: the
    # modes are read at their own pace (harness/cluster/sampler.py).
    zk_modes: Mapping[str, str | None] | None = field(default=None, compare=False)
    # The phase of a ZooKeeper-to-KRaft migration under way, as its driver last recorded
    # it (harness/cluster/migration/plan.py), or None when none is. Not part of the
    # snapshot's identity either: the driver's own record has each phase's start and end.
    migration_phase: str | None = field(default=None, compare=False)
    # Whose count ``controller_epoch`` is: ZooKeeper's controller epoch (EPOCHS_OF_ZOOKEEPER)
    # or the KRaft quorum's leader epoch (EPOCHS_OF_THE_QUORUM); None when not said. A
    # migration reads one and then the other, and their numbers are unrelated, so two
    # epochs compare only when they are the same count.
    epoch_count: str | None = field(default=None, compare=False)

    def topic(self, topic: str) -> list[PartitionState]:
        return sorted(
            (p for (t, _), p in self.partitions.items() if t == topic), key=lambda p: p.partition
        )

    def led_by(self, broker_id: int, topic: str | None = None) -> list[PartitionState]:
        return [
            p
            for p in self.partitions.values()
            if p.leader == broker_id and (topic is None or p.topic == topic)
        ]
