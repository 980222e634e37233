"""The interface a metadata mode implements: how a cluster keeps its metadata.

A ZooKeeper-mode cluster keeps it in a ZooKeeper ensemble; a KRaft cluster in a quorum of
controllers. Everything that differs between the two - which nodes hold the metadata and
how they start, how their health reads, where the cluster state is read from, when a
killed broker may start again - sits behind :class:`MetadataMode`, chosen once from the
topology (:func:`harness.cluster.metadata.metadata_mode`). The rest of the harness asks the
mode and never branches on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from harness.cluster.node_config import MetadataSettings
from harness.cluster.state import ClusterState, PartitionState
from topologies.model import BrokerNode, SettingValue, Topology

if TYPE_CHECKING:
    import docker

    from harness.cluster.fabric import Fabric
    from harness.cluster.metadata.migration import MigrationMode
    from harness.cluster.metadata.zookeeper import ZooKeeperMode
    from harness.cluster.nodes import Nodes
    from harness.cluster.versions import KafkaRelease


class StateReader(Protocol):
    """Reads the cluster state from where the mode keeps it."""

    def snapshot(self, topics: list[str] | None = None) -> ClusterState: ...

    def live_brokers(self) -> tuple[int, ...]: ...

    def topic_state(self, topic: str) -> list[PartitionState]: ...

    def close(self) -> None: ...


class QuorumHost(Protocol):
    """What a mode needs of the cluster it serves (a :class:`~harness.cluster.lifecycle.Cluster`)."""

    @property
    def topology(self) -> Topology: ...

    @property
    def nodes(self) -> Nodes: ...

    @property
    def docker(self) -> docker.DockerClient: ...

    @property
    def fabric(self) -> Fabric: ...

    @property
    def release(self) -> KafkaRelease: ...

    def broker_settings(self) -> dict[str, SettingValue]: ...

    def observer_address(self, node: str) -> str: ...

    def create_volume(self, node: str, size_mb: int | None = None) -> str: ...


# A node's role in the metadata quorum as read last ("leader", "follower"; None: it does
# not serve), per node.
QuorumRoles = Mapping[str, str | None]


class MetadataMode(Protocol):
    """One way of keeping a cluster's metadata (module doc)."""

    name: str

    @property
    def quorum_nodes(self) -> tuple[str, ...]:
        """The nodes that hold the metadata and are not brokers, in start order."""
        ...

    def start_quorum(self, timeout_s: float) -> None:
        """Start the quorum's nodes and wait until they serve: brokers start after."""
        ...

    def quorum_roles(self) -> dict[str, str | None]:
        """Each quorum node's role now."""
        ...

    def broker_settings(self, broker: BrokerNode) -> MetadataSettings:
        """What the mode adds to a broker's ``server.properties``."""
        ...

    def quorum_problems(self) -> list[tuple[str, str | None]]:
        """What keeps the quorum from serving: (problem, the node it points at)."""
        ...

    @property
    def reader(self) -> StateReader:
        """The cluster's own reader, riding out short reconnects (faults act through it)."""
        ...

    def open_reader(self) -> StateReader:
        """A fresh reader that fails at once when it cannot read, for a sampler, which
        measures an unreadable stretch rather than hiding it."""
        ...

    def role_readers(self) -> dict[str, Callable[[], str | None]]:
        """Per quorum node, a quick read of its role, for a sampler's roles thread."""
        ...

    @property
    def registration_timeout_s(self) -> float:
        """How long a broker killed without a word stays registered."""
        ...

    @property
    def registration_expiry_bound_s(self) -> float:
        """The longest such a registration can outlive the timeout on a busy machine:
        a registration held past it is not going to expire."""
        ...

    def registration_holder(self, broker_id: int) -> str | None:
        """Why ``broker_id`` must not start again yet (its old registration still held),
        or None: the one broker-restart policy asks before every start."""
        ...

    def data_dir(self, node: str) -> str | None:
        """Where a quorum node keeps its data; None for a node that is not one."""
        ...

    def diagnostics(self) -> tuple[str, dict[str, Any]]:
        """The metadata as found after a failure: (file name, contents) for the test's
        diagnostics folder, errors included rather than raised."""
        ...

    def request_reassignment(self, topic: str, partition: int, replicas: list[int]) -> None:
        """Ask the controller to move a partition's replicas to ``replicas``; ChaosError
        when it refuses (another move of the partition under way)."""
        ...

    def reassignment_pending(self) -> bool:
        """Whether the controller still has a replica move under way."""
        ...

    def zookeeper(self) -> ZooKeeperMode:
        """The ZooKeeper ensemble, for ZooKeeper-only faults and operations; a mode
        without one refuses, naming what it has instead."""
        ...

    def migration(self) -> MigrationMode:
        """The migration under way, for its driver; a mode that is not migrating refuses."""
        ...

    def describe(self) -> dict[str, Any]:
        """The mode as the run's record states it (its name; KRaft's cluster id)."""
        ...

    def address_lines(self) -> list[str]:
        """Where a person reaches the metadata of a running cluster (``kafka-chaos up``)."""
        ...

    def close(self) -> None: ...
