"""How values read on the page: times, durations, counts, settings, links.

Kept apart from the templates so every page formats a timestamp or a setting the same
way, and so the formatting can be unit-tested without rendering HTML. All of these
return plain text; the template engine escapes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from harness.cluster.node_config import format_value
from harness.history.verdict import Range

NONE = "\u2014"  # an em dash: "not recorded", distinct from 0 or an empty string


def utc(ts: float | None) -> str:
    """Wall-clock time in UTC with milliseconds: the unit the cluster logs use."""
    if ts is None or not math.isfinite(ts):
        return NONE
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def rel(ts: float | None, t0: float | None) -> str:
    """Seconds from the timeline's t0, the axis a reviewer reads the figure by."""
    if ts is None or t0 is None:
        return NONE
    return f"{ts - t0:+.1f} s"


def offset_range(topic: str, partition: int, r: Range, t0: float | None) -> str:
    """One range of a kind's offsets as the page lists it, such as
    "orders-0 offsets 0-3773 (3 774), acknowledged +1.6 s to +25.9 s" (with an en dash)."""
    span = f"{r.first}\u2013{r.last} ({count(r.count)})"
    where = f"offset {r.first}" if r.first == r.last else f"offsets {span}"
    if r.ack_from is None or r.ack_to is None:
        return f"{topic}-{partition} {where}, none acknowledged"
    when = rel(r.ack_from, t0) if r.ack_from == r.ack_to else f"{rel(r.ack_from, t0)} to {rel(r.ack_to, t0)}"
    return f"{topic}-{partition} {where}, acknowledged {when}"


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return NONE
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def count(n: int | None) -> str:
    return NONE if n is None else f"{n:,}".replace(",", "\u2009")  # thin space: 1 000 000


def scalar(value: Any) -> str:
    """A setting as it would be written in a config file (true, not True; null as a dash)."""
    if value is None:
        return NONE
    if isinstance(value, bool | str | int | float):
        return format_value(value)  # the one way a setting is spelled, as the nodes were given it
    return json.dumps(value, sort_keys=True, default=str)


def is_scalar(value: Any) -> bool:
    return not isinstance(value, Mapping | list | tuple)


def record_columns(value: Any) -> list[str] | None:
    """Column names if ``value`` is a list of flat objects (brokers, producers), which read
    best as one table; None for anything else."""
    if not isinstance(value, list | tuple) or not value:
        return None
    if not all(isinstance(v, Mapping) for v in value):
        return None
    columns: list[str] = []
    for item in value:
        for key in item:
            if key not in columns:
                columns.append(str(key))
    return columns


def params(value: Mapping[str, Any]) -> str:
    """A fault's parameters on one line: target={"leader_of": ["orders", 0]} latency_ms=200."""
    return " ".join(f"{k}={scalar(v)}" for k, v in value.items()) or NONE


def href(*parts: str) -> str:
    """A relative link to a file in the run directory. Each part is percent-encoded so
    that ids with spaces, brackets or '#' still open the right file from disk."""
    return "/".join(quote(p, safe="/") for p in parts)


def rule(value: str) -> str:
    """A rule as a reviewer reads it: 0 -> "none allowed", 3 -> "at most 3"."""
    if value == "any":
        return "any count"
    if value == "at_least_one":
        return "at least one (must be caught)"
    if value == "0":
        return "none allowed"
    return f"at most {value}"


SOURCE_WORDS = {
    "default": "harness default",
    "scenario": "scenario",
    "harness": "harness",
    "topology": "topology",
    "release": "Kafka release",
    "broker": "broker setting",
}


def source(code: str) -> str:
    """Who set a value, in words: "harness default" (harness/workload/clients.py), "scenario", ..."""
    return SOURCE_WORDS.get(code, code)


def kind(name: str) -> str:
    return name.replace("_", " ")


def join_nonempty(items: Sequence[str], sep: str = ", ") -> str:
    return sep.join(i for i in items if i)
