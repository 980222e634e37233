"""The health rules of :mod:`harness.cluster.health`, over stand-ins for a cluster.

Health decides when a test may start, when healing is done, and which nodes recovery
restarts (``blocking``), so each rule is checked here on its own: a node that exited, a
damaged link, ZooKeeper without a quorum or unreadable, a broker missing from
``/brokers/ids``, no controller, a short ISR and an offline partition, a broker whose
metadata is stale or silent. Each case starts from a healthy stand-in and breaks one
thing, and the healthy stand-in is itself checked to be healthy, so that a rule that
fires on everything fails too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from harness.cluster import health as health_module
from harness.cluster import lifecycle
from harness.cluster.broker_metadata import BrokerView
from harness.cluster.health import HealthReport, assess_health
from harness.cluster.metadata.zookeeper import serving_problems
from harness.cluster.state import ClusterState, PartitionState
from harness.errors import ChaosError
from topologies import load_topology

TOPOLOGY = load_topology()  # kafka-0..2, zk-a..c, and toxiproxy
RUNNING = {name: "running" for name in ["toxiproxy", "zk-a", "zk-b", "zk-c", "kafka-0", "kafka-1", "kafka-2"]}


def _partition(leader: int = 0, isr: tuple[int, ...] = (0, 1, 2), topic: str = "t",
               partition: int = 0) -> PartitionState:
    return PartitionState(topic, partition, leader, 1, isr, 1, (0, 1, 2))


@dataclass
class FakeProxies:
    links: list[str] = field(default_factory=list)

    def damaged(self) -> list[str]:
        return list(self.links)


@dataclass
class FakeObservation:
    """A cluster's observation, healthy unless a test changes one field; records what was asked."""

    proxies: FakeProxies = field(default_factory=FakeProxies)
    modes: dict[str, str | None] = field(
        default_factory=lambda: {"zk-a": "leader", "zk-b": "follower", "zk-c": "follower"})
    snapshot: ClusterState | Exception = field(
        default_factory=lambda: ClusterState((0, 1, 2), 0, 1, {("t", 0): _partition()}))
    views: dict[int, BrokerView | OSError] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    @property
    def quorum_nodes(self) -> tuple[str, ...]:
        return tuple(self.modes)

    def quorum_problems(self) -> list[tuple[str, str | None]]:
        self.asked.append("modes")
        return serving_problems(dict(self.modes))

    def state(self, topics: list[str] | None = None) -> ClusterState:
        self.asked.append("state")
        if isinstance(self.snapshot, Exception):
            raise self.snapshot
        return self.snapshot

    def broker_view(self, broker_id: int, topics: list[str] | None = None) -> BrokerView:
        self.asked.append(f"view {broker_id}")
        view = self.views.get(broker_id, BrokerView((0, 1, 2), 0, {}))
        if isinstance(view, OSError):
            raise view
        return view


def assess(observation: FakeObservation, **statuses: str) -> HealthReport:
    return assess_health(TOPOLOGY, {**RUNNING, **{k.replace("_", "-"): v for k, v in statuses.items()}},
                         observation)


def test_the_healthy_stand_in_is_healthy_and_every_layer_was_looked_at() -> None:
    observation = FakeObservation()
    report = assess(observation)
    assert report.healthy and report.problems == [] and report.blocking == set()
    assert observation.asked == ["modes", "state", "view 0", "view 1", "view 2"]


def test_a_node_that_exited_blocks_and_nothing_above_it_is_judged() -> None:
    observation = FakeObservation()
    report = assess(observation, kafka_1="exited", zk_b="paused")
    assert report.problems == ["zk-b is paused", "kafka-1 is exited"]
    assert report.blocking == {"kafka-1", "zk-b"}
    assert observation.asked == [], "ZooKeeper and brokers are not asked while a node is down"


def test_a_damaged_link_is_a_problem_that_points_at_no_node() -> None:
    observation = FakeObservation(proxies=FakeProxies(["zone-a->kafka-1", "zk-a->zk-b"]))
    report = assess(observation)
    assert report.problems == ["damaged links: zone-a->kafka-1, zk-a->zk-b"]
    assert report.blocking == set()
    assert observation.asked == ["modes"], "the quorum is still checked, ZooKeeper's state is not read"


def test_zookeeper_without_a_quorum_blocks_the_nodes_not_serving() -> None:
    observation = FakeObservation(modes={"zk-a": None, "zk-b": "follower", "zk-c": "observer"})
    report = assess(observation)
    assert report.problems == ["zk-a not serving", "zk-c not serving"]
    assert report.blocking == {"zk-a", "zk-c"}
    assert "state" not in observation.asked


def test_unreadable_metadata_blocks_every_quorum_node() -> None:
    observation = FakeObservation(snapshot=ConnectionError("connection loss"))
    report = assess(observation)
    assert report.problems == ["the cluster's metadata unreadable: connection loss"]
    assert report.blocking == {"zk-a", "zk-b", "zk-c"}


def test_a_broker_missing_from_brokers_ids_blocks_that_broker() -> None:
    observation = FakeObservation(snapshot=ClusterState((0, 2), 0, 1, {("t", 0): _partition()}))
    report = assess(observation)
    assert report.problems == ["live brokers (0, 2), expected (0, 1, 2)"]
    assert report.blocking == {"kafka-1"}
    assert not any(a.startswith("view") for a in observation.asked), (
        "brokers are asked only when ZooKeeper is whole")


def test_no_controller_is_a_problem_that_points_at_no_node() -> None:
    observation = FakeObservation(snapshot=ClusterState((0, 1, 2), None, None, {("t", 0): _partition()}))
    report = assess(observation)
    assert report.problems == ["no controller"]
    assert report.blocking == set()


def test_a_short_isr_blocks_the_replicas_outside_it() -> None:
    short = _partition(leader=0, isr=(0, 2))
    observation = FakeObservation(snapshot=ClusterState((0, 1, 2), 0, 1, {("t", 0): short}))
    report = assess(observation)
    assert report.problems == ["t-0 leader 0 isr [0, 2] replicas [0, 1, 2]"]
    assert report.blocking == {"kafka-1"}


def test_an_offline_partition_blocks_all_its_replicas() -> None:
    offline = _partition(leader=-1, isr=(1,), partition=3)
    observation = FakeObservation(snapshot=ClusterState((0, 1, 2), 0, 1, {("t", 3): offline}))
    report = assess(observation)
    assert report.problems == ["t-3 leader -1 isr [1] replicas [0, 1, 2]"]
    assert report.blocking == {"kafka-0", "kafka-1", "kafka-2"}


def test_a_broker_silent_or_with_stale_metadata_blocks_itself() -> None:
    observation = FakeObservation(views={0: OSError("connection refused"), 2: BrokerView((0, 2), 0, {})})
    report = assess(observation)
    assert report.problems == ["kafka-0 does not answer metadata: connection refused",
                               "kafka-2 knows brokers (0, 2)"]
    assert report.blocking == {"kafka-0", "kafka-2"}
    assert observation.asked[-3:] == ["view 0", "view 1", "view 2"], (
        "a silent broker does not stop the others' check")


@pytest.mark.parametrize(("modes", "problems"), [
    ({"zk-a": "leader", "zk-b": "follower", "zk-c": "follower"}, []),
    ({"zk-a": "leader", "zk-b": None, "zk-c": "standalone"},
     [("zk-b not serving", "zk-b"), ("zk-c not serving", "zk-c")]),
])
def test_zookeeper_serving_names_each_node_not_in_a_quorum(
        modes: dict[str, str | None], problems: list[tuple[str, str]]) -> None:
    assert serving_problems(modes) == problems


def test_cluster_health_judges_its_nodes_statuses_and_its_own_observation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = lifecycle.Cluster(TOPOLOGY)
    assert cluster._nodes.statuses() == {}
    with pytest.raises(ChaosError, match="not started"):
        cluster.health()  # no containers to find stopped, and no proxies to ask
    monkeypatch.setattr(cluster._nodes, "statuses", lambda: {"toxiproxy": "running", "kafka-2": "exited"})
    report = cluster.health()
    assert report.problems == ["kafka-2 is exited"] and report.blocking == {"kafka-2"}


def test_health_report_is_still_importable_from_the_lifecycle_module() -> None:
    assert lifecycle.HealthReport is health_module.HealthReport
