"""The report's reading of a run directory: who passed, who did not, and why.

The rule under test: a scenario passes only when both verdict.json and assertions.json
were recorded and both pass; anything missing or malformed is "not judged", never a pass.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ChaosError
from harness.history import ANOMALY_KINDS
from harness.report import ReportError, load_run
from harness.report.load import page_name
from harness.report.model import Outcome, Run, Scenario, SessionTest, combine
from tests.report.sample_run import (
    FABRIC_ERROR,
    FABRIC_TEST,
    HEAL_ERROR,
    RUN_ID,
    T0,
    build_sample_run,
    sample_tests,
)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_run(tmp_path_factory.mktemp("sample"))


@pytest.fixture
def run_dir(sample: Path, tmp_path: Path) -> Path:
    """A private copy to damage."""
    return Path(shutil.copytree(sample, tmp_path / RUN_ID))


def _edit(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _passing_tests() -> list[dict[str, Any]]:
    """The sample's tests with every failure and error turned into a pass."""
    return [
        t | {"outcome": "passed", "phase": None, "error": ""} if t["outcome"] in ("failed", "error") else t
        for t in sample_tests()
    ]


def _outcomes(run_dir: Path) -> dict[str, Outcome]:
    return {s.id: s.outcome for s in load_run(run_dir).scenarios}


@pytest.mark.parametrize(
    ("judgements", "expected"),
    [
        ([True, True], Outcome.PASSED),
        ([True, False], Outcome.FAILED),
        ([False, None], Outcome.FAILED),
        ([True, None], Outcome.NOT_JUDGED),
        ([None, None], Outcome.NOT_JUDGED),
        ([], Outcome.NOT_JUDGED),
    ],
)
def test_combine_failure_wins_and_missing_is_never_a_pass(
    judgements: list[bool | None], expected: Outcome
) -> None:
    assert combine(judgements) is expected


def test_sample_scenarios_have_the_three_outcomes(sample: Path) -> None:
    run = load_run(sample)
    assert _outcomes(sample) == {
        "s5-unclean-election": Outcome.PASSED,
        "s3-kill-leader": Outcome.FAILED,
        "s7-link-cut": Outcome.NOT_JUDGED,
    }
    assert run.outcome is Outcome.FAILED
    assert run.counts() == {Outcome.PASSED: 1, Outcome.FAILED: 1, Outcome.NOT_JUDGED: 1}


def test_verdict_and_assertions_are_read(sample: Path) -> None:
    s5 = next(s for s in load_run(sample).scenarios if s.id == "s5-unclean-election")
    assert s5.verdict is not None and s5.assertions is not None
    assert s5.verdict.anomalies == {"lost": 30, "truncated": 60}
    assert [r.kind for r in s5.verdict.rules][:3] == ["lost", "duplicate", "truncated"]
    lost = s5.verdict.examples["lost"][0]
    assert (lost.message_id, lost.partition, lost.offset, lost.final_message_id) == ("pc-40", 0, 40, "pb-131")
    assert s5.assertions.windows[0].seconds == pytest.approx(12.2)
    assert s5.duration == pytest.approx(45)
    assert s5.problems == []


def test_missing_verdict_is_not_judged_and_says_so(sample: Path) -> None:
    s7 = next(s for s in load_run(sample).scenarios if s.id == "s7-link-cut")
    assert s7.assertions is not None and s7.assertions.passed  # the other source passed
    assert s7.outcome is Outcome.NOT_JUDGED
    assert any("verdict.json is missing" in p for p in s7.problems)
    assert any("no reconciliation verdict" in r for r in s7.reasons)


@pytest.mark.parametrize("bad", ["true", 1, None])
def test_a_verdict_whose_passed_is_not_a_boolean_is_not_a_pass(run_dir: Path, bad: object) -> None:
    _edit(run_dir / "s5-unclean-election" / "verdict.json", passed=bad)
    s5 = next(s for s in load_run(run_dir).scenarios if s.id == "s5-unclean-election")
    assert s5.verdict is None
    assert s5.outcome is Outcome.NOT_JUDGED
    assert any("verdict.json is malformed" in p for p in s5.problems)


def test_a_verdict_that_passes_despite_a_failed_rule_is_shown_failed(run_dir: Path) -> None:
    _edit(run_dir / "s3-kill-leader" / "verdict.json", passed=True)
    s3 = next(s for s in load_run(run_dir).scenarios if s.id == "s3-kill-leader")
    assert s3.outcome is Outcome.FAILED
    assert any("says passed although a rule failed" in p for p in s3.problems)


def test_failed_assertions_fail_a_clean_verdict(run_dir: Path) -> None:
    path = run_dir / "s5-unclean-election" / "assertions.json"
    data = json.loads(path.read_text())
    data["checks"][1]["passed"] = False
    data["passed"] = False
    path.write_text(json.dumps(data))
    s5 = next(s for s in load_run(run_dir).scenarios if s.id == "s5-unclean-election")
    assert s5.outcome is Outcome.FAILED
    assert s5.reasons == ["cluster checks failed: stale follower elected uncleanly"]


@pytest.mark.parametrize("name", ["assertions.json", "config.json", "cluster_events.json"])
def test_unreadable_files_become_problems_not_crashes(run_dir: Path, name: str) -> None:
    (run_dir / "s5-unclean-election" / name).write_text("{not json")
    s5 = next(s for s in load_run(run_dir).scenarios if s.id == "s5-unclean-election")
    assert any(name in p and "not valid JSON" in p for p in s5.problems)
    if name == "assertions.json":
        assert s5.outcome is Outcome.NOT_JUDGED


def test_a_scenario_the_run_never_reached_is_not_judged(run_dir: Path) -> None:
    shutil.rmtree(run_dir / "s3-kill-leader")
    s3 = next(s for s in load_run(run_dir).scenarios if s.id == "s3-kill-leader")
    assert s3.outcome is Outcome.NOT_JUDGED
    assert s3.problems == ["scenario directory s3-kill-leader/ is missing: the run did not reach it"]


@pytest.mark.parametrize("status", ["running", "interrupted"])
def test_an_incomplete_run_cannot_pass(run_dir: Path, status: str) -> None:
    shutil.rmtree(run_dir / "s3-kill-leader")
    shutil.rmtree(run_dir / "s7-link-cut")
    _edit(run_dir / "run.json", status=status, scenarios=["s5-unclean-election"], tests=_passing_tests())
    run = load_run(run_dir)
    assert [s.outcome for s in run.scenarios] == [Outcome.PASSED]
    assert not run.info.complete
    assert run.outcome is Outcome.NOT_JUDGED
    _edit(run_dir / "run.json", status="complete")
    assert load_run(run_dir).outcome is Outcome.PASSED


def test_without_run_json_the_scenario_directories_are_listed(run_dir: Path) -> None:
    (run_dir / "run.json").unlink()
    run = load_run(run_dir)
    assert run.info.status == "unknown" and not run.info.complete
    assert sorted(s.id for s in run.scenarios) == ["s3-kill-leader", "s5-unclean-election", "s7-link-cut"]
    assert run.problems == ["run.json is missing"]


@pytest.mark.parametrize("sid", ["../escape", "a/b", "index", ".hidden", ""])
def test_ids_that_are_not_plain_file_names_get_no_page(sid: str) -> None:
    assert page_name(sid) is None


def test_unsafe_scenario_ids_are_reported_not_followed(run_dir: Path) -> None:
    _edit(run_dir / "run.json", scenarios=["../outside", "s5-unclean-election"])
    run = load_run(run_dir)
    bad = run.scenarios[0]
    assert bad.page is None and bad.outcome is Outcome.NOT_JUDGED
    assert "cannot be used as a file name" in bad.problems[0]


def test_fault_windows_come_from_recorded_events_paired_in_order(sample: Path) -> None:
    s5 = next(s for s in load_run(sample).scenarios if s.id == "s5-unclean-election")
    assert [(f.label, f.start - T0, f.end and f.end - T0, f.approximate) for f in s5.faults] == [
        ("kill kafka-1", 8, 24, False),
        ("kill kafka-0", 14, 30, False),
    ]


def test_without_recorded_events_the_schedule_is_used_and_marked_approximate(run_dir: Path) -> None:
    for part in (run_dir / "s3-kill-leader" / "history" / "faults").iterdir():
        part.unlink()
    schedule = run_dir / "s3-kill-leader" / "schedule.json"
    schedule.write_text(json.dumps({"version": 1, "entries": json.loads(schedule.read_text())["entries"]}))
    s3 = next(s for s in load_run(run_dir).scenarios if s.id == "s3-kill-leader")
    assert s3.fault_actions == []
    [window] = s3.faults
    assert window.approximate
    assert (window.start - T0, window.end and window.end - T0) == (10, 25)
    assert window.fault == "kill" and "leader_of" in window.targets


def test_expectations_show_every_kind_with_its_default(sample: Path) -> None:
    s3 = next(s for s in load_run(sample).scenarios if s.id == "s3-kill-leader")
    assert s3.config is not None
    assert s3.config.sections["expectations"]["lost"] == "0"
    assert list(s3.config.sections["expectations"]) == list(ANOMALY_KINDS)


def test_a_missing_run_directory_is_a_one_line_user_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="does not exist") as err:
        load_run(tmp_path / "nope")
    assert isinstance(err.value, ChaosError)


# ------------------------------------------------------------- session tests, run outcome


def _only_s5(run_dir: Path, tests: list[dict[str, Any]]) -> Run:
    """The run with only the passing scenario left, and the given tests."""
    _edit(run_dir / "run.json", scenarios=["s5-unclean-election"], tests=tests)
    return load_run(run_dir)


def test_a_failed_fabric_test_fails_a_run_whose_scenarios_all_passed(run_dir: Path) -> None:
    tests = [t for t in _passing_tests() if t["outcome"] != "skipped"]
    fabric = next(t for t in tests if t["id"] == FABRIC_TEST)
    fabric.update(outcome="failed", phase="call", error=FABRIC_ERROR)
    run = _only_s5(run_dir, tests)
    assert [s.outcome for s in run.scenarios] == [Outcome.PASSED]
    assert run.outcome is Outcome.FAILED
    [failed] = [t for t in run.tests if t.bad]
    assert (failed.id, failed.phase, failed.error) == (FABRIC_TEST, "call", FABRIC_ERROR)
    assert failed.summary.startswith("AssertionError: <script>")


def test_the_same_run_with_the_fabric_test_passed_is_passed(run_dir: Path) -> None:
    run = _only_s5(run_dir, [t for t in _passing_tests() if t["outcome"] != "skipped"])
    assert run.outcome is Outcome.PASSED
    assert run.test_counts() == {"passed": 6, "failed": 0, "error": 0, "skipped": 0}


def test_skipped_tests_are_counted_but_do_not_fail_the_run(run_dir: Path) -> None:
    run = _only_s5(run_dir, _passing_tests())
    assert run.outcome is Outcome.PASSED
    assert run.test_counts()["skipped"] == 1
    [skipped] = [t for t in run.tests if t.outcome == "skipped"]
    assert skipped.error == "Skipped: needs brokers_per_zone=2" and not skipped.bad


def test_an_error_at_setup_counts_as_an_error_and_fails_the_run(run_dir: Path) -> None:
    tests = _passing_tests()
    tests[4].update(outcome="error", phase="setup", error="ChaosError: cluster not healthy")
    run = _only_s5(run_dir, tests)
    assert run.test_counts() == {"passed": 5, "failed": 0, "error": 1, "skipped": 1}
    assert run.tests[4].phase == "setup" and run.tests[4].bad
    assert run.outcome is Outcome.FAILED


def test_the_sample_lists_every_test_in_run_order(sample: Path) -> None:
    run = load_run(sample)
    assert [t.id for t in run.tests] == [t["id"] for t in sample_tests()]
    assert run.test_counts() == {"passed": 2, "failed": 2, "error": 2, "skipped": 1}
    assert run.tests[2].kind == "scenario-file" and run.tests[2].scenario == "s7-link-cut"
    assert run.scenario_page("s7-link-cut") == "s7-link-cut.html"
    assert run.scenario_page("not-a-scenario") is None
    assert run.problems == []


@pytest.mark.parametrize(
    ("tests", "scenarios", "expected"),
    [
        ([], [], Outcome.NOT_JUDGED),  # nothing ran
        ([{"outcome": "skipped"}], [], Outcome.NOT_JUDGED),  # nothing that ran was judged
        ([{"outcome": "passed"}], [], Outcome.PASSED),
        ([{"outcome": "passed"}, {"outcome": "error", "phase": "teardown"}], [], Outcome.FAILED),
    ],
)
def test_a_run_of_tests_alone_is_judged_by_its_tests(
    run_dir: Path, tests: list[dict[str, Any]], scenarios: list[str], expected: Outcome
) -> None:
    base = {"kind": "test", "error": "", "duration_s": 1.0}
    entries = [base | {"id": f"t{i}"} | t for i, t in enumerate(tests)]
    for sid in ("s3-kill-leader", "s5-unclean-election", "s7-link-cut"):
        shutil.rmtree(run_dir / sid)
    _edit(run_dir / "run.json", scenarios=scenarios, tests=entries)
    assert load_run(run_dir).outcome is expected


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "x", "outcome": "xfailed"},
        {"id": "x", "outcome": "passed", "duration_s": "fast"},
        {"id": "x", "outcome": "passed", "phase": "collect"},
        {"outcome": "passed"},
        "tests/x.py::test_y",
    ],
)
def test_a_malformed_test_entry_is_a_problem_and_keeps_the_run_from_passing(
    run_dir: Path, bad: object
) -> None:
    run = _only_s5(run_dir, [*_passing_tests(), bad])  # type: ignore[list-item]
    assert len(run.tests) == len(sample_tests()) and run.unreadable_tests == 1
    assert any("run.json test 8 is malformed" in p for p in run.problems)
    assert run.outcome is Outcome.NOT_JUDGED


def test_tests_that_are_not_a_list_are_a_problem(run_dir: Path) -> None:
    _edit(run_dir / "run.json", scenarios=["s5-unclean-election"], tests={"a": 1})
    run = load_run(run_dir)
    assert run.tests == [] and run.outcome is Outcome.NOT_JUDGED
    assert "run.json tests is not a list; not shown" in run.problems


def test_a_run_json_without_tests_reads_as_before(run_dir: Path) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    del data["tests"], data["escalations"]
    data["scenarios"] = ["s5-unclean-election"]
    (run_dir / "run.json").write_text(json.dumps(data))
    run = load_run(run_dir)
    assert run.tests == [] and run.escalations == [] and run.problems == []
    assert run.outcome is Outcome.PASSED


def test_escalations_are_read_and_malformed_ones_reported(run_dir: Path) -> None:
    [e] = load_run(run_dir).escalations
    assert (e.ts - T0, e.after, e.actions, e.healthy) == (100, FABRIC_TEST, ["restarted kafka-2"], True)
    assert e.problems == ["kafka-2 not in /brokers/ids", "orders-1 has no leader"]
    _edit(run_dir / "run.json", escalations=[{"ts": T0, "after": "t", "healthy": "yes"}])
    run = load_run(run_dir)
    assert run.escalations == []
    assert any("escalation 1 is malformed" in p for p in run.problems)


# ---------------------------------------------------------- faults, diagnostics, ZooKeeper


def _scenario(run_dir: Path, sid: str) -> Scenario:
    return next(s for s in load_run(run_dir).scenarios if s.id == sid)


def test_fault_errors_are_kept_with_their_text(sample: Path) -> None:
    s3 = _scenario(sample, "s3-kill-leader")
    assert [(a.action, a.ok, a.outcome) for a in s3.fault_actions] == [
        ("inject", True, "ok"),
        ("heal", False, HEAL_ERROR),
    ]
    assert s3.fault_actions_source == "history"
    [window] = s3.faults
    assert not window.ok and window.errors == (f"heal: {HEAL_ERROR}",)
    assert all(w.ok and not w.errors for w in _scenario(sample, "s5-unclean-election").faults)


def test_without_history_fault_rows_the_schedule_files_record_is_used(run_dir: Path) -> None:
    for part in (run_dir / "s3-kill-leader" / "history" / "faults").iterdir():
        part.unlink()
    s3 = _scenario(run_dir, "s3-kill-leader")
    assert s3.fault_actions_source == "schedule.json"
    assert [a.outcome for a in s3.fault_actions] == ["ok", HEAL_ERROR]
    [window] = s3.faults
    assert not window.approximate and (window.start - T0, window.end and window.end - T0) == (10, 25)


def test_the_plan_comes_from_schedule_json_when_config_has_none(run_dir: Path) -> None:
    config = run_dir / "s7-link-cut" / "config.json"
    _edit(config, schedule=[])
    s7 = _scenario(run_dir, "s7-link-cut")
    assert s7.config is not None and s7.config.schedule == []
    assert [(e.fault, e.start_s, e.duration_s) for e in s7.planned] == [("cut", 5, 15)]


def test_diagnostics_are_listed_logs_first(sample: Path) -> None:
    s3 = _scenario(sample, "s3-kill-leader")
    assert s3.diagnostics[0] == "s3-kill-leader/diagnostics/logs/kafka-0.log"
    assert s3.diagnostics[-1] == "s3-kill-leader/diagnostics/znodes.json"
    assert len(s3.diagnostics) == 8
    assert _scenario(sample, "s5-unclean-election").diagnostics == []


def test_zookeeper_gaps_are_paired_from_the_events(sample: Path) -> None:
    [gap] = _scenario(sample, "s5-unclean-election").zk_gaps
    assert (gap.start - T0, gap.end and gap.end - T0) == pytest.approx((20.4, 23.9))
    assert "ConnectionLoss" in gap.detail
    assert _scenario(sample, "s3-kill-leader").zk_gaps == []


def test_an_unended_zookeeper_gap_lasts_to_the_end(run_dir: Path) -> None:
    path = run_dir / "s5-unclean-election" / "cluster_events.json"
    events = [e for e in json.loads(path.read_text()) if e["kind"] != "zk_readable"]
    path.write_text(json.dumps(events))
    [gap] = _scenario(run_dir, "s5-unclean-election").zk_gaps
    assert gap.end is None


def test_acknowledgements_are_read_by_arrival_time(sample: Path) -> None:
    s5 = _scenario(sample, "s5-unclean-election")
    assert s5.ack_buckets is not None
    by_second = {b.start - T0: b.count for b in s5.ack_buckets}
    # the lost sends of orders-0 (sent from +8 s) were all acknowledged at +13.11 s
    assert (by_second[13] > by_second[12] and 9 not in by_second) or by_second[9] < by_second[13]
    assert sum(by_second.values()) == s5.verdict.totals["acked"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("outcome", "tests", "code", "expected"),
    [
        (Outcome.PASSED, {"failed": 0, "error": 0}, 0, ""),
        (Outcome.FAILED, {"failed": 1, "error": 1}, 1,
         "run failed, 2 tests failed or errored, pytest exit 1"),
        (Outcome.NOT_JUDGED, {}, 0, "run not judged"),
        (Outcome.PASSED, {}, 2, "run passed, pytest exit 2"),
    ],
)
def test_the_matrix_column_shows_the_runs_outcome(
    outcome: Outcome, tests: dict[str, int], code: int, expected: str
) -> None:
    from harness.entry.matrix import _column_problem

    assert _column_problem(outcome, tests, code) == expected


def test_the_effective_configuration_is_read_with_who_set_each_value(sample: Path) -> None:
    s5 = next(s for s in load_run(sample).scenarios if s.id == "s5-unclean-election")
    assert s5.config is not None and s5.config.effective is not None
    effective = s5.config.effective
    assert "effective_config" not in s5.config.sections  # typed, not shown a second time raw
    brokers = {r.key: (r.value, r.source) for r in effective.brokers}
    assert brokers["log.flush.interval.messages"] == ("1", "scenario")
    assert brokers["zookeeper.session.timeout.ms"] == ("6000", "topology")
    assert [t.name for t in effective.topics] == ["orders"]  # written as "topic" before pipelines
    assert [c.name for c in effective.clients] == ["pa", "pb", "pc", "cb"]
    pa = {r.key: r for r in effective.clients[0].settings}
    assert (pa["linger.ms"].value, pa["linger.ms"].source) == (5, "default")
    assert (pa["retries"].value, pa["retries"].by_scenario) == (2147483647, True)
    assert (pa["acks"].replaced, pa["acks"].replaced_source) == ("all", "default")
    assert pa["client.id"].value is None and pa["client.id"].source == "harness"
    assert s5.config.sections["topic"]["config"]["min.insync.replicas"] == 1


def test_a_config_without_effective_settings_still_reads(run_dir: Path) -> None:
    path = run_dir / "s3-kill-leader" / "config.json"
    data = json.loads(path.read_text())
    del data["effective_config"]
    path.write_text(json.dumps(data))
    s3 = next(s for s in load_run(run_dir).scenarios if s.id == "s3-kill-leader")
    assert s3.config is not None and s3.config.effective is None and not s3.problems
    assert "producer" in s3.config.sections


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ({"brokers": [{"key": "x", "value": 1, "source": "somebody"}]}, "not one of default"),
        ({"brokers": "all of them"}, "brokers is not a list"),
        ({"clients": [{"role": "admin", "name": "x", "settings": []}]}, "client role is 'admin'"),
    ],
)
def test_a_malformed_effective_configuration_is_a_problem_not_a_crash(
    run_dir: Path, damage: dict[str, Any], problem: str
) -> None:
    path = run_dir / "s3-kill-leader" / "config.json"
    data = json.loads(path.read_text())
    data["effective_config"] |= damage
    path.write_text(json.dumps(data))
    s3 = next(s for s in load_run(run_dir).scenarios if s.id == "s3-kill-leader")
    assert s3.config is not None and s3.config.effective is None
    assert s3.config.title  # the rest of config.json still read
    assert any("effective_config is malformed" in p and problem in p for p in s3.problems), s3.problems


def test_the_summary_of_an_error_keeps_every_failed_rule() -> None:
    error = """    def test_round():
>       assert run.passed, "\\n".join(run.failures())
E       AssertionError: verdict: truncated=8 exceeds max 0
E         verdict: lost=8 exceeds max 0
E       assert False
E        +  where False = <Run>.passed

tests/chaos/test_explore.py:40: AssertionError"""
    test = SessionTest("t", "test", "failed", "call", error, 1.0, None)
    assert test.summary == "AssertionError: verdict: truncated=8 exceeds max 0; verdict: lost=8 exceeds max 0"
    bare = SessionTest("t", "test", "error", "setup", "RuntimeError: no cluster", 1.0, None)
    assert bare.summary == "RuntimeError: no cluster"


def test_the_schedule_clock_is_placed_by_the_first_inject() -> None:
    from harness.report.model import FaultAction, ScheduleEntry

    planned = [ScheduleEntry(5.0, 10.0, "kill", {}), ScheduleEntry(2.0, 1.0, "cut", {})]
    s = Scenario("s", "s.html", schedule_entries=planned)
    assert s.schedule_origin is None  # nothing injected
    s.fault_actions = [FaultAction(112.0, "kill", "inject", "kafka-0", "ok", True)]
    assert s.schedule_origin == 107.0
