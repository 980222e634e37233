"""A KRaft cluster's links, configuration files and state parsing (no Docker: the fabric's
plan, the rendered files, and DescribeQuorum / Metadata answers as kafka-python gives them)."""

from __future__ import annotations

import pytest

from harness.cluster.broker_metadata import BrokerView, PartitionView
from harness.cluster.fabric import CONTROLLER_LISTENER_PORT, TOXIPROXY_HOST, LinkKind, plan_fabric
from harness.cluster.metadata.kraft import (
    confirmed,
    current_first,
    furthest_on,
    latest,
    new_cluster_id,
    partition_states,
    voter_roles,
)
from harness.cluster.node_config import (
    broker_properties,
    controller_properties,
    kraft_broker_settings,
    kraft_voters,
)
from topologies import load_topology
from topologies.loader import build_topology


def _properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_every_link_to_a_controller_passes_a_proxy_of_its_own() -> None:
    fabric = plan_fabric(load_topology("three_az_kraft"))
    quorum = [link.name for link in fabric.links if link.kind is LinkKind.KRAFT_QUORUM]
    brokers = [link.name for link in fabric.links if link.kind is LinkKind.KRAFT_BROKER]
    assert quorum == ["kraft-a->kraft-b", "kraft-a->kraft-c", "kraft-b->kraft-a", "kraft-b->kraft-c",
                      "kraft-c->kraft-a", "kraft-c->kraft-b"]
    assert len(brokers) == 9 and "kafka-1->kraft-c" in brokers
    assert not [link for link in fabric.links if link.kind in (LinkKind.ZK_SESSION, LinkKind.ZK_QUORUM)]
    # Each node reaches a controller on a listener of its own: one port per source.
    upstreams = {link.source: link.upstream for link in fabric.links if link.destination == "kraft-b"}
    assert upstreams["kraft-a"] == f"kraft-b:{CONTROLLER_LISTENER_PORT}"
    assert upstreams["kafka-2"] == f"kraft-b:{CONTROLLER_LISTENER_PORT + 5}"
    assert len(set(upstreams.values())) == len(upstreams) == 5
    assert [link.name for link in fabric.touching("kraft-a")][:2] == ["kraft-a->kraft-b", "kraft-a->kraft-c"]
    assert "kraft-a->kraft-b" in [link.name for link in fabric.crossing_zone("a")]


def test_a_node_names_each_voter_at_the_proxy_of_its_own_link_to_it() -> None:
    fabric = plan_fabric(load_topology("three_az_kraft"))
    to_b = fabric.one("kafka-0", "kraft-b", LinkKind.KRAFT_BROKER).listen_port
    assert f"101@{TOXIPROXY_HOST}:{to_b}" in kraft_voters(fabric, "kafka-0").split(",")
    own = kraft_voters(fabric, "kraft-a").split(",")
    assert own[0] == f"100@kraft-a:{CONTROLLER_LISTENER_PORT}", "a controller names itself directly"
    controller = _properties(controller_properties(fabric, fabric.topology.controllers[1]))
    assert controller["process.roles"] == "controller" and controller["node.id"] == "101"
    # A leader tells each node where it is by that node's own listener name: the proxy.
    names = controller["controller.listener.names"].split(",")
    assert names[0] == "CONTROLLER_FROM_KRAFT_B" and len(names) == 6
    advertised = dict(entry.split("://") for entry in controller["advertised.listeners"].split(","))
    from_kafka_0 = fabric.one("kafka-0", "kraft-b", LinkKind.KRAFT_BROKER).listen_port
    assert advertised["CONTROLLER_FROM_KAFKA_0"] == f"{TOXIPROXY_HOST}:{from_kafka_0}"
    assert advertised["CONTROLLER_FROM_KRAFT_B"] == f"kraft-b:{CONTROLLER_LISTENER_PORT + 1}"
    # Before 3.9 a controller refuses to start with advertised.listeners set (3.7.2: "The
    # advertised.listeners config must be empty when process.roles=controller").
    plain = _properties(controller_properties(fabric, fabric.topology.controllers[1], advertise=False))
    assert "advertised.listeners" not in plain and plain["listeners"] == controller["listeners"]
    from harness.cluster.versions import release
    assert not release("3.7.2").controllers_advertise and release("3.9.1").controllers_advertise
    assert controller["broker.session.timeout.ms"] == "6000", "the topology's controller settings"
    assert "zookeeper.connect" not in controller


def test_a_kraft_broker_is_a_broker_with_the_voters_and_no_zookeeper() -> None:
    fabric = plan_fabric(load_topology("three_az_kraft"))
    broker = fabric.topology.broker(2)
    metadata = kraft_broker_settings(fabric, broker, "cluster-1")
    props = _properties(broker_properties(fabric, broker, dict.fromkeys(
        [link.name for link in fabric.links if link.published], 1), metadata))
    assert props["process.roles"] == "broker" and props["node.id"] == "2"
    assert props["controller.listener.names"] == "CONTROLLER_FROM_KAFKA_2"
    assert "CONTROLLER_FROM_KAFKA_2:PLAINTEXT" in props["listener.security.protocol.map"]
    assert "CONTROLLER" not in props["listeners"], "a dedicated layout's broker binds no controller listener"
    assert "zookeeper.connect" not in props and metadata.format_cluster_id == "cluster-1"


def test_combined_nodes_are_brokers_and_controllers_with_links_apart_from_replication() -> None:
    topology = build_topology({"zones": ["a", "b", "c"], "metadata": "kraft", "controllers": "combined"})
    fabric = plan_fabric(topology)
    names = {link.name: link.kind for link in fabric.links}
    assert names["kafka-0->kafka-1"] is LinkKind.REPLICATION
    assert names["kafka-0->kafka-1:controller"] is LinkKind.KRAFT_QUORUM
    metadata = kraft_broker_settings(fabric, topology.broker(0), "c")
    assert metadata.settings["process.roles"] == "broker,controller"
    assert metadata.listeners == tuple(f"CONTROLLER_FROM_KAFKA_{i}://0.0.0.0:{CONTROLLER_LISTENER_PORT + i}"
                                       for i in (0, 1, 2))


def test_a_cluster_id_is_a_kafka_uuid() -> None:
    ids = {new_cluster_id() for _ in range(5)}
    assert len(ids) == 5 and all(len(i) == 22 and "=" not in i for i in ids)


QUORUM = {"leader_id": 101, "leader_epoch": 7, "high_watermark": 420,
          "current_voters": [{"replica_id": 100, "log_end_offset": 420, "last_fetch_timestamp": 9_500},
                             {"replica_id": 101, "log_end_offset": 420, "last_fetch_timestamp": -1},
                             {"replica_id": 102, "log_end_offset": 300, "last_fetch_timestamp": 1_000}]}
VOTERS = {100: "kraft-a", 101: "kraft-b", 102: "kraft-c"}


def test_a_voter_is_in_the_quorum_while_the_leader_sees_it_fetch() -> None:
    assert voter_roles(QUORUM, VOTERS, now_ms=10_000) == {"kraft-a": "follower", "kraft-b": "leader",
                                                          "kraft-c": None}


def test_partitions_and_brokers_come_from_one_brokers_metadata_answer() -> None:
    view = BrokerView(brokers=(1, 2), controller=1, topics={
        "t": (PartitionView(0, 5, -1, (1, 2, 0), (1,), 6), PartitionView(1, 0, 2, (2, 0, 1), (2, 0), 5)),
        "gone": ()})
    states = {(s.topic, s.partition): s for s in partition_states(view)}
    assert set(states) == {("t", 0), ("t", 1)}
    assert states[("t", 1)].leader_epoch == 5 and states[("t", 1)].isr == (2, 0)
    assert not states[("t", 0)].online, "a partition without a leader is still a state"


def _replica(replica: int, offset: int, fetched_ms: int) -> dict[str, int]:
    return {"replica_id": replica, "log_end_offset": offset, "last_fetch_timestamp": fetched_ms}


def test_the_metadata_is_asked_first_of_the_broker_most_current_with_the_quorum() -> None:
    quorum = {"leader_id": 101, "current_voters": [_replica(101, 90, -1)],
              "observers": [_replica(0, 90, 9_500), _replica(1, 40, 2_000), _replica(2, 88, 9_900)]}
    # Broker 1 has not fetched for 8 s (cut off from the controllers): asked last, though
    # its id is lowest; of the two fetching, the one further along comes first.
    assert current_first(quorum, [0, 1, 2], now_ms=10_000) == [0, 2, 1]
    combined = {"leader_id": 2, "current_voters": [_replica(2, 90, -1), _replica(0, 90, 9_800)],
                "observers": []}
    assert current_first(combined, [0, 1, 2], now_ms=10_000)[:2] == [0, 2]
    assert current_first(None, [2, 0, 1], now_ms=10_000) == [0, 1, 2], "no quorum answer: by id"


def test_of_two_brokers_images_the_one_further_along_the_log_is_kept() -> None:
    # Broker 0 just healed from a cut: its image still has it leading p0 at epoch 4,
    # where the controller moved p0 to broker 1 at epoch 5 meanwhile.
    stale = BrokerView(brokers=(0, 1, 2), controller=0, topics={
        "t": (PartitionView(0, 0, 0, (0, 1, 2), (0, 1, 2), 4),
              PartitionView(1, 0, 1, (1, 2, 0), (1, 2, 0), 3))})
    current = BrokerView(brokers=(0, 1, 2), controller=1, topics={
        "t": (PartitionView(0, 0, 1, (0, 1, 2), (1, 2), 5), PartitionView(1, 0, 1, (1, 2, 0), (1, 2), 3))})
    assert furthest_on([stale, current]) is current
    assert furthest_on([current, stale]) is current
    same = BrokerView(brokers=(0, 1, 2), controller=2, topics=current.topics)
    assert furthest_on([current, same]) is current, "a tie keeps the broker the quorum trusts most"
    newer_topic = BrokerView(brokers=(0, 1, 2), controller=2, topics={**current.topics, "u": (
        PartitionView(0, 0, 2, (2, 0, 1), (2, 0, 1), 0),)})
    assert furthest_on([current, newer_topic]) is newer_topic, "a topic at epoch 0 is further on too"


def test_a_leader_without_a_majority_fetching_from_it_is_not_taken_at_its_word() -> None:
    healthy = {"leader_id": 100, "leader_epoch": 7, "current_voters": [
        _replica(100, 90, -1), _replica(101, 90, 9_800), _replica(102, 90, 1_000)]}
    assert confirmed(healthy, now_ms=10_000), "itself and kraft-b: two of three"
    cut_off = {"leader_id": 100, "leader_epoch": 7, "current_voters": [
        _replica(100, 90, -1), _replica(101, 90, 3_000), _replica(102, 90, 1_000)]}
    assert not confirmed(cut_off, now_ms=10_000)
    assert not confirmed({"leader_id": -1, "current_voters": []}, now_ms=10_000)
    elected = {**healthy, "leader_id": 101, "leader_epoch": 8}
    assert latest([cut_off, elected]) is elected and latest([elected, cut_off]) is elected
    assert latest([healthy, {**healthy}]) is healthy and latest([]) is None


def test_a_controller_request_naming_a_broker_the_client_does_not_know_goes_to_a_fresh_client() -> None:
    import threading

    from kafka.errors import UnknownBrokerIdError

    from harness.cluster.metadata.kraft import KRaftReader

    class Client:
        def __init__(self, fails: bool) -> None:
            self.fails, self.closed = fails, False

        def close(self) -> None:
            self.closed = True

    made: list[Client] = []
    reader = object.__new__(KRaftReader)
    reader._lock, reader._ride_out_s = threading.Lock(), 5.0
    reader._admin = Client(fails=True)

    def fresh() -> Client:
        made.append(Client(fails=False))
        return made[-1]

    reader._brokers_client = fresh  # type: ignore[method-assign]

    def request(admin: Client) -> str:
        if admin.fails:
            raise UnknownBrokerIdError(2)
        return "moved"

    first = reader._admin
    assert reader._asked(request) == "moved"
    assert first.closed and len(made) == 1 and reader._admin is made[0]
    reader._ride_out_s = 0.0
    reader._admin = Client(fails=True)
    with pytest.raises(UnknownBrokerIdError):
        reader._asked(request)


def test_a_quorum_client_that_predates_an_upgrade_is_made_anew() -> None:
    """kafka-python learns its brokers' request versions when it first connects; across a
    rolling upgrade it refuses DescribeQuorum with IncompatibleBrokerVersion until a new
    client connects (seen in the upgrade of a migrated cluster to 4.4.0)."""
    import threading

    from kafka.errors import IncompatibleBrokerVersion

    from harness.cluster.metadata.kraft import KRaftReader

    class QuorumClient:
        def __init__(self, stale: bool) -> None:
            self.stale, self.closed = stale, False

        def close(self) -> None:
            self.closed = True

        def describe_metadata_quorum(self) -> dict[str, object]:
            if self.stale:
                raise IncompatibleBrokerVersion("Kafka broker does not support the 'DescribeQuorumRequest'")
            return {"topics": [{"partitions": [{"leader_id": 100, "error": None}]}]}

    reader = object.__new__(KRaftReader)
    reader._quorum_lock = threading.Lock()
    stale = QuorumClient(stale=True)
    reader._quorum_admin = stale
    reader._quorum_client = lambda: QuorumClient(stale=False)  # type: ignore[method-assign]
    assert reader.quorum()["leader_id"] == 100
    assert stale.closed and reader._quorum_admin is not stale


def test_metadata_version_is_read_from_kafka_pythons_feature_answer() -> None:
    from typing import Any

    from harness.cluster.metadata.kraft import KRaftReader
    from harness.errors import ChaosError

    reader = object.__new__(KRaftReader)
    answers: list[dict[str, Any]] = [
        {"metadata.version": {"supported": (7, 27), "finalized": (21, 21), "finalized_epoch": 40},
         "kraft.version": {"supported": (0, 1)}},
        {"kraft.version": {"supported": (0, 1)}},
    ]
    reader._asked = lambda request: answers.pop(0)  # type: ignore[method-assign]
    assert reader.metadata_version() == (21, 27)
    with pytest.raises(ChaosError, match=r"ApiVersions reported no metadata\.version"):
        reader.metadata_version()


def test_a_quorum_kafka_python_cannot_read_is_asked_with_the_harness_own_v1_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka before 3.8 answers DescribeQuorum v1 at most, and kafka-python 3.0 fails
    reading v1 with KeyError('error_message') (seen on 3.7.2 once the brokers were KRaft
    brokers)."""
    import threading

    from harness.cluster.metadata import kraft
    from harness.cluster.metadata.kraft import KRaftReader

    class OldQuorum:
        def describe_metadata_quorum(self) -> dict[str, object]:
            raise KeyError("error_message")

    asked: list[str] = []

    def v1(address: str, timeout_s: float) -> dict[str, object]:
        asked.append(address)
        if address == "127.0.0.1:1":
            raise ConnectionRefusedError(address)
        return {"error_code": 0, "leader_id": 101, "leader_epoch": 4}

    monkeypatch.setattr(kraft, "describe_quorum", v1)
    reader = object.__new__(KRaftReader)
    reader._quorum_lock = threading.Lock()
    reader._quorum_admin = OldQuorum()
    reader._bootstrap = ["127.0.0.1:1", "127.0.0.1:2"]
    assert reader.quorum()["leader_id"] == 101 and asked == ["127.0.0.1:1", "127.0.0.1:2"]
