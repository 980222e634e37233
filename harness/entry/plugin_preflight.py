"""What a session checks and starts once its chaos tests are chosen, before the first runs.

A chaos session must fail early and once, not test by test: scenario files that do not
check on the session's topology and release, or no Docker engine answering, stop it with
one error (exit 4) before any test - a run of skips is not a green run. Otherwise the
console's opening line goes out (how many chaos tests, and how long they should take),
the run's folder is made so the session has a report whatever happens next, and the
Spark judge warms up while the first cluster starts.
"""

from __future__ import annotations

import pytest

from harness.cluster.engine import ensure_engine
from harness.entry.console import opening_line, previous_durations
from harness.entry.plugin_state import LIVE_KEY, ORDER_KEY, chaos_run_of, needs_cluster
from harness.errors import EngineUnavailable
from harness.scenario.chaos_run import ChaosRun
from harness.scenario.rundir import reports_root


def pytest_collection_finish(session: pytest.Session) -> None:
    """Stop before any test when chaos tests were selected and the project's scenario
    files do not check, or no engine can be had."""
    chosen = [item for item in session.items if needs_cluster(item)]
    if not chosen or session.config.option.collectonly:
        return
    run = chaos_run_of(session.config)
    problems = _scenario_file_problems(session.config, run)
    if problems:
        pytest.exit("kafka-chaos: the project's scenario files do not check:\n" + "\n".join(problems),
                    returncode=pytest.ExitCode.USAGE_ERROR)
    run.expected = len(chosen)
    session.config.stash[ORDER_KEY] = {item.nodeid: i for i, item in enumerate(chosen, start=1)}
    live = session.config.stash[LIVE_KEY]
    live.attach()  # long waits shown as they happen
    live(opening_line([i.nodeid for i in chosen], previous_durations(reports_root(), run.run_id)))
    try:
        ensure_engine()
    except EngineUnavailable as err:
        pytest.exit(f"kafka-chaos: {len(chosen)} chaos test(s) selected, but {err}",
                    returncode=pytest.ExitCode.USAGE_ERROR)
    # From here on the session has a report, even if no test gets as far as a cluster.
    chaos_run_of(session.config).directory  # noqa: B018
    if any("scenario" in getattr(item, "fixturenames", ()) for item in chosen):
        chaos_run_of(session.config).judge.warm_up()  # while the first cluster starts


def _scenario_file_problems(config: pytest.Config, run: ChaosRun) -> list[str]:
    """``kafka-chaos check`` of the scenario files pyproject.toml registers, on the
    session's topology and Kafka release."""
    from harness.scenario.catalogue import scenario_folders
    from harness.scenario.check_files import check_paths

    folders = [f for f in scenario_folders(config.rootpath) if f.is_dir()]
    if not folders:
        return []
    return check_paths(folders, run.run_topology).problems
