"""``kafka-chaos run`` and ``replay``: scenario files (or the whole chaos suite through
pytest) run and reported, and a recorded round run again exactly as it ran.

Also how a scenario's outcome is shown on the terminal, which only these commands print
scenario by scenario.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster.resources import new_run_id
from harness.entry.commands.session import chaos_session
from harness.entry.commands.terminal import progress
from harness.scenario.rundir import reports_root

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster
    from harness.scenario.chaos_run import ChaosRun
    from harness.scenario.file_format import ScenarioFile

# A failure's detail can be long (a liveness check lists every partition); the report has it all.
FAILURE_LINE_CHARS = 200


def cmd_run(args: argparse.Namespace) -> int:
    """Scenario files given: run them here. None given: the whole suite through pytest."""
    from harness.scenario.chaos_run import session_topology

    session_topology(args.topology, args.metadata, args.kafka_version)  # refused here, in one line
    run_id = args.run_id or new_run_id()
    if not args.files:
        selection = ["-k", args.select] if args.select else []
        mode = ["--metadata", args.metadata] if args.metadata else []
        command = [sys.executable, "-m", "pytest", "-m", "chaos", "--kafka-version", args.kafka_version,
                   "--topology", args.topology, *mode, "--client", args.client, "--run-id", run_id,
                   *selection, *args.pytest_args]
        progress("running the chaos suite: " + " ".join(command[2:]))
        status = subprocess.call(command)
        index = reports_root() / run_id / "index.html"
        if index.is_file():
            progress(f"report: {index}")
        return status
    return _run_files(args, run_id)


def cmd_replay(args: argparse.Namespace) -> int:
    """Run a recorded scenario again, exactly as it ran: a round folder (or any scenario
    folder of a report) names its scenario.toml, which ``run`` then runs."""
    from harness.scenario.file_format import ScenarioFileError

    path = Path(args.round)
    spec = path / "scenario.toml" if path.is_dir() else path
    if not spec.is_file():
        raise ScenarioFileError(f"replay: {path} is neither a scenario folder of a report "
                                "nor a scenario file")
    args.files = [str(spec)]
    return _run_files(args, args.run_id or new_run_id())


def _run_files(args: argparse.Namespace, run_id: str) -> int:
    """Scenario files in turn, each recorded like a test; exit = the report's outcome.

    Each file goes through :meth:`ChaosRun.run_case`, the lifecycle the pytest plugin
    gives a test: a healthy cluster before, diagnostics of a failure, health restored
    (or escalated) after. Files that share their ``[brokers]`` settings share a cluster:
    they run grouped by settings (groups in the order their first file was given), and a
    group with other settings gets a fresh cluster after the previous one is removed.
    """
    from faults.heal import heal_all
    from harness.scenario.chaos_run import ChaosRun
    from harness.scenario.client_preflight import prepare_java_clients
    from harness.scenario.file_format import (
        check_runnable,
        group_by_broker_settings,
        load_scenario_file,
    )
    from harness.scenario.runner import ScenarioRun, ScenarioSpec
    from harness.scenario.spec_runner import run_spec
    from harness.workload.client_settings import ClientChoice

    chaos = ChaosRun(run_id, args.kafka_version, args.topology, healer=heal_all, progress=progress,
                     metadata=args.metadata, client=ClientChoice.parse(args.client))
    scenarios = [on_client(load_scenario_file(path), chaos) for path in args.files]  # all validated up front
    for scenario in scenarios:  # a migration on a migrating cluster of its own
        run_topology = chaos.run_topology
        check_runnable(scenario, run_topology.for_scenario(scenario), run_topology.release_settings)
    prepare_java_clients(scenarios, args.kafka_version, progress)

    def body(scenario: ScenarioFile) -> Callable[[Cluster], str | None]:
        def run(cluster: Cluster) -> str | None:
            def start(spec: ScenarioSpec) -> ScenarioRun:
                return ScenarioRun(cluster, spec, chaos.directory, chaos.judge, scenario_id=spec.id)

            passed = run_spec(scenario.spec, start).passed
            return None if passed else failed_checks(chaos.directory.path / scenario.spec.id)
        return run

    def work() -> None:
        ordered = [(settings, f) for settings, group in group_by_broker_settings(scenarios) for f in group]
        for settings, scenario in ordered:
            chaos.use_cluster_for(bool(scenario.spec.migration), settings)
            progress(f"scenario {scenario.spec.id}: workload and fault schedule")
            record = chaos.run_case(f"file:{scenario.path}", "scenario-file", body(scenario),
                                    scenario=scenario.spec.id)
            chaos.done_with(bool(scenario.spec.migration))
            report_outcome(scenario.spec.id, record.outcome, record.error)

    result = chaos_session(chaos, work)
    return 0 if result is not None and result.succeeded else 1


def on_client(scenario: ScenarioFile, chaos: ChaosRun) -> ScenarioFile:
    """The file with its clients on the run's client; what that client cannot run is
    refused as the file's error, before any container starts."""
    from harness.scenario.file_format import ScenarioFile, ScenarioFileError

    try:
        return ScenarioFile(scenario.path, chaos.on_client(scenario.spec))
    except ValueError as err:
        raise ScenarioFileError(f"{scenario.path}: {err}") from err


def report_outcome(scenario_id: str, outcome: str, error: str) -> None:
    """A scenario's outcome on the terminal: every failed check and rule, one per line (the
    last alone would hide the others: a loss reported as only its truncation), or an
    error's last line (its message; the traceback is in the report)."""
    lines = error.splitlines()
    from harness.report.model import TestOutcome

    if outcome == TestOutcome.FAILED and len(lines) > 1:
        progress(f"scenario {scenario_id}: FAILED ({len(lines)} checks and rules):")
        for line in lines:
            progress("  " + (line if len(line) <= FAILURE_LINE_CHARS else line[:FAILURE_LINE_CHARS] + "..."))
        return
    progress(f"scenario {scenario_id}: {outcome.upper()}" + (f": {lines[-1]}" if lines else ""))


def failed_checks(scenario_dir: Path) -> str:
    """The failed checks and rules of a scenario, one per line, from what it recorded."""
    from harness.report.load import read_outcome

    return "\n".join(read_outcome(scenario_dir).failure_lines()) or "failed (see the scenario page)"
