"""A running cluster's disks: what the disk faults and the power loss may do to nodes' data.

:class:`ClusterDisks` is the cluster's :class:`~harness.cluster.control.Disks` capability
(``cluster.disks``): each node's data volume (:class:`~harness.cluster.node_disks.NodeDisks`)
reached through the run's Docker engine and image, with the refusals that keep a fault
honest: only a broker of a topology with ``broker_disk_mb`` has a disk of its own to
fill, and a node's files are cut only while it is down (a running JVM would write on
past the cut).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import docker
from docker.models.containers import Container

from harness.cluster.images import ImageSet
from harness.cluster.metadata.base import MetadataMode
from harness.cluster.node_config import KAFKA_DATA_DIR
from harness.cluster.node_disks import NodeDisks
from harness.errors import ChaosError
from topologies.model import Topology


class DiskHost(Protocol):
    """What the disks need of their cluster (:class:`~harness.cluster.lifecycle.Cluster`)."""

    @property
    def docker(self) -> docker.DockerClient: ...

    @property
    def images(self) -> ImageSet | None: ...

    @property
    def topology(self) -> Topology: ...

    @property
    def metadata(self) -> MetadataMode: ...

    def container(self, node: str) -> Container: ...

    def node_status(self, node: str) -> str: ...

    def broker_id_of(self, node: str) -> int | None: ...


class ClusterDisks:
    """The data directories of one running cluster's nodes, as disks."""

    def __init__(self, host: DiskHost, volumes: NodeDisks) -> None:
        self._host = host
        self._volumes = volumes

    def data_dir(self, node: str) -> str:
        """Where the node keeps its data: a broker's log directory or the quorum node's."""
        return self._host.metadata.data_dir(node) or KAFKA_DATA_DIR

    def journal(self, node: str) -> list[str]:
        """The node's sync journal: what its JVM made durable, line by line."""
        return self._volumes.journal(self._host.container(node))

    def data_files(self, node: str) -> dict[str, int]:
        """Every file of the node's data directory and its size (path -> bytes)."""
        return self._volumes.files(self._host.docker, self._image(), node, self.data_dir(node))

    def fill(self, node: str) -> tuple[int, int]:
        """Fill a broker's disk: (bytes written, bytes left free)."""
        self._sized(node)
        return self._volumes.fill(self._host.docker, self._image(), node, self.data_dir(node))

    def free(self, node: str) -> None:
        """Remove what :meth:`fill` wrote."""
        self._sized(node)
        self._volumes.free(self._host.docker, self._image(), node, self.data_dir(node))

    def cut_files(self, node: str, sizes: Mapping[str, int | None]) -> None:
        """Cut each of the node's data files to its size, or remove it (None). Only while
        the node is down: a running JVM would write on past the cut."""
        if self._host.node_status(node) == "running":
            raise ChaosError(f"refusing to cut the files of {node} while it runs")
        self._volumes.cut(self._host.docker, self._image(), node, self.data_dir(node), sizes)

    def _sized(self, node: str) -> None:
        if self._host.broker_id_of(node) is None or self._host.topology.broker_disk_mb is None:
            raise ChaosError(f"{node} has no disk of its own to fill: only brokers do, in a topology with "
                             "broker_disk_mb")

    def _image(self) -> str:
        images = self._host.images
        if images is None:
            raise ChaosError("the cluster is not started: its nodes have no disks yet")
        return images.kafka


__all__ = ["ClusterDisks", "DiskHost"]
