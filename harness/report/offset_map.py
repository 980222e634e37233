"""Where it was lost: per partition, offset against time.

The acknowledged sends are the grey background (offset by acknowledgement time); each
range of offsets a send-side kind struck is drawn over it in its fate's colour, from its
first to its last acknowledgement; the partition's leaders are bands along the top,
named with their epoch; fault windows are shaded. A reviewer sees, for instance, that
offsets 0-3773 were acknowledged under leader 0 and are gone after leader 1 took over.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from harness.history.verdict import Range
from harness.report.model import AckedOffsets, FaultWindow, LeaderSpan, Scenario
from harness.report.timeline import FATE_LAYERS, FAULT_COLOR, inline_svg, plain_text

ACKED_COLOR = "#AAAAAA"
LEADER_COLORS = ("#DDEEFF", "#FFEECC", "#DDFFDD", "#EEDDFF", "#FFDDDD")
MAX_MAPS = 6  # partitions drawn; the ranges are listed under Anomalies for all of them
PANEL_INCHES = 2.6
COLOURS = {name: (label, colour) for name, label, colour in FATE_LAYERS}

RASTER_DPI = 150  # the acknowledged dots' embedded image


def offset_map_svg(scenario: Scenario, t0: float) -> str | None:
    """One figure with a panel per partition holding a send-side finding (at most
    MAX_MAPS), or None when there is none or its data was not read."""
    v = scenario.verdict
    acked = scenario.acked_offsets or {}
    if v is None or not acked:
        return None
    places = [(p.topic, p.partition, p.ranges) for p in v.partitions if any(p.ranges.values())][:MAX_MAPS]
    if not places:
        return None
    spans = scenario.leader_spans or {}
    height = 1.2 + PANEL_INCHES * len(places)
    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": "kafka-chaos-report", "font.size": 9}
    ):
        fig = Figure(figsize=(10.0, height))
        fig.subplots_adjust(left=0.09, right=0.98, top=1 - 0.75 / height, bottom=0.55 / height, hspace=0.45)
        axes = fig.subplots(len(places), 1, squeeze=False)[:, 0]
        for ax, (topic, partition, ranges) in zip(axes, places, strict=True):
            at = (topic, partition)
            _panel(ax, f"{topic}-{partition}", ranges, acked.get(at), spans.get(at, []), scenario.faults, t0)
        shown = {k for _, _, ranges in places for k, rs in ranges.items() if rs}
        handles: list[Patch | Line2D] = [
            Line2D([], [], linestyle="none", marker=".", color=ACKED_COLOR, label="acknowledged")]
        handles += [Line2D([], [], color=COLOURS[k][1], linewidth=4, label=COLOURS[k][0])
                    for k in COLOURS if k in shown]  # fmt: skip
        handles.append(Patch(facecolor=FAULT_COLOR, alpha=0.35, label="fault in force"))
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.09, 1.0), ncol=6, frameon=False,
                   fontsize=8)  # fmt: skip
        buf = io.StringIO()
        fig.savefig(buf, format="svg", dpi=RASTER_DPI, metadata={"Date": None, "Creator": None})
    return inline_svg(buf.getvalue(), "Offset map: " + "; ".join(_told(t, n, r) for t, n, r in places))


def _told(topic: str, partition: int, ranges: Mapping[str, list[Range]]) -> str:
    counts = ", ".join(f"{k} {sum(r.count for r in rs)} offsets" for k, rs in ranges.items() if rs)
    return f"{topic}-{partition}: {counts}"


def _panel(ax: Axes, title: str, ranges: Mapping[str, list[Range]], acked: AckedOffsets | None,
           spans: Sequence[LeaderSpan], faults: Sequence[FaultWindow], t0: float) -> None:  # fmt: skip
    ax.set_title(plain_text(title), loc="left", fontsize=9)
    ax.set_ylabel("offset")
    ax.set_xlabel("seconds since t0 (acknowledged)")
    for f in faults:
        stop = (f.end if f.end is not None else f.start) - t0
        ax.axvspan(f.start - t0, stop, color=FAULT_COLOR, alpha=0.35, linewidth=0, zorder=0)
    band = ax.get_xaxis_transform()
    for i, span in enumerate(spans):
        colour = LEADER_COLORS[i % len(LEADER_COLORS)]
        ax.axvspan(span.start - t0, span.end - t0, ymin=0.94, ymax=1.0, color=colour, linewidth=0)
        who = "no leader" if span.leader < 0 else f"leader {span.leader}"
        epoch = "" if span.epoch is None else f" (epoch {span.epoch})"
        ax.text((span.start + span.end) / 2 - t0, 0.97, plain_text(who + epoch), transform=band, ha="center",
                va="center", fontsize=6, clip_on=True)  # fmt: skip
    if acked is not None:
        # Tens of thousands of dots as SVG shapes made a page of megabytes: drawn as one
        # embedded image instead (the ranges, bands and axes stay vector).
        ax.plot([t - t0 for t in acked.ack_ts], acked.offsets, linestyle="none", marker=".", markersize=1.5,
                color=ACKED_COLOR, zorder=1, rasterized=True)  # fmt: skip
    # The first fate of the layers' order on top, as a send's fate is the first kind that found it.
    order = [name for name, _, _ in FATE_LAYERS]
    for kind in sorted(ranges, key=lambda k: -order.index(k) if k in order else 0):
        colour = COLOURS.get(kind, ("", "#000000"))[1]
        for r in ranges[kind]:  # a range none of whose sends was acknowledged has no place in time
            if r.ack_from is not None and r.ack_to is not None:
                ax.plot([r.ack_from - t0, r.ack_to - t0], [r.first, r.last], color=colour, linewidth=4,
                        solid_capstyle="butt", zorder=3)  # fmt: skip
    ax.grid(color="#EEEEEE", linewidth=0.6)
    ax.set_axisbelow(True)
