"""Fault schedules on a real cluster: replay from the saved file, refusal of bad input
before anything is injected, and one call that heals everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faults import (
    BrokerId,
    EventLog,
    FaultEvent,
    FollowerOf,
    Kill,
    LeaderOf,
    Pause,
    Schedule,
    ScheduleError,
    TargetError,
    ZooKeeperLeader,
    active_faults,
    heal_all,
    isolate_zone,
)
from faults.schedule import running_schedules
from harness.cluster.lifecycle import Cluster
from tests.support.trickle import Trickle, unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]


def _entries(topic: str) -> list[dict[str, object]]:
    fetch = {"from": {"follower_of": [topic, 0]}, "to": {"leader_of": [topic, 0]}, "kind": "replication"}
    return [
        {"start_s": 0.0, "duration_s": 2.0, "fault": "latency", "links": fetch, "latency_ms": 300},
        {"start_s": 0.5, "fault": "delete_controller"},
        {"start_s": 1.0, "duration_s": 1.5, "fault": "pause", "target": {"follower_of": [topic, 0, 1]}},
        {
            "start_s": 1.5,
            "duration_s": 1.0,
            "fault": "cut",
            "links": {"isolate": {"zone_clients": "c"}},
            "mode": "blackhole",
        },
    ]


def _run(schedule: Schedule, cluster: Cluster, topic: str) -> EventLog:
    log = EventLog()
    with Trickle(cluster, topic), schedule.start(cluster, log) as run:
        assert run.wait(60), "the schedule did not finish"
        assert not run.errors, run.errors
    return log


@pytest.mark.metadata("zookeeper")
@pytest.mark.core(strikes=("latency", "delete_controller", "pause"))
def test_a_recorded_schedule_replayed_from_its_file_injects_the_same_faults_on_the_same_roles(
    cluster: Cluster, fault_log: EventLog, tmp_path: Path
) -> None:
    topic = unique_topic("replay")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    schedule = Schedule.from_dict({"version": 1, "entries": _entries(topic)})
    first = _run(schedule, cluster, topic)
    saved = schedule.save(tmp_path / "schedule-run.json", first)
    heal_all(cluster, fault_log)

    replay = Schedule.load(saved)
    assert replay.entries == schedule.entries
    assert replay.recorded == first.events
    second = _run(replay, cluster, topic)

    def sequence(events: list[FaultEvent]) -> list[tuple[str, str]]:
        return [(e.fault, e.action) for e in events]

    assert sequence(second.events) == sequence(replay.recorded) == sequence(first.events)
    assert all(e.ok for e in first.events + second.events)
    assert len(first.events) == 8  # four injects and four heals
    print("\nfirst run / replay, fault -> resolved targets:")
    for a, b in zip(first.events, second.events, strict=True):
        print(f"  {a.action:6} {a.fault:55} {list(a.targets)} / {list(b.targets)}")
    assert json.loads(saved.read_text())["recorded"][0]["fault"] == first.events[0].fault


@pytest.mark.metadata("zookeeper")
@pytest.mark.core
def test_bad_input_gets_one_clear_error_before_anything_is_injected(
    cluster: Cluster, fault_log: EventLog, tmp_path: Path
) -> None:
    topic = unique_topic("bad")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    good = {"start_s": 0, "duration_s": 5, "fault": "isolate", "target": {"zone": "a"}}
    cases: list[tuple[object, str]] = [
        ({"entries": [good, {"start_s": 1, "fault": "explode"}]}, "entry 2: unknown fault 'explode'"),
        (
            {"entries": [good, {"start_s": 1, "fault": "isolate", "target": {"zone": "q"}}]},
            "unknown zone 'q'",
        ),
        ({"entries": [good, {"start_s": 1, "fault": "kill", "target": {"broker": 7}}]}, "has no broker 7"),
        ({"entries": [good, {"start_s": 1, "duration_s": -2, "fault": "delete_controller"}]}, "negative"),
        (
            {"entries": [good, {"start_s": 1, "fault": "kill", "target": {"leader_of": ["nope", 0]}}]},
            "topic 'nope' does not exist",
        ),
        (
            {"entries": [good, {"start_s": 1, "fault": "kill", "target": {"leader_of": [topic, 4]}}]},
            "no partition 4",
        ),
    ]
    for spec, message in cases:
        with pytest.raises(ScheduleError, match=message) as caught:
            Schedule.from_dict(spec).start(cluster, fault_log)
        print(f"\nrefused: {caught.value}")
    (tmp_path / "broken.toml").write_text("[[entries]]\nstart_s = = 1\n")
    with pytest.raises(ScheduleError, match="is not valid TOML"):
        Schedule.load(tmp_path / "broken.toml")
    with pytest.raises(TargetError, match="has no broker 9"):
        Kill(BrokerId(9)).inject(cluster, fault_log)
    # Nothing was injected: no fault event succeeded, no link is damaged, every node runs.
    assert not [e for e in fault_log if e.ok]
    assert cluster.proxies.damaged() == []
    assert all(cluster.node_status(n) == "running" for n in cluster.topology.node_names)
    assert not active_faults(cluster) and not running_schedules(cluster)


@pytest.mark.metadata("zookeeper")
@pytest.mark.core(strikes=("kill", "pause", "latency", "isolate"))
def test_heal_all_undoes_every_kind_of_damage_in_one_call(cluster: Cluster, fault_log: EventLog) -> None:
    topic = unique_topic("healall")
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    # Roles are looked up in ZooKeeper, so resolve them before the ensemble loses quorum.
    Kill(LeaderOf(topic, 0)).inject(cluster, fault_log)
    Pause(FollowerOf(topic, 0)).inject(cluster, fault_log)
    slow_clients = {"fault": "latency", "links": {"isolate": {"zone_clients": "a"}}, "latency_ms": 100}
    long = Schedule.from_dict({"entries": [{"start_s": 0, "duration_s": 300, **slow_clients}]})
    long.start(cluster, fault_log)
    isolate_zone("c", "blackhole").inject(cluster, fault_log)
    Kill(ZooKeeperLeader()).inject(cluster, fault_log)  # with zone c cut: no quorum at all
    assert cluster.proxies.damaged() and len(active_faults(cluster)) >= 4

    took = heal_all(cluster, fault_log)
    report = cluster.health()
    assert report.healthy, report.problems
    assert cluster.proxies.damaged() == []
    assert not active_faults(cluster) and not running_schedules(cluster)
    heals = [e for e in fault_log if e.action == "heal"]
    assert len(heals) == 5 and all(e.ok for e in heals), [e.outcome for e in heals]
    assert heal_all(cluster, fault_log) < 30  # idempotent: nothing left to do
    print(f"\nheal_all undid {len(heals)} faults and restored full health in {took:.1f} s")
