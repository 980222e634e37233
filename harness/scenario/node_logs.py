"""Which stretches of its nodes' logs a scenario keeps for its page.

Each fault window as the page draws it (from the inject to the end of its heal), so a
reader of a failure sees the nodes' side of it; a scenario that faulted no node keeps its
whole span instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.cluster.log_excerpts import Stretch, write_excerpts

if TYPE_CHECKING:
    from pathlib import Path

    from faults.events import FaultEvent
    from harness.cluster.lifecycle import Cluster


def fault_stretches(events: list[FaultEvent], started: float, now: float) -> list[Stretch]:
    """Each fault window (to ``now`` when never healed); a scenario that faulted no node (a
    migration walked under load, a group whose members restart) keeps its whole span,
    from ``started`` to ``now``, so every page has its nodes' side of the story."""
    from harness.report.load_faults import fault_windows

    stretches = [Stretch(w.label if w.end is not None else f"{w.label} (never healed)", w.start,
                         w.end if w.end is not None else now)
                 for w in fault_windows([e.to_row() for e in events])]
    return stretches or [Stretch("the whole scenario (no fault of a node was recorded)", started, now)]


def keep_node_logs(cluster: Cluster, events: list[FaultEvent], started: float, now: float,
                   directory: Path) -> None:
    """Every node's log around each stretch, written under ``directory/node-logs``."""
    write_excerpts(cluster, fault_stretches(events, started, now), directory)
