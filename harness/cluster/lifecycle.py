"""Running one cluster: containers, the Toxiproxy fabric, health, and node control.

A :class:`Cluster` turns a :class:`~topologies.model.Topology` into running containers
on a network of their own (testcontainers-python creates them; its reaper is switched
off because its image cannot be pulled everywhere, and :mod:`harness.cluster.resources` owns
cleanup instead). Start order follows the fabric: Toxiproxy first (so Docker assigns
the 127.0.0.1 ports that brokers must advertise), then ZooKeeper, then brokers.

Nodes keep their identity across restarts: a broker is one container whose data
directory lives in the container's own filesystem, so kill/start brings back the same
broker id, address and log.
"""

from __future__ import annotations

import atexit
import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import docker
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from docker.models.containers import Container
from kazoo.exceptions import NoNodeError
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from harness.cluster import resources
from harness.cluster.broker_metadata import BrokerView, broker_view
from harness.cluster.engine import ensure_engine, use_own_reaper
from harness.cluster.fabric import TOXIPROXY_API_PORT, TOXIPROXY_HOST, Fabric, Link, LinkKind, plan_fabric
from harness.cluster.images import ImageSet, ensure_images
from harness.cluster.node_config import CONFIG_DIR, ZK_DATA_DIR, broker_properties, format_value, zoo_cfg
from harness.cluster.proxies import ProxyControl
from harness.cluster.resources import RunIdentity
from harness.cluster.versions import DEFAULT_VERSION, release
from harness.cluster.waiting import CLUSTER_SETTLING, Problems, wait_until_clear
from harness.cluster.zkstate import ClusterState, ZkObserver, zookeeper_mode
from harness.errors import ChaosError, PortInUse
from topologies.model import SettingValue, Topology

Progress = Callable[[str], None]
JVM_FLAGS = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties",
]
# Kafka's zookeeper.session.timeout.ms when the topology does not set it (2.5 and later).
DEFAULT_SESSION_TIMEOUT_MS = 18000
# Beyond the session timeout, a dead broker's session can outlive it by ZooKeeper's tick
# (sessions expire in tick-sized buckets), by a leader election (a new ZooKeeper leader
# gives every session a fresh timeout), and by a loaded two-core machine.
SESSION_EXPIRY_MARGIN_S = 15.0


def _quiet(_: str) -> None:
    return None


@dataclass
class HealthReport:
    """Why a cluster is not fully healthy (empty ``problems`` means healthy).

    ``blocking`` names the nodes a problem points at (a stopped container, a broker
    missing from ``/brokers/ids``, a replica missing from an ISR, a ZooKeeper node out of
    the quorum), so that recovery can restart exactly those before it gives up on the
    cluster. A problem that points at no node (no controller, a damaged link) leaves it
    empty.
    """

    problems: list[str] = field(default_factory=list)
    blocking: set[str] = field(default_factory=set)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def add(self, problem: str, *nodes: str) -> None:
        self.problems.append(problem)
        self.blocking.update(nodes)


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
        self.images: ImageSet | None = None
        self.host_ports: dict[str, int] = {}
        self._network: Network | None = None
        self._containers: dict[str, DockerContainer] = {}
        self._proxies: ProxyControl | None = None
        self._zk: ZkObserver | None = None
        self._admin: AdminClient | None = None
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
        self._check_ports_free()
        use_own_reaper()
        self.images = ensure_images(self.docker, self.kafka_version, self.progress)
        started = time.monotonic()
        # A safety net for exits that skip our callers' finally blocks (a second Ctrl-C,
        # an unhandled error in a CLI): remove this run's resources at interpreter exit.
        atexit.register(self.close)
        try:
            self.progress(f"starting cluster {self.run_id} (Kafka {self.kafka_version})")
            self._network = Network(
                docker_network_kw={"labels": self.identity.labels("network")}
            ).create()
            self._start_toxiproxy()
            for zk in self.topology.zookeepers:
                self._start_zookeeper(zk.name)
            # Brokers give up if ZooKeeper does not answer within their connection
            # timeout, so the ensemble must serve before any broker starts.
            wait_until_clear(self._zookeeper_serving, timeout_s, "a ZooKeeper quorum")
            for broker in self.topology.brokers:
                self._start_broker(broker.broker_id)
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
        self._admin = None
        if self.identity.keep:
            return
        resources.remove_run(self.docker, self.run_id)
        self._containers.clear()
        self._network = None

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- containers ----------------------------------------------------------------------
    def _check_ports_free(self) -> None:
        if self.host_port_base is None:
            return
        for offset, link in enumerate([*self._published_links(), None]):
            port = self.host_port_base + offset
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError as err:
                    what = link.name if link else "the Toxiproxy API"
                    raise PortInUse(
                        f"port 127.0.0.1:{port} (for {what}) is already in use; choose another "
                        "port base or leave it unset to use free ports"
                    ) from err

    def _published_links(self) -> list[Link]:
        return [link for link in self.fabric.links if link.published]

    def _container(self, name: str, image: str, role: str) -> DockerContainer:
        assert self._network is not None
        return (
            DockerContainer(image)
            .with_name(self.identity.resource_name(name))
            .with_network(self._network)
            .with_network_aliases(name)
            .with_kwargs(labels=self.identity.labels(role), hostname=name)
        )

    def _start_toxiproxy(self) -> None:
        assert self.images is not None
        container = self._container(TOXIPROXY_HOST, self.images.toxiproxy, "toxiproxy")
        published = [*self._published_links(), None]
        for offset, link in enumerate(published):
            port = TOXIPROXY_API_PORT if link is None else link.listen_port
            host: tuple[str, int] | tuple[str] = ("127.0.0.1",)
            if self.host_port_base is not None:
                host = ("127.0.0.1", self.host_port_base + offset)
            # testcontainers' with_bind_ports cannot bind to one interface only, and every
            # published port must be on 127.0.0.1: give docker-py the binding directly.
            container.ports[f"{port}/tcp"] = host  # type: ignore[assignment]
        try:
            container.start()
        except docker.errors.APIError as err:
            if "address already in use" in str(err) or "port is already allocated" in str(err):
                raise PortInUse(
                    f"a port the run needs on 127.0.0.1 is already in use: {err}"
                ) from err
            raise
        self._containers[TOXIPROXY_HOST] = container
        for link in published:
            port = TOXIPROXY_API_PORT if link is None else link.listen_port
            host_port = int(container.get_exposed_port(port))
            self.host_ports["toxiproxy-api" if link is None else link.name] = host_port
        proxies = self._proxies = ProxyControl("127.0.0.1", self.host_ports["toxiproxy-api"])
        # The API answers a moment after the container starts: connections are refused until
        # then. populate returns None, which is "nothing wrong" once it went through.
        wait_until_clear(lambda: proxies.populate(self.fabric.links), 20,
                         "the Toxiproxy API to take the fabric's proxies", transient=(OSError,))

    def _java(self, heap_mb: int, main_class: str, config: str) -> list[str]:
        return [
            "java",
            f"-Xms{heap_mb}m",
            f"-Xmx{heap_mb}m",
            *JVM_FLAGS,
            "-cp",
            "/opt/kafka/libs/*",
            main_class,
            config,
        ]

    def _start_zookeeper(self, name: str) -> None:
        assert self.images is not None
        node = self.topology.zookeeper(name)
        container = (
            self._container(name, self.images.kafka, "zookeeper")
            .with_command(
                self._java(
                    self.topology.zookeeper_heap_mb,
                    "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                    f"{CONFIG_DIR}/zoo.cfg",
                )
            )
            .with_copy_into_container(zoo_cfg(self.fabric, node).encode(), f"{CONFIG_DIR}/zoo.cfg")
            .with_copy_into_container(f"{node.sid}\n".encode(), f"{ZK_DATA_DIR}/myid")
        )
        container.start()
        self._containers[name] = container

    def broker_settings(self) -> dict[str, SettingValue]:
        """The broker settings in force: the topology's plus the release's own."""
        return {**self.topology.broker_settings, **self.release.extra_broker_settings}

    @property
    def session_timeout_s(self) -> float:
        """The brokers' ZooKeeper session timeout: how long a dead broker stays registered."""
        settings = self.broker_settings()
        return int(settings.get("zookeeper.session.timeout.ms", DEFAULT_SESSION_TIMEOUT_MS)) / 1000

    def _start_broker(self, broker_id: int) -> None:
        assert self.images is not None
        broker = self.topology.broker(broker_id)
        properties = broker_properties(
            self.fabric, broker, self.host_ports, self.release.extra_broker_settings
        )
        container = (
            self._container(broker.name, self.images.kafka, "broker")
            .with_command(
                self._java(
                    self.topology.broker_heap_mb, "kafka.Kafka", f"{CONFIG_DIR}/server.properties"
                )
            )
            .with_copy_into_container(properties.encode(), f"{CONFIG_DIR}/server.properties")
        )
        container.start()
        self._containers[broker.name] = container

    def container(self, node: str) -> Container:
        """The Docker container of a node (``kafka-0``, ``zk-a``, ``toxiproxy``)."""
        if node not in self._containers:
            raise ChaosError(f"no node {node!r} in this cluster; nodes: {sorted(self._containers)}")
        wrapped = self._containers[node].get_wrapped_container()
        wrapped.reload()
        return wrapped

    def node_status(self, node: str) -> str:
        return str(self.container(node).status)

    def signal_node(self, node: str, signal: str) -> None:
        """Send ``signal`` to the node's process (its container's main process)."""
        self.container(node).kill(signal=signal)

    # -- ZooKeeper-mode operations (harness.cluster.control.ZooKeeperAdmin) ---------------
    def create_znode(self, path: str, data: bytes) -> None:
        self.zk.client.create(path, data)

    def delete_znode(self, path: str) -> None:
        self.zk.client.delete(path)

    # -- addresses -----------------------------------------------------------------------
    @property
    def proxies(self) -> ProxyControl:
        if self._proxies is None:
            raise ChaosError("the cluster is not started")
        return self._proxies

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
            self._zk = ZkObserver(self.zookeeper_hosts())
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
        if self._admin is None:
            self._admin = AdminClient({
                "bootstrap.servers": self.observer_bootstrap(),
                "client.id": f"kafka-chaos-admin-{self.run_id}",
                "log_level": 3,  # connection noise while faults are active
            })
        return self._admin

    # -- health --------------------------------------------------------------------------
    def health(self) -> HealthReport:
        """Every node running, every proxy clean, quorum, all brokers, full ISRs."""
        report = HealthReport()
        for name, container in self._containers.items():
            wrapped = container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status != "running":
                report.add(f"{name} is {wrapped.status}", name)
        if report.problems:
            return report
        damaged = self.proxies.damaged()
        if damaged:
            report.add(f"damaged links: {', '.join(damaged)}")
        modes = self.zookeeper_modes()
        for name, mode in modes.items():
            if mode not in ("leader", "follower"):
                report.add(f"{name} not serving", name)
        if report.problems:
            return report
        try:
            state = self.state()
        except Exception as err:  # kazoo raises many kinds while the ensemble settles
            report.add(f"ZooKeeper unreadable: {err}", *modes)
            return report
        expected = tuple(sorted(b.broker_id for b in self.topology.brokers))
        if state.live_brokers != expected:
            missing = sorted(set(expected) - set(state.live_brokers))
            report.add(f"live brokers {state.live_brokers}, expected {expected}",
                       *(f"kafka-{b}" for b in missing))
        if state.controller is None:
            report.add("no controller")
        for partition in state.partitions.values():
            if not partition.online or not partition.isr_full:
                # An offline partition waits on any of its replicas; a short ISR on the
                # replicas that are not in it.
                stuck = partition.replicas if not partition.online else tuple(
                    r for r in partition.replicas if r not in partition.isr)
                report.add(
                    f"{partition.topic}-{partition.partition} leader {partition.leader} "
                    f"isr {list(partition.isr)} replicas {list(partition.replicas)}",
                    *(f"kafka-{b}" for b in stuck),
                )
        if not report.problems:
            for broker in self.topology.brokers:
                try:
                    view = self.broker_view(broker.broker_id, topics=[])
                except OSError as err:
                    report.add(f"{broker.name} does not answer metadata: {err}", broker.name)
                    continue
                if view.brokers != expected:
                    report.add(f"{broker.name} knows brokers {view.brokers}", broker.name)
        return report

    def _zookeeper_serving(self) -> list[str]:
        modes = self.zookeeper_modes()
        return [f"{n} not serving" for n, m in modes.items() if m not in ("leader", "follower")]

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
            return False
        broker = self.broker_id_of(node)
        if broker is not None:
            self.wait_registration_expired(broker, timeout_s)
        container.start()
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
        try:
            _, stat = self.zk.client.get(path)
        except NoNodeError:
            return None
        return f"{path} still held by session 0x{stat.ephemeralOwner:x}"

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
        defaults = self.topology.topic_defaults
        settings = {
            k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (config or {}).items()
        }
        if assignment is not None:
            # confluent-kafka wants the partition count spelled out beside the assignment.
            new = NewTopic(
                name,
                num_partitions=len(assignment),
                replica_assignment=[assignment[p] for p in sorted(assignment)],
                config=settings,
            )
        else:
            rf = replication_factor or self.topology.default_replication_factor
            self.topology.check_replication_factor(rf)
            count = partitions or int(defaults.get("partitions", 6))
            new = NewTopic(name, num_partitions=count, replication_factor=rf, config=settings)
        for attempt in range(20):
            futures = self.admin.create_topics([new], operation_timeout=timeout_s)
            try:
                futures[name].result(timeout=timeout_s)
                break
            except KafkaException as err:
                code = err.args[0].code() if err.args else None
                if code != KafkaError.NOT_CONTROLLER or attempt == 19:
                    raise
                # librdkafka keeps the controller id of its last metadata answer until
                # its periodic refresh; a metadata request brings the new controller.
                time.sleep(0.5)
                self.admin.list_topics(timeout=10)

        def short_partitions() -> Problems:
            states = self.zk.topic_state(name)
            if not states:
                return f"{name} not in ZooKeeper yet"
            return [f"{name}-{s.partition} leader {s.leader} isr {list(s.isr)} replicas {list(s.replicas)}"
                    for s in states if not (s.online and s.isr_full)]

        wait_until_clear(short_partitions, timeout_s, f"topic {name} to have leaders and full ISRs",
                         transient=CLUSTER_SETTLING)

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
