"""The scenario timeline: send outcomes per second over fault windows and cluster changes.

One picture answers the reviewer's first question - did the outage line up with the
fault, and did leadership move when it should have. Send outcomes are bucketed by send
time, which hides a stall whose sends were acknowledged late (they count as acknowledged
in the second they were sent), so a second panel counts acknowledgements by the time
they arrived: a stall is a gap there. Stretches in which the metadata (ZooKeeper, or
KRaft's) could not be read are drawn as a band in their own lane, since no change can be
seen in them. It is drawn with
matplotlib into an SVG that is inlined into the page: no JavaScript, no network, and it
scales to the screen. The figure is built with the object API (no pyplot), so rendering does not touch
global state or need a display, and fixed SVG ids and no date keep the output
reproducible for the same input.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import matplotlib
from markupsafe import escape
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from harness.history import REBALANCE_ASSIGNED, REBALANCE_LOST, REBALANCE_REVOKED
from harness.history import kinds as registry
from harness.history.verdict import Bucket
from harness.report.model import (
    ZK_READABLE,
    ZK_UNREADABLE,
    AckBucket,
    ClientError,
    ClusterEvent,
    FaultWindow,
    GroupActivity,
    LatencyBucket,
    MigrationPhase,
    PartitionHealth,
    Scenario,
    TransactionSpan,
    ZkGap,
)

# Colour-blind-safe (Paul Tol's bright and vibrant schemes); each layer is also named, with
# its count, in the legend.
OUTCOME_COLORS = {"acked": "#4477AA", "failed": "#CC3311", "unknown": "#EE7733"}
# The send plot's layers, bottom up: each send once, by its judged fate (docs/HISTORY.md,
# fates) if it has one, else by its own outcome. "kept" is an acknowledged send no
# send-side kind found.
FATE_LAYERS = (
    ("kept", "acknowledged and kept", OUTCOME_COLORS["acked"]),
    (registry.kind("lost").name, "acknowledged and lost", "#EE3377"),
    (registry.kind("truncated").name, "truncated away", "#AA3377"),
    (registry.kind("duplicate").name, "duplicated", "#228833"),
    (registry.kind("aborted_read").name, "failed, yet on the log", "#222222"),
    ("failed", "failed", OUTCOME_COLORS["failed"]),
    ("unknown", "in doubt", OUTCOME_COLORS["unknown"]),
)
CLIP_FACTOR = 3.0  # a rate axis is cut at this many times its median when a burst dwarfs it
FAULT_COLOR = "#BBBBBB"
ACK_COLOR = OUTCOME_COLORS["acked"]
ZK_GAP_COLOR = "#CCBB44"
GAP_KINDS = (ZK_UNREADABLE, ZK_READABLE)  # drawn as bands, not markers

# event kind -> (lane, marker, colour, legend label); unknown kinds go to the "other" lane.
EVENT_STYLE = {
    "broker_down": ("brokers", "v", "#CC3311", "broker down"),
    "broker_up": ("brokers", "^", "#228833", "broker up"),
    "controller": ("controller", "D", "#AA3377", "controller change"),
    "leader": ("leader", "o", "#222222", "leader change"),
    "isr": ("ISR", "|", "#666666", "ISR change"),
}
EVENT_LANES = ("brokers", "controller", "leader", "ISR")
MAX_POINTS = 1500  # buckets beyond this are merged, so a long run still yields a small SVG
MAX_FAULT_ROWS = 8
MIGRATION_LANE = "migration"
ERRORS_LANE = "client errors"
ERROR_COLORS = ("#CC3311", "#EE7733", "#AA3377", "#0077BB", "#009988", "#555555")  # by frequency
LATENCY_LINES = (("p50", "#4477AA", "-"), ("p99", "#EE7733", "-"), ("max", "#CC3311", ":"))
# Alternating pale fills, so that neighbouring phases stay apart; a failed phase in red.
MIGRATION_COLORS = ("#DDEEFF", "#CCDDAA")
MIGRATION_FAILED_COLOR = "#EE99AA"
LABEL_CHARS = 40  # lane labels longer than this are cut at the end
MARKED_CHANGES = 60  # at most this many leader/controller changes drawn across the send plot


@dataclass(frozen=True)
class Series:
    """Dense, evenly spaced send counts: x is each bucket's left edge, in seconds from t0."""

    x: list[float]
    width: float
    acked: list[int]
    failed: list[int]
    unknown: list[int]
    fates: dict[str, list[int]] = field(default_factory=dict)  # fate -> sends per bucket
    fated: dict[str, list[int]] = field(default_factory=dict)  # outcome -> fated sends per bucket

    def layers(self) -> dict[str, list[int]]:
        """Sends per bucket for each of FATE_LAYERS: every send once, fated sends taken
        out of the outcome they were counted under."""
        zero = [0] * len(self.x)
        out = {
            "kept": _minus(self.acked, self.fated.get("acked", zero)),
            "failed": _minus(self.failed, self.fated.get("failed", zero)),
            "unknown": _minus(self.unknown, self.fated.get("unknown", zero)),
        }
        out.update({fate: self.fates.get(fate, zero) for fate, _, _ in FATE_LAYERS if fate not in out})
        return {name: out[name] for name, _, _ in FATE_LAYERS}


def _minus(a: list[int], b: list[int]) -> list[int]:
    return [max(x - y, 0) for x, y in zip(a, b, strict=True)]


@dataclass(frozen=True)
class AckSeries:
    """Dense acknowledgement counts by arrival time, on the same grid rules as Series."""

    x: list[float]
    width: float
    counts: list[int]

    @property
    def per_second(self) -> list[float]:
        return [c / self.width for c in self.counts]


def origin(scenario: Scenario) -> float | None:
    """t0 of the timeline: the history's start, else the earliest thing recorded."""
    if scenario.history and scenario.history.started is not None:
        return scenario.history.started
    times = [
        *(b.start for b in (scenario.verdict.buckets if scenario.verdict else [])),
        *(f.start for f in scenario.faults),
        *(e.ts for e in scenario.events),
    ]
    return min(times) if times else None


def series(buckets: Sequence[Bucket], width: float, t0: float) -> Series | None:
    """Fill the gaps between reported buckets with zeros (no sends is itself a signal) and
    merge neighbours when there are too many to draw."""
    if not buckets or width <= 0:
        return None
    first = min(b.start for b in buckets)
    last = max(b.start for b in buckets)
    n = round((last - first) / width) + 1
    merge = math.ceil(n / MAX_POINTS)
    size = math.ceil(n / merge)
    acked, failed, unknown = [0] * size, [0] * size, [0] * size
    fates: dict[str, list[int]] = {}
    fated: dict[str, list[int]] = {}
    for b in buckets:
        i = round((b.start - first) / width) // merge
        acked[i] += b.acked
        failed[i] += b.failed
        unknown[i] += b.unknown
        for into, counts in ((fates, b.fates), (fated, b.fated)):
            for name, n in counts.items():
                into.setdefault(name, [0] * size)[i] += n
    step = width * merge
    return Series([first - t0 + i * step for i in range(size)], step, acked, failed, unknown, fates, fated)


def ack_series(
    acks: Sequence[AckBucket], width: float, t0: float, span: tuple[float, float] | None = None
) -> AckSeries | None:
    """Acknowledgements per bucket of arrival time, zero-filled over the acks' own range
    and ``span`` (the send buckets' first and last start), so that a stretch of sends
    with no acknowledgement arriving reads as zero, not as missing."""
    if width <= 0 or (not acks and span is None):
        return None
    starts = [b.start for b in acks] + (list(span) if span else [])
    first, last = min(starts), max(starts)
    n = round((last - first) / width) + 1
    merge = math.ceil(n / MAX_POINTS)
    counts = [0] * math.ceil(n / merge)
    for b in acks:
        counts[round((b.start - first) / width) // merge] += b.count
    step = width * merge
    return AckSeries([first - t0 + i * step for i in range(len(counts))], step, counts)


def plain_text(text: str) -> str:
    """Matplotlib reads $...$ as mathematics; data must be shown literally."""
    return text.replace("$", r"\$")


def _short(label: str) -> str:
    """Lane labels stay short enough to leave the plot its width; the fault table below
    the figure has the full text. The start is kept: it says what the fault is and where
    it begins, and a cut in the middle left labels no one could read."""
    if len(label) <= LABEL_CHARS:
        return label
    return label[: LABEL_CHARS - 1].rstrip(" ,") + "\u2026"


def _fault_rows(faults: Sequence[FaultWindow]) -> list[str]:
    rows: list[str] = []
    for f in faults:
        label = f.label
        if label not in rows:
            rows.append(label)
    if len(rows) > MAX_FAULT_ROWS:
        return [*rows[: MAX_FAULT_ROWS - 1], "other faults"]
    return rows


def _fault_row(f: FaultWindow, rows: list[str]) -> str:
    return f.label if f.label in rows else "other faults"


def timeline_svg(scenario: Scenario, t0: float, end: float | None = None) -> str | None:
    """The inline <svg> element for one scenario, or None when nothing was recorded.

    ``end`` is where an unhealed fault's shading (or an unended metadata gap) stops
    (the history's end if known).
    """
    verdict = scenario.verdict
    data = series(verdict.buckets, verdict.bucket_seconds, t0) if verdict else None
    width = verdict.bucket_seconds if verdict else 1.0
    span = (verdict.buckets[0].start, verdict.buckets[-1].start) if verdict and verdict.buckets else None
    read = scenario.ack_buckets  # None: the sends table was not read, so no panel
    acks = None if read is None else ack_series(read, width, t0, span)
    faults, events, gaps = scenario.faults, scenario.events, scenario.zk_gaps
    store = scenario.metadata_store  # the gaps' lane: where the state could not be read
    drawn = (scenario.migration, scenario.latency, scenario.partition_health, scenario.client_errors,
             scenario.groups, scenario.transactions)
    if data is None and acks is None and not faults and not events and not any(drawn):
        return None
    span_end = _span_end(data, acks, faults, events, t0, end)
    span_end = max([span_end, *(p.end - t0 for p in scenario.migration)])
    fault_rows = _fault_rows(faults)
    marked = [e for e in events if e.kind not in GAP_KINDS]
    phases = scenario.migration
    lanes = [
        *([MIGRATION_LANE] if phases else []),
        *([store] if gaps else []),
        *EVENT_LANES,
        *(["other"] if any(e.kind not in EVENT_STYLE for e in marked) else []),
    ]
    errors = scenario.client_errors or []
    if errors:
        lanes.append(ERRORS_LANE)
    txns = scenario.transactions or []
    if txns:
        lanes.append(TXN_LANE)
    groups = scenario.groups or []
    for g in groups[:MAX_GROUPS]:
        lanes += [_members_lane(g.group), _commits_lane(g.group)]
    rows = [*fault_rows, *lanes]
    latency, health = scenario.latency or [], scenario.partition_health or []
    readable = any(h.under_replicated is not None for h in health)
    shown = {"acks": acks is not None, "latency": bool(latency), "health": readable,
             "lag": any(g.lag for g in groups)}
    panels = [name for name, drawn in shown.items() if drawn]

    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": "kafka-chaos-report", "font.size": 9}
    ):
        handles = (_legend(events, bool(faults), data, store if gaps else None) + _error_legend(errors)
                   + _group_legend(groups[:MAX_GROUPS]) + _txn_legend(txns))  # fmt: skip
        fig = _figure(rows, panels, len(handles))
        axes = _axes(fig, rows, panels)
        top, bottom = axes[0], axes[-1]
        panel = dict(zip(panels, axes[1:-1], strict=True))
        _draw_sends(
            top, data, "no send outcomes in the verdict" if verdict else "no verdict: sends not reconciled"
        )
        if acks is not None:
            _draw_acks(panel["acks"], acks)
        if "latency" in panel:
            _draw_latency(panel["latency"], latency, width, t0)
        if "health" in panel:
            _draw_health(panel["health"], health, t0, span_end)
        if "lag" in panel:
            _draw_lag(panel["lag"], groups, t0)
        for ax in axes[:-1]:
            _shade_faults(ax, faults, t0, span_end)
        _mark_changes(top, events, t0)
        _draw_lanes(bottom, rows, fault_rows, faults, marked, t0, span_end)
        _draw_gaps(bottom, rows.index(store) if gaps else 0, rows, gaps, t0, span_end)
        if phases:
            _draw_migration(bottom, rows.index(MIGRATION_LANE), rows, phases, t0)
        if errors:
            _draw_errors(bottom, rows.index(ERRORS_LANE), rows, errors, t0)
        for g in groups[:MAX_GROUPS]:
            _draw_group(bottom, rows, g, t0)
        if txns:
            _draw_transactions(bottom, len(rows) - 1 - rows.index(TXN_LANE), txns, t0, span_end)
        starts = [0.0, *(data.x[:1] if data else []), *(acks.x[:1] if acks else [])]
        starts += [f.start - t0 for f in faults[:1]] + [p.start - t0 for p in phases[:1]]
        left = min([*starts, *(e.ts - t0 for e in events[:1])])
        # A run that died at once has nothing to span; keep the axis one second wide.
        bottom.set_xlim(left, max(span_end, left + 1.0))
        bottom.set_xlabel("seconds since t0")
        top.legend(
            handles=handles,
            loc="lower left",
            bbox_to_anchor=(0, 1.0),
            ncol=LEGEND_COLUMNS,
            frameon=False,
            fontsize=8,
        )
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return inline_svg(buf.getvalue(), _summary(data, acks, faults, events, gaps, store))


def _axes(fig: Figure, rows: Sequence[str], panels: Sequence[str]) -> list[Axes]:
    """Sends on top, then ``panels`` (acknowledgements by arrival, latency, partition
    health: those with data), then the lanes."""
    heights = [PANEL_HEIGHTS["sends"], *(PANEL_HEIGHTS[p] for p in panels), 0.5 + 0.26 * len(rows)]
    axes = fig.subplots(len(heights), 1, sharex=True, gridspec_kw={"height_ratios": heights})
    return list(axes)


def _shade_faults(ax: Axes, faults: Sequence[FaultWindow], t0: float, span_end: float) -> None:
    for f in faults:
        # Behind the data (so its colours stay true), edges drawn over it.
        stop = (f.end if f.end is not None else span_end + t0) - t0
        ax.axvspan(f.start - t0, stop, color=FAULT_COLOR, alpha=0.35, linewidth=0, zorder=0)
        for edge in (f.start - t0, stop):
            ax.axvline(edge, color="#555555", linestyle="--", linewidth=0.7, zorder=3)


def _mark_changes(ax: Axes, events: Sequence[ClusterEvent], t0: float) -> None:
    changes = [e for e in events if e.kind in ("leader", "controller")]
    if len(changes) <= MARKED_CHANGES:
        for e in changes:
            style = EVENT_STYLE[e.kind]
            ax.axvline(e.ts - t0, color=style[2], linestyle=":", linewidth=0.8, alpha=0.7)


def _draw_acks(ax: Axes, acks: AckSeries) -> None:
    """Acknowledgements per second by arrival time: a stall is a flat zero here."""
    ax.set_ylabel("acks received /s")
    ax.grid(axis="y", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    xs = [*acks.x, acks.x[-1] + acks.width]
    rate = acks.per_second
    ys = [*rate, rate[-1]]
    ax.fill_between(xs, [0] * len(xs), ys, step="post", color=ACK_COLOR, alpha=0.35, linewidth=0)
    ax.step(xs, ys, where="post", color=ACK_COLOR, linewidth=1.0)
    _clip(ax, acks.x, rate, acks.width)
    ax.margins(x=0)


def _draw_latency(ax: Axes, buckets: Sequence[LatencyBucket], width: float, t0: float) -> None:
    """Produce latency quantiles per send bucket, on a log scale: a stall's seconds and a
    calm run's milliseconds both stay readable."""
    ax.set_ylabel("ack latency (s)")
    ax.set_yscale("log")
    ax.grid(axis="y", color="#DDDDDD", linewidth=0.6)
    xs = [b.start - t0 + width / 2 for b in buckets]
    for name, colour, style in LATENCY_LINES:
        ys = [max(getattr(b, name), 1e-4) for b in buckets]
        ax.plot(xs, ys, color=colour, linestyle=style, linewidth=1.0, label=name)
    ax.legend(loc="upper left", fontsize=7, frameon=False, ncol=3)
    ax.margins(x=0)


def _draw_health(ax: Axes, samples: Sequence[PartitionHealth], t0: float, span_end: float) -> None:
    """Under-replicated and offline partitions, each snapshot holding until the next; an
    unreadable stretch is left out (its lane below shows it)."""
    ax.set_ylabel("partitions")
    ax.grid(axis="y", color="#DDDDDD", linewidth=0.6)
    xs = [h.ts - t0 for h in samples] + [span_end]
    for attr, colour, label in (("under_replicated", "#EE7733", "under-replicated"),
                                ("offline", "#CC3311", "offline")):  # fmt: skip
        ys = [getattr(h, attr) for h in samples]
        values = [float("nan") if y is None else float(y) for y in [*ys, ys[-1]]]
        ax.step(xs, values, where="post", color=colour, linewidth=1.2, label=label)
    top = max((v for h in samples for v in (h.under_replicated, h.offline) if v is not None), default=0)
    ax.set_ylim(-0.2, max(top, 1) * 1.2)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper left", fontsize=7, frameon=False, ncol=2)
    ax.margins(x=0)


def _error_codes(errors: Sequence[ClientError]) -> list[tuple[str, int]]:
    """The error codes by how many failed attempts had each, most first."""
    counts: dict[str, int] = {}
    for e in errors:
        counts[e.error] = counts.get(e.error, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _draw_errors(ax: Axes, lane: int, rows: list[str], errors: Sequence[ClientError], t0: float) -> None:
    """Each failed produce attempt as a mark on its lane, coloured by its error code (the
    less frequent codes beyond the palette share the last colour)."""
    row = len(rows) - 1 - lane
    codes = [code for code, _ in _error_codes(errors)]
    for i, code in enumerate(codes):
        xs = [e.ts - t0 for e in errors if e.error == code]
        colour = ERROR_COLORS[min(i, len(ERROR_COLORS) - 1)]
        ax.plot(xs, [row] * len(xs), linestyle="none", marker="x", color=colour, markersize=5)


def _error_legend(errors: Sequence[ClientError]) -> list[Patch | Line2D]:
    codes = _error_codes(errors)[: len(ERROR_COLORS)]
    return [Line2D([], [], linestyle="none", marker="x", color=colour, label=f"{code} ({n:,})")
            for (code, n), colour in zip(codes, ERROR_COLORS, strict=False)]


def _members_lane(group: str) -> str:
    return f"group {group}: members"


def _commits_lane(group: str) -> str:
    return f"group {group}: commits"


def _draw_group(ax: Axes, rows: list[str], g: GroupActivity, t0: float) -> None:
    """A group's members' rebalance callbacks on one lane (assigned, revoked, lost), its
    commits on the next (a failed one as a red cross), and the positions it read again
    after a rebalance as dots on the commits lane: what at-least-once costs."""
    members = len(rows) - 1 - rows.index(_members_lane(g.group))
    commits = len(rows) - 1 - rows.index(_commits_lane(g.group))
    for event, (marker, colour) in CHANGE_STYLE.items():
        xs = [c.ts - t0 for c in g.changes if c.event == event]
        ax.plot(xs, [members] * len(xs), linestyle="none", marker=marker, color=colour, markersize=5)
    for ok, marker, colour, size in ((True, "|", "#222222", 8), (False, "x", "#CC3311", 5)):
        xs = [ts - t0 for ts, done in g.commits if done is ok]
        ax.plot(xs, [commits] * len(xs), linestyle="none", marker=marker, color=colour, markersize=size)
    reread = [ts - t0 for ts in g.reread_ts]
    ax.plot(reread, [commits + 0.25] * len(reread), linestyle="none", marker=".", color=REREAD_COLOR,
            markersize=3)  # fmt: skip


def _group_legend(groups: Sequence[GroupActivity]) -> list[Patch | Line2D]:
    if not groups:
        return []
    handles: list[Patch | Line2D] = [
        Line2D([], [], linestyle="none", marker=marker, color=colour, label=CHANGE_LABELS[event])
        for event, (marker, colour) in CHANGE_STYLE.items()
    ]
    handles.append(Line2D([], [], linestyle="none", marker="|", color="#222222", label="commit"))
    if any(not ok for g in groups for _, ok in g.commits):
        handles.append(Line2D([], [], linestyle="none", marker="x", color="#CC3311", label="commit failed"))
    rereads = sum(g.rereads for g in groups)
    handles.append(Line2D([], [], linestyle="none", marker=".", color=REREAD_COLOR,
                          label=f"read again after a rebalance ({rereads:,})"))  # fmt: skip
    return handles


def _draw_lag(ax: Axes, groups: Sequence[GroupActivity], t0: float) -> None:
    """Each group's lag at its commits: acknowledged records it had not committed."""
    ax.set_ylabel("group lag")
    ax.grid(axis="y", color="#DDDDDD", linewidth=0.6)
    for i, g in enumerate(groups):
        if g.lag:
            ax.step([ts - t0 for ts, _ in g.lag], [n for _, n in g.lag], where="post", linewidth=1.0,
                    color=ERROR_COLORS[(i + 3) % len(ERROR_COLORS)], label=plain_text(g.group))  # fmt: skip
    _clip(ax, [ts - t0 for g in groups for ts, _ in g.lag], [float(n) for g in groups for _, n in g.lag], 0.0)
    ax.legend(loc="upper left", fontsize=7, frameon=False, ncol=4)
    ax.margins(x=0)


def _draw_transactions(ax: Axes, row: int, txns: Sequence[TransactionSpan], t0: float,
                       span_end: float) -> None:  # fmt: skip
    """Each transaction as a bar from its begin to its end in its outcome's colour (one
    that never ended runs to the end): a stretch without a committed bar is a gap in
    what readers could be given."""
    def bar(t: TransactionSpan) -> tuple[float, float]:
        end = t.end if t.end is not None else span_end + t0
        return t.begin - t0, max(end - t.begin, span_end / 1000)

    for outcome, colour in TXN_COLORS.items():
        bars = [bar(t) for t in txns if t.outcome == outcome]
        if bars:
            ax.broken_barh(bars, (row - 0.3, 0.6), facecolors=colour, linewidth=0)


def _txn_legend(txns: Sequence[TransactionSpan]) -> list[Patch | Line2D]:
    counts = {o: sum(t.outcome == o for t in txns) for o in TXN_COLORS}
    return [Patch(color=colour, label=f"transaction {o} ({counts[o]:,})")
            for o, colour in TXN_COLORS.items() if counts[o]]  # fmt: skip


def _draw_gaps(ax: Axes, lane: int, rows: list[str], gaps: Sequence[ZkGap], t0: float,
               span_end: float) -> None:
    if not gaps:
        return
    row = len(rows) - 1 - lane
    for g in gaps:
        stop = (g.end if g.end is not None else span_end + t0) - t0
        ax.broken_barh(
            [(g.start - t0, max(stop - (g.start - t0), span_end / 400))],
            (row - 0.35, 0.7),
            facecolors=ZK_GAP_COLOR,
            edgecolors="#555555",
            linewidth=0.6,
            hatch="xx",
        )


def _draw_migration(ax: Axes, lane: int, rows: list[str], phases: Sequence[MigrationPhase],
                    t0: float) -> None:
    """Each phase as a bar of its own length, named inside it; a failed one in red."""
    row = len(rows) - 1 - lane
    for i, p in enumerate(phases):
        start, length = p.start - t0, max(p.end - p.start, 0.05)
        colour = MIGRATION_COLORS[i % len(MIGRATION_COLORS)] if p.completed else MIGRATION_FAILED_COLOR
        ax.broken_barh([(start, length)], (row - 0.35, 0.7), facecolors=colour, edgecolors="#555555",
                       linewidth=0.6)
        ax.text(start + length / 2, row, p.phase.replace("_", " "), ha="center", va="center", fontsize=6,
                clip_on=True)


PANEL_HEIGHTS = {"sends": 3.0, "acks": 1.4, "latency": 1.4, "health": 1.1, "lag": 1.2}
MAX_GROUPS = 4  # groups given lanes; beyond them the lag panel still has every one
CHANGE_STYLE = {REBALANCE_ASSIGNED: ("^", "#228833"), REBALANCE_REVOKED: ("v", "#EE7733"),
                REBALANCE_LOST: ("X", "#CC3311")}
# Named for the member, not the record: a partition "lost" by a member is not a lost record.
CHANGE_LABELS = {REBALANCE_ASSIGNED: "partitions assigned", REBALANCE_REVOKED: "partitions revoked",
                 REBALANCE_LOST: "partitions lost by a member"}
REREAD_COLOR = "#AA3377"
TXN_LANE = "transactions"
TXN_COLORS = {"committed": "#228833", "aborted": "#EE7733", "unknown": "#CC3311"}


LEGEND_COLUMNS = 3


def _figure(rows: Sequence[str], panels: Sequence[str] = (), legend_entries: int = 0) -> Figure:
    """A figure with margins fixed in inches from the longest lane label and the
    legend's rows above the plots.

    Cheaper than matplotlib's constrained layout (which draws the figure twice) and
    just as tidy here, where the only variable-width text is the lane labels.
    """
    width, bottom = 10.0, 0.5
    top = 0.25 + 0.17 * max(math.ceil(legend_entries / LEGEND_COLUMNS), 2)
    height = 2.7 + top + 0.24 * len(rows) + 1.0 * len(panels)
    left = 0.45 + 0.062 * max((len(_short(r)) for r in rows), default=8)
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(
        left=left / width, right=1 - 0.15 / width, top=1 - top / height, bottom=bottom / height, hspace=0.12
    )
    return fig


def _span_end(
    data: Series | None,
    acks: AckSeries | None,
    faults: Sequence[FaultWindow],
    events: Sequence[ClusterEvent],
    t0: float,
    end: float | None,
) -> float:
    ends = [0.0]
    for s in (data, acks):
        if s:
            ends.append(s.x[-1] + s.width)
    ends += [(f.end if f.end is not None else f.start) - t0 for f in faults]
    ends += [e.ts - t0 for e in events]
    if end is not None:
        ends.append(end - t0)
    return max(ends) or 1.0


def _draw_sends(ax: Axes, data: Series | None, empty: str) -> None:
    ax.set_ylabel("sends per bucket")
    ax.grid(axis="y", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    if data is None:
        ax.text(
            0.5,
            0.5,
            empty,
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="#555555",
        )
        ax.set_yticks([])
        return
    # Step-filled stacked areas: one path per layer whatever the run length, read like bars.
    xs = [*data.x, data.x[-1] + data.width]
    low = [0] * len(xs)
    colours = {name: colour for name, _, colour in FATE_LAYERS}
    for name, values in data.layers().items():
        if not any(values):
            continue
        high = [lo + v for lo, v in zip(low, [*values, values[-1]], strict=True)]
        ax.fill_between(xs, low, high, step="post", color=colours[name], linewidth=0)
        low = high
    _clip(ax, xs[:-1], low[:-1], data.width)
    ax.margins(x=0)


def clip_at(values: Sequence[float]) -> float | None:
    """Where a rate axis is cut so that a burst does not flatten the rest: 3 x the median
    of the nonzero values, when the peak is above twice that; else None. The median, not
    a high quantile: a run whose acknowledgements all arrive in a few late bursts has
    few nonzero buckets, and a high quantile of those is the burst itself."""
    nonzero = sorted(v for v in values if v > 0)
    if len(nonzero) < 10:
        return None
    cap = CLIP_FACTOR * nonzero[len(nonzero) // 2]
    return cap if nonzero[-1] > 2 * cap else None


def _clip(ax: Axes, xs: Sequence[float], tops: Sequence[float], width: float) -> None:
    """Set the y range; cut it (marked, with the peak named) when a burst would flatten it."""
    cap = clip_at(tops)
    if cap is None:
        ax.set_ylim(0, max(max(tops, default=0), 1) * 1.08)
        return
    ax.set_ylim(0, cap * 1.08)
    over = [(x + width / 2, t) for x, t in zip(xs, tops, strict=True) if t > cap]
    ax.plot([x for x, _ in over], [cap * 1.04] * len(over), linestyle="none", marker="^", color="#222222",
            markersize=4, clip_on=False)  # fmt: skip
    ax.text(1.0, 1.0, f"axis cut at {cap:,.0f}; peak {max(t for _, t in over):,.0f} (\u25b2)",
            transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="#222222")  # fmt: skip


def _draw_lanes(
    ax: Axes,
    rows: list[str],
    fault_rows: list[str],
    faults: Sequence[FaultWindow],
    events: Sequence[ClusterEvent],
    t0: float,
    span_end: float,
) -> None:
    y = {name: len(rows) - 1 - i for i, name in enumerate(rows)}
    for f in faults:
        row = y[_fault_row(f, fault_rows)]
        stop = (f.end if f.end is not None else span_end + t0) - t0
        ax.broken_barh(
            [(f.start - t0, max(stop - (f.start - t0), span_end / 400))],
            (row - 0.35, 0.7),
            facecolors=FAULT_COLOR if f.ok else "#EE99AA",
            edgecolors="#555555",
            linewidth=0.6,
            hatch="//" if f.approximate else None,
        )
    by_lane: dict[tuple[str, str], list[float]] = {}
    for e in events:
        lane, *_ = EVENT_STYLE.get(e.kind, ("other", "x", "#000000", e.kind))
        by_lane.setdefault((lane, e.kind), []).append(e.ts - t0)
    for (lane, kind), xs in by_lane.items():
        _, marker, color, _ = EVENT_STYLE.get(kind, ("other", "x", "#000000", kind))
        size = 11 if marker == "|" else 6
        ax.plot(
            xs,
            [y[lane]] * len(xs),
            linestyle="none",
            marker=marker,
            color=color,
            markersize=size,
            markeredgewidth=1.5 if marker == "|" else 1.0,
        )
    ax.set_yticks([y[r] for r in rows], [plain_text(_short(r)) for r in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.grid(axis="x", color="#EEEEEE", linewidth=0.6)
    ax.set_axisbelow(True)
    if fault_rows:
        ax.axhline(len(rows) - len(fault_rows) - 0.5, color="#999999", linewidth=0.5)


def _legend(
    events: Sequence[ClusterEvent], have_faults: bool, data: Series | None, gaps_of: str | None = None
) -> list[Patch | Line2D]:
    """``gaps_of``: the metadata store that went unreadable (None: it never did). The
    send layers are named with their sends' count; an empty one is left out, except the
    kept sends."""
    handles: list[Patch | Line2D] = []
    if data is not None:
        totals = {name: sum(values) for name, values in data.layers().items()}
        handles += [Patch(color=colour, label=f"{label} ({totals[name]:,})")
                    for name, label, colour in FATE_LAYERS if totals[name] or name == "kept"]  # fmt: skip
    if have_faults:
        handles.append(Patch(facecolor=FAULT_COLOR, edgecolor="#555555", label="fault in force"))
    if gaps_of:
        handles.append(
            Patch(facecolor=ZK_GAP_COLOR, edgecolor="#555555", hatch="xx", label=f"{gaps_of} unreadable")
        )
    kinds = {e.kind for e in events}
    for kind, (_, marker, color, label) in EVENT_STYLE.items():
        if kind in kinds:
            handles.append(Line2D([], [], linestyle="none", marker=marker, color=color, label=label))
    return handles


def _summary(
    data: Series | None,
    acks: AckSeries | None,
    faults: Sequence[FaultWindow],
    events: Sequence[ClusterEvent],
    gaps: Sequence[ZkGap] = (),
    store: str = "ZooKeeper",
) -> str:
    """The figure in one sentence, for screen readers and for a quick check without looking."""
    parts = []
    if data:
        parts.append(
            f"{sum(data.acked)} sends acknowledged, {sum(data.failed)} failed, {sum(data.unknown)} in doubt"
        )
        totals: dict[str, int] = {name: sum(values) for name, values in data.layers().items()}
        fated = [f"{totals[name]} {label}" for name, label, _ in FATE_LAYERS
                 if name not in ("kept", "failed", "unknown") and totals[name]]  # fmt: skip
        if fated:
            parts.append("of them " + ", ".join(fated))
    if acks:
        arrived = sum(c > 0 for c in acks.counts)
        parts.append(f"acknowledgements arrived in {arrived} of {len(acks.counts)} buckets")
    parts.append(f"{len(faults)} fault window(s)")
    parts.append(f"{sum(e.kind not in GAP_KINDS for e in events)} cluster change(s)")
    if gaps:
        parts.append(f"{len(gaps)} stretch(es) with {store} unreadable")
    return "Timeline: " + "; ".join(parts)


def inline_svg(svg: str, label: str) -> str:
    """Strip the XML prolog and DOCTYPE (invalid inside HTML) and make the figure scale."""
    start = svg.index("<svg")
    body = svg[start:]
    return body.replace("<svg ", f'<svg class="timeline" role="img" aria-label="{escape(label)}" ', 1)
