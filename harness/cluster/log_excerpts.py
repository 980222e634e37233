"""Each node's log around each fault, kept for every scenario, passing ones too.

A failed test keeps whole logs (:mod:`harness.cluster.diagnostics`). A passing scenario
is read as well: a reviewer asks what the controller said while a zone was dark, or why a
heal took 30 s, and the containers are gone by the time the report is read. So at the
end of a scenario, for each fault window (from a little before its inject to a little
after its heal was done), every node's log lines of that stretch are copied, trimmed to
their head and tail when a window produced more than :data:`MAX_LINES_PER_WINDOW`, into
``<scenario>/node-logs/<node>.log``. A scenario that faulted no node keeps its whole span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster.fabric import TOXIPROXY_HOST

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster

NODE_LOGS = "node-logs"
BEFORE_S = 5.0  # what led up to the inject
AFTER_S = 15.0  # the recovery after the heal: re-registration, leader moves, ISR growth
MAX_LINES_PER_WINDOW = 400  # per node and window: half from its start, half from its end


@dataclass(frozen=True)
class Stretch:
    """One fault window, in wall-clock seconds; ``label`` heads its excerpt."""

    label: str
    start: float
    end: float


def trimmed(lines: Sequence[str], limit: int = MAX_LINES_PER_WINDOW) -> list[str]:
    """``lines`` if there are at most ``limit``, else its head and tail with the cut said."""
    if len(lines) <= limit:
        return list(lines)
    half = limit // 2
    cut = len(lines) - 2 * half
    return [*lines[:half], f"... {cut} lines cut ...", *lines[-half:]]


def merged(stretches: Sequence[Stretch]) -> list[Stretch]:
    """Stretches whose excerpts would overlap (margins included) joined into one, so no
    line is copied twice; labels joined in time order."""
    joined: list[Stretch] = []
    for stretch in sorted(stretches, key=lambda s: s.start):
        if joined and stretch.start - BEFORE_S <= joined[-1].end + AFTER_S:
            last = joined[-1]
            joined[-1] = Stretch(f"{last.label}; {stretch.label}", last.start, max(last.end, stretch.end))
        else:
            joined.append(stretch)
    return joined


def write_excerpts(cluster: Cluster, stretches: Sequence[Stretch], dest: Path) -> Path | None:
    """Write ``dest/node-logs/<node>.log`` for every node; None when there is no stretch.

    Never raises for one node's log: a vanished container gets a line saying so, and the
    other nodes' excerpts are still written."""
    if not stretches:
        return None
    folder = dest / NODE_LOGS
    folder.mkdir(parents=True, exist_ok=True)
    joined = merged(stretches)
    for node in [*cluster.topology.node_names, TOXIPROXY_HOST]:
        parts = []
        for stretch in joined:
            parts.append(f"=== {stretch.label}: {BEFORE_S:.0f} s before it to {AFTER_S:.0f} s after "
                         "its heal was done ===")
            try:
                raw = cluster.container(node).logs(timestamps=True, since=stretch.start - BEFORE_S,
                                                   until=stretch.end + AFTER_S)
                lines = raw.decode("utf-8", "replace").splitlines()
            except Exception as err:  # the container may be gone; the others still count
                lines = [f"(the log could not be read: {err})"]
            parts.extend(trimmed(lines) or ["(nothing logged)"])
        (folder / f"{node}.log").write_text("\n".join(parts) + "\n")
    return folder
