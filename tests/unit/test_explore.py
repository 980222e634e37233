"""The explorer's pure parts, without Docker: the schedule generator is deterministic for
a seed and keeps its limits, the shrinker finds the minimal failing subset of a synthetic
predicate (a flaky one too), a configuration implies the rules Kafka promises, and the
cluster's own rules are caught breaking in a ZooKeeper timeline."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from faults.events import EventLog
from faults.registry import build_fault, fault_kinds
from harness.cluster.state import EPOCHS_OF_THE_QUORUM, EPOCHS_OF_ZOOKEEPER, ClusterState, PartitionState
from harness.explore import generator
from harness.explore.cluster_rules import (
    ISR_IN_REPLICAS,
    LEADER_EPOCHS,
    LEADER_IN_ISR,
    ONE_CONTROLLER,
    Seen,
    violations,
)
from harness.explore.coverage import coverage, kinds_not_exercised, table
from harness.explore.generator import (
    EXCLUDED_BY_DEFAULT,
    KindsInTurn,
    Space,
    draw_schedule,
    in_force,
    planned_entries,
)
from harness.explore.invariants import expectations, implied
from harness.explore.shrink import MIN_DURATION_S, Shrinker
from harness.rounds.explore import ROUND_HOLD_S, ExploreOptions, explore, summary_lines
from harness.rounds.explore_round import (
    ISR_FULL_S,
    LIVENESS,
    LIVENESS_S,
    checks_violated,
    last_to_heal,
    round_seed,
    round_spec,
)
from harness.rounds.live import LiveProgress, faults_in_force
from harness.rounds.shrink_round import recorded_violations, shrink_round
from harness.scenario.checks import (
    CheckSpecError,
    ClusterRules,
    Commits,
    CountRange,
    Evidence,
    Moment,
    Observed,
    parse_check,
)
from harness.scenario.file_format import (
    ScenarioFile,
    ScenarioFileError,
    check_runnable,
    load_scenario_file,
    parse_scenario,
)
from harness.scenario.runner import ScenarioSpec, TopicSpec
from harness.workload.driver import ProducerSpec
from topologies.loader import load_topology
from topologies.model import migration_topology

ROOT = Path(__file__).resolve().parents[2]
SPACE = Space.of(load_topology(), partitions=6)
SEEDS = range(300)


def _fault_only(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in ("start_s", "duration_s")}


# -- generator ---------------------------------------------------------------------------------

def test_a_seed_names_one_schedule() -> None:
    assert draw_schedule(SPACE, 7) == draw_schedule(SPACE, 7)
    distinct = {repr(draw_schedule(SPACE, seed)) for seed in range(20)}
    assert len(distinct) == 20


def test_every_schedule_keeps_the_space_limits() -> None:
    for seed in SEEDS:
        entries = draw_schedule(SPACE, seed)
        assert 1 <= len(entries) <= SPACE.faults[1], seed
        assert [e["start_s"] for e in entries] == sorted(e["start_s"] for e in entries)
        for e in entries:
            assert 0 <= e["start_s"] < SPACE.stretch_s and SPACE.duration_s[0] <= e["duration_s"] <= \
                SPACE.duration_s[1], (seed, e)
            assert e["fault"] in SPACE.drawn_kinds
            build_fault(_fault_only(e))  # the library accepts every drawn spec
        ends = [e["start_s"] + e["duration_s"] for e in entries]
        assert in_force(entries, 0.0, max(ends)) <= SPACE.max_concurrent, (seed, entries)


def test_a_start_rounded_up_to_the_stretchs_end_stays_before_it() -> None:
    """uniform(0, stretch) may return just under the end, which rounds to the end itself."""
    from harness.explore import generator

    class AtTheEnd(random.Random):
        def uniform(self, a: float, b: float) -> float:
            return b - 0.01

    start = generator._free_start([], 5.0, SPACE, AtTheEnd(0))
    assert start is not None and start < SPACE.stretch_s, (start, SPACE.stretch_s)


def test_one_fault_at_a_time_means_no_overlap() -> None:
    space = Space.of(load_topology(), partitions=6, max_concurrent=1, faults=(3, 6))
    for seed in SEEDS:
        entries = draw_schedule(space, seed)
        for before, after in itertools.pairwise(entries):
            assert before["start_s"] + before["duration_s"] < after["start_s"], (seed, entries)


def test_the_whole_library_is_drawn_and_only_the_kinds_asked_for() -> None:
    drawn = {e["fault"] for seed in SEEDS for e in draw_schedule(SPACE, seed)}
    assert drawn == set(fault_kinds()) - set(EXCLUDED_BY_DEFAULT)
    kills = Space.of(load_topology(), partitions=6, kinds=("kill", "isolate"))
    assert {e["fault"] for seed in SEEDS for e in draw_schedule(kills, seed)} == {"kill", "isolate"}


def test_targets_cover_roles_zookeeper_and_zones() -> None:
    targets = [str(e.get("target", e.get("links"))) for seed in SEEDS for e in draw_schedule(SPACE, seed)]
    for role in ("controller", "leader_of", "follower_of", "zookeeper_leader", "'zone'", "zk-session",
                 "zone_clients", "replication"):
        assert any(role in t for t in targets), role


def test_a_replication_link_is_drawn_between_one_partitions_follower_and_leader() -> None:
    """Two partitions' roles may be one broker, and no link joins a broker to itself."""
    links = [e["links"] for seed in SEEDS for e in draw_schedule(SPACE, seed)
             if isinstance(e.get("links"), dict) and e["links"].get("kind") == "replication"]
    assert len(links) > 20
    assert all(link["from"]["follower_of"] == link["to"]["leader_of"] for link in links)


def _partitions_named(entry: Mapping[str, Any]) -> list[int]:
    """The partitions an entry's role targets name (leader_of, follower_of, reassign)."""
    found: list[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ("leader_of", "follower_of"):
                    found.append(inner[1])
                else:
                    walk(inner)

    walk(_fault_only(entry))
    if entry["fault"] == "reassign":
        found.append(entry["partition"])
    return found


def test_partition_roles_tend_to_meet_on_one_partition_in_a_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """Losses behind three faults on one partition's replicas (an unclean election) are
    drawn often only if a round's roles tend to name one partition: with the focus, such
    rounds are drawn at least twice as often as with partitions drawn independently,
    and rounds naming several partitions, and every partition, are still drawn."""
    space = Space.of(load_topology(), partitions=6, kinds=("kill", "cut", "pause"), faults=(3, 4),
                     max_concurrent=3)

    def named() -> list[list[int]]:
        return [[p for e in draw_schedule(space, seed) for p in _partitions_named(e)] for seed in SEEDS]

    def three_on_one(rounds: list[list[int]]) -> int:
        return sum(any(ps.count(p) >= 3 for p in set(ps)) for ps in rounds)

    monkeypatch.setattr(generator, "SQUEEZE_SHARE", 0.0)  # a squeeze always names one partition
    focused = named()
    monkeypatch.setattr(generator, "FOCUS_SHARE", 0.0)
    independent = named()
    assert three_on_one(focused) >= 2 * three_on_one(independent) > 0
    assert {p for ps in focused for p in ps} == set(range(6))
    assert sum(len(set(ps)) > 1 for ps in focused) > len(focused) // 10


SQUEEZABLE = Space.of(load_topology(), partitions=6, kinds=("kill", "cut", "pause", "isolate"), faults=(3, 4),
                      max_concurrent=3)


ROLE_TARGETS = ("leader_of", "follower_of")


def _squeezes(entries: list[dict[str, Any]]) -> list[tuple[dict[str, Any], ...]]:
    """The (follower out, follower out, leader down) triples of a schedule: two entries
    naming one partition's follower, then one naming its leader."""
    def role(entry: dict[str, Any]) -> tuple[str, int] | None:
        target = entry.get("target") or (entry.get("links") or {}).get("from")
        if isinstance(target, dict) and len(target) == 1 and next(iter(target)) in ROLE_TARGETS:
            kind, (_, partition) = next(iter(target.items()))
            return kind, partition
        return None

    found: list[tuple[dict[str, Any], ...]] = []
    for a, b, c in itertools.combinations(sorted(entries, key=lambda e: e["start_s"]), 3):
        roles = [r for r in (role(a), role(b), role(c)) if r is not None]
        kinds = [kind for kind, _ in roles]
        if kinds == ["follower_of", "follower_of", "leader_of"] and len({p for _, p in roles}) == 1:
            found.append((a, b, c))
    return found


def test_the_leave_isr_time_comes_from_the_topologys_settings() -> None:
    assert SQUEEZABLE.leave_isr_s == 12.5  # 1.5 x replica.lag.time.max.ms 5000, + 5 s
    defaults = dataclasses.replace(load_topology(), broker_settings={})
    assert generator.leave_isr_s(defaults) == 50.0  # Kafka's 30 s lag: 45 s, + 5 s


def test_a_replication_cut_never_takes_out_a_squeezes_follower(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut off from its leader alone, a follower leaves the ISR only through the leader's
    request to the controller, which the cut blocks when that follower is the controller:
    rounds dealt two cuts and a kill are drawn as if squeezes did not exist, while two
    pauses and a kill are squeezed."""
    def rounds(kinds: list[str], share: float) -> list[list[dict[str, Any]]]:
        monkeypatch.setattr(generator, "SQUEEZE_SHARE", share)
        return [draw_schedule(SQUEEZABLE, seed, kinds=kinds) for seed in SEEDS]

    assert rounds(["cut", "cut", "kill"], 1.0) == rounds(["cut", "cut", "kill"], 0.0)
    assert rounds(["pause", "pause", "kill"], 1.0) != rounds(["pause", "pause", "kill"], 0.0)


def _well_timed(triple: tuple[dict[str, Any], ...], gap: float) -> bool:
    """The second follower taken out once the first has left the ISR, the leader once the
    second has; both followers still out when the leader goes, and back before it is."""
    first, second, down = triple
    ends = [e["start_s"] + e["duration_s"] for e in triple]
    return (second["start_s"] - first["start_s"] >= gap - 0.05
            and down["start_s"] - second["start_s"] >= gap - 0.05
            and down["start_s"] < min(ends[0], ends[1]) < ends[2]
            and {first["fault"], second["fault"]} <= set(generator.FOLLOWER_OUT)
            and down["fault"] in generator.LEADER_DOWN)


def test_some_rounds_squeeze_a_partitions_isr_and_then_take_its_leader_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gap = SQUEEZABLE.leave_isr_s

    def squeezed() -> list[list[dict[str, Any]]]:
        rounds = [draw_schedule(SQUEEZABLE, seed) for seed in SEEDS]
        for entries in rounds:
            assert in_force(entries, 0.0, 200.0) <= SQUEEZABLE.max_concurrent, entries
        return [r for r in rounds if any(_well_timed(t, gap) for t in _squeezes(r))]

    with_squeezes = len(squeezed())
    monkeypatch.setattr(generator, "SQUEEZE_SHARE", 0.0)
    by_chance = len(squeezed())
    assert len(SEEDS) // 4 < with_squeezes < 3 * len(SEEDS) // 4, with_squeezes
    assert by_chance * 5 < with_squeezes, (by_chance, with_squeezes)


def test_no_squeeze_where_three_faults_may_not_be_in_force_at_once() -> None:
    two = dataclasses.replace(SQUEEZABLE, max_concurrent=2)
    assert not any(_squeezes(draw_schedule(two, seed)) for seed in SEEDS)


@pytest.mark.parametrize(("limits", "message"), [
    ({"kinds": ("melt",)}, "unknown fault kind(s) melt"),
    ({"max_concurrent": 0}, "max_concurrent must be at least 1"),
    ({"faults": (3, 2)}, "faults per round must be a range"),
    ({"duration_s": (0.0, 5.0)}, "duration_s must be a positive range"),
    ({"replication_factor": 4}, "replication factor 4 needs as many brokers"),
])
def test_an_impossible_space_is_refused(limits: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Space.of(load_topology(), partitions=6, **limits)


# -- shrinker ----------------------------------------------------------------------------------

def _schedule(names: str) -> list[dict[str, Any]]:
    return [{"start_s": 10.0 * i + 5, "duration_s": 16.0, "fault": "kill", "target": {"node": name}}
            for i, name in enumerate(names)]


def _names(entries: Sequence[Mapping[str, Any]]) -> str:
    return "".join(e["target"]["node"] for e in entries)


def test_the_shrinker_finds_the_two_entries_that_fail_together() -> None:
    calls: list[str] = []

    def fails(entries: list[Any]) -> bool:
        calls.append(repr(entries))
        return {"b", "e"} <= set(_names(entries))

    shrinker = Shrinker(fails, runs=1)
    result = shrinker.shrink(_schedule("abcdefgh"))
    assert _names(result) == "be"
    assert len(calls) == len(set(calls))  # each candidate judged once
    assert shrinker.rounds_run == len(calls) < 60


def test_the_shrinker_copes_with_a_flaky_failure() -> None:
    draw = random.Random(5)

    def fails(entries: list[Any]) -> bool:  # fails 60 % of the time when b and e are in
        return {"b", "e"} <= set(_names(entries)) and draw.random() < 0.6

    shrinker = Shrinker(fails, runs=4, needed=1)
    assert _names(shrinker.shrink(_schedule("abcdefgh"))) == "be"
    # a candidate that passes is run all four times before it is believed
    assert shrinker.rounds_run > len(shrinker.judged)


def test_a_failure_without_faults_shrinks_to_nothing() -> None:
    assert Shrinker(lambda entries: True, runs=1).shrink(_schedule("abc")) == []


def test_durations_and_starts_shrink_while_the_failure_holds() -> None:
    def fails(entries: list[Any]) -> bool:  # needs c in force for 3 s or more
        return any(e["target"]["node"] == "c" and e["duration_s"] >= 3 for e in entries)

    (entry,) = Shrinker(fails, runs=1).shrink(_schedule("abcd"))
    assert entry["target"] == {"node": "c"}
    assert entry["duration_s"] == 4.0  # 16 -> 8 -> 4; 2 no longer fails
    assert entry["start_s"] < 1.0  # moved toward the start
    assert entry["duration_s"] >= MIN_DURATION_S


def test_a_spent_budget_hands_back_the_smallest_schedule_seen_to_fail() -> None:
    judged: list[str] = []

    def fails(entries: list[Any]) -> bool:
        judged.append(_names(entries))
        return {"b", "e"} <= set(_names(entries))

    budget = 3  # candidates judged before time runs out
    shrinker = Shrinker(fails, runs=1, out_of_time=lambda: len(judged) >= budget)
    result = _names(shrinker.shrink(_schedule("abcdefgh")))
    assert shrinker.stopped_early
    assert len(judged) == budget
    # judged: [] (passes), abcd (passes), efgh (passes): nothing smaller was seen to fail
    assert result == "abcdefgh"
    assert fails(_schedule(result))

    judged.clear()
    later = Shrinker(fails, runs=1, out_of_time=lambda: len(judged) >= 9)
    result = _names(later.shrink(_schedule("abcdefgh")))
    # the ninth candidate, the complement of "cd", was the first smaller one seen to fail
    assert later.stopped_early and result == "abefgh"  # progress kept, not thrown away


def test_a_budget_never_reached_changes_nothing() -> None:
    def fails(entries: list[Any]) -> bool:
        return {"b", "e"} <= set(_names(entries))

    shrinker = Shrinker(fails, runs=1, out_of_time=lambda: False)
    assert _names(shrinker.shrink(_schedule("abcdefgh"))) == "be"
    assert not shrinker.stopped_early


def test_needing_more_failures_than_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="needed"):
        Shrinker(lambda entries: True, runs=2, needed=3)


# -- invariants --------------------------------------------------------------------------------

SAFE_PRODUCER = {"acks": "all", "enable.idempotence": True}
SAFE_TOPIC = {"min.insync.replicas": 2, "unclean.leader.election.enable": False}


def _rules(producer: dict[str, Any], topic: dict[str, Any], brokers: dict[str, Any] | None = None,
           rf: int = 3) -> dict[str, Any]:
    return expectations(implied(producer, topic, brokers or {}, rf))


def test_the_safe_configuration_promises_no_loss_duplicate_or_reorder() -> None:
    rules = _rules(SAFE_PRODUCER, SAFE_TOPIC)
    assert {k: rules[k] for k in ("lost", "truncated", "duplicate", "reordered", "unexpected",
                                  "aborted_read")} == dict.fromkeys(
        ("lost", "truncated", "duplicate", "reordered", "unexpected", "aborted_read"), 0)
    assert rules["unseen"] == "any"


@pytest.mark.parametrize(("producer", "topic", "brokers", "reason"), [
    ({"acks": "1", "enable.idempotence": False}, SAFE_TOPIC, {}, "acks is not all"),
    (SAFE_PRODUCER, {"min.insync.replicas": 1, "unclean.leader.election.enable": True}, {},
     "min.insync.replicas=1, unclean leader election is on"),
    (SAFE_PRODUCER, {"min.insync.replicas": 1}, {"min.insync.replicas": "2"}, "min.insync.replicas=1"),
    (SAFE_PRODUCER, {}, {"unclean.leader.election.enable": "true", "min.insync.replicas": "2"},
     "unclean leader election is on"),
])
def test_unsafe_settings_leave_loss_unpromised_and_say_why(
    producer: dict[str, Any], topic: dict[str, Any], brokers: dict[str, Any], reason: str
) -> None:
    lost = next(i for i in implied(producer, topic, brokers, 3) if i.kind == "lost")
    assert lost.rule == "any" and lost.reason == f"not promised: {reason}"


def test_broker_settings_apply_where_the_topic_sets_nothing() -> None:
    rules = _rules(SAFE_PRODUCER, {}, {"min.insync.replicas": "2"})
    assert rules["lost"] == 0


def test_idempotence_off_leaves_duplicates_and_reorders_unpromised() -> None:
    producer = {"acks": "all", "enable.idempotence": False, "max.in.flight.requests.per.connection": 5}
    rules = _rules(producer, SAFE_TOPIC)
    assert (rules["duplicate"], rules["reordered"], rules["lost"]) == ("any", "any", 0)
    one_at_a_time = _rules({**producer, "max.in.flight.requests.per.connection": 1}, SAFE_TOPIC)
    assert (one_at_a_time["duplicate"], one_at_a_time["reordered"]) == ("any", 0)


# -- cluster rules -----------------------------------------------------------------------------

def _zk(controller: int, controller_epoch: int, leader: int, epoch: int, isr: tuple[int, ...],
        replicas: tuple[int, ...] = (0, 1, 2)) -> ClusterState:
    part = PartitionState("t", 0, leader, epoch, isr, controller_epoch, replicas)
    return ClusterState((0, 1, 2), controller, controller_epoch, {("t", 0): part})


HEALTHY = [Seen(0.0, 5.0, _zk(2, 1, 0, 3, (0, 1, 2))),
           Seen(5.5, 9.0, _zk(2, 1, -1, 4, (0,))),     # offline: no leader, epoch bumped
           Seen(9.5, 20.0, _zk(1, 2, 1, 5, (1, 2)))]    # a new controller, a new epoch


def test_a_cluster_that_keeps_its_rules_shows_no_breach() -> None:
    assert violations(HEALTHY) == []


@pytest.mark.parametrize(("bad", "rule", "words"), [
    (Seen(21.0, 22.0, _zk(0, 2, 1, 5, (1, 2))), ONE_CONTROLLER, "epoch 2: brokers 0 (seen at 21.0), 1"),
    (Seen(21.0, 22.0, _zk(1, 2, 1, 4, (1, 2))), LEADER_EPOCHS, "t-0: epoch 5 at 9.5, then 4 at 21.0"),
    (Seen(21.0, 21.0, _zk(1, 2, 0, 6, (1, 2))), LEADER_IN_ISR, "t-0 at 21.0: leader 0, ISR [1, 2]"),
    (Seen(21.0, 22.0, _zk(1, 2, 1, 6, (1, 3))), ISR_IN_REPLICAS, "ISR [1, 3], replicas [0, 1, 2]"),
])
def test_each_rule_is_caught(bad: Seen, rule: str, words: str) -> None:
    (found,) = violations([*HEALTHY, bad])
    assert found.rule == rule and words in found.detail, found


def test_a_migration_reading_the_quorums_epochs_after_zookeepers_is_no_second_controller() -> None:
    """A migration's states carry ZooKeeper's controller epoch until the brokers are on
    KRaft, then the quorum's leader epoch: the same number in the two counts is not one
    election (seen in an exploration during a migration: epoch 2 was broker 1's in
    ZooKeeper and controller 100's in the quorum)."""
    zookeeper = [dataclasses.replace(s, state=dataclasses.replace(s.state, epoch_count=EPOCHS_OF_ZOOKEEPER))
                 for s in HEALTHY]
    in_quorum = EPOCHS_OF_THE_QUORUM
    quorum = Seen(21.0, 22.0, dataclasses.replace(_zk(100, 2, 1, 6, (1, 2)), epoch_count=in_quorum))
    assert violations([*zookeeper, quorum]) == []
    again = Seen(23.0, 24.0, dataclasses.replace(_zk(101, 2, 1, 6, (1, 2)), epoch_count=in_quorum))
    (found,) = violations([*zookeeper, quorum, again])
    assert found.rule == ONE_CONTROLLER and "the quorum's leader epoch epoch 2: brokers 100" in found.detail


def test_rules_across_znodes_ignore_a_state_read_only_once() -> None:
    """A snapshot caught mid-change (read once) may pair a new controller with the old
    epoch, or an ISR with an assignment from before a move; a single-znode rule still counts."""
    mixed = Seen(21.0, 21.0, _zk(0, 2, 1, 6, (1, 3)))
    assert violations([*HEALTHY, mixed]) == []
    backwards = Seen(21.0, 21.0, _zk(1, 2, 1, 4, (1, 2)))
    assert [v.rule for v in violations([*HEALTHY, backwards])] == [LEADER_EPOCHS]


def test_the_cluster_rules_check_fails_on_a_breach_and_on_no_state() -> None:
    def judged(timeline: list[Seen]) -> tuple[bool, str]:
        observed = [Observed(s.mono, s.until, s.state) for s in timeline]
        result = ClusterRules().evaluate(Evidence(observed, {}, [], Moment(100.0, 100.0)))
        return result.passed, result.detail

    assert judged(HEALTHY) == (True, "3 states, 2 controller epoch(s)")
    passed, detail = judged([*HEALTHY, Seen(21.0, 22.0, _zk(0, 2, 1, 5, (1, 2)))])
    assert not passed and "one controller per controller epoch: epoch 2" in detail
    assert judged([]) == (False, "no cluster state was recorded, so nothing was shown")
    assert parse_check({"cluster_rules": True}).to_spec() == {"cluster_rules": True}
    with pytest.raises(CheckSpecError, match="'cluster_rules' can only be true"):
        parse_check({"cluster_rules": False})


# -- a round as a scenario ---------------------------------------------------------------------

def _base(*producers: dict[str, Any]) -> ScenarioSpec:
    return ScenarioSpec(
        "safe", "The safe configuration",
        topic=TopicSpec(config={"min.insync.replicas": 2, "unclean.leader.election.enable": False}),
        producers=tuple(ProducerSpec(f"p{i}", "abc"[i % 3], dict(s)) for i, s in enumerate(producers)),
        checks=(Commits("committed", CountRange(at_least=1)),),  # the base's own: not the round's
    )


def test_round_seeds_are_stable_and_distinct() -> None:
    assert round_seed(1, 0) == round_seed(1, 0) == 8273662574265192874  # sha256: the same everywhere
    assert len({round_seed(s, n) for s in range(5) for n in range(20)}) == 100


def test_a_round_is_judged_by_what_its_configuration_promises() -> None:
    schedule = draw_schedule(SPACE, round_seed(3, 1))
    spec = round_spec(_base(SAFE_PRODUCER), schedule, 3, 1, {})
    assert spec.id == "explore-3-r1" and spec.schedule == tuple(schedule)
    assert {k: v for k, v in spec.expectations.items() if v == 0} == dict.fromkeys(
        ("lost", "duplicate", "truncated", "unexpected", "aborted_read", "reordered"), 0)
    assert [c.name for c in spec.checks] == [
        "the metadata keeps the cluster's rules", "acknowledgements resume within 60 s of the last heal",
        f"every ISR full within {ISR_FULL_S:g} s of the last heal"]
    assert "lost = 0 (acks=all, min.insync.replicas=2" in spec.expected


def test_a_kind_is_promised_only_if_every_producer_promises_it() -> None:
    spec = round_spec(_base(SAFE_PRODUCER, {"acks": "all", "enable.idempotence": False,
                                            "max.in.flight.requests.per.connection": 5}),
                      draw_schedule(SPACE, 1), 1, 0, {})
    assert (spec.expectations["duplicate"], spec.expectations["lost"]) == ("any", 0)
    weak_brokers = round_spec(_base(SAFE_PRODUCER), draw_schedule(SPACE, 1), 1, 0,
                              {"unclean.leader.election.enable": "true"})
    assert weak_brokers.expectations["lost"] == 0  # the topic's own setting wins over the broker's


def test_liveness_is_measured_from_the_entry_healed_last() -> None:
    schedule = [{"start_s": 0.0, "duration_s": 30.0, "fault": "pause", "target": "controller"},
                {"start_s": 5.0, "duration_s": 3.0, "fault": "kill", "target": {"broker": 1}}]
    assert last_to_heal(schedule) == 1
    spec = round_spec(_base(SAFE_PRODUCER), schedule, 0, 0, {})
    liveness = spec.checks[1].to_spec()
    assert liveness["from"] == {"heal": 1} and liveness["for_s"] == LIVENESS_S


def test_a_round_replays_from_the_scenario_file_it_writes() -> None:
    topology = load_topology()
    for seed in range(40):
        spec = round_spec(_base(SAFE_PRODUCER), draw_schedule(SPACE, round_seed(seed, 0)), seed, 0, {})
        text = tomli_w.dumps(spec.to_dict())
        again = parse_scenario(text, "round.toml")
        assert again.to_dict() == spec.to_dict()
        check_runnable(ScenarioFile(Path("round.toml"), again), topology)  # every target exists


def test_a_round_needs_a_fault_and_a_producer() -> None:
    with pytest.raises(ValueError, match="at least one fault"):
        round_spec(_base(SAFE_PRODUCER), [], 0, 0, {})
    with pytest.raises(ValueError, match="needs a producer"):
        round_spec(_base(), draw_schedule(SPACE, 0), 0, 0, {})


def test_a_claim_in_the_configurations_file_replaces_what_it_promises() -> None:
    weak = dataclasses.replace(_base({"acks": "1"}), expectations={"lost": 0})
    spec = round_spec(weak, draw_schedule(SPACE, 2), 2, 0, {})
    assert spec.expectations["lost"] == 0 and spec.expectations["truncated"] == "any"
    assert "lost = 0 (claimed by the configuration's file)" in spec.expected


@pytest.mark.parametrize("name", ["safe", "acks_one", "unclean", "no_idempotence"])
def test_the_shipped_configurations_make_rounds(name: str) -> None:
    base = load_scenario_file(ROOT / "tests" / "explore" / f"{name}.toml").spec
    spec = round_spec(base, draw_schedule(SPACE, 4), 4, 0, {})
    claimed = {"acks_one": "lost", "unclean": "lost", "no_idempotence": "duplicate", "safe": "lost"}[name]
    assert spec.expectations[claimed] == 0


# -- the exploration loop, on a stand-in for the run ---------------------------------------------

class _Chaos:
    """What explore() uses of a ChaosRun. A round's body (see _rounds_on_a_stand_in) says
    how it went: round 2 loses data, round 4 cannot inject as drawn, the rest pass."""

    def __init__(self) -> None:
        self.topology = load_topology()
        self.cases: list[tuple[str, str, str | None]] = []
        self.settings: list[Mapping[str, Any]] = []

    def use_cluster_for(self, migrates: bool, settings: Mapping[str, Any]) -> bool:
        self.settings.append(settings)
        self.cases.append(("cluster", "migrating" if migrates else "base", None))
        return False

    def done_with(self, migrated: bool) -> None:
        if migrated:
            self.cases.append(("closed", "migrated", None))

    def migrating_topology(self, settings: Mapping[str, Any] | None = None) -> Any:
        return migration_topology(load_topology("three_az"), load_topology("three_az", metadata="kraft"))

    def run_case(self, test_id: str, kind: str, body: Any, scenario: str | None = None) -> Any:
        self.cases.append((test_id, kind, scenario))
        failure = body(None)
        return type("Record", (), {"outcome": "passed" if failure is None else "failed"})()


@pytest.fixture
def stand_in_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    def body(chaos: Any, spec: ScenarioSpec, ticker: Any, broke: set[str]) -> Any:
        def run(cluster: Any) -> str | None:
            number = int(spec.id.rsplit("-r", 1)[1])
            if number == 2:
                broke.add("rule lost")
                return "verdict: lost 3"
            return "faults injected and healed without error: kill failed" if number == 4 else None
        return run

    monkeypatch.setattr("harness.rounds.explore._body", body)


@pytest.mark.usefixtures("stand_in_rounds")
def test_explore_runs_the_rounds_asked_for_and_counts_violations() -> None:
    chaos = _Chaos()
    lines: list[str] = []
    found = explore(chaos, _base(SAFE_PRODUCER), ExploreOptions(seed=9, rounds=5), lines.append)  # type: ignore[arg-type]
    assert chaos.cases[0] == ("cluster", "base", None)
    assert [c[0] for c in chaos.cases[1:]] == [f"explore:9:{n}" for n in range(5)]
    assert {c[1] for c in chaos.cases[1:]} == {"explore-round"}
    assert found.violations == ["explore-9-r2"] and found.inconclusive == ["explore-9-r4"]
    assert "round 2: FAILED (rule lost); violations so far: 1 of 3 round(s)" in lines
    assert lines[-1] == "round 4: FAILED (not judged as drawn); violations so far: 1 of 5 round(s)"
    assert summary_lines(found, Path("/r"))[0] == ("explored 5 round(s) from seed 9: 1 violated, "
                                       "1 could not be judged as drawn")


@pytest.mark.usefixtures("stand_in_rounds")
def test_explore_until_a_violation_stops_after_the_first_round_that_violates() -> None:
    chaos = _Chaos()
    found = explore(chaos, _base(SAFE_PRODUCER), ExploreOptions(seed=9, rounds=5, until_violation=True),  # type: ignore[arg-type]
                    lambda _: None)
    assert [c[0] for c in chaos.cases[1:]] == [f"explore:9:{n}" for n in range(3)]
    assert found.violations == ["explore-9-r2"]


def test_explore_during_a_migration_walks_one_on_a_cluster_of_its_own_each_round(
        monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[Any] = []

    def body(chaos: Any, spec: ScenarioSpec, ticker: Any, broke: set[str]) -> Any:
        walked.append(spec)
        return lambda cluster: None

    monkeypatch.setattr("harness.rounds.explore._body", body)
    chaos = _Chaos()
    explore(chaos, _base(SAFE_PRODUCER), ExploreOptions(seed=3, rounds=2, during="migration"),  # type: ignore[arg-type]
            lambda _: None)
    assert [c[:2] for c in chaos.cases] == [("cluster", "migrating"), ("explore:3:0", "explore-round"),
                                            ("closed", "migrated"), ("explore:3:1", "explore-round"),
                                            ("closed", "migrated")]
    assert all(s.migration is not None and s.migration.hold_s == ROUND_HOLD_S for s in walked)
    assert all("migration_phase" in e["when"] for s in walked for e in s.schedule)


@pytest.mark.usefixtures("stand_in_rounds")
def test_explore_stops_starting_rounds_when_its_minutes_are_up() -> None:
    ticks = iter([0.0, 0.0, 30.0, 59.0, 61.0, 500.0])
    chaos = _Chaos()
    explore(chaos, _base(SAFE_PRODUCER), ExploreOptions(seed=1, minutes=1.0), lambda _: None,  # type: ignore[arg-type]
            clock=lambda: next(ticks))
    assert len([c for c in chaos.cases if c[1] == "explore-round"]) == 3


@pytest.mark.parametrize(("options", "message"), [
    ({"rounds": 2, "minutes": 3.0}, "exactly one of --rounds and --minutes"),
    ({}, "exactly one of --rounds and --minutes"),
    ({"rounds": 0}, "--rounds must be at least 1"),
    ({"rounds": 1, "kinds": ("melt",)}, "unknown fault kind(s) melt"),
    ({"rounds": 1, "max_concurrent": 0}, "--max-concurrent must be at least 1"),
])
def test_impossible_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioFileError) as caught:
        ExploreOptions(seed=0, **options)
    assert message in str(caught.value)


def test_explore_refuses_bad_input_before_any_container(tmp_path: Path) -> None:
    """One line, exit 2, and no Docker engine asked for: DOCKER_HOST points nowhere."""
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'none.sock'}"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness.entry.cli", "explore", *args],
                              capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)

    safe = str(ROOT / "tests" / "explore" / "safe.toml")
    for args, words in [((safe, "--faults", "kill,melt", "--rounds", "1"), "unknown fault kind(s) melt"),
                        ((str(tmp_path / "missing.toml"), "--rounds", "1"), "cannot read scenario file"),
                        ((safe, "--rounds", "0"), "--rounds must be at least 1"),
                        ((safe, "--max-concurrent", "0"), "--max-concurrent must be at least 1")]:
        result = cli(*args)
        assert result.returncode == 2, result
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kafka-chaos: ") and words in lines[0], result.stderr


# -- shrinking a round -----------------------------------------------------------------------

def _failing_round() -> ScenarioSpec:
    schedule = [{"start_s": 5.0 * i, "duration_s": 8.0, "fault": "kill", "target": {"broker": i % 3}}
                for i in range(6)]
    schedule[4] = {"start_s": 20.0, "duration_s": 8.0, "fault": "pause", "target": "controller"}
    return round_spec(_base(SAFE_PRODUCER), schedule, 5, 2, {})


def test_a_round_shrinks_to_the_fault_behind_its_violation() -> None:
    """The stand-in cluster loses data whenever the controller is paused for 4 s or more."""
    spec = _failing_round()
    runs: list[ScenarioSpec] = []

    def run_round(candidate: ScenarioSpec) -> set[str]:
        runs.append(candidate)
        paused = [e for e in candidate.schedule if e["fault"] == "pause" and e["duration_s"] >= 4]
        return {"rule lost", "an unrelated check"} if paused else {"an unrelated check"}

    lines: list[str] = []
    shrunk, shrinker = shrink_round(spec, {"rule lost"}, run_round, runs=2, needed=1, progress=lines.append)
    assert [e["fault"] for e in shrunk.schedule] == ["pause"] and shrunk.schedule[0]["duration_s"] == 4.0
    assert shrunk.id == "explore-5-r2-shrunk"
    assert shrunk.title == 'explore-5-r2 shrunk to 1 fault(s): pause "controller" at 0.6 s for 4 s'  # its own
    liveness = next(c for c in shrunk.checks if c.name == LIVENESS).to_spec()
    assert liveness["from"] == {"heal": 1}  # measured from the one entry left
    assert parse_scenario(tomli_w.dumps(shrunk.to_dict()), "shrunk.toml").to_dict() == shrunk.to_dict()
    assert shrinker.rounds_run == len(runs) and len({r.id for r in runs}) == len(runs)
    # Candidates are numbered, their runs within them; each page's title names its own faults.
    assert lines[:3] == ["candidate 1, run 1 of at most 2 (0 fault(s): no fault): passes",
                         "candidate 1, run 2 of at most 2 (0 fault(s): no fault): passes",
                         'candidate 2, run 1 of at most 2 (3 fault(s): kill {"broker": 0} at 0 s for 8 s; '
                         'kill {"broker": 1} at 5 s for 8 s; kill {"broker": 2} at 10 s for 8 s): passes']
    assert [r.id for r in runs[:3]] == [
        "explore-5-r2-c1-run1", "explore-5-r2-c1-run2", "explore-5-r2-c2-run1"]
    assert runs[2].title == ('explore-5-r2, shrink candidate 2 (run 1): kill {"broker": 0} at 0 s for 8 s; '
                             'kill {"broker": 1} at 5 s for 8 s; kill {"broker": 2} at 10 s for 8 s')
    with pytest.raises(ScenarioFileError, match="violated nothing"):
        shrink_round(spec, set(), run_round, 1, 1, lines.append)


def test_the_violations_a_round_recorded_are_read_back(tmp_path: Path) -> None:
    folder = tmp_path / "explore-5-r2"
    folder.mkdir()
    (folder / "scenario.toml").write_text("")
    (folder / "assertions.json").write_text(json.dumps({"passed": False, "windows": [], "checks": [
        {"name": "at least 50 sends acknowledged", "passed": False},  # says the round tested nothing
        {"name": LIVENESS, "passed": False},
        {"name": "the metadata keeps the cluster's rules", "passed": True},
        {"name": "test assertions (pytest)", "passed": False}]}))
    # A real verdict: S5's sample loses and truncates acknowledged sends, so those rules (0) fail.
    from harness.history import Expectations
    from tests.report.sample_run import _s5_fate, findings, simulate

    findings(simulate(30, _s5_fate)).judge(Expectations()).write(folder / "verdict.json")
    assert recorded_violations(folder / "scenario.toml") == {LIVENESS, "rule lost", "rule truncated"}
    assert recorded_violations(tmp_path / "elsewhere" / "scenario.toml") == set()


def test_a_candidate_fails_by_default_when_most_of_its_runs_fail() -> None:
    from harness.explore.shrink import majority

    assert [majority(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]
    calls = iter([True, False, False])  # one failure of three: not a failing candidate
    shrinker = Shrinker(lambda _: next(calls), runs=3, needed=majority(3))
    assert not shrinker.still_fails([{"start_s": 0}])
    # ... but not dropped in silence either: it is listed as flaky
    assert [(f.candidate, f.failed, f.runs) for f in shrinker.flaky] == [(1, 1, 3)]
    steady = Shrinker(lambda _: False, runs=3, needed=2)
    assert not steady.still_fails([{"start_s": 0}]) and steady.flaky == []


def test_shrink_refuses_bad_input_before_any_container(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'none.sock'}"}
    safe = str(ROOT / "tests" / "explore" / "safe.toml")
    for args, words in [((safe, "--runs", "2", "--needed", "3"), "--needed must be between 1 and --runs (2)"),
                        ((str(tmp_path / "missing.toml"),), "cannot read scenario file")]:
        result = subprocess.run([sys.executable, "-m", "harness.entry.cli", "shrink", *args],
                                capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
        assert result.returncode == 2, result
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], result.stderr


# -- coverage ----------------------------------------------------------------------------------

def test_coverage_counts_each_kind_against_each_role_named() -> None:
    schedules = [
        [{"start_s": 0, "duration_s": 5.0, "fault": "kill", "target": "controller"},
         {"start_s": 1, "duration_s": 2.5, "fault": "cut", "links": {"isolate": {"zone": "a"}}}],
        [{"start_s": 0, "duration_s": 4.0, "fault": "kill", "target": "controller"},
         {"start_s": 2, "duration_s": 1.0, "fault": "latency", "latency_ms": 100,
          "links": {"from": {"zone_clients": "a"}, "to": {"broker": 1}, "kind": "client"}},
         {"start_s": 3, "duration_s": 2.0, "fault": "delete_controller"}],
    ]
    cells = coverage(schedules)
    assert [(c.kind, c.role, c.entries, c.seconds) for c in cells] == [
        ("cut", "isolate:zone", 1, 2.5), ("delete_controller", "-", 1, 2.0), ("kill", "controller", 2, 9.0),
        ("latency", "client", 1, 1.0)]
    assert kinds_not_exercised(cells, ("kill", "pause", "cut")) == ["pause"]
    lines = table(cells)
    assert lines[0].split() == ["fault", "target", "entries", "seconds"]
    assert lines[3].split() == ["kill", "controller", "2", "9.0"]


def _explored(space: Space, seed: int, rounds: int) -> list[list[dict[str, Any]]]:
    """The schedules an exploration with ``seed`` draws for its first ``rounds`` rounds."""
    deal = KindsInTurn(space, seed)
    seeds = [round_seed(seed, n) for n in range(rounds)]
    return [draw_schedule(space, s, kinds=deal.kinds_of(planned_entries(space, s))) for s in seeds]


def test_an_exploration_exercises_every_kind_within_its_first_rounds() -> None:
    kinds = set(SPACE.drawn_kinds)
    for seed in range(20):
        deal = KindsInTurn(SPACE, seed)
        assert {deal.card(p) for p in range(len(kinds))} == kinds, seed
        assert {deal.card(p) for p in range(len(kinds), 2 * len(kinds))} == kinds, seed
    for seed in range(100):  # ten rounds, about 25 entries; a few do not fit their round's stretch
        drawn = {e["fault"] for schedule in _explored(SPACE, seed, 10) for e in schedule}
        assert drawn == kinds, (seed, kinds - drawn)


def test_dealt_kinds_still_meet_in_varied_rounds() -> None:
    """Dealing in one fixed order would only ever put neighbours of that order together."""
    pairs = {frozenset((a["fault"], b["fault"])) for schedule in _explored(SPACE, 3, 60)
             for a, b in itertools.combinations(schedule, 2) if a["fault"] != b["fault"]}
    assert len(pairs) > 3 * len(SPACE.drawn_kinds), len(pairs)


def test_a_round_takes_the_kinds_it_is_dealt_and_refuses_others() -> None:
    dealt = ["kill", "pause", "cut", "latency"]
    schedule = draw_schedule(SPACE, 5, kinds=dealt)
    assert sorted(e["fault"] for e in schedule) == sorted(dealt[: len(schedule)])
    assert len(schedule) == planned_entries(SPACE, 5)
    with pytest.raises(ValueError, match=r"kind\(s\) topic_config not among the kinds drawn"):
        draw_schedule(SPACE, 1, kinds=["topic_config"])


def test_three_hundred_drawn_rounds_cover_every_kind() -> None:
    cells = coverage(draw_schedule(SPACE, seed) for seed in SEEDS)
    assert kinds_not_exercised(cells, SPACE.drawn_kinds) == []
    assert len({c.role for c in cells if c.kind == "kill"}) >= 5  # roles as well as kinds


@pytest.mark.usefixtures("stand_in_rounds")
def test_an_exploration_summary_names_violations_and_coverage() -> None:
    found = explore(_Chaos(), _base(SAFE_PRODUCER), ExploreOptions(seed=9, rounds=3), lambda _: None)  # type: ignore[arg-type]
    data = found.to_dict()
    assert [(r["outcome"], r["violated"]) for r in data["rounds"]] == [
        ("passed", []), ("passed", []), ("failed", ["rule lost"])]
    assert data["rounds"][0]["schedule"] == _explored(SPACE, 9, 1)[0]
    lines = summary_lines(found, Path.cwd() / "reports" / "r7")
    assert lines[1] == ("  explore-9-r2 broke rule lost: kafka-chaos replay reports/r7/explore-9-r2; "
                        "kafka-chaos shrink reports/r7/explore-9-r2/scenario.toml")
    assert lines[2].startswith("coverage") and lines[-1].startswith("fault kinds not exercised: ")
    on_kraft = summary_lines(found, Path.cwd() / "reports" / "r7", "--kafka-version 3.9.1 --metadata kraft")
    assert on_kraft[1] == ("  explore-9-r2 broke rule lost: kafka-chaos replay reports/r7/explore-9-r2 "
                           "--kafka-version 3.9.1 --metadata kraft; kafka-chaos shrink "
                           "reports/r7/explore-9-r2/scenario.toml --kafka-version 3.9.1 --metadata kraft")


def test_live_progress_names_the_faults_in_force_and_the_ack_rate() -> None:
    log = EventLog()
    log.record("kill", "inject", ("kafka-1",), "ok")
    log.record("pause", "inject", ("zk-a",), "ok")
    log.record("kill", "heal", ("kafka-1",), "ok")
    assert faults_in_force(log.events) == ["pause(zk-a)"]

    class Workload:
        acked = 0

        def outcomes(self) -> dict[str, int]:
            return {"acked": self.acked}

    run = type("Run", (), {"workload": Workload(), "log": log})()
    ticks = iter([100.0, 105.0, 110.0])
    live = LiveProgress(3, run, lambda: 1, lambda _: None, clock=lambda: next(ticks))
    run.workload.acked = 2000
    assert live.line() == "round 3: 5 s, in force: pause(zk-a), 400 acks/s, violations so far: 1"
    log.record("pause", "heal", ("zk-a",), "ok")
    assert live.line() == "round 3: 10 s, in force: nothing, 0 acks/s, violations so far: 1"


def test_replay_refuses_what_is_not_a_recorded_scenario_before_any_container(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'none.sock'}"}
    empty = tmp_path / "explore-1-r0"
    empty.mkdir()
    for target, words in [(empty, "is neither a scenario folder of a report nor a scenario file"),
                          (tmp_path / "nowhere", "is neither a scenario folder")]:
        result = subprocess.run([sys.executable, "-m", "harness.entry.cli", "replay", str(target)],
                                capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
        assert result.returncode == 2, result
        assert result.stderr.strip().startswith("kafka-chaos: replay: "), result.stderr
        assert words in result.stderr, result.stderr
    folder = tmp_path / "explore-1-r1"
    folder.mkdir()
    (folder / "scenario.toml").write_text('id = "explore-1-r1"\n[[producers]]\nname = "pa"\nzone = "q"\n')
    result = subprocess.run([sys.executable, "-m", "harness.entry.cli", "replay", str(folder)],
                            capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert result.returncode == 2 and 'producers[1].zone = "q"' in result.stderr, result.stderr  # checked too


def test_liveness_is_not_judged_when_the_schedule_did_not_run_as_drawn() -> None:
    # Round 23 of seed 4's safe exploration: an expire_session's heal waited for its broker,
    # which an isolation in force kept away, so the isolation's heal never ran and
    # "acknowledgements resume within 60 s of the last heal" failed with "entry 4's heal
    # never ran": the harness's composition, not Kafka's liveness.
    broken = [("fault schedule ran: 4 entries injected and healed", False),
              ("faults injected and healed without error", False), (LIVENESS, False)]
    assert checks_violated(broken) == set()
    # the same liveness failure after a schedule that ran as drawn is a violation
    as_drawn = [("fault schedule ran: 4 entries injected and healed", True), (LIVENESS, False)]
    assert checks_violated(as_drawn) == {LIVENESS}
    # and a broken schedule does not excuse any other check (recorded under the cluster
    # rules' older name, which reads as today's)
    other = [("fault schedule ran: 2 entries injected and healed", False),
             ("ZooKeeper's view keeps the cluster's rules", False)]
    assert checks_violated(other) == {"the metadata keeps the cluster's rules"}
