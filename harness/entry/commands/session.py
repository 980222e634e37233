"""The lifecycle every ``kafka-chaos`` command that runs scenarios shares (``run``,
``replay``, ``explore``, ``shrink``), once its input is checked.

One place decides what surrounds a command's work (the engine, SIGTERM, the judge warming,
the cluster removed and the report written whatever happens), so no command forgets a step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.entry.commands.terminal import progress

if TYPE_CHECKING:
    from harness.report.render import Rendered
    from harness.scenario.chaos_run import ChaosRun


def chaos_session(chaos: ChaosRun, work: Callable[[], None]) -> Rendered | None:
    """A Docker engine, SIGTERM unwinding like Ctrl-C, the judge warming while the cluster
    starts, then ``work``; whatever happens the cluster is removed and the report written,
    marked incomplete when interrupted. Returns the report's index and outcome."""
    from harness.cluster.engine import ensure_engine
    from harness.report.model import RunStatus
    from harness.scenario.chaos_run import unwind_on_sigterm

    ensure_engine()
    unwind_on_sigterm()
    chaos.judge.warm_up()  # the Spark session starts and warms while the cluster does
    status = RunStatus.INTERRUPTED
    try:
        work()
        status = RunStatus.COMPLETE
    except KeyboardInterrupt:
        progress("interrupted: removing the cluster; the report will say the run is incomplete")
    finally:
        chaos.close()
        result = chaos.finish(status)
    if result is not None:
        progress(f"report: {result.index_html} ({result.headline.upper()})")
    return result
