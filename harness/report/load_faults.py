"""What a scenario's page shows of its faults: the inject and heal actions and the
windows between them, read from the history's faults table, else from what schedule.json
recorded (a scenario file's run), else placed from the plan and marked approximate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.history import FAULTS_SCHEMA, part_files
from harness.history.fields import as_list, as_num, as_obj, as_opt_num, as_opt_str
from harness.report.model import FaultAction, FaultWindow, ScheduleEntry

# A window counts as longer than planned past both of these (a schedule's own lag is less).
OVERRUN_S = 2.0
OVERRUN_SHARE = 0.1


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
                "done_ts": as_opt_num(r.get("done_ts"), "recorded done_ts"),
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
        done=row.get("done_ts"),
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
    """The window from the inject's start to the end of its heal: when the heal's nodes
    were back (its ``done_ts``), which a heal that starts a node reaches well after it
    began."""
    done = [r for r in (inject, heal) if r is not None]
    errors = tuple(f"{r['action']}: {r['outcome']}" for r in done if not _ok(r["outcome"]))
    end = None if heal is None else max(heal["ts"], heal.get("done_ts") or heal["ts"])
    return FaultWindow(
        fault=key[0],
        targets=key[1],
        start=inject["ts"],
        end=end,
        ok=not errors,
        errors=errors,
        heal_began=None if heal is None else heal["ts"],
    )


def explain_overruns(windows: list[FaultWindow], planned: list[ScheduleEntry]) -> list[FaultWindow]:
    """Each recorded window that lasted longer than its planned entry, with why in words.

    Windows are paired with planned entries of the same kind in time order. A window
    grows for two reasons the history shows: its heal took time (the nodes it started
    came back in the cluster only later), or its heal began late because the schedule,
    which runs one action at a time, was still busy with another fault's inject or heal.
    """
    by_kind: dict[str, list[ScheduleEntry]] = {}
    for entry in planned:
        by_kind.setdefault(entry.fault, []).append(entry)
    taken: dict[str, int] = {}
    explained = []
    for w in windows:
        entries = by_kind.get(w.kind, [])
        index = taken.get(w.kind, 0)
        taken[w.kind] = index + 1
        if w.approximate or w.end is None or index >= len(entries):
            explained.append(w)
            continue
        explained.append(replace(w, overrun=_overrun(w, entries[index].duration_s, windows)))
    return explained


def _overrun(w: FaultWindow, planned_s: float, windows: list[FaultWindow]) -> str:
    assert w.end is not None
    lasted = w.end - w.start
    if lasted - planned_s < max(OVERRUN_S, OVERRUN_SHARE * planned_s):
        return ""
    began = w.heal_began if w.heal_began is not None else w.end
    reasons = []
    late = began - (w.start + planned_s)
    if late >= OVERRUN_S:
        busy = [o for o in windows if o is not w and _busy_at(o, w.start + planned_s)]
        why = (f" while the schedule, which runs one action at a time, was busy with {busy[0].label}"
               if busy else "")
        reasons.append(f"its heal began {late:.1f} s after its planned end{why}")
    if w.coming_back_s is not None:
        reasons.append(f"the heal took {w.coming_back_s:.1f} s, until what it restarted was back "
                       "in the cluster")
    return f"planned {planned_s:.0f} s, lasted {lasted:.1f} s, because " + " and ".join(reasons)


def _busy_at(w: FaultWindow, moment: float) -> bool:
    """Whether a slow heal of ``w`` was under way at ``moment``."""
    if w.coming_back_s is None or w.heal_began is None or w.end is None:
        return False
    return w.heal_began <= moment <= w.end


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
