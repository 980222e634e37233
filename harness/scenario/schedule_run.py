"""A scenario's fault schedule run beside its workload, and the check that it happened.

The schedule is a check of its own: a schedule that did not happen must not let the
scenario pass as if it had. Its conditions (``when``) read the run's one sampler, its
probes look at the moments its entries ran, and the moments are kept for the checks.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from harness.files import write_json
from harness.scenario.checks import Anchor, Moment
from harness.scenario.probes import Looker, ProbeTaker

if TYPE_CHECKING:
    from faults.schedule import Schedule, ScheduleRun
    from harness.scenario.runner import ScenarioRun

PROBE_GRACE_S = 30.0
"""How long past the schedule's end a probe set after its last action may still be taken."""
ABANDON_LOOK_S = 1.0
"""How often a schedule's wait looks whether it was abandoned (see :func:`wait_unless_abandoned`)."""


def run_schedule(run: ScenarioRun, schedule: Schedule, timeout_s: float | None = None,
                 abandon: threading.Event | None = None) -> bool:
    """Run a fault schedule beside the workload and wait for it to finish.

    The schedule is a check of its own: it passes only when every entry was injected
    and healed without error, within ``timeout_s`` past its latest planned end (every
    condition waited to its timeout) - a schedule that did not happen must not let the
    scenario pass as if it had. Conditions (``when``) read the run's one sampler.
    ``abandon``, once set, stops the wait: what the schedule waits for will not come
    (a migration whose walk failed has no later phase to anchor a fault to).
    """
    schedule.save(run.dir / "schedule.json")
    # Each `after` link waits behind a heal whose own length is not planned: a grace each.
    chained = sum(1 for e in schedule.entries if e.after is not None)
    with schedule.start(run.cluster, run.log, observe=run.cluster_state.latest) as running:
        probes = ProbeTaker(run.spec.probes, lambda: running.moments,
                            Looker(run.cluster, run.topic)).start()
        grace = None if timeout_s is None else schedule.longest_s + timeout_s * (1 + chained)
        finished = wait_unless_abandoned(running, grace, abandon)
        probes.finish(max((p.after_s for p in run.spec.probes), default=0.0) + PROBE_GRACE_S)
    run.probe_results.update(probes.results)
    write_json(run.dir / "probes.json", [r.to_dict() for r in probes.results.values()])
    run.moments.update({Anchor(entry, action): Moment(ts, mono)
                        for (entry, action), (ts, mono) in running.moments.items()})
    schedule.save(run.dir / "schedule.json", run.log)
    problems = list(running.errors)
    if not finished and abandon is not None and abandon.is_set():
        problems.insert(0, "the schedule was abandoned unfinished when the migration's walk failed")
    elif not finished:
        problems.insert(0, f"the schedule had not finished {timeout_s:.0f} s after its latest "
                           "planned end")
    injected = sum(1 for e in run.log if e.action == "inject" and e.ok)
    if injected < len(schedule.entries):
        problems.append(f"{injected} of {len(schedule.entries)} entries injected")
    return run.check(f"fault schedule ran: {len(schedule.entries)} entries injected and healed",
                     not problems, "; ".join(problems) or f"{injected} injections, all healed")


def wait_unless_abandoned(running: ScheduleRun, timeout_s: float | None,
                          abandon: threading.Event | None) -> bool:
    """``running.wait(timeout_s)``, looking every second whether ``abandon`` is set; True
    when the schedule finished."""
    if abandon is None:
        return running.wait(timeout_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        left = ABANDON_LOOK_S if deadline is None else min(ABANDON_LOOK_S, deadline - time.monotonic())
        if running.wait(max(left, 0.0)):
            return True
        if abandon.is_set() or (deadline is not None and time.monotonic() >= deadline):
            return False
