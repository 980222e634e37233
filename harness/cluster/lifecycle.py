"""Running one cluster: its lifecycle, addresses, observation and node control.

A :class:`Cluster` turns a :class:`~topologies.model.Topology` into running containers
on a network of their own (testcontainers-python creates them; its reaper is switched
off because its image cannot be pulled everywhere, and :mod:`harness.cluster.resources` owns
cleanup instead). Start order follows the fabric: Toxiproxy first (so Docker assigns
the 127.0.0.1 ports that brokers must advertise), then ZooKeeper, then brokers.

``Cluster`` is the one object the rest of the project holds (and what faults see as a
:class:`~harness.cluster.control.ClusterControl`); it says *when* things happen - start
and close, the start order and its waits, the one broker-restart policy - and leaves
each *how* to a part with one job:

- :mod:`harness.cluster.nodes` builds, starts and finds the containers and knows the
  ports published to the host;
- :mod:`harness.cluster.health` holds the health rules (and :class:`HealthReport`,
  re-exported here because callers import it from this module);
- :mod:`harness.cluster.topics` creates topics through the harness's AdminClient.

Nodes keep their identity across restarts: a broker is one container whose data
directory lives in the container's own filesystem, so kill/start brings back the same
broker id, address and log.
"""

from __future__ import annotations

import atexit
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import docker
from confluent_kafka.admin import AdminClient
from docker.models.containers import Container

from harness.cluster import resources
from harness.cluster.broker_metadata import BrokerView, broker_view
from harness.cluster.engine import ensure_engine, use_own_reaper
from harness.cluster.fabric import Fabric, LinkKind, plan_fabric
from harness.cluster.health import HealthReport, assess_health, zookeeper_serving
from harness.cluster.images import ImageSet, ensure_images
from harness.cluster.node_config import KAFKA_DATA_DIR, ZK_DATA_DIR, format_value
from harness.cluster.node_disks import NodeDisks
from harness.cluster.nodes import Nodes
from harness.cluster.proxies import ProxyControl
from harness.cluster.resources import RunIdentity
from harness.cluster.state import ClusterState
from harness.cluster.topics import TopicAdmin
from harness.cluster.versions import DEFAULT_VERSION, release
from harness.cluster.waiting import CLUSTER_SETTLING, wait_until_clear
from harness.cluster.zkstate import ZkObserver, zookeeper_mode
from harness.errors import ChaosError
from topologies.model import SettingValue, Topology

Progress = Callable[[str], None]
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


def _quiet(_: str) -> None:
    return None


class Cluster:
    """A running ZooKeeper-mode Kafka cluster spread over availability zones."""

    def __init__(
        self,
        topology: Topology,
        kafka_version: str = DEFAULT_VERSION,
        *,
        identity: RunIdentity | None = None,
        host_port_base: int | None = None,
        progress: Progress = _quiet,
        docker_client: docker.DockerClient | None = None,
    ) -> None:
        self.topology = topology
        self.kafka_version = kafka_version
        self.release = release(kafka_version)
        self.identity = identity or RunIdentity(resources.new_run_id())
        self.fabric: Fabric = plan_fabric(topology)
        self.host_port_base = host_port_base
        self.progress = progress
        self._docker = docker_client
        self._nodes = Nodes(topology, self.fabric, self.identity, self.release, host_port_base)
        self._disks = NodeDisks(self.identity)
        self._topics = TopicAdmin(topology, self.identity.run_id, self)
        self._zk: ZkObserver | None = None
        self.started_at: float | None = None

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.identity.run_id

    @property
    def docker(self) -> docker.DockerClient:
        if self._docker is None:
            self._docker = ensure_engine()
        return self._docker

    def start(self, timeout_s: float = 120.0) -> Cluster:
        """Build what is missing, start every node, and wait for full health."""
        reaped = resources.reap_stale(self.docker)
        if reaped:
            self.progress(f"reaped leftovers of killed run(s): {', '.join(reaped)}")
        self._nodes.check_ports_free()
        use_own_reaper()
        self.images = ensure_images(self.docker, self.kafka_version, self.progress)
        started = time.monotonic()
        # A safety net for exits that skip our callers' finally blocks (a second Ctrl-C,
        # an unhandled error in a CLI): remove this run's resources at interpreter exit.
        atexit.register(self.close)
        try:
            self.progress(f"starting cluster {self.run_id} (Kafka {self.kafka_version})")
            self._nodes.create_network()
            self._nodes.start_toxiproxy()
            for zk in self.topology.zookeepers:
                volume = self._disks.create_volume(self.docker, zk.name, self.images.kafka)
                self._nodes.start_zookeeper(zk.name, volume)
            # Brokers give up if ZooKeeper does not answer within their connection
            # timeout, so the ensemble must serve before any broker starts.
            wait_until_clear(self._zookeeper_serving, timeout_s, "a ZooKeeper quorum")
            for broker in self.topology.brokers:
                volume = self._disks.create_volume(self.docker, broker.name, self.images.kafka,
                                                   self.topology.broker_disk_mb)
                self._nodes.start_broker(broker.broker_id, volume)
            self.wait_healthy(timeout_s)
        except BaseException:
            self.close()
            raise
        self.started_at = time.monotonic() - started
        self.progress(f"cluster {self.run_id} healthy in {self.started_at:.1f} s")
        return self

    def close(self) -> None:
        """Remove everything this run created; safe to call more than once."""
        if self._zk is not None:
            with contextlib.suppress(Exception):
                self._zk.close()
            self._zk = None
        self._topics.client = None
        if self.identity.keep:
            return
        resources.remove_run(self.docker, self.run_id)
        self._nodes.forget()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- containers (harness.cluster.nodes) ----------------------------------------------
    @property
    def images(self) -> ImageSet | None:
        """The images the nodes run, once :meth:`start` has built or found them."""
        return self._nodes.images

    @images.setter
    def images(self, images: ImageSet | None) -> None:
        self._nodes.images = images

    @property
    def host_ports(self) -> dict[str, int]:
        """Link name (or ``toxiproxy-api``) -> the 127.0.0.1 port Docker published it on."""
        return self._nodes.host_ports

    def broker_settings(self) -> dict[str, SettingValue]:
        """The broker settings in force: the topology's plus the release's own."""
        return {**self.topology.broker_settings, **self.release.extra_broker_settings}

    @property
    def session_timeout_s(self) -> float:
        """The brokers' ZooKeeper session timeout: how long a dead broker stays registered."""
        settings = self.broker_settings()
        return int(settings.get("zookeeper.session.timeout.ms", DEFAULT_SESSION_TIMEOUT_MS)) / 1000

    def container(self, node: str) -> Container:
        """The Docker container of a node (``kafka-0``, ``zk-a``, ``toxiproxy``)."""
        return self._nodes.container(node)

    def node_status(self, node: str) -> str:
        return self._nodes.node_status(node)

    def signal_node(self, node: str, signal: str) -> None:
        """Send ``signal`` to the node's process (its container's main process)."""
        self._nodes.signal_node(node, signal)

    def start_zookeeper_from_logs(self, node: str) -> None:
        """Start a stopped ZooKeeper node that holds transaction logs and no snapshot:
        with ``snapshot.trust.empty`` it replays its logs from an empty tree instead of
        refusing (ZooKeeper's escape hatch for that state). Its configuration keeps the
        setting until :meth:`reset_zookeeper_config`."""
        self._nodes.write_zoo_cfg(node, {"snapshot.trust.empty": "true"})
        self.container(node).start()

    def reset_zookeeper_config(self, node: str) -> None:
        """Give a ZooKeeper node its topology's configuration back (read at its next start)."""
        self._nodes.write_zoo_cfg(node)

    def stopped_nodes(self) -> frozenset[str]:
        """The nodes whose process the harness stopped (SIGSTOP) and has not resumed."""
        return frozenset(self._nodes.stopped)

    def node_log(self, node: str, lines: int = 200) -> str:
        """The last ``lines`` lines of the node's output (its container's log)."""
        return bytes(self.container(node).logs(tail=lines)).decode(errors="replace")

    # -- a node's disk (harness.cluster.node_disks) ---------------------------------------
    def data_dir_of(self, node: str) -> str:
        """Where the node keeps its data: a broker's log directory or ZooKeeper's dataDir."""
        return KAFKA_DATA_DIR if self.broker_id_of(node) is not None else ZK_DATA_DIR

    def node_journal(self, node: str) -> list[str]:
        """The node's sync journal: what its JVM made durable, line by line."""
        return self._disks.journal(self.container(node))

    def node_data_files(self, node: str) -> dict[str, int]:
        """Every file of the node's data directory and its size (path -> bytes)."""
        assert self.images is not None
        return self._disks.files(self.docker, self.images.kafka, node, self.data_dir_of(node))

    def fill_disk(self, node: str) -> tuple[int, int]:
        """Fill a broker's disk: (bytes written, bytes left free)."""
        self._sized_disk(node)
        assert self.images is not None
        return self._disks.fill(self.docker, self.images.kafka, node, self.data_dir_of(node))

    def free_disk(self, node: str) -> None:
        """Remove what :meth:`fill_disk` wrote."""
        self._sized_disk(node)
        assert self.images is not None
        self._disks.free(self.docker, self.images.kafka, node, self.data_dir_of(node))

    def _sized_disk(self, node: str) -> None:
        if self.broker_id_of(node) is None or self.topology.broker_disk_mb is None:
            raise ChaosError(f"{node} has no disk of its own to fill: only brokers do, in a topology with "
                             "broker_disk_mb")

    def cut_node_files(self, node: str, sizes: dict[str, int | None]) -> None:
        """Cut each of the node's data files to its size, or remove it (None). Only while
        the node is down: a running JVM would write on past the cut."""
        if self.node_status(node) == "running":
            raise ChaosError(f"refusing to cut the files of {node} while it runs")
        assert self.images is not None
        self._disks.cut(self.docker, self.images.kafka, node, self.data_dir_of(node), sizes)

    # -- ZooKeeper-mode operations (harness.cluster.control.ZooKeeperAdmin) ---------------
    def create_znode(self, path: str, data: bytes) -> None:
        self.zk.client.create(path, data)

    def delete_znode(self, path: str) -> None:
        self.zk.client.delete(path)

    # -- addresses -----------------------------------------------------------------------
    @property
    def proxies(self) -> ProxyControl:
        if self._nodes.proxies is None:
            raise ChaosError("the cluster is not started")
        return self._nodes.proxies

    def bootstrap_servers(self, zone: str) -> str:
        """Bootstrap list for a client placed in ``zone`` (its zone's proxies)."""
        links = self.fabric.clients_of(zone)
        if not links:
            raise ChaosError(f"unknown zone {zone!r}; zones are {', '.join(self.topology.zones)}")
        return ",".join(f"127.0.0.1:{self.host_ports[link.name]}" for link in links)

    def observer_address(self, node: str) -> str:
        return f"127.0.0.1:{self.host_ports[self.fabric.observer_of(node).name]}"

    def observer_bootstrap(self) -> str:
        return ",".join(self.observer_address(b.name) for b in self.topology.brokers)

    def zookeeper_hosts(self) -> str:
        return ",".join(self.observer_address(z.name) for z in self.topology.zookeepers)

    # -- observation ---------------------------------------------------------------------
    @property
    def zk(self) -> ZkObserver:
        if self._zk is None:
            self._zk = ZkObserver(self.zookeeper_hosts(), reconnect_grace_s=OBSERVER_RECONNECT_GRACE_S)
        return self._zk

    def state(self, topics: list[str] | None = None) -> ClusterState:
        return self.zk.snapshot(topics)

    def broker_view(self, broker_id: int, topics: list[str] | None = None) -> BrokerView:
        """Broker ``broker_id``'s own metadata (raises OSError when it does not answer)."""
        return broker_view(self.observer_address(f"kafka-{broker_id}"), topics)

    def zookeeper_modes(self) -> dict[str, str | None]:
        return {
            z.name: zookeeper_mode(self.observer_address(z.name)) for z in self.topology.zookeepers
        }

    @property
    def admin(self) -> AdminClient:
        return self._topics.admin

    @property
    def _admin(self) -> AdminClient | None:
        """The AdminClient if built; scenario helpers set ``cluster._admin = None`` to drop it."""
        return self._topics.client

    @_admin.setter
    def _admin(self, client: AdminClient | None) -> None:
        self._topics.client = client

    # -- health --------------------------------------------------------------------------
    def health(self) -> HealthReport:
        """Every node running, every proxy clean, quorum, all brokers, full ISRs."""
        return assess_health(self.topology, self._nodes.statuses(), self)

    def _zookeeper_serving(self) -> list[str]:
        return zookeeper_serving(self.zookeeper_modes())

    def wait_healthy(self, timeout_s: float = 60.0) -> float:
        """Until :meth:`health` finds nothing wrong; the seconds waited.

        Raises ClusterUnhealthy (a :class:`~harness.cluster.waiting.WaitTimeout`) listing
        what was still wrong at the last look.
        """
        return wait_until_clear(lambda: self.health().problems, timeout_s,
                                f"cluster {self.run_id} to be healthy", interval_s=0.25,
                                transient=CLUSTER_SETTLING)

    def restore_health(self, timeout_s: float = 90.0) -> float:
        """Undo every fault: nodes running, links clean, ISRs full. Returns seconds taken.

        Every look starts whatever node is down before checking health: a broker can
        exit at start-up (its old registration was still there, ZooKeeper had no quorum
        yet), and a SIGSTOPped JVM looks "running" to Docker, so it gets a SIGCONT each
        time. ZooKeeper comes first: a broker can only register once the ensemble serves.
        """
        started = time.monotonic()
        self.proxies.reset()
        order = ["toxiproxy", *(z.name for z in self.topology.zookeepers),
                 *(b.name for b in self.topology.brokers)]

        def started_then_checked() -> list[str]:
            left = max(1.0, timeout_s - (time.monotonic() - started))
            for name in order:
                self.start_node(name, timeout_s=left)
            return self.health().problems

        # Not every 0.25 s like wait_healthy: each look also asks Docker about every node.
        return wait_until_clear(started_then_checked, timeout_s, f"cluster {self.run_id} to recover",
                                interval_s=0.5, transient=CLUSTER_SETTLING)

    # -- node control --------------------------------------------------------------------
    def start_node(self, node: str, timeout_s: float = 60.0) -> bool:
        """Bring a stopped or paused node back, with its identity, address and data.

        Returns True when the node was down (stopped or paused) and has been started;
        a running node only gets a SIGCONT (a SIGSTOPped JVM still looks "running").

        The one broker-restart policy of the project - faults, healing and recovery all
        start brokers here - is to *wait until ZooKeeper has expired the dead broker's
        session, then start it*. A broker killed with SIGKILL leaves its ephemeral
        ``/brokers/ids/<id>`` behind until its session times out; a broker started before
        that finds the id held by a session that is not its own, retries for up to its
        session timeout, and exits with NodeExistsException ("node already exists and
        owner ... does not match current session"). Deleting the znode instead would be
        faster, but it deletes a node that a ZooKeeper session owns, which no operator
        and no Kafka tool does, and it hides what a real restart of a crashed broker
        goes through: the controller seeing the death only when the session expires.
        Kafka's own hard-bounce system test waits for the deregistration for the same
        reason. The wait is bounded by ``zookeeper.session.timeout.ms`` plus
        :data:`SESSION_EXPIRY_MARGIN_S` (and by ``timeout_s``); past that the session is
        not expiring, the broker would not register, and ClusterUnhealthy says which
        session still holds the id.
        """
        container = self.container(node)
        if container.status == "paused":
            container.unpause()
            return True
        if container.status == "running":
            container.kill(signal="SIGCONT")  # harmless when not stopped
            self._nodes.stopped.discard(node)
            return False
        broker = self.broker_id_of(node)
        if broker is not None:
            self.wait_registration_expired(broker, timeout_s)
        container.start()
        self._nodes.stopped.discard(node)  # a new process
        return True

    def restart_node(self, node: str, timeout_s: float = 60.0) -> None:
        """Kill a node's process and start it again, with its identity and data.

        Recovery's first escalation when healing leaves a node wedged (a replica that
        never rejoins the ISR, a broker that does not re-register): a fresh JVM re-reads
        its log and ZooKeeper state where the old one got stuck. SIGKILL, not SIGTERM,
        because a controlled shutdown can itself wait on the cluster that is unhealthy.
        Like every start, it waits for ZooKeeper to expire the killed broker's session
        (:meth:`start_node`), so restarting a registered broker takes a session timeout.
        """
        container = self.container(node)
        if container.status == "paused":
            container.unpause()
        if container.status in ("running", "paused", "restarting"):
            container.kill(signal="SIGKILL")
            self._nodes.stopped.discard(node)
            container.wait(timeout=max(1, int(timeout_s)))
        self.start_node(node, timeout_s)

    def wait_registration_expired(self, broker_id: int, timeout_s: float) -> float:
        """Until no ZooKeeper session holds ``/brokers/ids/<broker_id>``; the seconds waited.

        Bounded by the session timeout plus :data:`SESSION_EXPIRY_MARGIN_S` as well as by
        ``timeout_s``: a registration that outlives that is not going to expire.
        """
        bound = min(timeout_s, self.session_timeout_s + SESSION_EXPIRY_MARGIN_S)
        return wait_until_clear(lambda: self._registration(broker_id), bound,
                                f"ZooKeeper to expire broker {broker_id}'s session",
                                transient=CLUSTER_SETTLING)

    def _registration(self, broker_id: int) -> str | None:
        """Which session holds ``/brokers/ids/<broker_id>``, or None when nobody does."""
        path = f"/brokers/ids/{broker_id}"
        owner = self.zk.ephemeral_owner(path)
        return None if owner is None else f"{path} still held by session 0x{owner:x}"

    def broker_id_of(self, node: str) -> int | None:
        """The broker id of ``node``, or None when it is not a broker."""
        for broker in self.topology.brokers:
            if broker.name == node:
                return broker.broker_id
        return None

    # -- topics --------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        config: dict[str, SettingValue] | None = None,
        assignment: dict[int, list[int]] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        """Create a topic and wait until ZooKeeper shows a leader and full ISR everywhere."""
        self._topics.create_topic(name, partitions, replication_factor, config, assignment, timeout_s)

    def describe(self) -> dict[str, Any]:
        """What ran: version, topology, settings and addresses, for the run record."""
        return {
            "run_id": self.run_id,
            "kafka_version": self.kafka_version,
            "topology": self.topology.describe(),
            "broker_settings": {k: format_value(v) for k, v in self.broker_settings().items()},
            "images": None if self.images is None else vars(self.images),
            "links": [
                {
                    "name": link.name,
                    "kind": str(link.kind),
                    "source": link.source,
                    "destination": link.destination,
                }
                for link in self.fabric.links
            ],
        }


@contextlib.contextmanager
def running_cluster(
    topology: Topology, kafka_version: str = DEFAULT_VERSION, **kwargs: Any
) -> Iterator[Cluster]:
    """``with running_cluster(topology) as cluster:`` - started, and always removed."""
    cluster = Cluster(topology, kafka_version, **kwargs)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


__all__ = ["Cluster", "HealthReport", "LinkKind", "running_cluster"]
