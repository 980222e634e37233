"""The migration's mode and driver without Docker: what each node is configured as after
each step, where the state is read from, and the phases' records, over stand-ins for the
cluster and its containers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from harness.cluster.fabric import plan_fabric
from harness.cluster.metadata.migration import FollowingReader, MigrationMode
from harness.cluster.migration import driver as driver_module
from harness.cluster.migration.driver import COMPLETED, FAILED, MigrationDriver
from harness.cluster.migration.plan import NodeConfig, Phase, migration_steps
from harness.cluster.sampler import StateSampler
from harness.cluster.state import ClusterState
from harness.cluster.versions import release
from harness.errors import ChaosError, UnsupportedVersion
from harness.history.schema import MIGRATION_COMPLETED, MIGRATION_FAILED, SCHEMAS
from topologies import load_topology
from topologies.model import migration_topology

MIGRATING = migration_topology(load_topology("three_az"), load_topology("three_az", metadata="kraft"))


@dataclass
class FakeNodes:
    """Containers as far as the mode touches them: the files written, the starts."""

    files: dict[str, str] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)

    def write_config(self, node: str, file_name: str, text: str) -> None:
        self.files[node] = text

    def broker_properties(self, broker_id: int, metadata: Any) -> str:
        return "\n".join(f"{k}={v}" for k, v in metadata.settings.items())

    def start_controller(self, controller: Any, volume: str, cluster_id: str,
                         migrating: bool = False) -> None:
        self.started.append(f"{controller.name} {cluster_id} migrating={migrating}")

    def retire(self, node: str) -> None:
        self.retired.append(node)


@dataclass
class FakeObserver:
    znodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    empty: set[str] = field(default_factory=set)  # znodes there without data

    def read_json(self, path: str) -> dict[str, Any] | None:
        return self.znodes.get(path)

    def stat(self, path: str) -> object | None:
        return object() if path in self.znodes or path in self.empty else None


class FakeHost:
    topology = MIGRATING
    fabric = plan_fabric(MIGRATING)
    release = release("3.9.1")

    def __init__(self) -> None:
        self.nodes = FakeNodes()

    def broker_settings(self) -> dict[str, Any]:
        return dict(MIGRATING.broker_settings)

    def observer_address(self, node: str) -> str:
        return f"127.0.0.1:{node}"

    def create_volume(self, node: str, size_mb: int | None = None) -> str:
        return f"vol-{node}"


def _mode() -> tuple[MigrationMode, FakeObserver]:
    mode = MigrationMode(FakeHost())  # type: ignore[arg-type]
    observer = FakeObserver({"/cluster/id": {"version": "1", "id": "zk-cluster-id"}})
    mode._zookeeper._observer = observer  # type: ignore[assignment]
    return mode, observer


def _nodes(mode: MigrationMode) -> FakeNodes:
    nodes = mode._host.nodes
    assert isinstance(nodes, FakeNodes)
    return nodes


def test_the_controllers_are_formatted_with_the_zookeeper_clusters_id_and_start_migrating() -> None:
    mode, _ = _mode()
    assert mode.quorum_nodes == ("zk-a", "zk-b", "zk-c")
    assert mode.provision() == "zk-cluster-id"
    assert _nodes(mode).started == [f"{c} zk-cluster-id migrating=True" for c in ("kraft-a", "kraft-b",
                                                                                          "kraft-c")]
    assert mode.quorum_nodes == ("zk-a", "zk-b", "zk-c", "kraft-a", "kraft-b", "kraft-c")


def test_a_reconfigured_node_is_written_as_its_new_configuration_and_kept_so() -> None:
    mode, _ = _mode()
    mode.provision()
    mode.reconfigure("kafka-0", NodeConfig.MIGRATING)
    assert "zookeeper.metadata.migration.enable=True" in _nodes(mode).files["kafka-0"]
    assert mode.broker_settings(MIGRATING.broker(0)).settings["zookeeper.metadata.migration.enable"] is True
    mode.reconfigure("kafka-0", NodeConfig.KRAFT)
    assert "process.roles=broker" in _nodes(mode).files["kafka-0"]
    assert "zookeeper.connect" not in _nodes(mode).files["kafka-0"]
    mode.reconfigure("kraft-a", NodeConfig.KRAFT)
    assert "zookeeper.metadata.migration.enable" not in _nodes(mode).files["kraft-a"]
    mode.retire("kraft-a")
    assert "kraft-a" not in mode.quorum_nodes and _nodes(mode).retired == ["kraft-a"]


def test_a_zookeeper_broker_waits_for_its_session_and_a_kraft_broker_does_not() -> None:
    mode, _ = _mode()
    held: list[int] = []

    def holder(broker_id: int) -> str | None:
        held.append(broker_id)
        return "held"

    mode._zookeeper.registration_holder = holder  # type: ignore[method-assign]
    assert mode.registration_holder(0) == "held"
    mode.configs["kafka-0"] = NodeConfig.KRAFT
    assert mode.registration_holder(0) is None and held == [0]


def test_the_quorum_counts_as_serving_once_a_controller_leads_the_migration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster.metadata import migration as migration_module

    asked: list[str] = []

    def unreachable(address: str, timeout_s: float) -> dict[str, Any]:
        asked.append(address)
        raise ConnectionRefusedError(address)

    monkeypatch.setattr(migration_module, "describe_quorum", unreachable)
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    assert mode.quorum_problems() == []  # nothing provisioned yet: the ensemble alone
    mode.provision()
    assert "no KRaft controller has taken the lead" in mode.quorum_problems()[0][0]
    # The leader's migration driver creates the znode with every field -1 (Kafka 3.9).
    observer.znodes["/migration"] = {"version": 0, "kraft_controller_id": -1, "kraft_controller_epoch": -1,
                                     "kraft_metadata_offset": -1, "kraft_metadata_epoch": -1}
    assert mode.quorum_problems() == []
    assert set(mode._controller_roles().values()) == {None}  # no controller answers
    assert asked == [f"127.0.0.1:kraft-{z}" for z in "abc"]  # each asked on its observer link

    def leader_b(address: str, timeout_s: float) -> dict[str, Any]:
        if not address.endswith("kraft-b"):
            return {"error_code": 6, "leader_id": -1}  # NOT_LEADER_OR_FOLLOWER
        now = time.time() * 1000
        return {"error_code": 0, "leader_id": 101, "leader_epoch": 3,
                "current_voters": [{"replica_id": 100, "last_fetch_timestamp": now - 500},
                                   {"replica_id": 101, "last_fetch_timestamp": -1},
                                   {"replica_id": 102, "last_fetch_timestamp": now - 60_000}]}

    monkeypatch.setattr(migration_module, "describe_quorum", leader_b)
    # The leader's own account, while the brokers are ZooKeeper-mode: kraft-c has stopped fetching.
    assert mode._controller_roles() == {"kraft-a": "follower", "kraft-b": "leader", "kraft-c": None}


class FakeReader:
    """A ZooKeeper observer or a KRaft reader, as far as the following reader asks."""

    def __init__(self, name: str) -> None:
        self.name, self.closed = name, False

    def snapshot(self, topics: list[str] | None = None) -> ClusterState:
        # ZooKeeper lists only the brokers registered in /brokers/ids.
        brokers = (1, 2) if self.name == "zookeeper" else (0, 1, 2)
        controller, epoch = (5, 7) if self.name == "zookeeper" else (100, 3)
        return ClusterState(brokers, controller, epoch)

    def controller_and_epoch(self) -> tuple[int, int]:
        return 101, 8

    def brokers_state(self, topics: list[str] | None = None) -> ClusterState:
        return ClusterState((0, 1, 2), None, None)

    def close(self) -> None:
        self.closed = True


def test_the_state_is_read_where_the_brokers_say_it_is_as_they_roll_to_kraft() -> None:
    mode, _ = _mode()
    opened: list[FakeReader] = []

    def opener(name: str) -> Any:
        def open_one() -> FakeReader:
            opened.append(FakeReader(name))
            return opened[-1]

        return open_one

    reader = FollowingReader(mode, opener("zookeeper"), opener("kraft"), owned=True)
    mode.phase = Phase.BROKER_ROLL
    state = reader.snapshot()
    assert (state.controller, state.live_brokers, state.migration_phase) == (5, (1, 2), "broker_roll")
    mode.configs["kafka-0"] = NodeConfig.KRAFT  # rolled: no longer in /brokers/ids
    state = reader.snapshot()
    assert (state.live_brokers, state.controller, state.controller_epoch) == ((0, 1, 2), 101, 8)
    for broker in MIGRATING.brokers:
        mode.configs[broker.name] = NodeConfig.KRAFT
    assert (reader.snapshot().controller, reader.snapshot().controller_epoch) == (100, 3)
    reader.close()
    assert [r.name for r in opened] == ["zookeeper", "kraft"] and all(r.closed for r in opened)


def test_a_phase_change_alone_starts_a_new_sample() -> None:
    sampler = StateSampler(None, ["t"])
    state = ClusterState((0, 1, 2), 0, 1)
    clock = iter(range(100))
    sampler.sample(lambda _: state, now=lambda: float(next(clock)))
    sampler.sample(lambda _: state, now=lambda: float(next(clock)))
    assert len(sampler.records()) == 1
    moved = ClusterState((0, 1, 2), 0, 1, migration_phase="copy")
    sampler.sample(lambda _: moved, now=lambda: float(next(clock)))
    assert [r.state.migration_phase for r in sampler.records() if r.state] == [None, "copy"]
    assert sampler.records()[-1].rows()[0]["migration_phase"] == "copy"


class FakeCluster:
    """A cluster that records what the driver asks of it."""

    def __init__(self, mode: MigrationMode, fail_on: str | None = None) -> None:
        self.metadata = mode
        self.done: list[str] = []
        self.fail_on = fail_on
        self.zookeeper = self

    topology = MIGRATING
    exited: tuple[str, ...] = ()  # the nodes whose container has exited

    def container(self, node: str) -> Any:
        status = "exited" if node in self.exited else "running"
        code = 1 if node in self.exited else 0
        return SimpleNamespace(attrs={"State": {"Status": status, "ExitCode": code}})

    def node_log(self, node: str, lines: int = 200) -> str:
        return "usage: kafka-storage format\nkafka-storage: error: argument --cluster-id: expected one\n"

    def stop_node(self, node: str) -> None:
        self.done.append(f"stop {node}")

    def start_node(self, node: str, timeout_s: float) -> bool:
        if node == self.fail_on:
            raise RuntimeError(f"{node} did not start")
        self.done.append(f"start {node} as {self.metadata.configs[node]}")
        return True

    def wait_healthy(self, timeout_s: float) -> float:
        self.done.append("healthy")
        return 0.0

    kafka_version = "3.9.1"

    def release_image(self, version: str) -> str:
        self.done.append(f"image {version}")
        return f"kafka-chaos/kafka:{version}"

    def upgrade_node(self, node: str, version: str) -> None:
        self.done.append(f"upgrade {node} to {version}")

    def delete_znode(self, path: str) -> None:
        observer = self.metadata.zookeeper().observer
        if path in observer.znodes:  # type: ignore[attr-defined]
            del observer.znodes[path]  # type: ignore[attr-defined]
        self.done.append(f"delete {path}")

    def create_znode(self, path: str, data: bytes | None) -> None:
        assert data is None
        self.metadata.zookeeper().observer.empty.add(path)  # type: ignore[attr-defined]
        self.done.append(f"create {path} without data")


def _copied(observer: FakeObserver) -> None:
    observer.znodes["/migration"] = {"version": 0, "kraft_controller_id": 100, "kraft_controller_epoch": 1,
                                     "kraft_metadata_offset": 42, "kraft_metadata_epoch": 1}


def test_the_driver_walks_every_phase_in_order_and_records_each() -> None:
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    _copied(observer)
    cluster = FakeCluster(mode)
    records = MigrationDriver(cluster, migration_steps(MIGRATING), hold_s=0.0).run()  # type: ignore[arg-type]
    assert [r.phase for r in records] == ["provision", "enter_migration", "copy", "dual_write", "broker_roll",
                                          "finalize"]
    assert all(r.outcome == COMPLETED and r.mono <= r.end_mono for r in records)
    assert "zk-cluster-id" in (records[0].detail or "")
    assert records[2].detail is not None and "offset 42" in records[2].detail
    # Each restart waits for full health before the node goes down and after it is back.
    assert cluster.done[:4] == ["healthy", "stop kafka-0", "start kafka-0 as migrating", "healthy"]
    assert cluster.done[-4:] == ["healthy", "stop kraft-c", "start kraft-c as kraft", "healthy"]
    assert mode.brokers_on_kraft and mode.phase is None
    row = records[1].row()
    assert tuple(row) == tuple(SCHEMAS["migration"].names)
    assert row["steps"] == "; ".join(f"restart kafka-{b} as migrating" for b in range(2))
    assert records[2].steps == ["restart kafka-2 as migrating", "await copy"]


def test_a_controller_that_exits_as_the_quorum_forms_fails_provision_at_once() -> None:
    mode, _ = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    cluster = FakeCluster(mode)
    cluster.exited = ("kraft-b",)
    driver = MigrationDriver(cluster, migration_steps(MIGRATING))  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(ChaosError, match=r"kraft-b exited with code 1 as the controllers started: .*"):
        driver.run()
    assert time.monotonic() - started < 5
    [record] = driver.records
    assert record.phase == "provision" and record.outcome == FAILED


def test_the_storage_format_takes_a_cluster_id_that_begins_with_a_dash() -> None:
    from harness.cluster.nodes import Nodes

    command = Nodes._launched(["java", "kafka.Kafka"], "/etc/server.properties", "-370r9ElRk2mS8n1kdlWFA")
    assert "--cluster-id=-370r9ElRk2mS8n1kdlWFA" in command[-1] and " -t " not in command[-1]


def test_a_rollback_goes_back_to_zookeeper_mode_and_releases_the_controller() -> None:
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    _copied(observer)
    cluster = FakeCluster(mode)
    records = MigrationDriver(cluster, migration_steps(MIGRATING, Phase.DUAL_WRITE)).run()  # type: ignore[arg-type]
    assert records[-1].phase == "rollback" and records[-1].outcome == COMPLETED
    # Kafka's rollback: /controller released for a broker, /migration cleared (its content kept).
    assert cluster.done.index("delete /controller") < cluster.done.index("delete /migration")
    assert "/migration" not in observer.znodes
    assert '/migration deleted, it held {"kraft_controller_epoch": 1' in (records[-1].detail or "")
    assert mode.provisioned == () and all(c is NodeConfig.ZOOKEEPER for c in mode.configs.values())
    assert _nodes(mode).retired == ["kraft-a", "kraft-b", "kraft-c"]


def test_an_upgrade_builds_its_image_first_rolls_each_node_on_a_healthy_cluster_and_raises_the_version(
) -> None:
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    _copied(observer)
    cluster = FakeCluster(mode)
    raised: list[float] = []

    def raise_metadata_version(timeout_s: float) -> str:
        raised.append(timeout_s)
        return "raised"

    mode.raise_metadata_version = raise_metadata_version  # type: ignore[method-assign]
    driver = MigrationDriver(cluster, migration_steps(MIGRATING, upgrade_to="4.4.0"))  # type: ignore[arg-type]
    driver.prepare()
    assert cluster.done == ["image 4.4.0"]
    records = driver.run()
    assert records[-1].phase == Phase.UPGRADE and records[-1].outcome == COMPLETED
    assert records[-1].detail == "raised" and raised
    upgrades = [d for d in cluster.done if d.startswith("upgrade ")]
    assert upgrades[0] == "upgrade kraft-a to 4.4.0" and upgrades[-1] == "upgrade kafka-2 to 4.4.0"
    first = cluster.done.index("upgrade kraft-a to 4.4.0")
    assert cluster.done[first - 1] == cluster.done[first + 1] == "healthy"
    with pytest.raises(UnsupportedVersion, match=r"cannot be upgraded to '3\.7\.2'"):
        MigrationDriver(cluster, migration_steps(MIGRATING, upgrade_to="3.7.2")).prepare()  # type: ignore[arg-type]


def test_a_phase_that_fails_is_recorded_with_its_error_and_the_walk_stops_there() -> None:
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    _copied(observer)
    cluster = FakeCluster(mode, fail_on="kafka-1")
    driver = MigrationDriver(cluster, migration_steps(MIGRATING))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="kafka-1 did not start"):
        driver.run()
    assert [(r.phase, r.outcome) for r in driver.records] == [("provision", COMPLETED),
                                                             ("enter_migration", FAILED)]
    assert driver.records[-1].detail == "RuntimeError: kafka-1 did not start"
    assert mode.phase is None


def test_an_empty_migration_znode_is_created_before_the_controllers_and_named_when_none_can_lead(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster.migration.plan import FoundZnode

    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    monkeypatch.setattr(driver_module, "STEP_TIMEOUT_S", 0.3)
    cluster = FakeCluster(mode)
    driver = MigrationDriver(cluster, migration_steps(MIGRATING),  # type: ignore[arg-type]
                             migration_znode=FoundZnode.EMPTY)
    with pytest.raises(Exception, match="take the lead of the migration"):
        driver.run()
    assert cluster.done[0] == "create /migration without data"
    assert _nodes(mode).started  # after the znode was there
    [record] = driver.records
    assert record.outcome == FAILED and "/migration unreadable: ValueError: /migration exists and holds no " \
        "data" in (record.detail or "")
    unreadable = "/migration unreadable: ValueError: /migration exists and holds no data"
    assert mode.quorum_problems() == [(unreadable, None)]
    # Absent, as by default: no controller has led yet; written by one: it leads.
    observer.empty.clear()
    assert "no KRaft controller has taken the lead" in mode.quorum_problems()[0][0]
    _copied(observer)
    assert mode.quorum_problems() == []


def test_a_copy_that_never_comes_fails_its_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    observer.znodes["/migration"] = {"version": 0, "kraft_controller_id": 100, "kraft_controller_epoch": 1,
                                     "kraft_metadata_offset": -1, "kraft_metadata_epoch": -1}
    monkeypatch.setattr(driver_module, "COPY_TIMEOUT_S", 0.3)
    driver = MigrationDriver(FakeCluster(mode), migration_steps(MIGRATING))  # type: ignore[arg-type]
    with pytest.raises(Exception, match="copy of ZooKeeper's metadata"):
        driver.run()
    assert (driver.records[-1].phase, driver.records[-1].outcome) == ("copy", FAILED)


def test_the_drivers_outcomes_are_the_historys() -> None:
    assert (COMPLETED, FAILED) == (MIGRATION_COMPLETED, MIGRATION_FAILED)


def test_a_migration_on_a_topology_that_is_not_migrating_is_refused_before_it_starts() -> None:
    from harness.cluster.migration.plan import MigrationSpec
    from harness.scenario.spec import ScenarioSpec
    from harness.scenario.spec_check import topology_problems

    spec = ScenarioSpec(id="m", title="m", migration=MigrationSpec())
    [problem] = topology_problems(spec, load_topology("three_az"))
    assert str(problem).startswith("migration") and "three_az is in zookeeper mode" in str(problem)
    assert topology_problems(spec, MIGRATING) == []


class FakeFuture:
    def result(self, timeout: float | None = None) -> None:
        return None


class FakeAdmin:
    """Alters a topic config; ``mirror`` says whether ZooKeeper then shows it."""

    def __init__(self, observer: FakeObserver, mirror: bool) -> None:
        self.observer, self.mirror = observer, mirror

    def incremental_alter_configs(self, resources: list[Any]) -> dict[Any, FakeFuture]:
        for resource in resources:
            if self.mirror:
                entries = {e.name: e.value for e in resource.incremental_configs}
                self.observer.znodes[f"/config/topics/{resource.name}"] = {"version": 1, "config": entries}
        return {resource: FakeFuture() for resource in resources}


def _mirroring_driver(admin: Callable[[FakeObserver], FakeAdmin]) -> MigrationDriver:
    """A driver of a whole walk, copied at once, whose dual-write change goes through ``admin``."""
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    _copied(observer)
    cluster = FakeCluster(mode)
    cluster.admin = admin(observer)  # type: ignore[attr-defined]
    return MigrationDriver(cluster, migration_steps(MIGRATING), mirror_topic="orders")  # type: ignore[arg-type]


@pytest.mark.parametrize("mirror", [True, False])
def test_dual_write_sets_a_config_through_kraft_and_waits_for_zookeeper_to_show_it(
        mirror: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver_module, "MIRROR_TIMEOUT_S", 0.3)
    driver = _mirroring_driver(lambda observer: FakeAdmin(observer, mirror))
    records = driver.run()
    assert driver.mirrored == ("orders", "retention.ms", "604800123")
    dual_write = next(r for r in records if r.phase == Phase.DUAL_WRITE)
    assert dual_write.outcome == COMPLETED  # not mirrored is the check's finding, not the walk's failure
    if mirror:
        assert driver.mirror_s is not None and "reached /config/topics/orders" in (dual_write.detail or "")
    else:
        assert driver.mirror_s is None and "did not reach /config/topics/orders" in (dual_write.detail or "")


class RefusingAdmin(FakeAdmin):
    """Refuses the change ``refusals`` times first, as a broker did in an exploration
    when a majority of the controllers was killed as dual-write began."""

    def __init__(self, observer: FakeObserver, refusals: int) -> None:
        super().__init__(observer, mirror=True)
        self.refusals = refusals

    def incremental_alter_configs(self, resources: list[Any]) -> dict[Any, FakeFuture]:
        from confluent_kafka import KafkaError, KafkaException

        if self.refusals > 0:
            self.refusals -= 1
            raise KafkaException(KafkaError(11, "Cannot set entity configs for topics orders directly when "
                                                "there is a KRaft controller."))
        return super().incremental_alter_configs(resources)


@pytest.mark.parametrize("refusals", [2, 99])
def test_a_refused_change_is_asked_again_and_never_fails_the_walk(
        refusals: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver_module, "MIRROR_TIMEOUT_S", 2.5)
    driver = _mirroring_driver(lambda observer: RefusingAdmin(observer, refusals))
    records = driver.run()
    dual_write = next(r for r in records if r.phase == Phase.DUAL_WRITE)
    assert dual_write.outcome == COMPLETED
    if refusals == 2:
        assert driver.mirrored is not None and driver.mirror_s is not None
        assert (dual_write.detail or "").startswith("refused 2 time(s) first (the first: KafkaException")
    else:
        assert driver.mirrored is None
        assert "never set; the last refusal: KafkaException" in (dual_write.detail or "")


def test_the_change_through_kraft_is_made_change_at_s_into_dual_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mode, observer = _mode()
    mode._zookeeper.quorum_problems = lambda: []  # type: ignore[method-assign]
    _copied(observer)
    slept: list[float] = []

    class Clock:
        """Time that passes only when the driver sleeps."""

        now = 1000.0

        @classmethod
        def sleep(cls, seconds: float) -> None:
            slept.append(seconds)
            cls.now += seconds

        @classmethod
        def monotonic(cls) -> float:
            return cls.now

        time = monotonic

    monkeypatch.setattr(driver_module, "time", Clock)
    cluster = FakeCluster(mode)
    cluster.admin = FakeAdmin(observer, mirror=True)  # type: ignore[attr-defined]
    driver = MigrationDriver(cluster, migration_steps(MIGRATING, Phase.DUAL_WRITE), hold_s=30.0,  # type: ignore[arg-type]
                             mirror_topic="orders", change_at_s=12.0)
    driver.run()
    assert driver.mirrored is not None and slept == [12.0, 18.0]


def test_every_migration_scenarios_schedule_and_checks_parse_on_the_migrating_topology() -> None:
    from harness.scenario.spec_check import topology_problems
    from tests.chaos.migration._shared import every_m_spec

    specs = every_m_spec()
    assert len(specs) >= 8
    for spec in specs:
        schedule, checks = spec.for_topic("t")
        schedule.check(MIGRATING)
        assert len(checks) == len(spec.checks) and topology_problems(spec, MIGRATING) == [], spec.id


@pytest.mark.parametrize("target", ["quorum_leader", "controller_majority", "all_controllers",
                                    {"controller": 100}, {"node": "kraft-a"}])
def test_a_fault_on_the_controllers_not_anchored_where_they_run_is_refused_before_it_starts(
        target: object) -> None:
    from harness.cluster.migration.plan import MigrationSpec
    from harness.scenario.spec import ScenarioSpec
    from harness.scenario.spec_check import topology_problems

    entry = {"start_s": 0, "duration_s": 5, "fault": "kill", "target": target}
    early = ScenarioSpec(id="m", title="m", migration=MigrationSpec(), schedule=(entry,))
    [problem] = topology_problems(early, MIGRATING)
    assert str(problem).startswith("schedule[1].when") and "acts on the KRaft controllers" in str(problem)
    at_provision = ScenarioSpec(id="m", title="m", migration=MigrationSpec(),
                                schedule=({**entry, "when": {"migration_phase": "provision"}},))
    assert len(topology_problems(at_provision, MIGRATING)) == 1
    anchored = ScenarioSpec(id="m", title="m", migration=MigrationSpec(),
                            schedule=({**entry, "when": {"migration_phase": "dual_write"}},))
    assert topology_problems(anchored, MIGRATING) == []


def test_a_fault_on_a_broker_or_the_active_controller_may_strike_at_any_time() -> None:
    from harness.cluster.migration.plan import MigrationSpec
    from harness.scenario.spec import ScenarioSpec
    from harness.scenario.spec_check import topology_problems

    for target in ({"broker": 1}, "active_controller", {"zone": "a"}):
        spec = ScenarioSpec(id="m", title="m", migration=MigrationSpec(),
                            schedule=({"start_s": 0, "duration_s": 5, "fault": "kill", "target": target},))
        assert topology_problems(spec, MIGRATING) == [], target
