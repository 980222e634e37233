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
from harness.report import ReportError, load_run
from harness.report.load import page_name
from harness.report.model import Outcome, combine
from tests.report.sample_run import RUN_ID, T0, build_sample_run


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
    _edit(run_dir / "run.json", status=status, scenarios=["s5-unclean-election"])
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
    s3 = next(s for s in load_run(run_dir).scenarios if s.id == "s3-kill-leader")
    [window] = s3.faults
    assert window.approximate
    assert (window.start - T0, window.end and window.end - T0) == (10, 25)
    assert window.fault == "kill" and "leader_of" in window.targets


def test_expectations_show_every_kind_with_its_default(sample: Path) -> None:
    s3 = next(s for s in load_run(sample).scenarios if s.id == "s3-kill-leader")
    assert s3.config is not None
    assert s3.config.sections["expectations"]["lost"] == "0"
    assert len(s3.config.sections["expectations"]) == 7


def test_a_missing_run_directory_is_a_one_line_user_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="does not exist") as err:
        load_run(tmp_path / "nope")
    assert isinstance(err.value, ChaosError)
