"""A page's opening sentences and its rules in words, from the sample run's scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history import RuleResult
from harness.report.load import load_run
from harness.report.model import Run
from harness.report.story import rule_words, story
from harness.report.timeline import origin
from tests.report.sample_run import build_sample_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return load_run(build_sample_run(tmp_path_factory.mktemp("story")))


def _told(run: Run, scenario_id: str) -> list[str]:
    [s] = [s for s in run.scenarios if s.id == scenario_id]
    return story(s, origin(s))


def test_a_lossy_page_says_what_was_done_what_the_cluster_did_and_what_was_lost(run: Run) -> None:
    faults, cluster, clients = _told(run, "s5-unclean-election")
    assert faults == ("Faults: kill kafka-1 at +8.0 s (healed 16.0 s later); "
                      "kill kafka-0 at +14.0 s (healed 16.0 s later).")  # fmt: skip
    assert cluster.startswith("The cluster: 2 leader changes sampled, a new leader 18.2 s after the first "
                              "fault")
    assert "30 acknowledged messages were lost (orders-0 offsets 40\u201369 (30)" in clients
    assert clients.endswith("The verdict also counts: truncated 60.")


def test_a_page_without_loss_or_verdict_says_so(run: Run) -> None:
    assert "No acknowledged message was lost." in _told(run, "s3-kill-leader")[2]
    assert _told(run, "s7-link-cut")[2].startswith("There is no verdict")


@pytest.mark.parametrize(("rule", "count", "passed", "words"), [
    ("at_least_one", 3, True, "required: this is the unsafe side, and it was caught (3 found)"),
    ("at_least_one", 0, False, "required, yet none was found: the unsafe side went unseen, so the check is "
                               "blind here"),
    ("any", 7, True, "not promised in this configuration, so any count is accepted (7 found)"),
    (0, 0, True, "none allowed, none found: holds"),
    (0, 8, False, "none allowed, 8 found: broken"),
    (2, 1, True, "up to 2 allowed, 1 found: holds"),
])  # fmt: skip
def test_each_rule_reads_as_why_it_held_or_failed(rule: int | str, count: int, passed: bool,
                                                  words: str) -> None:
    assert rule_words(RuleResult("lost", rule, count, passed, "")) == words  # type: ignore[arg-type]


def test_the_story_opens_the_page(tmp_path: Path) -> None:
    from harness.report.render import render_run

    run_dir = build_sample_run(tmp_path)
    render_run(run_dir)
    page = (run_dir / "s5-unclean-election.html").read_text()
    assert page.index('id="story"') < page.index('id="verdict"')
    assert "30 acknowledged messages were lost" in page
