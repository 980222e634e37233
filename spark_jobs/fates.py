"""Where the send-side findings sit: each lost, truncated, duplicated or wrongly kept
message placed at its send time and its position, for the report's timeline and ranges.

The main pass hands the driver one FATE row per message a send-side kind found (up to a
limit per task, ``sweep.FATES_PER_TASK``); the look-up of examples fetches their sends
too. From those, plain Python here: the sends of each time bucket by judged fate (one
fate per message, the first of :data:`PRECEDENCE` it has), and per partition and kind
the offsets as ranges of consecutive offsets. docs/HISTORY.md (fates) defines both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from harness.history.verdict import Range
from spark_jobs import sweep

PRECEDENCE = sweep.FATE_KINDS  # lost, truncated, duplicate, aborted_read
RANGES_PER_KIND = 50  # per partition and kind; the verdict says how many more there were


@dataclass(frozen=True)
class Located:
    """One message a send-side kind found: its send time and acknowledgement time, and
    the position it is placed at (its acknowledged offset if it has one, else where the
    kind found it on the final log; None: neither, such as a lost send whose
    acknowledgement carried no offset)."""

    kind: str
    key: tuple[int, int]  # (producer hash, seq): the message
    topic: str
    partition: int
    offset: int | None
    send_ts: float
    ack_ts: float | None
    outcome: str = "acked"  # the send's own, as the producer saw it


def bucket_fates(
    located: Iterable[Located], bucket_seconds: float
) -> dict[float, tuple[dict[str, int], dict[str, int]]]:
    """Bucket start (as the availability buckets compute it) -> (fate -> sends, outcome ->
    fated sends): each message once, under the first kind of PRECEDENCE that found it, and
    under its send's own outcome, so that a drawing can take the fated sends out of the
    outcome they were counted under."""
    kinds: dict[tuple[int, int], set[str]] = {}
    sends: dict[tuple[int, int], Located] = {}
    for f in located:
        kinds.setdefault(f.key, set()).add(f.kind)
        sends[f.key] = f
    out: dict[float, tuple[dict[str, int], dict[str, int]]] = {}
    for key, found in kinds.items():
        fate = next(k for k in PRECEDENCE if k in found)
        start = float(math.floor(sends[key].send_ts / bucket_seconds)) * bucket_seconds
        by_fate, by_outcome = out.setdefault(start, ({}, {}))
        by_fate[fate] = by_fate.get(fate, 0) + 1
        by_outcome[sends[key].outcome] = by_outcome.get(sends[key].outcome, 0) + 1
    return out


def offset_ranges(located: Iterable[Located]) -> dict[tuple[str, int], dict[str, tuple[list[Range], int]]]:
    """(topic, partition) -> kind -> (its first RANGES_PER_KIND ranges of consecutive
    offsets, in offset order; how many ranges there were in all)."""
    by_place: dict[tuple[str, int], dict[str, dict[int, float | None]]] = {}
    for f in located:
        if f.offset is None:
            continue
        offsets = by_place.setdefault((f.topic, f.partition), {}).setdefault(f.kind, {})
        if f.offset not in offsets or offsets[f.offset] is None:
            offsets[f.offset] = f.ack_ts
    out: dict[tuple[str, int], dict[str, tuple[list[Range], int]]] = {}
    for place, kinds in by_place.items():
        for kind, offsets in kinds.items():
            runs = _runs(offsets)
            out.setdefault(place, {})[kind] = (runs[:RANGES_PER_KIND], len(runs))
    return out


def _runs(offsets: dict[int, float | None]) -> list[Range]:
    """The offsets as ranges of consecutive ones, each with its acknowledgement times' span."""
    ordered = sorted(offsets)
    runs: list[Range] = []
    start = 0
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
            run = ordered[start:i]
            acks = [a for o in run if (a := offsets[o]) is not None]
            runs.append(Range(run[0], run[-1], len(run), min(acks, default=None), max(acks, default=None)))
            start = i
    return runs
