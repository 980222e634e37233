"""Where a run's results live: ``reports/<run id>/``, one folder a reviewer can zip.

::

    reports/<run id>/run.json                 run header: version, times, status, scenarios
    reports/<run id>/index.html               the report (harness.report)
    reports/<run id>/<scenario>/config.json   what ran: version, topology, settings, schedule
    reports/<run id>/<scenario>/schedule.json the fault schedule, replayable
    reports/<run id>/<scenario>/history/      the raw history (harness.history)
    reports/<run id>/<scenario>/verdict.json  the reconciliation's verdict
    reports/<run id>/<scenario>/cluster_events.json  leader/ISR/controller changes
    reports/<run id>/<scenario>/assertions.json      ZooKeeper checks and measured windows

``run.json`` says ``running`` until the run ends, so a report of an interrupted run is
never passed off as complete.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from harness.files import write_json
from harness.report.model import RunStatus

REPORTS_ENV = "KAFKA_CHAOS_REPORTS"


WORKERS_DIR = "workers"


def reports_root() -> Path:
    return Path(os.environ.get(REPORTS_ENV, "reports")).absolute()


class RunDirectory:
    """The folder of one run and its ``run.json`` header."""

    def __init__(self, run_id: str, kafka_version: str, root: Path | None = None,
                 header: str = "run.json") -> None:
        """``header`` is the file this process writes: ``run.json`` for the run, or a
        worker's own file under ``workers/`` when pytest-xdist runs several clusters side
        by side (the controller merges them into ``run.json``, see :func:`worker_headers`)."""
        self.run_id = run_id
        self.path = (root or reports_root()) / run_id
        self.header_path = self.path / header
        self.header: dict[str, Any] = {
            "run_id": run_id, "kafka_version": kafka_version, "started": time.time(),
            "finished": None, "status": RunStatus.RUNNING.value, "scenarios": [],
        }
        self.path.mkdir(parents=True, exist_ok=True)
        self.save()

    def save(self) -> None:
        write_json(self.header_path, self.header)

    def scenario_dir(self, scenario_id: str) -> Path:
        if scenario_id not in self.header["scenarios"]:
            self.header["scenarios"].append(scenario_id)
            self.save()
        path = self.path / scenario_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def finish(self, status: RunStatus = RunStatus.COMPLETE) -> None:
        self.header["status"] = status.value
        self.header["finished"] = time.time()
        self.save()


def worker_headers(run_path: Path) -> list[dict[str, Any]]:
    """The headers the pytest-xdist workers of a run wrote, in worker order; a file that
    cannot be read is skipped here, and its tests still come from the controller's own
    records."""
    headers = []
    for path in sorted((run_path / WORKERS_DIR).glob("*.json")):
        try:
            headers.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return headers
