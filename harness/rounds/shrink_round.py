"""``kafka-chaos shrink``: a failing exploration round cut down to the smallest schedule
that still breaks what it broke.

The search is :class:`~harness.explore.shrink.Shrinker` (pure: ddmin over the entries,
then durations and starts, each candidate judged over several runs); this module gives it
real runs: each candidate is the round with another schedule
(:func:`~harness.rounds.explore_round.with_schedule`), run as one record of the run, and
it "still fails" when it violates something the round violated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from faults.schedule import entry_words
from harness.cluster.lifecycle import Cluster
from harness.explore.shrink import Shrinker, schedule_words
from harness.files import write_json
from harness.report.load import read_outcome
from harness.report.model import SHRINK_FILE
from harness.rounds.explore_round import checks_violated, violations, with_schedule
from harness.scenario.chaos_run import ChaosRun
from harness.scenario.file_format import ScenarioFileError
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec

Progress = Callable[[str], None]


RunRound = Callable[[ScenarioSpec], set[str]]  # runs a candidate; returns what it violated


def recorded_violations(round_file: Path) -> set[str]:
    """What the round violated when it ran, from the assertions.json and verdict.json
    beside its scenario.toml (empty when it has no record there)."""
    outcome = read_outcome(round_file.parent)
    checks = [] if outcome.assertions is None else outcome.assertions.checks
    found = checks_violated([(c.name, c.passed is not False) for c in checks])
    found |= {f"rule {r.kind}" for r in outcome.failed_rules()}
    return {name for name in found if name != "test assertions (pytest)"}


def shrink_round(spec: ScenarioSpec, target: set[str], run_round: RunRound, runs: int, needed: int,
                 progress: Progress, out_of_time: Callable[[], bool] = lambda: False,
                 ) -> tuple[ScenarioSpec, Shrinker]:
    """The smallest schedule found that still violates something in ``target``, as a
    scenario (id ``<round>-shrunk``) a user can commit, and the shrinker (its runs; its
    ``stopped_early`` when ``out_of_time`` ended the search first)."""
    if not target:
        raise ScenarioFileError(f"{spec.id}: nothing to shrink towards: the round violated nothing")

    def fails(entries: list[Mapping[str, Any]]) -> bool:
        number, run = shrinker.candidate, shrinker.run
        words = schedule_words(entries)
        candidate = dataclasses.replace(with_schedule(spec, entries), id=f"{spec.id}-c{number}-run{run}",
                                        title=f"{spec.id}, shrink candidate {number} (run {run}): {words}")
        hit = run_round(candidate) & target
        verdict = f"still fails ({', '.join(sorted(hit))})" if hit else "passes"
        progress(f"candidate {number}, run {run} of at most {runs} ({len(entries)} fault(s): {words}): "
                 f"{verdict}")
        return bool(hit)

    shrinker = Shrinker(fails, runs=runs, needed=needed, out_of_time=out_of_time)
    smallest = shrinker.shrink(list(spec.schedule))
    for flaky in shrinker.flaky:
        progress(f"flaky: candidate {flaky.candidate} ({schedule_words(flaky.entries)}) failed "
                 f"{flaky.failed} of {flaky.runs} runs, fewer than the {needed} needed: counted as passing")
    how = "shrunk as far as the budget allowed" if shrinker.stopped_early else "shrunk"
    shrunk = dataclasses.replace(
        with_schedule(spec, smallest), id=f"{spec.id}-shrunk",
        title=f"{spec.id} {how} to {len(smallest)} fault(s): {schedule_words(smallest)}")
    return shrunk, shrinker


def write_shrink_result(run_dir: Path, spec: ScenarioSpec, target: set[str], shrunk: ScenarioSpec | None,
                        shrinker: Shrinker | None, written: Path | None) -> Path:
    """shrink.json beside run.json: what the shrink did, which the report's index shows as
    its headline instead of the candidates' verdicts (harness.report.model.ShrinkResult).
    ``shrunk`` None: the round violated nothing, so nothing was shrunk."""
    flaky = [] if shrinker is None else [
        f"candidate {f.candidate} ({schedule_words(f.entries)}) failed {f.failed} of {f.runs} runs"
        for f in shrinker.flaky]
    data = {
        "round": spec.id, "target": sorted(target), "faults_before": len(spec.schedule),
        "faults_after": None if shrunk is None else len(shrunk.schedule),
        "shrunk_faults": [] if shrunk is None else [entry_words(e) for e in shrunk.schedule],
        "runs": 0 if shrinker is None else shrinker.rounds_run,
        "stopped_early": bool(shrinker is not None and shrinker.stopped_early),
        "written": None if written is None else str(written), "flaky": flaky,
    }
    path = run_dir / SHRINK_FILE
    write_json(path, data)
    return path


def chaos_round_runner(chaos: ChaosRun) -> RunRound:
    """Run a candidate as one record of ``chaos``; what it violated (an error counts as
    violating nothing: it says nothing about Kafka)."""
    def run_round(spec: ScenarioSpec) -> set[str]:
        found: set[str] = set()

        def body(cluster: Cluster) -> str | None:
            def start(s: ScenarioSpec) -> ScenarioRun:
                return ScenarioRun(cluster, s, chaos.directory, chaos.judge, scenario_id=s.id)

            run = run_spec(spec, start)
            found.update(violations(run))
            return None if run.passed else "\n".join(run.failures())

        chaos.run_case(f"shrink:{spec.id}", "shrink-candidate", body, scenario=spec.id)
        chaos.done_with(bool(spec.migration))
        return found
    return run_round
