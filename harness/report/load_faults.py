"""What a scenario's page shows of its faults: the inject and heal actions and the
windows between them, read from the history's faults table, else from what schedule.json
recorded (a scenario file's run), else placed from the plan and marked approximate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.history import FAULTS_SCHEMA, part_files
from harness.history.fields import as_list, as_num, as_obj, as_opt_str
from harness.report.model import FaultAction, FaultWindow, ScheduleEntry


def schedule_entry(raw: Mapping[str, Any]) -> ScheduleEntry:
    """One planned entry, as config.json and schedule.json spell it."""
    return ScheduleEntry(
        start_s=as_num(raw.get("start_s"), "schedule start_s"),
        duration_s=as_num(raw.get("duration_s", 0.0), "schedule duration_s"),
        fault=str(raw.get("fault", "?")),
        params={k: v for k, v in raw.items() if k not in ("start_s", "duration_s", "fault")},
    )


def schedule_file(data: Any, problems: list[str]) -> tuple[list[ScheduleEntry], list[dict[str, Any]]]:
    """schedule.json (faults/schedule.py ``Schedule.save``): planned entries and, after a
    run, the inject/heal rows it recorded (the history's faults-table layout)."""
    raw = as_obj(data, "schedule.json")
    entries = [schedule_entry(as_obj(e, "schedule entry"))
               for e in as_list(raw.get("entries", []), "entries")]
    rows = []
    for item in as_list(raw.get("recorded", []), "recorded"):
        r = as_obj(item, "recorded event")
        rows.append(
            {
                "ts": as_num(r.get("ts"), "recorded ts"),
                "fault": str(r.get("fault", "?")),
                "action": str(r.get("action", "?")),
                "targets": as_opt_str(r.get("targets")),
                "outcome": as_opt_str(r.get("outcome")),
            }
        )
    return entries, sorted(rows, key=lambda r: r["ts"])


def fault_rows(hdir: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The history's inject/heal rows in time order; unreadable is a problem and none."""
    try:
        parts = [pq.read_table(p, schema=FAULTS_SCHEMA) for p in part_files(hdir, "faults")]
    except (OSError, pa.ArrowException) as exc:
        problems.append(f"the history's faults table cannot be read: {exc}")
        return []
    return sorted((r for t in parts for r in t.to_pylist()), key=lambda r: r["ts"])


def fault_action(row: Mapping[str, Any]) -> FaultAction:
    outcome = row["outcome"]
    return FaultAction(
        ts=row["ts"],
        fault=row["fault"],
        action=row["action"],
        targets=_targets(row["targets"]),
        outcome="(no outcome recorded)" if outcome is None else str(outcome),
        ok=_ok(outcome),
    )


def fault_windows(rows: list[dict[str, Any]]) -> list[FaultWindow]:
    """Fault windows from inject/heal rows, paired first-in first-out per (fault,
    targets): the same fault may be injected again once healed. A window is ok only if
    its inject and its heal both were; their error texts travel with it."""
    open_: dict[tuple[str, str], list[dict[str, Any]]] = {}
    windows: list[FaultWindow] = []
    for row in rows:
        key = (row["fault"], _targets(row["targets"]))
        if row["action"] == "inject":
            open_.setdefault(key, []).append(row)
        elif row["action"] == "heal" and open_.get(key):
            start = open_[key].pop(0)
            windows.append(_window(key, start, row))
    for key, rest in open_.items():
        windows.extend(_window(key, r, None) for r in rest)
    return sorted(windows, key=lambda w: w.start)


def _window(key: tuple[str, str], inject: Mapping[str, Any], heal: Mapping[str, Any] | None) -> FaultWindow:
    done = [r for r in (inject, heal) if r is not None]
    errors = tuple(f"{r['action']}: {r['outcome']}" for r in done if not _ok(r["outcome"]))
    return FaultWindow(
        fault=key[0],
        targets=key[1],
        start=inject["ts"],
        end=None if heal is None else heal["ts"],
        ok=not errors,
        errors=errors,
    )


def _targets(text: str | None) -> str:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return str(text)
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _ok(outcome: str | None) -> bool:
    return outcome is not None and (outcome == "ok" or outcome.startswith("ok:"))


def planned_faults(schedule: list[ScheduleEntry], anchor: float | None) -> list[FaultWindow]:
    """Windows from the schedule, placed from the history's start: used only when no
    inject/heal events were recorded, and marked approximate."""
    if anchor is None:
        return []
    return [
        FaultWindow(
            fault=e.fault,
            targets=", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in e.params.items()),
            start=anchor + e.start_s,
            end=anchor + e.start_s + e.duration_s,
            ok=True,
            approximate=True,
        )
        for e in schedule
    ]
