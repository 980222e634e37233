"""How a cluster keeps its metadata, behind one interface (:mod:`.base`), with one
implementation per mode, chosen here once from the topology."""

from __future__ import annotations

from harness.cluster.metadata.base import MetadataMode, QuorumHost, QuorumRoles, StateReader
from harness.cluster.metadata.zookeeper import ZooKeeperMode


def metadata_mode(host: QuorumHost) -> MetadataMode:
    """The mode that keeps ``host``'s metadata."""
    return ZooKeeperMode(host)


__all__ = ["MetadataMode", "QuorumHost", "QuorumRoles", "StateReader", "ZooKeeperMode", "metadata_mode"]
