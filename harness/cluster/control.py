"""What a fault may do to a cluster: the narrow interfaces between faults/ and the cluster.

Jepsen's nemesis acts on a database through a few operations (kill, start, pause,
partition); it never reaches into how the database is deployed. kafka-chaos's faults do
the same through these protocols, which :class:`~harness.cluster.lifecycle.Cluster`
implements:

- :class:`NodeControl`: signal a node's process, start it again (under the one restart
  policy), ask its status, wait for the cluster to be whole;
- :class:`NetworkControl`: the fabric of directed links and the proxies that cut, slow
  or reset them;
- :class:`ClusterObservation`: the metadata's view (leaders, ISRs, controller, live
  brokers) whichever mode keeps it, the metadata quorum's roles, the addresses an admin
  client or an observer connects to;
- :class:`ZooKeeperAccess`: ZooKeeper mode's own ensemble, for the faults that exist only
  there (a session expired, ``/controller`` deleted, a node started from its logs);
- :class:`DiskAccess`: the nodes' data directories as disks (:class:`Disks`), for the
  faults on what is stored (a full disk, a power loss cutting unsynced data away).

Faults are typed against :class:`ClusterControl`, so mypy refuses a fault that reaches
for anything else (a container object, the Docker client, a private field), and the
import-linter contract in pyproject.toml forbids faults/ from importing the lifecycle
module at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from harness.cluster.fabric import Fabric
from harness.cluster.metadata.base import MetadataMode
from harness.cluster.metadata.zookeeper import ZooKeeperMode
from harness.cluster.proxies import ProxyControl
from harness.cluster.state import ClusterState, PartitionState
from harness.cluster.zkstate import ZkObserver
from topologies.model import Topology


class NodeControl(Protocol):
    """Processes on nodes: the operations a process fault needs."""

    @property
    def run_id(self) -> str: ...

    @property
    def topology(self) -> Topology: ...

    @property
    def session_timeout_s(self) -> float:
        """How long a broker killed without a word stays registered."""
        ...

    def signal_node(self, node: str, signal: str) -> None:
        """Send ``signal`` (``SIGKILL``, ``SIGTERM``, ``SIGSTOP``, ``SIGCONT``) to the node's process."""
        ...

    def node_status(self, node: str) -> str: ...

    def start_node(self, node: str, timeout_s: float = 60.0) -> bool: ...

    def broker_id_of(self, node: str) -> int | None: ...

    def restore_health(self, timeout_s: float = 90.0) -> float: ...

    def node_log(self, node: str, lines: int = 200) -> str:
        """The last ``lines`` lines of the node's output (its container's log)."""
        ...

    def stopped_nodes(self) -> frozenset[str]:
        """The nodes whose process was stopped (SIGSTOP) and not yet resumed."""
        ...


class NetworkControl(Protocol):
    """The links between nodes and the proxies on them."""

    @property
    def fabric(self) -> Fabric: ...

    @property
    def proxies(self) -> ProxyControl: ...


class ClusterObservation(Protocol):
    """Reads through the observer links, which no fault ever cuts."""

    def state(self, topics: list[str] | None = None) -> ClusterState: ...

    def live_brokers(self) -> tuple[int, ...]: ...

    def topic_state(self, topic: str) -> list[PartitionState]: ...

    @property
    def quorum_nodes(self) -> tuple[str, ...]: ...

    def quorum_roles(self) -> dict[str, str | None]: ...

    def observer_bootstrap(self) -> str: ...


class MetadataAccess(Protocol):
    """The metadata mode's own actions (a replica move), in whichever mode the cluster runs."""

    @property
    def metadata(self) -> MetadataMode: ...


class ZooKeeperAccess(Protocol):
    """ZooKeeper mode's ensemble, for the faults that exist only there."""

    @property
    def zookeeper(self) -> ZooKeeperMode: ...

    @property
    def zk(self) -> ZkObserver: ...


class Disks(Protocol):
    """The nodes' data directories as disks (each node's own volume)."""

    def fill(self, node: str) -> tuple[int, int]:
        """Fill a broker's disk (a topology with broker_disk_mb): bytes written, bytes left."""
        ...

    def free(self, node: str) -> None:
        """Remove what :meth:`fill` wrote."""
        ...

    def data_files(self, node: str) -> dict[str, int]:
        """Every file of the node's data directory and its size."""
        ...

    def cut_files(self, node: str, sizes: Mapping[str, int | None]) -> None:
        """While the node is down: cut each file to its size, or remove it (None)."""
        ...

    def journal(self, node: str) -> list[str]:
        """The node's sync journal (docker/kafka/syncjournal.c), line by line."""
        ...


class DiskAccess(Protocol):
    """The capability of the faults on what nodes store."""

    @property
    def disks(self) -> Disks: ...


class ClusterControl(NodeControl, NetworkControl, ClusterObservation, MetadataAccess, ZooKeeperAccess,
                     DiskAccess, Protocol):
    """Everything a fault may use: the cluster as the nemesis sees it."""
