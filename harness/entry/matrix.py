"""The local equivalent of the nightly matrix: the suite across Kafka versions, metadata
modes and clients, in turn.

Each column (a version in one metadata mode, on one client) runs as its own pytest
session (its own cluster, its own report under ``reports/<matrix id>-<version>-<mode>/``,
``-<client>`` added for a client other than librdkafka), reusing images already built;
then a summary page ``reports/<matrix id>/index.html`` shows a grid of scenario x column
whose cells link to each scenario's page in that column's report. A release that runs both
modes (3.9) gets a ZooKeeper and a KRaft column side by side, and ``--clients`` sets the
same scenarios on each client side by side.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader

from harness.cluster.versions import check_mode, release
from harness.report.comparison import figures
from harness.report.load import load_run, page_name
from harness.report.model import Outcome
from harness.scenario.rundir import reports_root
from harness.workload.client_settings import DEFAULT_CLIENT, ClientChoice

CSS = {Outcome.PASSED: "passed", Outcome.FAILED: "failed", Outcome.NOT_JUDGED: "not-judged"}


@dataclass(frozen=True)
class MatrixRun:
    """One column of the matrix: a Kafka release in one metadata mode, on one client."""

    version: str
    metadata: str
    client: ClientChoice = DEFAULT_CLIENT

    @property
    def label(self) -> str:
        label = f"Kafka {self.version} {MODE_NAMES.get(self.metadata, self.metadata)}"
        return label if self.client == DEFAULT_CLIENT else f"{label}, {self.client.label} client"

    def run_id(self, matrix_id: str) -> str:
        """The column's report folder name."""
        run_id = f"{matrix_id}-{self.version}-{self.metadata}"
        if self.client == DEFAULT_CLIENT:
            return run_id
        return f"{run_id}-{self.client.client}" + (f"-{self.client.version}" if self.client.version else "")


@dataclass(frozen=True)
class VersionResult:
    run: MatrixRun
    run_dir: Path
    exit_code: int


MODE_NAMES = {"zookeeper": "ZooKeeper", "kraft": "KRaft"}


def matrix_runs(versions: Sequence[str], modes: Sequence[str] | None,
                clients: Sequence[ClientChoice] = (DEFAULT_CLIENT,)) -> list[MatrixRun]:
    """Each version in each of ``modes`` (default: every mode the release runs) on each of
    ``clients``, so a release with both modes, or a scenario on two clients, shows them
    side by side. A mode a named release does not run is refused in one line before
    anything starts."""
    runs: list[MatrixRun] = []
    for version in versions:
        kafka = release(version)
        for mode in modes or kafka.metadata_modes:
            check_mode(kafka, mode)
            runs.extend(MatrixRun(version, mode, client) for client in clients)
    return runs


def run_versions(runs: Sequence[MatrixRun], matrix_id: str, pytest_args: Sequence[str],
                 progress: Callable[[str], None]) -> list[VersionResult]:
    """Set up and run the chaos suite once per column; never stops at a failing one."""
    results = []
    for run in runs:
        run_id = run.run_id(matrix_id)
        progress(f"{run.label}: images")
        subprocess.run([sys.executable, "-m", "harness.entry.cli", "setup", "--kafka-version", run.version],
                       check=True)
        progress(f"{run.label}: chaos suite (report {reports_root() / run_id})")
        started = time.monotonic()
        code = subprocess.call([sys.executable, "-m", "pytest", "-m", "chaos", "--kafka-version", run.version,
                                "--metadata", run.metadata, "--client", run.client.spelled,
                                "--run-id", run_id, *pytest_args])
        progress(f"{run.label}: pytest exit {code} after {time.monotonic() - started:.0f} s")
        results.append(VersionResult(run, reports_root() / run_id, code))
    return results


def _column_problem(outcome: Outcome, tests: dict[str, int], exit_code: int) -> str:
    """What the version's column header says when its run did not pass ("" if it did)."""
    if outcome is Outcome.PASSED and exit_code == 0:
        return ""
    parts = [f"run {outcome.value}"]
    bad = tests.get("failed", 0) + tests.get("error", 0)
    if bad:
        parts.append(f"{bad} test{'' if bad == 1 else 's'} failed or errored")
    if exit_code != 0:
        parts.append(f"pytest exit {exit_code}")
    return ", ".join(parts)


def write_summary(matrix_id: str, results: Sequence[VersionResult]) -> Path:
    """Render the scenario x version grid; a version with no report is shown as such."""
    out_dir = reports_root() / matrix_id
    out_dir.mkdir(parents=True, exist_ok=True)
    columns, outcomes, measured = [], {}, {}
    for result in results:
        problem = ""
        if not (result.run_dir / "run.json").exists():
            problem = "no report"
        else:
            run = load_run(result.run_dir)
            for scenario in run.scenarios:
                outcomes[(scenario.id, result.run)] = scenario.outcome
                measured[(scenario.id, result.run)] = figures(scenario)
            # The column's headline is the run's outcome, which also counts the fault,
            # fabric and cleanup tests that no scenario cell shows.
            problem = _column_problem(run.outcome, run.test_counts(), result.exit_code)
        columns.append({"label": result.run.label, "problem": problem,
                        "index_href": f"../{result.run_dir.name}/index.html"})
    scenario_ids = sorted({sid for sid, _ in outcomes})
    rows = []
    for sid in scenario_ids:
        cells = []
        for result in results:
            outcome = outcomes.get((sid, result.run))
            found = measured.get((sid, result.run))
            page = page_name(sid)
            cells.append({
                "figures": found.text() if found else "",
                "per_partition": found.per_partition() if found else "",
                "label": outcome.value if outcome else "not run",
                "css": CSS[outcome] if outcome else "not-judged",
                "href": f"../{result.run_dir.name}/{page}" if outcome and page else None,
            })
        rows.append({"scenario": sid, "cells": cells})
    env = Environment(loader=PackageLoader("harness.report", "templates"), autoescape=True)
    html = env.get_template("matrix.html.j2").render(
        matrix_id=matrix_id, columns=columns, rows=rows,
        generated=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    path = out_dir / "index.html"
    path.write_text(html, encoding="utf-8")
    return path
