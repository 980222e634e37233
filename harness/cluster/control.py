"""What a fault may do to a cluster: the narrow interfaces between faults/ and the cluster.

Jepsen's nemesis acts on a database through a few operations (kill, start, pause,
partition); it never reaches into how the database is deployed. kafka-chaos's faults do
the same through these protocols, which :class:`~harness.cluster.lifecycle.Cluster`
implements:

- :class:`NodeControl`: signal a node's process, start it again (under the one restart
  policy), ask its status, wait for the cluster to be whole;
- :class:`NetworkControl`: the fabric of directed links and the proxies that cut, slow
  or reset them;
- :class:`ClusterObservation`: ZooKeeper's view (leaders, ISRs, controller, sessions), the
  ensemble's modes, the addresses an admin client or an observer connects to;
- :class:`ZooKeeperAdmin`: the znode writes an operator's tooling makes in ZooKeeper
  mode (delete ``/controller``, create ``/admin/reassign_partitions``).

Faults are typed against :class:`ClusterControl`, so mypy refuses a fault that reaches
for anything else (a container object, the Docker client, a private field), and the
import-linter contract in pyproject.toml forbids faults/ from importing the lifecycle
module at all.
"""

from __future__ import annotations

from typing import Protocol

from harness.cluster.fabric import Fabric
from harness.cluster.proxies import ProxyControl
from harness.cluster.state import ClusterState
from harness.cluster.zkstate import ZkObserver
from topologies.model import Topology


class NodeControl(Protocol):
    """Processes on nodes: the operations a process fault needs."""

    @property
    def run_id(self) -> str: ...

    @property
    def topology(self) -> Topology: ...

    @property
    def session_timeout_s(self) -> float: ...

    def signal_node(self, node: str, signal: str) -> None:
        """Send ``signal`` (``SIGKILL``, ``SIGTERM``, ``SIGSTOP``, ``SIGCONT``) to the node's process."""
        ...

    def node_status(self, node: str) -> str: ...

    def start_node(self, node: str, timeout_s: float = 60.0) -> bool: ...

    def broker_id_of(self, node: str) -> int | None: ...

    def restore_health(self, timeout_s: float = 90.0) -> float: ...

    def node_journal(self, node: str) -> list[str]:
        """The node's sync journal (docker/kafka/syncjournal.c), line by line."""
        ...

    def node_data_files(self, node: str) -> dict[str, int]:
        """Every file of the node's data directory and its size."""
        ...

    def fill_disk(self, node: str) -> tuple[int, int]:
        """Fill a broker's disk (a topology with broker_disk_mb): bytes written, bytes left."""
        ...

    def free_disk(self, node: str) -> None:
        """Remove what fill_disk wrote."""
        ...

    def cut_node_files(self, node: str, sizes: dict[str, int | None]) -> None:
        """While the node is down: cut each file to its size, or remove it (None)."""
        ...

    def node_log(self, node: str, lines: int = 200) -> str:
        """The last ``lines`` lines of the node's output (its container's log)."""
        ...

    def stopped_nodes(self) -> frozenset[str]:
        """The nodes whose process was stopped (SIGSTOP) and not yet resumed."""
        ...

    def start_zookeeper_from_logs(self, node: str) -> None:
        """Start a ZooKeeper node with logs and no snapshot, replaying its logs."""
        ...

    def reset_zookeeper_config(self, node: str) -> None:
        """The node's configuration as the topology has it, from its next start."""
        ...


class NetworkControl(Protocol):
    """The links between nodes and the proxies on them."""

    @property
    def fabric(self) -> Fabric: ...

    @property
    def proxies(self) -> ProxyControl: ...


class ClusterObservation(Protocol):
    """Reads through the observer links, which no fault ever cuts."""

    @property
    def zk(self) -> ZkObserver: ...

    def state(self, topics: list[str] | None = None) -> ClusterState: ...

    def zookeeper_modes(self) -> dict[str, str | None]: ...

    def zookeeper_hosts(self) -> str: ...

    def observer_bootstrap(self) -> str: ...


class ZooKeeperAdmin(Protocol):
    """The znode writes of ZooKeeper-mode operations."""

    def create_znode(self, path: str, data: bytes) -> None:
        """Create ``path``; kazoo's NodeExistsError when it is there already."""
        ...

    def delete_znode(self, path: str) -> None:
        """Delete ``path``; kazoo's NoNodeError when it is gone already."""
        ...


class ClusterControl(NodeControl, NetworkControl, ClusterObservation, ZooKeeperAdmin, Protocol):
    """Everything a fault may use: the cluster as the nemesis sees it."""
