"""How long a partition went without an acknowledgement: one measure, used by the
scenario bounds and checks (``unavailable_s``) and by the report's comparison figures."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.history.schema import OUTCOME_ACKED


def longest_gaps(rows: Iterable[Mapping[str, Any]], start: float, end: float) -> dict[int, float]:
    """Per partition that had any send, the longest stretch in [start, end] without an
    acknowledgement on it (all producers together).

    ``start`` and ``end`` count as boundaries, as in the suite's client log: a partition
    dark from the fault to the end of the workload shows the whole stretch, and one whose
    acknowledgements resumed shows the time from the fault to the first of them.
    """
    acks: dict[int, list[float]] = {}
    for row in rows:
        times = acks.setdefault(int(row["partition"]), [])
        if row["outcome"] == OUTCOME_ACKED and row.get("ack_ts") is not None:
            times.append(float(row["ack_ts"]))
    return {p: longest_gap(sorted(times), start, end) for p, times in sorted(acks.items())}


def longest_gap(times: Sequence[float], start: float, end: float) -> float:
    """The longest stretch in [start, end] between sorted ``times`` and the two ends."""
    inside = times[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]
    points = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(points))


def first_ack_after(rows: Iterable[Mapping[str, Any]], partition: int, moment: float) -> float | None:
    """Seconds from ``moment`` to the first acknowledgement on ``partition`` at or after it
    (all producers together); None when none came."""
    later = [float(row["ack_ts"]) for row in rows
             if int(row["partition"]) == partition and row["outcome"] == OUTCOME_ACKED
             and row.get("ack_ts") is not None and float(row["ack_ts"]) >= moment]
    return min(later) - moment if later else None
