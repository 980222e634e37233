"""Running one cluster: its lifecycle, addresses, observation and node control.

A :class:`Cluster` turns a :class:`~topologies.model.Topology` into running containers
on a network of their own (testcontainers-python creates them; its reaper is switched
off because its image cannot be pulled everywhere, and :mod:`harness.cluster.resources` owns
cleanup instead). Start order follows the fabric: Toxiproxy first (so Docker assigns
the 127.0.0.1 ports that brokers must advertise), then the metadata quorum, then brokers.

``Cluster`` is the one object the rest of the project holds (and what faults see as a
:class:`~harness.cluster.control.ClusterControl`); it says *when* things happen - start
and close, the start order and its waits, the one broker-restart policy - and leaves
each *how* to a part with one job:

- :mod:`harness.cluster.nodes` builds, starts and finds the containers and knows the
  ports published to the host;
- :mod:`harness.cluster.health` holds the health rules (and :class:`HealthReport`,
  re-exported here because callers import it from this module);
- :mod:`harness.cluster.topics` creates topics through the harness's AdminClient;
- :mod:`harness.cluster.metadata` is the metadata mode (ZooKeeper): its quorum's nodes,
  their health, where the cluster state is read, when a killed broker may start again.

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
from harness.cluster.client_containers import ClientContainers
from harness.cluster.disks import ClusterDisks
from harness.cluster.engine import ensure_engine, use_own_reaper
from harness.cluster.fabric import Fabric, LinkKind, plan_fabric
from harness.cluster.health import HealthReport, assess_health
from harness.cluster.images import ImageSet, ensure_images, ensure_kafka
from harness.cluster.metadata import MetadataMode, metadata_mode
from harness.cluster.metadata.zookeeper import ZooKeeperMode
from harness.cluster.node_config import format_value
from harness.cluster.node_disks import NodeDisks
from harness.cluster.nodes import STOP_GRACE_S, Nodes
from harness.cluster.proxies import ProxyControl
from harness.cluster.resources import RunIdentity
from harness.cluster.state import ClusterState, PartitionState
from harness.cluster.topics import TopicAdmin
from harness.cluster.versions import DEFAULT_VERSION, check_mode, release
from harness.cluster.waiting import CLUSTER_SETTLING, wait_until_clear
from harness.cluster.zkstate import ZkObserver
from harness.errors import ChaosError
from topologies.model import SettingValue, Topology

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


class Cluster:
    """A running Kafka cluster spread over availability zones."""

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
        check_mode(self.release, topology.metadata)  # before anything starts
        self.identity = identity or RunIdentity(resources.new_run_id())
        self.fabric: Fabric = plan_fabric(topology)
        self.host_port_base = host_port_base
        self.progress = progress
        self._docker = docker_client
        self._nodes = Nodes(topology, self.fabric, self.identity, self.release, host_port_base)
        self._volumes = NodeDisks(self.identity)
        self._cluster_disks = ClusterDisks(self, self._volumes)
        self._client_containers = ClientContainers(lambda: self.docker, self.identity, kafka_version,
                                                   progress)
        self._topics = TopicAdmin(topology, self.identity.run_id, self)
        self.metadata: MetadataMode = metadata_mode(self)
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
            self.metadata.start_quorum(timeout_s)
            for broker in self.topology.brokers:
                self._nodes.start_broker(broker.broker_id,
                                         self.create_volume(broker.name, self.topology.broker_disk_mb),
                                         self.metadata.broker_settings(broker))
            self.wait_healthy(timeout_s)
        except BaseException:
            self.close()
            raise
        self.started_at = time.monotonic() - started
        self.progress(f"cluster {self.run_id} healthy in {self.started_at:.1f} s")
        return self

    def close(self) -> None:
        """Remove everything this run created; safe to call more than once."""
        with contextlib.suppress(Exception):
            self.metadata.close()
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
    def nodes(self) -> Nodes:
        """The containers (for the metadata mode, which starts its quorum's own)."""
        return self._nodes

    def create_volume(self, node: str, size_mb: int | None = None) -> str:
        """A new data volume for ``node``, labelled with the run (of ``size_mb`` if given)."""
        assert self.images is not None
        return self._volumes.create_volume(self.docker, node, self.images.kafka, size_mb)

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
        """How long a broker killed without a word stays registered: in ZooKeeper mode
        its ZooKeeper session timeout."""
        return self.metadata.registration_timeout_s

    def container(self, node: str) -> Container:
        """The Docker container of a node (``kafka-0``, ``zk-a``, ``toxiproxy``)."""
        return self._nodes.container(node)

    def node_status(self, node: str) -> str:
        return self._nodes.node_status(node)

    def signal_node(self, node: str, signal: str) -> None:
        """Send ``signal`` to the node's process (its container's main process)."""
        self._nodes.signal_node(node, signal)

    def stopped_nodes(self) -> frozenset[str]:
        """The nodes whose process the harness stopped (SIGSTOP) and has not resumed."""
        return frozenset(self._nodes.stopped)

    def node_log(self, node: str, lines: int = 200) -> str:
        """The last ``lines`` lines of the node's output (its container's log)."""
        return bytes(self.container(node).logs(tail=lines)).decode(errors="replace")

    # -- the nodes' disks (harness.cluster.disks) ------------------------------------------
    @property
    def disks(self) -> ClusterDisks:
        """The nodes' data directories as disks: filled, freed, listed, cut back, and the
        sync journal of what each node made durable."""
        return self._cluster_disks

    # -- clients in containers (harness.cluster.client_containers) -------------------------
    @property
    def client_containers(self) -> ClientContainers:
        """Containers for clients that do not run in the harness process (the Java client)."""
        return self._client_containers

    # -- ZooKeeper mode's own operations (harness.cluster.metadata.zookeeper) --------------
    @property
    def zookeeper(self) -> ZooKeeperMode:
        """The ZooKeeper ensemble, for ZooKeeper-only faults (refused in another mode)."""
        return self.metadata.zookeeper()

    @property
    def zk(self) -> ZkObserver:
        """The cluster's ZooKeeper client (ZooKeeper mode only)."""
        return self.zookeeper.observer

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

    # -- observation ---------------------------------------------------------------------
    def state(self, topics: list[str] | None = None) -> ClusterState:
        """The cluster state, read where the metadata mode keeps it."""
        return self.metadata.reader.snapshot(topics)

    def live_brokers(self) -> tuple[int, ...]:
        """The brokers registered now."""
        return self.metadata.reader.live_brokers()

    def topic_state(self, topic: str) -> list[PartitionState]:
        return self.metadata.reader.topic_state(topic)

    def broker_view(self, broker_id: int, topics: list[str] | None = None) -> BrokerView:
        """Broker ``broker_id``'s own metadata (raises OSError when it does not answer)."""
        return broker_view(self.observer_address(f"kafka-{broker_id}"), topics)

    def quorum_roles(self) -> dict[str, str | None]:
        """Each metadata quorum node's role (a ZooKeeper node's mode)."""
        return self.metadata.quorum_roles()

    @property
    def quorum_nodes(self) -> tuple[str, ...]:
        """The nodes that hold the metadata besides the brokers (the ZooKeeper ensemble)."""
        return self.metadata.quorum_nodes

    def quorum_problems(self) -> list[tuple[str, str | None]]:
        return self.metadata.quorum_problems()

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
        time. The metadata quorum comes first: a broker can only register once it serves.
        """
        started = time.monotonic()
        self.proxies.reset()
        order = ["toxiproxy", *self.metadata.quorum_nodes, *(b.name for b in self.topology.brokers)]

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
        start brokers here - is to *wait until the dead broker's registration has
        expired, then start it*: in ZooKeeper mode a broker killed with SIGKILL leaves its
        ephemeral ``/brokers/ids/<id>`` behind until its session times out, and one
        started before that retries for up to its session timeout and exits with
        NodeExistsException ("node already exists and owner ... does not match current
        session");
        :meth:`~harness.cluster.metadata.zookeeper.ZooKeeperMode.registration_holder`
        says why the harness waits instead of deleting the znode. The wait is bounded by
        the mode's registration expiry bound (and by ``timeout_s``); past that the
        registration is not expiring, the broker would not register, and
        ClusterUnhealthy says what still holds it.
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

    def stop_node(self, node: str, grace_s: float = STOP_GRACE_S) -> None:
        """Stop a node cleanly, as an operator's roll does: SIGTERM (a broker's controlled
        shutdown hands its leaderships on first), SIGKILL only after ``grace_s``."""
        self.container(node).stop(timeout=int(grace_s))
        self._nodes.stopped.discard(node)

    def release_image(self, version: str) -> str:
        """The Kafka image of ``version``, built now if missing (an upgrade's target)."""
        assert self.images is not None
        return ensure_kafka(self.docker, version, self.images.base, self.progress)

    def upgrade_node(self, node: str, version: str, grace_s: float = STOP_GRACE_S) -> None:
        """Stop ``node`` cleanly and start it on Kafka ``version``, with its identity, data
        and configuration: one step of a rolling upgrade."""
        image = self.release_image(version)
        self.stop_node(node, grace_s)
        self._nodes.change_image(node, image)

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
        """Until nothing holds ``broker_id``'s old registration; the seconds waited.

        Bounded by the mode's registration expiry bound as well as by ``timeout_s``: a
        registration that outlives that is not going to expire.
        """
        bound = min(timeout_s, self.metadata.registration_expiry_bound_s)
        return wait_until_clear(lambda: self.metadata.registration_holder(broker_id), bound,
                                f"broker {broker_id}'s old registration to expire",
                                transient=CLUSTER_SETTLING)

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
        """Create a topic and wait until the metadata shows a leader and full ISR everywhere."""
        self._topics.create_topic(name, partitions, replication_factor, config, assignment, timeout_s)

    def describe(self) -> dict[str, Any]:
        """What ran: version, topology, settings and addresses, for the run record."""
        return {
            "run_id": self.run_id,
            "kafka_version": self.kafka_version,
            "metadata": self.metadata.describe(),
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
