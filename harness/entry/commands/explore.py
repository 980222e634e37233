"""``kafka-chaos explore`` and ``shrink``: rounds of random fault schedules against a
safety configuration, and a failing round cut down to the smallest schedule that still
fails.

The explorer's two commands: what they draw, run and write is ``harness.rounds``; here
is how the command line drives it and what it says on the terminal.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from harness.cluster.resources import new_run_id
from harness.entry.cluster_options import cluster_flags
from harness.entry.commands.session import chaos_session
from harness.entry.commands.terminal import progress


def cmd_explore(args: argparse.Namespace) -> int:
    """Rounds of random fault schedules against a safety configuration; exit 1 when any
    round violated what the configuration promises (or failed to run)."""
    from faults.heal import heal_all
    from harness.rounds.explore import (
        ExploreOptions,
        explore,
        load_base,
        space_for,
        summary_lines,
        write_exploration,
    )
    from harness.scenario.chaos_run import ChaosRun

    kinds = tuple(k.strip() for k in args.faults.split(",") if k.strip()) if args.faults else ()
    options = ExploreOptions(args.seed, args.rounds, args.minutes if args.rounds is None else None, kinds,
                             args.max_concurrent, args.until_violation, args.during)
    chaos = ChaosRun(args.run_id or new_run_id(), args.kafka_version, args.topology, healer=heal_all,
                     progress=progress, metadata=args.metadata)
    base = load_base(args.file, chaos, options.during)
    space_for(base, chaos, options)  # refuse an impossible space before any container starts

    def work() -> None:
        exploration = explore(chaos, base, options, progress)
        progress(f"rounds and coverage: {write_exploration(exploration, chaos.directory.path)}")
        for line in summary_lines(exploration, chaos.directory.path, cluster_flags(args)):
            progress(line)

    result = chaos_session(chaos, work)
    return 0 if result is not None and result.succeeded else 1


def cmd_shrink(args: argparse.Namespace) -> int:
    """Cut a failing round down to the smallest schedule that still violates what it
    violated, rerunning each candidate up to --runs times; write it as a scenario file."""
    import tomli_w

    from faults.heal import heal_all
    from harness.explore.shrink import majority, schedule_words
    from harness.rounds.shrink_round import (
        chaos_round_runner,
        recorded_violations,
        shrink_round,
        write_shrink_result,
    )
    from harness.scenario.chaos_run import ChaosRun
    from harness.scenario.file_format import ScenarioFileError, check_runnable, load_scenario_file

    if args.needed is None:
        args.needed = majority(args.runs)
    if not 1 <= args.needed <= args.runs:
        raise ScenarioFileError(f"shrink: --needed must be between 1 and --runs ({args.runs})")
    path = Path(args.file)
    scenario = load_scenario_file(path)
    chaos = ChaosRun(args.run_id or new_run_id(), args.kafka_version, args.topology, healer=heal_all,
                     progress=progress, metadata=args.metadata)
    # A round explored during a migration: each candidate on a migrating cluster of its own.
    migrates = bool(scenario.spec.migration)
    check_runnable(scenario, chaos.run_topology.for_scenario(scenario), chaos.run_topology.release_settings)
    out = Path(args.out) if args.out else path.with_name(f"{scenario.spec.id}-shrunk.toml")
    written: list[Path] = []
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else math.inf

    def work() -> None:
        chaos.use_cluster_for(migrates, scenario.spec.broker_settings)
        run_round = chaos_round_runner(chaos)
        target = recorded_violations(path)
        if not target:
            progress(f"no recorded violation beside {path}: running the round once to see what it breaks")
            target = run_round(scenario.spec)
        if not target:
            progress("the round violated nothing: nothing to shrink")
            write_shrink_result(chaos.directory.path, scenario.spec, target, None, None, None)
            return
        progress(f"shrinking towards: {', '.join(sorted(target))}")
        shrunk, shrinker = shrink_round(scenario.spec, target, run_round, args.runs, args.needed, progress,
                                        out_of_time=lambda: time.monotonic() > deadline)
        budget_note = (f"# The {args.minutes:g}-minute budget ran out first: this is the smallest schedule "
                       "seen to fail, and a smaller one may still fail.\n" if shrinker.stopped_early else "")
        budget_note += "".join(
            f"# Flaky: candidate {f.candidate} ({schedule_words(f.entries)}) failed {f.failed} of {f.runs} "
            f"runs, fewer than the {args.needed} needed, and was counted as passing.\n"
            for f in shrinker.flaky)
        out.write_text(f"# {shrunk.title}: written by `kafka-chaos shrink {path}`.\n" + budget_note
                       + tomli_w.dumps(shrunk.to_dict()))
        written.append(out)
        write_shrink_result(chaos.directory.path, scenario.spec, target, shrunk, shrinker, out)
        progress(f"{len(scenario.spec.schedule)} fault(s) -> {len(shrunk.schedule)} in "
                 f"{shrinker.rounds_run} run(s)"
                 + (" (budget spent: not shown minimal)" if shrinker.stopped_early else "")
                 + f"; written to {out}")

    chaos_session(chaos, work)
    return 0 if written else 1
