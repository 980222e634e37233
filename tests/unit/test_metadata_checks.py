"""How a run behaved beyond anomaly kinds: the metadata checks (controller and leader-epoch
changes, the ISR after the heal), the ``[bounds]`` keys read as the checks they stand for,
each shown passing at its limit and failing just past it, and their wiring into
ScenarioRun with stand-in clusters (no Docker)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from harness import history as hist
from harness.cluster.sampler import StateSampler
from harness.cluster.state import ClusterState, PartitionState
from harness.history.gaps import longest_gap, longest_gaps
from harness.scenario import evidence_reader
from harness.scenario.broker_settings import broker_setting_differences, refuse_unrunnable
from harness.scenario.checks import (
    Anchor,
    Check,
    CheckSpecError,
    ControllerChanges,
    CountRange,
    Evidence,
    IsrAfterHeal,
    IsrFullAfterHeal,
    LeaderEpochChanges,
    Moment,
    NeverVisible,
    SecondsRange,
    TransactionOutcomes,
    Unavailable,
    bounds_as_checks,
    parse_check,
)
from harness.scenario.checks.metadata import (
    ControllerElections,
    controller_elections,
    isr_full_after,
    isr_full_since,
    leader_epoch_changes,
)
from harness.scenario.isr_poll import IsrPoll
from harness.scenario.judge import Judge
from harness.scenario.run_config import effective_config, layered_settings, shown
from harness.scenario.rundir import RunDirectory
from harness.scenario.runner import (
    NamedTopic,
    ScenarioError,
    ScenarioRun,
    ScenarioSpec,
    TopicSpec,
)
from harness.workload.driver import ConsumerSpec, ProducerSpec

TOPIC = "t"


# ------------------------------------------------------------------------------ parsing


FULL = {
    "max_failed": 200,
    "max_in_doubt": 20,
    "max_unavailable_s": 40,
    "unavailable_s": {"1": 5},
    "controller_changes": {"min": 1, "max": 2},
    "leader_epoch_changes": {"min": 1},
    "isr_full_after_heal_s": 60,
}


def _specs(checks: Sequence[Check]) -> list[dict[str, Any]]:
    return [c.to_spec() for c in checks]


def test_every_bound_is_read_as_the_check_it_stands_for() -> None:
    checks = bounds_as_checks(FULL, partitions=3)
    assert _specs(checks) == [
        {"sends": "failed", "count": {"max": 200}, "summed": True, "name": "at most 200 sends failed"},
        {"sends": "in_doubt", "count": {"max": 20}, "summed": True, "name": "at most 20 sends in doubt"},
        {"unavailable_s": {"max": 40}, "partitions": [0, 2],
         "name": "no partition without an acknowledgement for more than 40 s"},
        {"unavailable_s": {"max": 5}, "partitions": [1],
         "name": "partition 1 without an acknowledgement for at most 5 s"},
        {"controller_changes": {"min": 1, "max": 2}},
        {"leader_epoch_changes": {"min": 1}},
        {"isr_full_after_heal_s": 60},
    ]
    assert [parse_check(spec) for spec in _specs(checks)] == checks  # checks, written as checks
    assert bounds_as_checks({}, partitions=3) == []


def test_leader_epoch_changes_per_partition_and_exact_counts() -> None:
    checks = bounds_as_checks({"leader_epoch_changes": {"0": {"min": 1}, "2": 0}, "controller_changes": 0}, 3)
    assert checks == [ControllerChanges(CountRange(0, 0)), LeaderEpochChanges(CountRange(1, None), (0,)),
                      LeaderEpochChanges(CountRange(0, 0), (2,))]
    assert [c.name for c in checks] == ["controller changes exactly 0",
                                        "leader-epoch changes on partition 0 at least 1",
                                        "leader-epoch changes on partition 2 exactly 0"]


def test_a_common_unavailability_bound_leaves_out_the_partitions_with_their_own() -> None:
    [common] = bounds_as_checks({"max_unavailable_s": 4}, 3)
    assert common == Unavailable(SecondsRange(None, 4), None,
                                 label="no partition without an acknowledgement for more than 4 s")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"max_lost": 1}, "unknown key(s) max_lost"),
        ({"max_failed": "10"}, "max_failed must be a non-negative integer"),
        ({"max_failed": -1}, "max_failed must be a non-negative integer"),
        ({"max_in_doubt": True}, "max_in_doubt must be a non-negative integer"),
        ({"max_in_doubt": 1.5}, "max_in_doubt must be a non-negative integer"),
        ({"max_unavailable_s": "40 s"}, "max_unavailable_s must be a non-negative number of seconds"),
        ({"max_unavailable_s": -0.1}, "max_unavailable_s must be a non-negative number of seconds"),
        ({"isr_full_after_heal_s": False}, "isr_full_after_heal_s must be a non-negative number"),
        ({"unavailable_s": 5}, "unavailable_s must be a table of partition = seconds"),
        ({"unavailable_s": {"one": 5}}, "key 'one' is not a partition number"),
        ({"unavailable_s": {"1": -5}}, "unavailable_s partition 1 must be a non-negative number"),
        ({"controller_changes": {"min": 3, "max": 1}}, "min 3 is above max 1"),
        ({"controller_changes": {"minimum": 1}}, "'controller_changes' must be an integer or { min"),
        ({"controller_changes": {}}, "needs 'min', 'max' or both"),
        ({"controller_changes": "one"}, "must be an integer or { min = .., max = .. }"),
        ({"controller_changes": {"max": -1}}, "a count bound must be a non-negative integer, not -1"),
        ({"leader_epoch_changes": {"min": 1, "0": {"max": 1}}}, "not both"),
        ({"leader_epoch_changes": {"0": {"min": 2, "max": 1}}}, "min 2 is above max 1"),
        ({"leader_epoch_changes": {"x": 1}}, "key 'x' is not a partition number"),
        ({"unavailable_s": {"3": 1}}, "names partition(s) 3; the topic has partitions 0 to 2"),
        ({"max_unavailable_s": 1, "unavailable_s": {"0": 1, "1": 1, "2": 1}},
         "every partition has its own unavailable_s"),
    ],
)
def test_malformed_bounds_are_one_clear_error(data: dict[str, Any], message: str) -> None:
    with pytest.raises(CheckSpecError) as err:
        bounds_as_checks(data, 3)
    assert str(err.value).startswith("[bounds]")
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("bound", "text"),
    [(CountRange(2, 2), "exactly 2"), (CountRange(None, 2), "at most 2"), (CountRange(1), "at least 1"),
     (CountRange(1, 2), "between 1 and 2")],
)
def test_ranges_read_as_words(bound: CountRange, text: str) -> None:
    assert bound.describe() == text


# ----------------------------------------------------------------------------- measuring


def _send(partition: int, outcome: str, ack_ts: float | None = None) -> dict[str, Any]:
    return {"partition": partition, "outcome": outcome, "ack_ts": ack_ts}


def test_gaps_count_the_window_ends_like_the_suites_client_log() -> None:
    # partition 0 acknowledges every second; partition 1 goes dark at 12 for good;
    # partition 2 is dark from the fault (10) until its first acknowledgement at 17.
    rows = [_send(0, "acked", float(t)) for t in range(0, 31)]
    rows += [_send(1, "acked", float(t)) for t in range(0, 12)] + [_send(1, "unknown")]
    rows += [_send(2, "acked", float(t)) for t in (1, 2, 17, 18, 19, 20)]
    rows += [_send(3, "failed")]  # sends, but never an acknowledgement: dark all along
    gaps = longest_gaps(rows, start=10.0, end=30.0)
    assert gaps == {0: 1.0, 1: 19.0, 2: 10.0, 3: 20.0}


def test_a_partition_without_sends_is_not_measured() -> None:
    assert 5 not in longest_gaps([_send(0, "acked", 1.0)], 0.0, 2.0)


def test_longest_gap_of_no_acknowledgement_is_the_window() -> None:
    assert longest_gap([], 3.0, 7.5) == 4.5
    assert longest_gap([1.0, 9.0], 3.0, 7.5) == 4.5  # acknowledgements outside do not count


def _partition(partition: int, leader: int, epoch: int, isr: tuple[int, ...],
               replicas: tuple[int, ...] = (0, 1, 2)) -> PartitionState:
    return PartitionState(TOPIC, partition, leader, epoch, isr, 1, replicas)


def _cluster_state(controller: int | None, epoch: int | None, *parts: PartitionState) -> ClusterState:
    return ClusterState((0, 1, 2), controller, epoch, {(p.topic, p.partition): p for p in parts})


def _clock_at(ts: float) -> Callable[[], float]:
    """A sampler clock stopped at ``ts`` (typed, where a default-argument lambda is not)."""
    return lambda: ts


def _snapshot_of(state: ClusterState) -> Callable[[list[str]], ClusterState]:
    """A sampler snapshot that always reads ``state``."""
    return lambda topics: state


def _rows(*states: tuple[float, ClusterState | Exception]) -> list[dict[str, Any]]:
    """The cluster_state rows the sampler records for these reads (an exception: a read
    that failed), through its own recording."""
    sampler = StateSampler(None, [TOPIC])
    for ts, state in states:
        def snapshot(topics: list[str], state: ClusterState | Exception = state) -> ClusterState:
            if isinstance(state, Exception):
                raise state
            return state
        sampler.sample(snapshot, now=_clock_at(ts))
    return sampler.rows()


def test_controller_changes_are_epoch_increases_after_the_first_observation() -> None:
    rows = _rows(
        (0.0, _cluster_state(2, 5)),
        (1.0, _cluster_state(None, 5)),  # /controller gone for a moment: not a change by itself
        (2.0, _cluster_state(0, 6)),
        (3.0, _cluster_state(1, 8)),  # two elections between two reads: both count
    )
    found = controller_elections(rows)
    assert found == ControllerElections(3, 5, 8, ("2", "0", "1"))
    assert controller_elections(_rows((0.0, _cluster_state(2, 5)))).count == 0


def test_leader_epoch_changes_per_partition_of_the_topic() -> None:
    rows = _rows(
        (0.0, _cluster_state(2, 1, _partition(0, 0, 3, (0, 1, 2)), _partition(1, 1, 7, (0, 1, 2)))),
        (1.0, _cluster_state(2, 1, _partition(0, -1, 4, (0,)), _partition(1, 1, 7, (1, 2)))),
        (2.0, _cluster_state(2, 1, _partition(0, 1, 5, (1, 2)), _partition(1, 1, 7, (1, 2)))),
    )
    rows.append({**rows[-1], "sample": 9, "ts": 2.5, "topic": "other-topic", "leader_epoch": 99})
    assert leader_epoch_changes(rows, TOPIC) == {0: 2, 1: 0}


def test_bounds_read_the_samples_in_time_order_and_skip_unreadable_rows() -> None:
    """The table read back from Parquet need not be in sample order, and a gap row has no
    state: neither may change a figure."""
    rows = _rows(
        (0.0, _cluster_state(0, 4, _partition(0, 0, 1, (0, 1, 2)))),
        (1.0, OSError("no quorum")),
        (2.0, _cluster_state(1, 5, _partition(0, 1, 2, (0, 1, 2)))),
    )
    assert [r["readable"] for r in rows] == [True, False, True]
    for order in (rows, rows[::-1]):
        assert controller_elections(order) == ControllerElections(1, 4, 5, ("0", "1"))
        assert leader_epoch_changes(order, TOPIC) == {0: 1}
        assert isr_full_since(order, TOPIC, {0: (0, 1, 2)}) == {0: 0.0}


def test_isr_full_since_is_the_last_time_it_became_full() -> None:
    replicas = {0: (0, 1, 2), 1: (0, 1, 2)}
    reads: list[tuple[float, ClusterState | Exception]] = [
        (0.0, _cluster_state(2, 1, _partition(0, 0, 1, (0, 1, 2)), _partition(1, 1, 1, (0, 1, 2)))),
        (5.0, _cluster_state(2, 1, _partition(0, 0, 1, (0, 2)), _partition(1, 1, 1, (0, 1, 2)))),
        (9.0, _cluster_state(2, 1, _partition(0, 0, 1, (2, 0, 1)), _partition(1, 1, 1, (0, 1, 2)))),
    ]
    assert isr_full_since(_rows(*reads), TOPIC, replicas) == {0: 9.0, 1: 0.0}
    shrunk = _rows(*reads, (12.0, _cluster_state(2, 1, _partition(0, 0, 1, (0, 1, 2)),
                                                 _partition(1, 1, 1, (1,)))))
    assert isr_full_since(shrunk, TOPIC, replicas) == {0: 9.0, 1: None}
    assert isr_full_since(shrunk, TOPIC, {**replicas, 3: (0, 1)})[3] is None  # never seen


def test_isr_after_heal_uses_the_poll_where_the_events_do_not_show_full() -> None:
    assert isr_full_after(10.0, {0: 9.0, 1: 14.5}, None) == IsrAfterHeal(4.5, 1)  # full before the heal: 0 s
    assert isr_full_after(10.0, {0: None, 1: 11.0}, 16.0) == IsrAfterHeal(6.0, 0)
    not_full = isr_full_after(10.0, {0: None}, None, ["partition 0 isr [0] of replicas [0, 1]"])
    assert not_full.seconds is None and "partition 0 isr [0]" in not_full.waiting[0]


# ------------------------------------------------------------------------------ judging

INJECT = {Anchor(1, "inject"): Moment(100.0, 0.0)}


def _evidence(sends: Sequence[Mapping[str, Any]] = (), rows: Sequence[Mapping[str, Any]] | None = None,
              isr: IsrAfterHeal | None = None, end: float = 160.0) -> Evidence:
    return Evidence((), INJECT, sends, Moment(end, end - 100.0), topic=TOPIC, cluster_rows=rows,
                    isr_after_heal=isr)


def _judge(checks: Sequence[Check], evidence: Evidence) -> list[tuple[str, bool, str]]:
    return [(c.name, r.passed, r.detail) for c in checks for r in [c.evaluate(evidence)]]


def _outcomes(**counts: int) -> list[dict[str, Any]]:
    return [{"producer_id": "pa", "partition": n % 3, "send_ts": 101.0, "outcome": outcome,
             "ack_ts": 101.5 if outcome == "acked" else None}
            for outcome, count in counts.items() for n in range(count)]


@pytest.mark.parametrize(("failed", "passes"), [(20, True), (21, False)])
def test_max_failed_passes_at_the_bound_and_fails_past_it(failed: int, passes: bool) -> None:
    [(name, passed, detail)] = _judge(bounds_as_checks({"max_failed": 20}, 3),
                                      _evidence(_outcomes(acked=100, failed=failed, unknown=3)))
    assert name == "at most 20 sends failed"
    assert passed is passes
    assert detail == f"{failed} of {103 + failed} sends ended failed; bound at most 20"


@pytest.mark.parametrize(("unknown", "passes"), [(0, True), (1, False)])
def test_max_in_doubt_passes_at_the_bound_and_fails_past_it(unknown: int, passes: bool) -> None:
    [(name, passed, detail)] = _judge(bounds_as_checks({"max_in_doubt": 0}, 3),
                                      _evidence(_outcomes(acked=10, failed=5, unknown=unknown)))
    assert name == "at most 0 sends in doubt"
    assert passed is passes
    assert detail.startswith(f"{unknown} of ")


def _acks(partition: int, times: Sequence[float]) -> list[dict[str, Any]]:
    return [{"producer_id": "pa", "partition": partition, "send_ts": t - 0.01, "outcome": "acked",
             "ack_ts": t} for t in times]


@pytest.mark.parametrize(("gap", "passes"), [(40.0, True), (40.01, False)])
def test_max_unavailable_passes_at_the_bound_and_fails_past_it(gap: float, passes: bool) -> None:
    sends = _acks(0, [100 + 3.0 * n for n in range(21)]) + _acks(1, [110.0, 110.0 + gap])
    sends += _acks(2, [100.0 + 2 * n for n in range(31)])
    [(name, passed, detail)] = _judge(bounds_as_checks({"max_unavailable_s": 40}, 3), _evidence(sends))
    assert name == "no partition without an acknowledgement for more than 40 s"
    assert passed is passes
    assert f"p1: {gap:.2f} s" in detail and detail.endswith("(window 60.0 s)")


@pytest.mark.parametrize(("gap", "passes"), [(5.0, True), (5.001, False)])
def test_a_partitions_own_bound_replaces_the_common_one(gap: float, passes: bool) -> None:
    sends = _acks(0, [100.0 + n for n in range(61)])
    sends += _acks(1, [100.0 + gap * n for n in range(int(60 / gap) + 1)])
    bounds = bounds_as_checks({"max_unavailable_s": 2, "unavailable_s": {"1": 5}}, 2)
    checks = _judge(bounds, _evidence(sends))
    assert checks[0][:2] == ("no partition without an acknowledgement for more than 2 s", True)
    assert "p1" not in checks[0][2]  # judged by its own bound only
    assert checks[1][:2] == ("partition 1 without an acknowledgement for at most 5 s", passes)


def test_a_partition_bound_without_sends_fails() -> None:
    bounds = bounds_as_checks({"unavailable_s": {"4": 5}}, 5)
    [(_, passed, detail)] = _judge(bounds, _evidence(_acks(0, [101.0])))
    assert not passed and "p4: 60.00 s" in detail


def _controllers(*epochs: tuple[int, int]) -> list[dict[str, Any]]:
    return _rows(*((float(n), _cluster_state(controller, epoch))
                   for n, (controller, epoch) in enumerate(epochs)))


@pytest.mark.parametrize(("count", "passes"), [(0, False), (1, True), (2, True), (3, False)])
def test_controller_changes_fail_on_both_sides_of_the_range(count: int, passes: bool) -> None:
    rows = _controllers((2, 4), (0, 4 + count))
    [(name, passed, detail)] = _judge([ControllerChanges(CountRange(1, 2))], _evidence(rows=rows))
    assert name == "controller changes between 1 and 2"
    assert passed is passes
    assert detail.startswith(f"{count} (controller epoch 4 -> {4 + count}; controllers seen 2 -> 0)")


def test_controller_changes_never_read_or_never_sampled_fail() -> None:
    [(_, passed, detail)] = _judge([ControllerChanges(CountRange(0, 0))], _evidence(rows=[]))
    assert not passed and "never read a controller epoch" in detail
    [(_, passed, detail)] = _judge([ControllerChanges(CountRange(0, 0))], _evidence(rows=None))
    assert not passed and detail == "the cluster's metadata was not sampled"


def _leader_epochs(changes: Mapping[int, int]) -> list[dict[str, Any]]:
    first = _cluster_state(0, 1, *(_partition(p, 0, 1, (0, 1, 2)) for p in changes))
    last = _cluster_state(0, 1, *(_partition(p, 0, 1 + n, (0, 1, 2)) for p, n in changes.items()))
    return _rows((0.0, first), (1.0, last))


@pytest.mark.parametrize(("changes", "passes"), [({0: 1, 1: 0}, True), ({0: 0, 1: 0}, False),
                                                 ({0: 2, 1: 1}, True), ({0: 2, 1: 2}, False)])
def test_leader_epoch_changes_over_the_topic_fail_on_both_sides(changes: dict[int, int],
                                                                passes: bool) -> None:
    [(name, passed, detail)] = _judge([LeaderEpochChanges(CountRange(1, 3))],
                                      _evidence(rows=_leader_epochs(changes)))
    assert name == "leader-epoch changes on the topic between 1 and 3"
    assert passed is passes
    assert detail.startswith(f"{sum(changes.values())} (0: +{changes[0]}, 1: +{changes[1]})")


@pytest.mark.parametrize(("changes", "passes"), [(1, True), (0, False)])
def test_leader_epoch_changes_per_partition(changes: int, passes: bool) -> None:
    checks = bounds_as_checks({"leader_epoch_changes": {"0": {"min": 1}, "1": {"max": 0}}}, 2)
    found = _judge(checks, _evidence(rows=_leader_epochs({0: changes, 1: 0})))
    assert found[0] == ("leader-epoch changes on partition 0 at least 1", passes,
                        f"{changes}; bound at least 1")
    assert found[1][:2] == ("leader-epoch changes on partition 1 at most 0", True)
    [(_, seen, detail)] = _judge([LeaderEpochChanges(CountRange(0), (3,))],
                                 _evidence(rows=_leader_epochs({0: 1})))
    assert not seen and "never saw partition 3" in detail


@pytest.mark.parametrize(("seconds", "passes"), [(60.0, True), (60.01, False)])
def test_isr_full_after_heal_passes_at_the_bound_and_fails_past_it(seconds: float, passes: bool) -> None:
    [(name, passed, detail)] = _judge([IsrFullAfterHeal(60)], _evidence(isr=IsrAfterHeal(seconds, 2)))
    assert name == "every ISR full within 60 s of the last heal"
    assert passed is passes
    assert detail == f"full {seconds:.2f} s after the last heal (partition 2 last); bound 60 s"


def test_an_isr_never_full_or_never_watched_fails_with_what_was_short() -> None:
    isr = IsrAfterHeal(None, None, ("partition 1 isr [0, 2] of replicas [0, 1, 2]",))
    [(_, passed, detail)] = _judge([IsrFullAfterHeal(60)], _evidence(isr=isr))
    assert not passed and "partition 1 isr [0, 2] of replicas [0, 1, 2]" in detail
    [(_, passed, detail)] = _judge([IsrFullAfterHeal(60)], _evidence())
    assert not passed and detail == "the ISR after the heal was not measured"


def test_every_bound_fails_when_nothing_was_recorded() -> None:
    checks = bounds_as_checks({**FULL, "leader_epoch_changes": {"0": 1}}, 3)
    found = _judge(checks, Evidence((), {}, (), Moment(0.0, 0.0)))
    assert len(found) == 7
    assert not any(passed for _, passed, _ in found), found


def test_broker_setting_differences_name_the_broker_and_the_setting() -> None:
    declared = {"log.flush.interval.messages": "1", "min.insync.replicas": "2"}
    good = {"log.flush.interval.messages": "1", "min.insync.replicas": "2", "other": "x"}
    assert broker_setting_differences(declared, {0: good, 1: good}) == []
    bad = {"log.flush.interval.messages": "9223372036854775807"}
    assert broker_setting_differences(declared, {0: good, 1: bad}) == [
        "broker 1 has log.flush.interval.messages=9223372036854775807, not 1",
        "broker 1 does not know min.insync.replicas",
    ]


# ----------------------------------------------------------- ScenarioRun, stand-in cluster


class _Release:
    extra_broker_settings: ClassVar[dict[str, str]] = {"inter.broker.protocol.version": "3.7"}


@dataclass(frozen=True)
class _Broker:
    broker_id: int


class _Topology:
    """The shape a scenario is checked on before it starts: three zones, three brokers."""

    name = "stand-in"
    zones = ("a", "b", "c")
    brokers: tuple[Any, ...] = tuple(_Broker(i) for i in range(3))


class FakeCluster:
    """What ScenarioRun asks of a cluster for config, broker settings and the ISR poll."""

    def __init__(self, settings: Mapping[str, Any] | None = None,
                 states: Sequence[ClusterState] = ()) -> None:
        self.release = _Release()
        self.topology = _Topology()
        self.kafka_version = "3.7.2"
        self._settings = dict(settings or {"min.insync.replicas": 1})
        self._states = list(states)

    def broker_settings(self) -> dict[str, Any]:
        return {**self._settings, **self.release.extra_broker_settings}

    def bootstrap_servers(self, zone: str) -> str:
        return f"127.0.0.1:900{ord(zone) - ord('a')}"

    def state(self, topics: list[str] | None = None) -> ClusterState:
        return self._states.pop(0) if len(self._states) > 1 else self._states[0]


def _run(tmp_path: Path, spec: ScenarioSpec, cluster: FakeCluster | None = None) -> ScenarioRun:
    directory = RunDirectory("unit", "3.7.2", root=tmp_path)
    return ScenarioRun(cluster or FakeCluster(), spec, directory, Judge(),  # type: ignore[arg-type]
                       scenario_id="bounded")


def _history_row(partition: int, seq: int, outcome: str, ack_ts: float | None) -> dict[str, Any]:
    return {"message_id": f"pa-{seq}", "producer_id": "pa", "seq": seq, "topic": "bounded",
            "partition": partition, "key": None, "zone": "a", "send_ts": (ack_ts or 0.0) - 0.01,
            "ack_ts": ack_ts, "outcome": outcome, "offset": seq if ack_ts else None, "error": None}


def test_scenario_run_turns_each_bound_into_a_check_with_its_figure(tmp_path: Path) -> None:
    declared = bounds_as_checks({"max_failed": 1, "max_in_doubt": 0, "max_unavailable_s": 4,
                                 "unavailable_s": {"1": 10}, "controller_changes": 1,
                                 "leader_epoch_changes": {"min": 1}, "isr_full_after_heal_s": 5}, 2)
    run = _run(tmp_path, ScenarioSpec("bounded", "Bounded", checks=tuple(declared)))
    run.workload_started, run.workload_stopped = 100.0, 130.0
    run.workload_stopped_mono = 30.0
    run.moments = {Anchor(1, "inject"): Moment(110.0, 10.0), Anchor(1, "heal"): Moment(120.0, 20.0)}
    seq = 0
    for t in range(100, 131):  # partition 0 every second; partition 1 dark from 111 to 119
        for partition in (0, 1):
            if partition == 1 and 111 <= t < 119:
                continue
            run.writer.append("sends", _history_row(partition, seq, "acked", float(t)))
            seq += 1
    run.writer.append("sends", _history_row(1, seq, "unknown", None))
    run.writer.append("sends", _history_row(1, seq + 1, "failed", None))
    full = _partition(0, 1, 2, (0, 1, 2)), _partition(1, 1, 2, (0, 1, 2))
    run.sampler = StateSampler(None, [run.topic])
    for ts, state in (
        (100.0, _cluster_state(0, 4, _partition(0, 0, 1, (0, 1, 2)), _partition(1, 0, 1, (0, 1, 2)))),
        (111.0, _cluster_state(1, 5, _partition(0, 1, 2, (1, 2)), _partition(1, 1, 2, (1, 2)))),
        (123.5, _cluster_state(1, 5, *full)),
    ):
        renamed = _rename(state, run.topic)
        run.sampler.sample(_snapshot_of(renamed), now=_clock_at(ts))
    isr = IsrPoll(120.0, {0: (0, 1, 2), 1: (0, 1, 2)}, 125.0, [])
    run.writer.close(hist.STATUS_COMPLETE)
    run._evaluate_checks(isr)
    checks = {c.name: (c.passed, c.detail) for c in run.checks}
    assert checks["at most 1 sends failed"] == (True, "1 of 56 sends ended failed; bound at most 1")
    assert checks["at most 0 sends in doubt"] == (False, "1 of 56 sends ended in doubt; bound at most 0")
    assert checks["no partition without an acknowledgement for more than 4 s"] == (
        True, "p0: 1.00 s (window 20.0 s)")
    assert checks["partition 1 without an acknowledgement for at most 10 s"] == (
        True, "p1: 9.00 s (window 20.0 s)")
    passed, detail = checks["controller changes exactly 1"]
    assert passed and detail.startswith("1 (controller epoch 4 -> 5; controllers seen 0 -> 1)")
    assert checks["leader-epoch changes on the topic at least 1"] == (
        True, "2 (0: +1, 1: +1); bound at least 1")
    assert checks["every ISR full within 5 s of the last heal"] == (
        True, "full 3.50 s after the last heal (partition 0 last); bound 5 s")


def test_scenario_run_without_checks_adds_none(tmp_path: Path) -> None:
    run = _run(tmp_path, ScenarioSpec("bounded", "Bounded"))
    run.writer.close(hist.STATUS_COMPLETE)
    run._evaluate_checks(None)
    assert run.checks == [] and run.windows == []


def _zombie_history(run: ScenarioRun, polled_at: str, drained: bool) -> None:
    """A zombie's held transaction on disk: two sends acknowledged, its producer told
    _FENCED; one record of it polled at ``polled_at``, both on the final log, given to the
    read_committed drain when ``drained``."""
    run.writer.append("transactions", {
        "transaction_id": "zombie.t1", "producer_id": "zombie", "transactional_id": "shared",
        "begin_ts": 100.0, "end_requested_ts": 118.0, "end_ts": None, "outcome": hist.TXN_UNKNOWN,
        "error": "_FENCED: Producer fenced by newer instance"})
    for seq in (0, 1):
        send = _history_row(seq, seq, hist.OUTCOME_ACKED, 100.1)
        run.writer.append("sends", {**send, "producer_id": "zombie", "message_id": f"zombie-{seq}",
                                    "transaction_id": "zombie.t1"})
        run.writer.append("final_log", {"topic": run.topic, "partition": seq, "offset": seq,
                                        "message_id": f"zombie-{seq}", "read_committed": drained})
    run.writer.append("polls", {"consumer_id": "cb", "topic": run.topic, "partition": 1, "offset": 1,
                                "message_id": "zombie-1", "poll_ts": 101.0, "isolation": polled_at})
    run.writer.close(hist.STATUS_COMPLETE)


def test_checks_are_given_the_history_columns_a_fenced_zombie_is_judged_by(tmp_path: Path) -> None:
    checks = (TransactionOutcomes("unknown", CountRange(1, 1), producers=("zombie",), errors=("_FENCED",),
                                  label="fenced"),
              NeverVisible(("zombie",), label="never visible"))
    spec = ScenarioSpec("bounded", "Bounded", checks=checks)
    hidden = _run(tmp_path / "hidden", spec)
    _zombie_history(hidden, hist.READ_UNCOMMITTED, drained=False)
    hidden._evaluate_checks(None)
    assert {c.name: c.passed for c in hidden.checks} == {"fenced": True, "never visible": True}, hidden.checks
    # The same run read at read_committed, then drained there: what those columns say decides.
    seen = _run(tmp_path / "seen", spec)
    _zombie_history(seen, hist.READ_COMMITTED, drained=True)
    seen._evaluate_checks(None)
    [_, never] = seen.checks
    assert not never.passed and "1 polled at read_committed" in never.detail
    assert "2 of them given to the read_committed drain" in never.detail


def test_the_isr_poll_waits_from_the_last_heal_until_every_isr_is_full(tmp_path: Path) -> None:
    short = _cluster_state(0, 1, _partition(0, 0, 1, (0, 1)))
    full = _cluster_state(0, 1, _partition(0, 0, 1, (0, 1, 2)))
    spec = ScenarioSpec("bounded", "Bounded", checks=(IsrFullAfterHeal(30),))
    run = _run(tmp_path, spec, FakeCluster(states=[_rename(short, "bounded"), _rename(full, "bounded")]))
    run.topic = "bounded"
    poll = run._poll_isr_after_heal(heal_started=time.time())  # no heal event: from finish's heal
    assert poll is not None and poll.full_at is not None and poll.replicas == {0: (0, 1, 2)}
    never = _run(tmp_path, spec, FakeCluster(states=[_rename(short, "bounded")]))
    never.topic = "bounded"
    never.log.record("kill", "heal", ("kafka-2",), "ok", started=(0.0, 0.0))  # the bound passed long ago
    poll = never._poll_isr_after_heal(heal_started=1e12)
    assert poll is not None and poll.full_at is None
    assert poll.waiting == ["partition 0 isr [0, 1] of replicas [0, 1, 2]"]


def _rename(state: ClusterState, topic: str) -> ClusterState:
    return ClusterState(state.live_brokers, state.controller, state.controller_epoch,
                        {(topic, p.partition): PartitionState(topic, p.partition, p.leader, p.leader_epoch,
                                                              p.isr, 1, p.replicas)
                         for p in state.partitions.values()})


def test_a_scenario_needing_broker_settings_the_cluster_lacks_is_refused(tmp_path: Path) -> None:
    spec = ScenarioSpec("bounded", "Bounded", broker_settings={"log.flush.interval.messages": 1})
    run = _run(tmp_path, spec)
    with pytest.raises(ScenarioError, match=r"log.flush.interval.messages=1 \(cluster: unset\)"):
        run.start()
    assert (run.dir / "assertions.json").read_text().count("kafka-chaos run FILE") == 1
    # the same scenario on a cluster started with the setting gets past the refusal
    refuse_unrunnable(_run(tmp_path, spec, FakeCluster({"log.flush.interval.messages": "1"})))


def test_effective_config_marks_defaults_scenario_values_and_harness_values(tmp_path: Path) -> None:
    spec = ScenarioSpec("bounded", "Bounded",
                        producers=(ProducerSpec("pa", "a", settings={"acks": "1", "retries": 0}),),
                        consumers=(ConsumerSpec("cb", "b", settings={"group.id": "mine"}),),
                        broker_settings={"log.flush.interval.messages": 1})
    run = _run(tmp_path, spec, FakeCluster({"log.flush.interval.messages": 1, "min.insync.replicas": 2}))
    config = effective_config(run.cluster, run.spec, run.run_topics)
    brokers = {r["key"]: (r["value"], r["source"]) for r in config["brokers"]}
    assert brokers == {"log.flush.interval.messages": ("1", "scenario"),
                       "min.insync.replicas": ("2", "topology"),
                       "inter.broker.protocol.version": ("3.7", "release")}
    assert [t["name"] for t in config["topics"]] == [run.topic]
    assert config["topics"][0]["settings"] == [
        {"key": "min.insync.replicas", "value": "2", "source": "broker"},
        {"key": "flush.messages", "value": "1", "source": "broker"}]
    producer = {r["key"]: r for r in config["clients"][0]["settings"]}
    assert producer["acks"] == {"key": "acks", "value": "1", "source": "scenario",
                                "replaced": "all", "replaced_source": "default"}
    assert producer["retries"] == {"key": "retries", "value": 0, "source": "scenario"}
    assert producer["linger.ms"]["source"] == "default"
    assert producer["bootstrap.servers"] == {"key": "bootstrap.servers", "value": "127.0.0.1:9000",
                                             "source": "harness"}
    consumer = {r["key"]: r for r in config["clients"][1]["settings"]}
    assert (consumer["group.id"]["value"], consumer["group.id"]["source"]) == ("mine", "scenario")
    assert consumer["auto.offset.reset"]["source"] == "default"


def test_effective_config_lists_every_topic_with_its_real_name_and_settings(tmp_path: Path) -> None:
    spec = ScenarioSpec("piped", "Piped", topic=TopicSpec(partitions=4),
                        topics=(NamedTopic("out", TopicSpec(partitions=2, replication_factor=2,
                                                            config={"min.insync.replicas": 1})),))
    run = _run(tmp_path, spec, FakeCluster({"min.insync.replicas": 2}))
    topics = effective_config(run.cluster, run.spec, run.run_topics)["topics"]
    assert [(t["name"], t["partitions"], t["replication_factor"]) for t in topics] == [
        (run.topic, 4, 3), (f"{run.topic}-out", 2, 2)]
    assert topics[1]["settings"] == [{"key": "min.insync.replicas", "value": 1, "source": "scenario",
                                      "replaced": "2", "replaced_source": "broker"}]


def test_objects_in_settings_are_shown_by_name() -> None:
    logger = logging.Logger("kafka-chaos.attempts.pa")
    rows = layered_settings([("default", {"log_level": 3}), ("harness", {"logger": logger, "log_level": 7})])
    assert rows == [
        {"key": "log_level", "value": 7, "source": "harness", "replaced": 3, "replaced_source": "default"},
        {"key": "logger", "value": "Logger kafka-chaos.attempts.pa", "source": "harness"},
    ]
    assert shown(len) == "builtin_function_or_method len"
    assert shown({"a": (1, logger)}) == {"a": [1, "Logger kafka-chaos.attempts.pa"]}


def test_a_failure_while_reading_the_evidence_is_a_failed_check_not_a_lost_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks = tuple(bounds_as_checks({"max_failed": 0}, 1))
    run = _run(tmp_path, ScenarioSpec("bounded", "Bounded", checks=checks))
    run.writer.close(hist.STATUS_COMPLETE)

    def broken(*args: Any) -> list[dict[str, Any]]:
        raise RuntimeError("boom")

    monkeypatch.setattr(evidence_reader, "history_rows", broken)
    run._evaluate_checks(None)
    [check] = run.checks
    assert (check.name, check.passed) == ("at most 0 sends failed", False) and "boom" in check.detail


def test_the_scenario_records_the_samples_as_the_cluster_state_table(tmp_path: Path) -> None:
    """Stopping the sampler writes its rows into the history and the events derived from
    them for the report; bounds computed from the table read back equal the in-memory ones."""
    run = _run(tmp_path, ScenarioSpec("bounded", "Bounded"))
    run.sampler = StateSampler(None, [run.topic])
    for ts, state in ((100.0, _cluster_state(0, 4, _partition(0, 0, 1, (0, 1, 2)))),
                      (101.0, _cluster_state(0, 4, _partition(0, 0, 1, (0, 1, 2)))),
                      (105.0, _cluster_state(1, 5, _partition(0, 1, 2, (1, 2))))):
        renamed = _rename(state, run.topic)
        run.sampler.sample(_snapshot_of(renamed), now=_clock_at(ts))
    run._close(hist.STATUS_COMPLETE)
    run._stop_sampler()  # finish stops it before the drain, _close again: rows go in once
    table = dict(hist.iter_tables(run.dir / "history"))["cluster_state"].to_pylist()
    assert table == run.sampler.rows() and len(table) == 2
    assert controller_elections(table) == ControllerElections(1, 4, 5, ("0", "1"))
    assert leader_epoch_changes(table, run.topic) == {0: 1}
    events = json.loads((run.dir / "cluster_events.json").read_text())
    assert events == [e.to_dict() for e in run.sampler.events()]
    assert [e["kind"] for e in events if e["ts"] == 105.0] == ["controller", "leader", "isr"]


class _WarmingWorkload:
    """A workload whose producer is flowing at once and whose group first commits after
    ``commits_after`` looks, as a group that is still joining does."""

    committing_groups: ClassVar[list[str]] = ["readers"]

    def __init__(self, commits_after: int) -> None:
        self.looks, self.commits_after = 0, commits_after

    def outcomes(self) -> dict[str, int]:
        return {"acked": 500}

    def groups_yet_to_commit(self) -> list[str]:
        self.looks += 1
        return [] if self.looks > self.commits_after else ["readers"]


def test_the_warm_up_waits_for_every_committing_group_to_commit(tmp_path: Path) -> None:
    run = _run(tmp_path, ScenarioSpec("bounded", "Bounded"))
    run.workload = _WarmingWorkload(commits_after=3)  # type: ignore[assignment]
    assert run.await_acked(100, timeout_s=5)
    assert run.workload.looks == 4  # type: ignore[union-attr]
    (check,) = run.checks
    assert check.name == "workload flowing before the faults: 100 sends acknowledged and a commit of every " \
                         "group through"
    assert "groups yet to commit: none" in check.detail
    late = _run(tmp_path, ScenarioSpec("bounded", "Bounded"))
    late.workload = _WarmingWorkload(commits_after=10**9)  # type: ignore[assignment]
    assert not late.await_acked(100, timeout_s=0.3)
    assert "groups yet to commit: readers after at most 0 s" in late.checks[0].detail
