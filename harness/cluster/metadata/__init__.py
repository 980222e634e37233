"""How a cluster keeps its metadata, behind one interface (:mod:`.base`), with one
implementation per mode, chosen here once from the topology."""

from __future__ import annotations

from collections.abc import Callable

from harness.cluster.metadata.base import MetadataMode, QuorumHost, QuorumRoles, StateReader
from harness.cluster.metadata.kraft import KRaftMode
from harness.cluster.metadata.migration import MigrationMode
from harness.cluster.metadata.zookeeper import ZooKeeperMode
from topologies.model import KRAFT, MIGRATION, ZOOKEEPER

# The one place a metadata mode's name meets its implementation.
MODES: dict[str, Callable[[QuorumHost], MetadataMode]] = {ZOOKEEPER: ZooKeeperMode, KRAFT: KRaftMode,
                                                          MIGRATION: MigrationMode}


def metadata_mode(host: QuorumHost) -> MetadataMode:
    """The mode that keeps ``host``'s metadata, as its topology declares."""
    return MODES[host.topology.metadata](host)


__all__ = ["MODES", "KRaftMode", "MetadataMode", "MigrationMode", "QuorumHost", "QuorumRoles", "StateReader",
           "ZooKeeperMode", "metadata_mode"]
