"""Run a declared scenario: the one runner behind every Python spec and scenario file.

A :class:`~harness.scenario.runner.ScenarioSpec` says everything a scenario is - topic,
clients, schedule, expectations, checks - so running one is always the same
steps: warm up, run the schedule beside the workload, cool down, stop, heal, drain,
judge, and check the cluster's health. Python scenarios and scenario files differ only
in how they spell the spec.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.scenario.runner import ScenarioRun, ScenarioSpec

# How long past its planned end a schedule may take: a heal waits for a broker's return,
# up to a session timeout plus a JVM start on a loaded machine.
SCHEDULE_GRACE_S = 180.0
# How long the workload may take to reach its warm-up acknowledgements: a cold JVM's
# first fetch, with margin for a loaded machine.
WARMUP_TIMEOUT_S = 60.0


# The last check of every scenario, by the name a control run's ``must_fail`` gives it.
HEALTH_CHECK = "cluster fully healthy after healing"


def run_spec(spec: ScenarioSpec, start: Callable[[ScenarioSpec], ScenarioRun]) -> ScenarioRun:
    """Run ``spec`` on the run ``start`` opens; :attr:`ScenarioRun.passed` is the outcome.

    It passes only when everything that makes it a test held: every scheduled fault
    injected and healed without error, at least ``min_acked`` sends acknowledged, every
    bound and check, the verdict's rules, and full health after healing.
    """
    with start(spec) as run:
        schedule, _ = spec.for_topic(run.topic)
        schedule.check(run.cluster.topology)
        run.settle(spec.warmup_s)
        run.await_acked(spec.warmup_acked, WARMUP_TIMEOUT_S)
        if spec.migration:
            run.run_migration(spec.migration, schedule, SCHEDULE_GRACE_S)
        elif schedule.entries:
            run.run_schedule(schedule, timeout_s=SCHEDULE_GRACE_S)
        run.settle(spec.cooldown_s)
        acked = run.stop_workload().get("acked", 0)
        run.check(f"at least {spec.min_acked} sends acknowledged", acked >= spec.min_acked,
                  f"{acked} acknowledged")
        run.finish()
        health = run.cluster.health()
        run.check(HEALTH_CHECK, health.healthy,
                  "; ".join(health.problems) or "every broker registered, every ISR full")
        run.check_controls()
    return run
