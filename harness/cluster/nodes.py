"""A cluster's containers: building and starting them, finding them, their published ports.

Why a part of its own: how a node becomes a container (its image, its JVM command line,
the configuration files copied into it, its labels and network alias) and which
127.0.0.1 ports Docker gave the published links is Docker plumbing that the rest of the
cluster never needs to see. :class:`~harness.cluster.lifecycle.Cluster` owns one
:class:`Nodes` and decides *when* each node starts (the start order, the waits between,
the one broker-restart policy); this module only knows *how* a node is built and found.

Containers are made with testcontainers-python (its reaper is switched off by the
lifecycle; :mod:`harness.cluster.resources` owns cleanup, by the run's labels). Start
order follows the fabric: Toxiproxy first (so Docker assigns the 127.0.0.1 ports that
brokers must advertise), then ZooKeeper, then brokers.

Nodes keep their identity across restarts: a broker is one container whose data
directory lives on its own labelled volume (:mod:`harness.cluster.node_disks`, so a dead
node's files can be cut), so kill/start brings back the same broker id, address and log.
"""

from __future__ import annotations

import io
import shlex
import socket
import tarfile
from collections.abc import Mapping

import docker
from docker.models.containers import Container
from testcontainers.core.container import DockerContainer
from testcontainers.core.labels import TESTCONTAINERS_NAMESPACE
from testcontainers.core.network import Network

from harness.cluster.fabric import TOXIPROXY_API_PORT, TOXIPROXY_HOST, Fabric, Link
from harness.cluster.images import ImageSet
from harness.cluster.node_config import (
    CONFIG_DIR,
    KAFKA_DATA_DIR,
    SYNC_JOURNAL,
    SYNC_JOURNAL_LIBRARY,
    ZK_DATA_DIR,
    MetadataSettings,
    broker_properties,
    controller_properties,
    zoo_cfg,
)
from harness.cluster.proxies import ProxyControl
from harness.cluster.resources import RunIdentity
from harness.cluster.versions import KafkaRelease
from harness.cluster.waiting import wait_until_clear
from harness.errors import ChaosError, PortInUse
from topologies.model import ControllerNode, Topology

# Formats a KRaft node's storage with the cluster's id (kafka-storage.sh's main class).
STORAGE_TOOL = "kafka.tools.StorageTool"
# How long a node stopped for good gets to shut down cleanly (SIGTERM) before SIGKILL.
STOP_GRACE_S = 30
JVM_FLAGS = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties",
]


class Nodes:
    """The containers of one cluster run, by node name, and the host ports they publish.

    ``images`` is set by the lifecycle once the images are built; ``host_ports`` (link
    name, or ``toxiproxy-api``, to its 127.0.0.1 port) and ``proxies`` are filled when
    Toxiproxy starts, because Docker chooses the ports then and brokers advertise them.
    """

    def __init__(
        self,
        topology: Topology,
        fabric: Fabric,
        identity: RunIdentity,
        release: KafkaRelease,
        host_port_base: int | None = None,
    ) -> None:
        self.topology = topology
        self.fabric = fabric
        self.identity = identity
        self.release = release
        self.host_port_base = host_port_base
        self.images: ImageSet | None = None
        self.host_ports: dict[str, int] = {}
        self.proxies: ProxyControl | None = None
        self._network: Network | None = None
        self._containers: dict[str, DockerContainer] = {}
        # Nodes whose process was sent SIGSTOP and not yet SIGCONT or SIGKILL: Docker still
        # calls them running, but they answer nothing (a pause fault is in force).
        self.stopped: set[str] = set()

    # -- published ports -----------------------------------------------------------------
    def check_ports_free(self) -> None:
        """Refuse a fixed port base whose ports are taken, before anything is created."""
        if self.host_port_base is None:
            return
        for offset, link in enumerate([*self.published_links(), None]):
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

    def published_links(self) -> list[Link]:
        return [link for link in self.fabric.links if link.published]

    # -- building and starting -----------------------------------------------------------
    def create_network(self) -> None:
        """The run's own Docker network, labelled so that cleanup finds it."""
        self._network = Network(
            docker_network_kw={"labels": self.identity.labels("network")}
        ).create()

    def _container(self, name: str, image: str, role: str) -> DockerContainer:
        assert self._network is not None
        return (
            DockerContainer(image)
            .with_name(self.identity.resource_name(name))
            .with_network(self._network)
            .with_network_aliases(name)
            .with_kwargs(labels=self.identity.labels(role), hostname=name)
        )

    def start_toxiproxy(self) -> ProxyControl:
        """Start Toxiproxy, learn its published ports, and give it the fabric's proxies."""
        assert self.images is not None
        container = self._container(TOXIPROXY_HOST, self.images.toxiproxy, "toxiproxy")
        published = [*self.published_links(), None]
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
        proxies = self.proxies = ProxyControl("127.0.0.1", self.host_ports["toxiproxy-api"])
        # The API answers a moment after the container starts: connections are refused until
        # then. populate returns None, which is "nothing wrong" once it went through.
        wait_until_clear(lambda: proxies.populate(self.fabric.links), 20,
                         "the Toxiproxy API to take the fabric's proxies", transient=(OSError,))
        return proxies

    def _java(self, heap_mb: int, main_class: str, config: str, data_dir: str) -> list[str]:
        """The node's command: its JVM with the sync-journal library preloaded, journalling
        syncs under ``data_dir`` (what a power loss keeps). ``env`` execs the JVM, which
        stays the container's main process; the variables reach it alone, not the tools a
        test may run in the container."""
        return [
            "env",
            f"LD_PRELOAD={SYNC_JOURNAL_LIBRARY}",
            f"KAFKA_CHAOS_SYNC_JOURNAL={SYNC_JOURNAL}",
            f"KAFKA_CHAOS_SYNC_DIRS={data_dir}",
            "java",
            f"-Xms{heap_mb}m",
            f"-Xmx{heap_mb}m",
            *JVM_FLAGS,
            "-cp",
            "/opt/kafka/libs/*",
            main_class,
            config,
        ]

    def start_zookeeper(self, name: str, data_volume: str) -> None:
        """Start a ZooKeeper node whose data directory is the volume ``data_volume``."""
        assert self.images is not None
        node = self.topology.zookeeper(name)
        container = (
            self._container(name, self.images.kafka, "zookeeper")
            .with_command(
                self._java(
                    self.topology.zookeeper_heap_mb,
                    "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                    f"{CONFIG_DIR}/zoo.cfg",
                    ZK_DATA_DIR,
                )
            )
            .with_copy_into_container(zoo_cfg(self.fabric, node).encode(), f"{CONFIG_DIR}/zoo.cfg")
            .with_volume_mapping(data_volume, ZK_DATA_DIR, "rw")
            .with_copy_into_container(f"{node.sid}\n".encode(), f"{ZK_DATA_DIR}/myid")
        )
        container.start()
        self._containers[name] = container

    @staticmethod
    def _launched(java: list[str], config: str, format_cluster_id: str | None) -> list[str]:
        """``java``, after formatting the node's storage with ``format_cluster_id`` when
        given. ``--ignore-formatted`` makes every later start's format a no-op; ``exec``
        leaves the JVM the container's main process. The id goes as ``--cluster-id=ID``:
        one taken from ZooKeeper may begin with ``-``, which as a separate argument the
        tool's parser reads as an option ("expected one argument")."""
        if format_cluster_id is None:
            return java
        tool = ["java", "-Xmx128m", *JVM_FLAGS, "-cp", "/opt/kafka/libs/*", STORAGE_TOOL, "format",
                "--ignore-formatted", f"--cluster-id={format_cluster_id}", "-c", config]
        return ["sh", "-c", f"{shlex.join(tool)} && exec {shlex.join(java)}"]

    def start_controller(self, controller: ControllerNode, data_volume: str, cluster_id: str,
                         migrating: bool = False) -> None:
        """Start a dedicated KRaft controller, its metadata log on the volume ``data_volume``,
        its storage formatted with ``cluster_id`` first; ``migrating``: with the migration
        from ZooKeeper enabled (:func:`~harness.cluster.node_config.controller_properties`)."""
        assert self.images is not None
        config = f"{CONFIG_DIR}/server.properties"
        java = self._java(self.topology.controller_heap_mb, "kafka.Kafka", config, KAFKA_DATA_DIR)
        properties = controller_properties(self.fabric, controller, migrating=migrating,
                                           advertise=self.release.controllers_advertise)
        container = (
            self._container(controller.name, self.images.kafka, "controller")
            .with_command(self._launched(java, config, cluster_id))
            .with_copy_into_container(properties.encode(), config)
            .with_volume_mapping(data_volume, KAFKA_DATA_DIR, "rw")
        )
        container.start()
        self._containers[controller.name] = container

    def broker_properties(self, broker_id: int, metadata: MetadataSettings) -> str:
        """Broker ``broker_id``'s ``server.properties`` with what its metadata mode adds."""
        return broker_properties(self.fabric, self.topology.broker(broker_id), self.host_ports, metadata,
                                 self.release.extra_broker_settings)

    def start_broker(self, broker_id: int, data_volume: str, metadata: MetadataSettings) -> None:
        """Start a broker advertising the published ports Toxiproxy was given, its log
        directory on the volume ``data_volume``, with what its metadata mode adds."""
        assert self.images is not None
        broker = self.topology.broker(broker_id)
        properties = self.broker_properties(broker_id, metadata)
        config = f"{CONFIG_DIR}/server.properties"
        java = self._java(self.topology.broker_heap_mb, "kafka.Kafka", config, KAFKA_DATA_DIR)
        container = (
            self._container(broker.name, self.images.kafka, "broker")
            .with_command(self._launched(java, config, metadata.format_cluster_id))
            .with_copy_into_container(properties.encode(), f"{CONFIG_DIR}/server.properties")
            .with_volume_mapping(data_volume, KAFKA_DATA_DIR, "rw")
        )
        container.start()
        self._containers[broker.name] = container

    def change_image(self, node: str, image: str) -> None:
        """Make the stopped ``node`` a container of ``image`` (a newer release): the same
        name, network alias, labels, command and data volume, and the configuration files
        the old container held last, so it starts as the same node on other code (a
        rolling upgrade's "update the code"). Started by the caller."""
        old = self.container(node)
        config = old.attrs["Config"]
        mounts = [(m["Name"], m["Destination"]) for m in old.attrs["Mounts"] if m.get("Type") == "volume"]
        stream, _ = old.get_archive(CONFIG_DIR)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            files = {member.name.split("/", 1)[1]: tar.extractfile(member).read()  # type: ignore[union-attr]
                     for member in tar.getmembers() if member.isfile()}
        old.remove(force=True)
        assert self._network is not None
        container = (
            DockerContainer(image)
            .with_name(old.name)
            .with_network(self._network)
            .with_network_aliases(node)
            .with_kwargs(labels=self._own_labels(config["Labels"]), hostname=node)
            .with_command(config["Cmd"])
        )
        for volume, destination in mounts:
            container.with_volume_mapping(volume, destination, "rw")
        for name, data in files.items():
            container.with_copy_into_container(data, f"{CONFIG_DIR}/{name}")
        # The old container is gone: whatever happens next, the node is no longer it, so the
        # handle goes first and a failed start leaves the node absent, not a stale 404.
        self._containers.pop(node)
        self.stopped.discard(node)
        try:
            container.start()
        except Exception as exc:
            raise ChaosError(f"{node} could not be started again on {image}: {exc}") from exc
        self._containers[node] = container

    @staticmethod
    def _own_labels(labels: Mapping[str, str]) -> dict[str, str]:
        """A container's labels without those testcontainers sets itself (it refuses to be
        given its own namespace): the run's labels, which cleanup finds it by."""
        return {key: value for key, value in labels.items() if not key.startswith(TESTCONTAINERS_NAMESPACE)}

    def retire(self, node: str) -> None:
        """Stop ``node`` for good (a rollback's controllers): it leaves the nodes whose
        status health reads; its container, labelled like every other, goes at the end."""
        self.container(node).stop(timeout=STOP_GRACE_S)
        self._containers.pop(node)
        self.stopped.discard(node)

    def forget(self) -> None:
        """Drop the handles on containers and network once the run's resources are removed."""
        self._containers.clear()
        self._network = None

    # -- looking up ----------------------------------------------------------------------
    def container(self, node: str) -> Container:
        """The Docker container of a node (``kafka-0``, ``zk-a``, ``toxiproxy``)."""
        if node not in self._containers:
            raise ChaosError(f"no node {node!r} in this cluster; nodes: {sorted(self._containers)}")
        wrapped = self._containers[node].get_wrapped_container()
        wrapped.reload()
        return wrapped

    def write_zoo_cfg(self, name: str, extra: Mapping[str, str] | None = None) -> None:
        """Rewrite ``zoo.cfg`` of the ZooKeeper node ``name`` (stopped or running: it is
        read at start) as the topology has it, with ``extra`` settings after it."""
        text = zoo_cfg(self.fabric, self.topology.zookeeper(name))
        text += "".join(f"{key}={value}\n" for key, value in (extra or {}).items())
        self.write_config(name, "zoo.cfg", text)

    def write_config(self, node: str, file_name: str, text: str) -> None:
        """Replace ``CONFIG_DIR/file_name`` in ``node``'s container, which its process reads
        at its next start: a start brings a node back in the configuration last written."""
        data = text.encode()
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            info = tarfile.TarInfo(file_name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        if not self.container(node).put_archive(CONFIG_DIR, archive.getvalue()):
            raise ChaosError(f"could not write {CONFIG_DIR}/{file_name} into {node}")

    def node_status(self, node: str) -> str:
        return str(self.container(node).status)

    def signal_node(self, node: str, signal: str) -> None:
        """Send ``signal`` to the node's process (its container's main process)."""
        self.container(node).kill(signal=signal)
        if signal == "SIGSTOP":
            self.stopped.add(node)
        elif signal in ("SIGCONT", "SIGKILL"):  # resumed, or gone; others wait for SIGCONT
            self.stopped.discard(node)

    def statuses(self) -> dict[str, str]:
        """Docker's status of every started node, in start order, as of now (for health)."""
        return {name: self.node_status(name) for name in self._containers}


__all__ = ["JVM_FLAGS", "Nodes"]
