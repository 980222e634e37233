"""What an exploration exercised: each fault kind against each target role, how often and
for how long, so a reviewer sees what a clean exploration did and did not try.

A target's role is what the schedule names, not what it resolved to: ``controller``,
``leader_of``, ``broker``, ``node`` (a ZooKeeper node), ``zone``...; a link selection's
role is its shape (``isolate:<role>``, or the link kind it selects: ``replication``,
``zk-session``, ``client``); a fault with neither is ``-``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faults.registry import fault_kinds


@dataclass(frozen=True)
class Cell:
    kind: str
    role: str
    entries: int
    seconds: float


def role_of(entry: Mapping[str, Any]) -> str:
    """The role an entry's target or link selection names."""
    if "target" in entry:
        return _target_role(entry["target"])
    links = entry.get("links")
    if isinstance(links, Mapping):
        if "isolate" in links:
            return f"isolate:{_target_role(links['isolate'])}"
        return str(links.get("kind") or f"{_target_role(links.get('from'))}->{_target_role(links.get('to'))}")
    return "-"


def _target_role(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, Mapping) and len(target) == 1:
        return str(next(iter(target)))
    return "?"


def coverage(schedules: Iterable[Sequence[Mapping[str, Any]]]) -> list[Cell]:
    """Every (kind, role) drawn, with how many entries and seconds in force, by kind then role."""
    totals: dict[tuple[str, str], list[float]] = {}
    for schedule in schedules:
        for entry in schedule:
            cell = totals.setdefault((str(entry["fault"]), role_of(entry)), [0, 0.0])
            cell[0] += 1
            cell[1] += float(entry.get("duration_s", 0.0))
    return [Cell(kind, role, int(n), round(s, 1)) for (kind, role), (n, s) in sorted(totals.items())]


def kinds_not_exercised(cells: Sequence[Cell], kinds: Sequence[str] | None = None) -> list[str]:
    """The fault kinds (every kind of the library when None) no entry exercised."""
    seen = {c.kind for c in cells}
    return [k for k in (kinds if kinds is not None else fault_kinds()) if k not in seen]


def table(cells: Sequence[Cell]) -> list[str]:
    """The coverage as aligned text lines: kind, role, entries, seconds in force."""
    width_kind = max([len("fault"), *(len(c.kind) for c in cells)])
    width_role = max([len("target"), *(len(c.role) for c in cells)])
    lines = [f"{'fault':{width_kind}}  {'target':{width_role}}  entries  seconds"]
    lines += [f"{c.kind:{width_kind}}  {c.role:{width_role}}  {c.entries:7d}  {c.seconds:7.1f}"
              for c in cells]
    return lines
