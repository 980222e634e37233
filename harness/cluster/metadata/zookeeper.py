"""ZooKeeper mode: the cluster's metadata in a ZooKeeper ensemble.

The ensemble starts before any broker (a broker gives up when ZooKeeper does not answer
within its connection timeout); it serves when every node is a leader or a follower, as
its ``srvr`` four-letter word says; the cluster state is read from the znodes
(:class:`~harness.cluster.zkstate.ZkObserver`); and a broker killed without a word keeps
its ephemeral ``/brokers/ids/<id>`` until ZooKeeper expires its session, so it may start
again only after that (:meth:`ZooKeeperMode.registration_holder`). The ZooKeeper-only
operations of faults (a znode written, a node started from its logs) live here too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import NodeExistsError

from harness.cluster.metadata.base import QuorumHost, StateReader
from harness.cluster.node_config import ZK_DATA_DIR, MetadataSettings, zookeeper_broker_settings
from harness.cluster.waiting import wait_until_clear
from harness.cluster.zkstate import ZkObserver, zookeeper_mode
from harness.errors import ChaosError, describe_error
from topologies.model import BrokerNode

if TYPE_CHECKING:
    from harness.cluster.metadata.migration import MigrationMode

# Kafka's zookeeper.session.timeout.ms when the topology does not set it (2.5 and later).
DEFAULT_SESSION_TIMEOUT_MS = 18000
# Beyond the session timeout, a dead broker's session can outlive it by ZooKeeper's tick
# (sessions expire in tick-sized buckets), by a leader election (a new ZooKeeper leader
# gives every session a fresh timeout), and by a loaded two-core machine.
SESSION_EXPIRY_MARGIN_S = 15.0
# How long the cluster's ZooKeeper observer rides out a dropped connection: its own
# session timeout (ZkObserver's default), time to reach another server. Longer, and a
# real loss of quorum would hold each read that long before saying so.
OBSERVER_RECONNECT_GRACE_S = 10.0
# The modes of a ZooKeeper node that is part of a serving quorum.
SERVING_MODES = ("leader", "follower")
# A frozen ZooKeeper node costs a sampler's roles thread this much, never its state thread.
ROLE_READ_TIMEOUT_S = 0.5

REASSIGN_PATH = "/admin/reassign_partitions"
MAX_ZNODES = 5000
# A ZooKeeper without quorum answers nothing, and kazoo's plain calls wait for it forever:
# each read gets this long, the whole dump ZNODE_DUMP_S, so diagnostics always finish.
ZNODE_READ_S = 5.0
ZNODE_DUMP_S = 30.0
ZK_ROOTS = ("/controller", "/controller_epoch", "/brokers/ids", "/brokers/topics",
            "/admin", "/isr_change_notification", "/log_dir_event_notification")


class ZooKeeperMode:
    """The metadata in the topology's ZooKeeper ensemble (module doc)."""

    name = "zookeeper"

    def __init__(self, host: QuorumHost) -> None:
        self._host = host
        self._observer: ZkObserver | None = None

    # -- the quorum ----------------------------------------------------------------------
    @property
    def quorum_nodes(self) -> tuple[str, ...]:
        return tuple(z.name for z in self._host.topology.zookeepers)

    def start_quorum(self, timeout_s: float) -> None:
        for name in self.quorum_nodes:
            self._host.nodes.start_zookeeper(name, self._host.create_volume(name))
        wait_until_clear(lambda: [p for p, _ in self.quorum_problems()], timeout_s, "a ZooKeeper quorum")

    def broker_settings(self, broker: BrokerNode) -> MetadataSettings:
        return zookeeper_broker_settings(self._host.fabric, broker)

    def quorum_roles(self) -> dict[str, str | None]:
        return {name: zookeeper_mode(self._host.observer_address(name)) for name in self.quorum_nodes}

    def quorum_problems(self) -> list[tuple[str, str | None]]:
        return serving_problems(self.quorum_roles())

    def role_readers(self) -> dict[str, Callable[[], str | None]]:
        def reader(address: str) -> Callable[[], str | None]:
            return lambda: zookeeper_mode(address, timeout_s=ROLE_READ_TIMEOUT_S)

        return {name: reader(self._host.observer_address(name)) for name in self.quorum_nodes}

    def data_dir(self, node: str) -> str | None:
        return ZK_DATA_DIR if node in self.quorum_nodes else None

    # -- the state -----------------------------------------------------------------------
    def hosts(self) -> str:
        """The ensemble's client addresses through the observer links."""
        return ",".join(self._host.observer_address(name) for name in self.quorum_nodes)

    @property
    def observer(self) -> ZkObserver:
        """The cluster's own ZooKeeper client, which faults and health read through."""
        if self._observer is None:
            self._observer = ZkObserver(self.hosts(), reconnect_grace_s=OBSERVER_RECONNECT_GRACE_S)
        return self._observer

    @property
    def reader(self) -> StateReader:
        return self.observer

    def open_reader(self) -> StateReader:
        return ZkObserver(self.hosts())

    def diagnostics(self) -> tuple[str, dict[str, Any]]:
        try:
            client = self.observer.client
        except Exception as err:
            return "znodes.json", {"znodes": {}, "errors": {"/": f"ZooKeeper unreachable: {err}"}}
        return "znodes.json", dump_znodes(client)

    # -- brokers' registrations ------------------------------------------------------------
    @property
    def registration_timeout_s(self) -> float:
        """The brokers' ZooKeeper session timeout."""
        settings = self._host.broker_settings()
        return int(settings.get("zookeeper.session.timeout.ms", DEFAULT_SESSION_TIMEOUT_MS)) / 1000

    @property
    def registration_expiry_bound_s(self) -> float:
        return self.registration_timeout_s + SESSION_EXPIRY_MARGIN_S

    def registration_holder(self, broker_id: int) -> str | None:
        """Which session holds ``/brokers/ids/<broker_id>``, or None when nobody does.

        A broker started while its old session still holds the znode retries for up to
        its session timeout and exits with NodeExistsException; deleting the znode
        instead would delete what a session owns, which no operator does, and would hide
        what a real restart goes through (the controller seeing the death only when the
        session expires). Kafka's hard-bounce system test waits for the same thing."""
        path = f"/brokers/ids/{broker_id}"
        owner = self.observer.ephemeral_owner(path)
        return None if owner is None else f"{path} still held by session 0x{owner:x}"

    # -- replica moves ---------------------------------------------------------------------
    def request_reassignment(self, topic: str, partition: int, replicas: list[int]) -> None:
        """Write the move to /admin/reassign_partitions, which a ZooKeeper-mode controller
        (2.4 through 3.9) executes like the AlterPartitionReassignments API; confluent-kafka
        has no such call."""
        move = {"topic": topic, "partition": partition, "replicas": replicas}
        try:
            request = json.dumps({"version": 1, "partitions": [move]})
            self.observer.client.create(REASSIGN_PATH, request.encode())
        except NodeExistsError:
            raise ChaosError(f"a partition reassignment is already in progress ({REASSIGN_PATH} "
                             "exists)") from None

    def reassignment_pending(self) -> bool:
        return self.observer.pending_reassignment()

    # -- ZooKeeper-only operations ---------------------------------------------------------
    def zookeeper(self) -> ZooKeeperMode:
        return self

    def create_znode(self, path: str, data: bytes | None) -> None:
        """Create ``path`` (``data`` None: a znode with no data at all, as Kafka's own tools
        create a missing path); kazoo's NodeExistsError when it is there already."""
        self.observer.client.create(path, data)

    def delete_znode(self, path: str) -> None:
        """Delete ``path``; kazoo's NoNodeError when it is gone already."""
        self.observer.client.delete(path)

    def start_from_logs(self, node: str) -> None:
        """Start a stopped ZooKeeper node that holds transaction logs and no snapshot:
        with ``snapshot.trust.empty`` it replays its logs from an empty tree instead of
        refusing (ZooKeeper's escape hatch for that state). Its configuration keeps the
        setting until :meth:`reset_config`."""
        self._host.nodes.write_zoo_cfg(node, {"snapshot.trust.empty": "true"})
        self._host.nodes.container(node).start()

    def reset_config(self, node: str) -> None:
        """Give a ZooKeeper node its topology's configuration back (read at its next start)."""
        self._host.nodes.write_zoo_cfg(node)

    def migration(self) -> MigrationMode:
        raise ChaosError("this ZooKeeper-mode cluster is not migrating: a migration runs on a cluster "
                         "started from a migrating topology (topologies.model.migration_topology)")

    def address_lines(self) -> list[str]:
        return [f"ZooKeeper (observer): {self.hosts()}"]

    def describe(self) -> dict[str, Any]:
        return {"mode": self.name, "quorum": list(self.quorum_nodes)}

    def close(self) -> None:
        if self._observer is not None:
            try:
                self._observer.close()
            finally:
                self._observer = None


def serving_problems(modes: dict[str, str | None]) -> list[tuple[str, str | None]]:
    """What keeps the ensemble from serving: each node not a leader or follower."""
    return [(f"{name} not serving", name) for name, mode in modes.items() if mode not in SERVING_MODES]


# -- the znode dump of a failed test's diagnostics -------------------------------------------
def dump_znodes(client: Any, budget_s: float = ZNODE_DUMP_S) -> dict[str, Any]:
    """{path: data (JSON-decoded where it is JSON)} for Kafka's znodes, plus errors; what
    is not read within ``budget_s`` is named in the errors, never waited for."""
    found: dict[str, Any] = {}
    errors: dict[str, str] = {}
    deadline = time.monotonic() + budget_s
    for path in _walk(client, ZK_ROOTS, errors, deadline):
        try:
            data, _ = _read(client.get_async(path), deadline)
        except Exception as err:
            errors[path] = describe_error(err)
            continue
        found[path] = _decode(data)
    return {"znodes": found, "errors": errors}


def _read(pending: Any, deadline: float) -> Any:
    """A kazoo async result, waited for at most ZNODE_READ_S and never past ``deadline``."""
    left = min(ZNODE_READ_S, deadline - time.monotonic())
    if left <= 0:
        raise TimeoutError("not read: the znode dump's time was up")
    return pending.get(timeout=left)


def _walk(client: Any, roots: tuple[str, ...], errors: dict[str, str], deadline: float) -> Iterator[str]:
    pending = list(roots)
    seen = 0
    while pending and seen < MAX_ZNODES:
        path = pending.pop(0)
        try:
            if _read(client.exists_async(path), deadline) is None:
                continue
            children = _read(client.get_children_async(path), deadline)
        except Exception as err:
            errors[path] = describe_error(err)
            continue
        seen += 1
        yield path
        pending.extend(f"{path.rstrip('/')}/{child}" for child in sorted(children))


def _decode(data: bytes | None) -> Any:
    if not data:
        return None
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
