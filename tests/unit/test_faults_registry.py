"""Faults built from specs: every kind round-trips, bad input gets one clear error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from faults.errors import FaultSpecError, TargetError
from faults.registry import FAULT_DOCS, build_fault, fault_kinds
from topologies import load_topology

FOLLOWER_FETCH = {"from": {"follower_of": ["t", 0]}, "to": {"leader_of": ["t", 0]}, "kind": "replication"}

SPECS: list[dict[str, Any]] = [
    {"fault": "kill", "target": {"leader_of": ["t", 0]}},
    {"fault": "controlled_shutdown", "target": {"broker": 1}, "timeout_s": 45.0},
    {"fault": "pause", "target": {"follower_of": ["t", 0]}},
    {"fault": "restart", "target": "zookeeper_leader", "clean": True, "downtime_s": 2.0},
    {"fault": "bounce", "target": "controller", "times": 2, "clean": False},
    {"fault": "power_loss", "target": {"zone_of": {"leader_of": ["t", 0]}}},
    {"fault": "fill_disk", "target": {"leader_of": ["t", 0]}},
    {"fault": "cut", "links": FOLLOWER_FETCH, "mode": "blackhole"},
    {
        "fault": "cut",
        "links": {"from": {"broker": 1}, "to": {"broker": 0}, "both_ways": True},
        "mode": "refuse",
    },
    {"fault": "cut", "links": {"isolate": {"zone_of": "controller"}}, "mode": "blackhole"},
    {"fault": "latency", "links": FOLLOWER_FETCH, "latency_ms": 10000, "jitter_ms": 100},
    {
        "fault": "latency",
        "links": {"isolate": {"zone": "a"}},
        "latency_ms": 50,
        "jitter_ms": 0,
        "stream": "downstream",
    },
    {"fault": "bandwidth", "links": {"isolate": {"zone": "b"}}, "rate_kb_s": 64},
    {"fault": "slow_close", "links": {"isolate": {"zone_clients": "c"}}, "delay_ms": 500},
    {"fault": "slicer", "links": FOLLOWER_FETCH, "average_size": 64, "size_variation": 16, "delay_us": 10},
    {"fault": "expire_session", "target": {"broker": 2}, "timeout_s": 30.0},
    {"fault": "delete_controller", "timeout_s": 30.0},
    {"fault": "preferred_election", "topic": "t", "timeout_s": 30.0},
    {"fault": "preferred_election", "topic": "t", "partitions": [0, 2], "timeout_s": 30.0},
    {"fault": "reassign", "topic": "t", "partition": 0, "replicas": [2, 1], "timeout_s": 60.0},
    {"fault": "topic_config", "topic": "t", "settings": {"min.insync.replicas": 1}, "timeout_s": 30.0},
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: str(s["fault"]))
def test_every_fault_round_trips_through_its_spec(spec: dict[str, Any]) -> None:
    fault = build_fault(spec)
    assert fault.to_spec() == spec
    again = build_fault(fault.to_spec())
    assert again.describe() == fault.describe()
    fault.check(load_topology("three_az"))
    assert not fault.active


def test_isolate_is_a_cut_of_everything_crossing_the_targets_border() -> None:
    fault = build_fault({"fault": "isolate", "target": {"zone": "a"}, "mode": "blackhole"})
    assert fault.describe() == "cut[blackhole] isolate zone a"
    assert fault.to_spec() == {"fault": "cut", "links": {"isolate": {"zone": "a"}}, "mode": "blackhole"}


def test_the_forms_here_name_only_registered_kinds() -> None:
    assert {spec["fault"] for spec in SPECS} <= set(fault_kinds())


@pytest.mark.parametrize("kind", fault_kinds())
def test_every_registered_kind_round_trips_from_its_documented_example(kind: str) -> None:
    """Every kind, without listing them: its entry's example builds, and what it saves
    builds back into the same spec (a kind added to the registry is held to it at once)."""
    example = json.loads(json.dumps(dict(FAULT_DOCS[kind].example)).replace('"$topic"', '"t"'))
    saved = build_fault(example).to_spec()
    assert build_fault(saved).to_spec() == saved
    assert build_fault(saved).describe() == build_fault(example).describe()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"fault": "explode", "target": "controller"}, "unknown fault 'explode'; known faults: bandwidth,"),
        ({"target": "controller"}, "needs a 'fault' name"),
        ("kill", "must be a table"),
        ({"fault": "kill"}, "fault 'kill' needs 'target'"),
        ({"fault": "kill", "target": "controller", "signal": 9}, "does not take 'signal'"),
        ({"fault": "kill", "target": {"rack": "a"}}, "unknown target 'rack'"),
        ({"fault": "cut", "links": FOLLOWER_FETCH, "mode": "drop"}, "unknown cut mode 'drop'"),
        ({"fault": "cut", "target": "controller"}, "does not take 'target'"),
        ({"fault": "latency", "links": FOLLOWER_FETCH}, "needs 'latency_ms'"),
        ({"fault": "latency", "links": FOLLOWER_FETCH, "latency_ms": -5}, "must not be negative"),
        ({"fault": "latency", "links": FOLLOWER_FETCH, "latency_ms": 5, "stream": "up"}, "stream must be"),
        ({"fault": "slicer", "links": FOLLOWER_FETCH, "average_size": 8, "size_variation": 8}, "smaller"),
        ({"fault": "restart", "target": "controller", "downtime_s": -1}, "must not be negative"),
        ({"fault": "bounce", "target": "controller", "times": 0}, "must be positive"),
        ({"fault": "reassign", "topic": "t", "partition": 0, "replicas": [1, 1]}, "distinct"),
        ({"fault": "reassign", "topic": "t", "partition": 0, "replicas": []}, "at least one"),
        ({"fault": "preferred_election"}, "needs 'topic'"),
        ({"fault": "topic_config", "topic": "t", "settings": {}}, "at least one setting"),
        ({"fault": "topic_config", "topic": "t"}, "settings must be a table"),
        ({"fault": "topic_config", "topic": "t", "settings": {"x": [1]}}, "string, number or boolean"),
    ],
)
def test_bad_fault_specs_get_one_clear_error(spec: object, message: str) -> None:
    with pytest.raises(FaultSpecError, match=message):
        build_fault(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"fault": "kill", "target": {"broker": 3}}, "has no broker 3"),
        ({"fault": "isolate", "target": {"zone": "d"}}, "unknown zone 'd'; zones are a, b, c"),
        (
            {"fault": "reassign", "topic": "t", "partition": 0, "replicas": [0, 4]},
            r"unknown broker\(s\) \[4\]",
        ),
        ({"fault": "pause", "target": {"node": "zk-z"}}, "no node 'zk-z'"),
    ],
)
def test_targets_outside_the_topology_are_refused_before_injection(spec: object, message: str) -> None:
    fault = build_fault(spec)
    with pytest.raises(TargetError, match=message):
        fault.check(load_topology("three_az"))
