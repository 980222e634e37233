"""The network fabric: one Toxiproxy proxy per directed link between two nodes.

Every connection a cluster makes passes through the run's Toxiproxy container:
ZooKeeper quorum and election traffic and broker -> ZooKeeper sessions (ZooKeeper mode),
controller -> controller Raft traffic and broker -> controller registrations, heartbeats
and metadata fetches (KRaft), broker -> broker replication, and clients. A link is *directed*: the proxy named
``kafka-1->kafka-0`` carries the connections broker 1 opens to broker 0, so cutting it
leaves broker 0's connections to broker 1 alone. That is what lets a fault cut exactly
one link, one node or one zone.

How connections are steered into the right proxy, without DNS tricks:

* ZooKeeper: each node's ``server.N`` lines and each broker's ``zookeeper.connect`` are
  written per node, naming that node's own proxies.
* KRaft: a controller has one controller listener per node that connects to it
  (``CONTROLLER_FROM_<node>``), advertised at the proxy for that node's link to it, and
  each node names its own as the first of its ``controller.listener.names``. A quorum
  leader tells the nodes fetching from it where it is, per listener name, so a follower
  or a broker reconnects through its own proxy rather than to the leader directly; each
  node's ``controller.quorum.voters`` names every voter at its proxy too.
* Brokers: every broker has one listener per *source* broker (``FROM_BROKER_<j>``) and
  advertises it at the proxy for link ``kafka-j -> kafka-i``; broker j sets
  ``inter.broker.listener.name=FROM_BROKER_<j>``, so replication fetches and controller
  requests it sends pick the listener meant for it.
* Migrating: a KRaft controller reaches ZooKeeper through proxies of its own, as a broker
  does, and each broker has one listener per controller (``FROM_<controller>``),
  advertised at the proxy for that controller's link to it, which the controller names
  as its ``inter.broker.listener.name``.
* Clients: one listener per zone (``ZONE_<X>``) advertised at 127.0.0.1 ports that the
  Toxiproxy container publishes; a client bootstrapped through zone x's ports only ever
  learns zone x's addresses.
* The harness itself observes through ``observer`` links (an ``OBSERVER`` listener and
  the ZooKeeper client ports). Faults never touch them, so the judge keeps its view.

This module is pure: it computes the plan; :mod:`harness.cluster.lifecycle` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from topologies.model import Topology

TOXIPROXY_HOST = "toxiproxy"
TOXIPROXY_API_PORT = 8474
FIRST_PROXY_PORT = 20000
BROKER_LISTENER_PORT = 9100  # + source broker id
ZONE_LISTENER_PORT = 9200  # + zone index
OBSERVER_LISTENER_PORT = 9300
ZK_CLIENT_PORT = 2181
ZK_QUORUM_PORT = 2888
ZK_ELECTION_PORT = 3888
CONTROLLER_LISTENER_PORT = 9400  # + the index of the node connecting (controller_sources)
MIGRATION_LISTENER_PORT = 9500  # + the index of the KRaft controller connecting (migration)
OBSERVER = "observer"


class LinkKind(StrEnum):
    """What a link carries; faults choose links by kind as well as by endpoints."""

    REPLICATION = "replication"  # broker -> broker (fetches, controller requests)
    ZK_SESSION = "zk-session"  # broker -> ZooKeeper client port
    ZK_QUORUM = "zk-quorum"  # ZooKeeper follower -> leader
    ZK_ELECTION = "zk-election"  # ZooKeeper leader election
    KRAFT_QUORUM = "kraft-quorum"  # KRaft controller -> controller (Raft fetch, vote)
    KRAFT_BROKER = "kraft-broker"  # broker -> KRaft controller (registration, heartbeat, metadata)
    # KRaft controller -> ZooKeeper-mode broker, while migrating: the controller requests
    # (UpdateMetadata, LeaderAndIsr, StopReplica) a ZooKeeper-mode controller would send.
    CONTROLLER_RPC = "controller-rpc"
    CLIENT = "client"  # a zone's clients -> a broker
    OBSERVER = "observer"  # the harness -> a node; never faulted


def client_name(zone: str) -> str:
    """The fabric's name for the clients placed in ``zone``."""
    return f"client-{zone}"


def broker_listener(source_broker_id: int) -> str:
    return f"FROM_BROKER_{source_broker_id}"


def zone_listener(zone: str) -> str:
    return f"ZONE_{zone.upper()}"


def controller_listener(source: str) -> str:
    """The controller listener a node (``kraft-a``, ``kafka-0``) connects to controllers on."""
    return "CONTROLLER_FROM_" + source.upper().replace("-", "_")


def migration_listener(controller: str) -> str:
    """The listener of a ZooKeeper-mode broker that a migrating KRaft controller
    (``kraft-a``) sends its controller requests to."""
    return "FROM_" + controller.upper().replace("-", "_")


def migration_port(topology: Topology, controller: str) -> int:
    return MIGRATION_LISTENER_PORT + [c.name for c in topology.dedicated_controllers].index(controller)


def controller_sources(topology: Topology) -> list[str]:
    """Every node that connects to KRaft controllers, in the order that numbers their
    controller listeners' ports: the dedicated controllers, then the brokers."""
    return [c.name for c in topology.dedicated_controllers] + [b.name for b in topology.brokers]


def controller_port(topology: Topology, source: str) -> int:
    return CONTROLLER_LISTENER_PORT + controller_sources(topology).index(source)


@dataclass(frozen=True)
class Link:
    """One directed link and the proxy that carries it."""

    source: str
    destination: str
    kind: LinkKind
    listen_port: int
    upstream: str

    # Tells apart links between the same two endpoints: ":quorum" and ":election" between
    # ZooKeeper nodes, ":controller" between brokers that are KRaft controllers too.
    label: str = ""

    @property
    def name(self) -> str:
        return f"{self.source}->{self.destination}{self.label}"

    @property
    def published(self) -> bool:
        """Clients and the observer run on the host, so their proxies get host ports."""
        return self.kind in (LinkKind.CLIENT, LinkKind.OBSERVER)

    @property
    def faultable(self) -> bool:
        return self.kind is not LinkKind.OBSERVER


@dataclass(frozen=True)
class Fabric:
    """All links of a topology, with lookups by endpoint, node and zone."""

    topology: Topology
    links: tuple[Link, ...]

    def by_name(self, name: str) -> Link:
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(name)

    def find(self, source: str, destination: str, kind: LinkKind | None = None) -> list[Link]:
        return [
            link
            for link in self.links
            if link.source == source
            and link.destination == destination
            and (kind is None or link.kind is kind)
        ]

    def one(self, source: str, destination: str, kind: LinkKind) -> Link:
        found = self.find(source, destination, kind)
        if len(found) != 1:
            raise KeyError(f"{source}->{destination} ({kind})")
        return found[0]

    def between(self, a: str, b: str) -> list[Link]:
        """Both directions between two endpoints."""
        return self.find(a, b) + self.find(b, a)

    def touching(self, node: str) -> list[Link]:
        """Every faultable link into or out of ``node``."""
        return [
            link
            for link in self.links
            if link.faultable and node in (link.source, link.destination)
        ]

    def endpoint_zone(self, endpoint: str) -> str | None:
        if endpoint == OBSERVER:
            return None
        if endpoint.startswith("client-"):
            return endpoint.removeprefix("client-")
        return self.topology.zone_of(endpoint)

    def crossing_zone(self, zone: str) -> list[Link]:
        """Every faultable link with exactly one end in ``zone`` (clients included).

        A zone's clients keep reaching the zone's own brokers: isolation of a zone is a
        cut between zones, not inside one.
        """
        self.topology.nodes_in_zone(zone)  # validates the zone name
        crossing = []
        for link in self.links:
            if not link.faultable:
                continue
            inside = [self.endpoint_zone(e) == zone for e in (link.source, link.destination)]
            if inside[0] != inside[1]:
                crossing.append(link)
        return crossing

    def clients_of(self, zone: str) -> list[Link]:
        return [link for link in self.links if link.source == client_name(zone)]

    def observer_of(self, node: str) -> Link:
        return self.find(OBSERVER, node, LinkKind.OBSERVER)[0]


def plan_fabric(topology: Topology) -> Fabric:
    """Lay out every link of ``topology`` with a distinct Toxiproxy listen port."""
    specs: list[tuple[str, str, LinkKind, str, str]] = []
    zks = topology.zookeepers
    for src in zks:
        for dst in zks:
            if src is dst:
                continue
            specs.append((src.name, dst.name, LinkKind.ZK_QUORUM, f"{dst.name}:{ZK_QUORUM_PORT}", ":quorum"))
            specs.append((src.name, dst.name, LinkKind.ZK_ELECTION, f"{dst.name}:{ZK_ELECTION_PORT}",
                          ":election"))
    for broker in topology.brokers:
        for zk in zks:
            specs.append((broker.name, zk.name, LinkKind.ZK_SESSION, f"{zk.name}:{ZK_CLIENT_PORT}", ""))
    specs += _controller_links(topology)
    for src_b in topology.brokers:
        for dst_b in topology.brokers:
            if src_b is dst_b:
                continue
            port = BROKER_LISTENER_PORT + src_b.broker_id
            specs.append((src_b.name, dst_b.name, LinkKind.REPLICATION, f"{dst_b.name}:{port}", ""))
    for index, zone in enumerate(topology.zones):
        for broker in topology.brokers:
            port = ZONE_LISTENER_PORT + index
            specs.append((client_name(zone), broker.name, LinkKind.CLIENT, f"{broker.name}:{port}", ""))
    for broker in topology.brokers:
        specs.append(
            (OBSERVER, broker.name, LinkKind.OBSERVER, f"{broker.name}:{OBSERVER_LISTENER_PORT}", "")
        )
    for zk in zks:
        specs.append((OBSERVER, zk.name, LinkKind.OBSERVER, f"{zk.name}:{ZK_CLIENT_PORT}", ""))
    specs += _migration_links(topology)
    links = tuple(
        Link(source=s, destination=d, kind=k, listen_port=FIRST_PROXY_PORT + i, upstream=u, label=label)
        for i, (s, d, k, u, label) in enumerate(specs)
    )
    return Fabric(topology=topology, links=links)


def _controller_links(topology: Topology) -> list[tuple[str, str, LinkKind, str, str]]:
    """A KRaft cluster's links to its controllers' CONTROLLER listener: controller ->
    controller (the Raft quorum) and broker -> controller. Where the controllers are the
    brokers (combined), one link per pair carries both, labelled apart from replication."""
    voters = {c.name for c in topology.controllers}
    dedicated = {c.name for c in topology.dedicated_controllers}
    specs = []
    for source in controller_sources(topology):
        for voter in topology.controllers:
            if voter.name == source:
                continue
            kind = LinkKind.KRAFT_QUORUM if source in voters else LinkKind.KRAFT_BROKER
            label = "" if source in dedicated or voter.name in dedicated else ":controller"
            upstream = f"{voter.name}:{controller_port(topology, source)}"
            specs.append((source, voter.name, kind, upstream, label))
    return specs


def _migration_links(topology: Topology) -> list[tuple[str, str, LinkKind, str, str]]:
    """While a cluster migrates, its KRaft controllers reach ZooKeeper (the copy, then the
    dual writes) and send controller requests to the brokers still in ZooKeeper mode.
    Only a topology with both a ZooKeeper ensemble and dedicated controllers has them;
    they come last, so no other topology's ports move."""
    if not (topology.zookeepers and topology.dedicated_controllers):
        return []
    specs = []
    for controller in topology.dedicated_controllers:
        for zk in topology.zookeepers:
            specs.append((controller.name, zk.name, LinkKind.ZK_SESSION, f"{zk.name}:{ZK_CLIENT_PORT}", ""))
        port = migration_port(topology, controller.name)
        for broker in topology.brokers:
            specs.append((controller.name, broker.name, LinkKind.CONTROLLER_RPC, f"{broker.name}:{port}", ""))
    # The harness asks the controllers for their quorum itself while the brokers are in
    # ZooKeeper mode, which do not forward DescribeQuorum (harness.cluster.describe_quorum).
    for controller in topology.dedicated_controllers:
        upstream = f"{controller.name}:{controller_port(topology, controller.name)}"
        specs.append((OBSERVER, controller.name, LinkKind.OBSERVER, upstream, ""))
    return specs
