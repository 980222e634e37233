"""The ``kafka-chaos`` command line.

Subcommands: ``setup`` (engine and images), ``check`` (validate declarations with no
engine), ``up`` (a cluster to poke at by hand, removed on Ctrl-C), ``run`` (scenario files,
or the chaos suite, reports written), ``explore`` (random fault schedules against a
safety configuration), ``replay`` (a recorded round again), ``shrink`` (a failing round
cut down), ``report``, ``list``, ``matrix``, ``clean`` (leftovers) and ``versions``. Every
user error is one line on stderr and exit status 2; nothing is left running.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster.resources import new_run_id
from harness.cluster.versions import (
    DEFAULT_VERSION,
    release,
    supported_versions,
)
from harness.entry.cluster_options import (
    KAFKA_VERSION,
    METADATA,
    RUN_ID,
    TOPOLOGY,
    add_arguments,
    checked_version,
    cluster_flags,
)
from harness.errors import USER_ERRORS
from harness.scenario.rundir import reports_root
from topologies.model import METADATA_MODES

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster
    from harness.report.render import Rendered
    from harness.scenario.chaos_run import ChaosRun

EXIT_USAGE = 2


def _progress(line: str) -> None:
    print(f"[kafka-chaos] {line}", file=sys.stderr, flush=True)


def _cmd_setup(args: argparse.Namespace) -> int:
    from harness.cluster.engine import ensure_engine
    from harness.cluster.images import ensure_images

    started = time.monotonic()
    client = ensure_engine()
    for version in args.kafka_version:
        images = ensure_images(client, version, _progress)
        _progress(f"images ready for Kafka {version}: {images.kafka}, {images.toxiproxy}")
    _progress(f"setup done in {time.monotonic() - started:.1f} s")
    return 0


def _cmd_up(args: argparse.Namespace) -> int:
    from harness.cluster.lifecycle import Cluster
    from harness.cluster.resources import RunIdentity, new_run_id
    from harness.scenario.chaos_run import session_topology, unwind_on_sigterm

    topology = session_topology(args.topology, args.metadata, args.kafka_version)
    unwind_on_sigterm()
    identity = RunIdentity(args.run_id or new_run_id(), keep=args.keep)
    cluster = Cluster(
        topology, args.kafka_version, identity=identity,
        host_port_base=args.port_base, progress=_progress,
    )
    try:
        cluster.start()
        print(f"run id: {cluster.run_id}")
        for zone in cluster.topology.zones:
            print(f"zone {zone} clients: bootstrap.servers={cluster.bootstrap_servers(zone)}")
        for line in cluster.metadata.address_lines():
            print(line)
        print(f"Toxiproxy API: http://127.0.0.1:{cluster.host_ports['toxiproxy-api']}")
        print("Ctrl-C removes the cluster." if not args.keep else "Ctrl-C leaves it running (--keep).",
              flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        _progress("interrupted: removing the cluster")
    finally:
        cluster.close()
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    """Scenario files given: run them here. None given: the whole suite through pytest."""
    from harness.scenario.chaos_run import session_topology

    session_topology(args.topology, args.metadata, args.kafka_version)  # refused here, in one line
    run_id = args.run_id or new_run_id()
    if not args.files:
        selection = ["-k", args.select] if args.select else []
        mode = ["--metadata", args.metadata] if args.metadata else []
        command = [sys.executable, "-m", "pytest", "-m", "chaos", "--kafka-version", args.kafka_version,
                   "--topology", args.topology, *mode, "--run-id", run_id, *selection, *args.pytest_args]
        _progress("running the chaos suite: " + " ".join(command[2:]))
        status = subprocess.call(command)
        index = reports_root() / run_id / "index.html"
        if index.is_file():
            _progress(f"report: {index}")
        return status
    return _run_files(args, run_id)


def _cmd_replay(args: argparse.Namespace) -> int:
    """Run a recorded scenario again, exactly as it ran: a round folder (or any scenario
    folder of a report) names its scenario.toml, which ``run`` then runs."""
    from harness.scenario.file_format import ScenarioFileError

    path = Path(args.round)
    spec = path / "scenario.toml" if path.is_dir() else path
    if not spec.is_file():
        raise ScenarioFileError(f"replay: {path} is neither a scenario folder of a report "
                                "nor a scenario file")
    args.files = [str(spec)]
    return _run_files(args, args.run_id or new_run_id())


def _chaos_session(chaos: ChaosRun, work: Callable[[], None]) -> Rendered | None:
    """The lifecycle every command that runs scenarios shares, once its input is checked:
    a Docker engine, SIGTERM unwinding like Ctrl-C, the judge warming while the cluster
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
        _progress("interrupted: removing the cluster; the report will say the run is incomplete")
    finally:
        chaos.close()
        result = chaos.finish(status)
    if result is not None:
        _progress(f"report: {result.index_html} ({result.headline.upper()})")
    return result


def _run_files(args: argparse.Namespace, run_id: str) -> int:
    """Scenario files in turn, each recorded like a test; exit = the report's outcome.

    Each file goes through :meth:`ChaosRun.run_case`, the lifecycle the pytest plugin
    gives a test: a healthy cluster before, diagnostics of a failure, health restored
    (or escalated) after. Files that share their ``[brokers]`` settings share a cluster:
    they run grouped by settings (groups in the order their first file was given), and a
    group with other settings gets a fresh cluster after the previous one is removed.
    """
    from faults.heal import heal_all
    from harness.scenario.chaos_run import ChaosRun
    from harness.scenario.file_format import (
        ScenarioFile,
        check_runnable,
        group_by_broker_settings,
        load_scenario_file,
    )
    from harness.scenario.runner import ScenarioRun, ScenarioSpec
    from harness.scenario.spec_runner import run_spec

    chaos = ChaosRun(run_id, args.kafka_version, args.topology, healer=heal_all, progress=_progress,
                     metadata=args.metadata)
    scenarios = [load_scenario_file(path) for path in args.files]  # all validated up front
    for scenario in scenarios:  # a migration on a migrating cluster of its own
        run_topology = chaos.run_topology
        check_runnable(scenario, run_topology.for_scenario(scenario), run_topology.release_settings)

    def body(scenario: ScenarioFile) -> Callable[[Cluster], str | None]:
        def run(cluster: Cluster) -> str | None:
            def start(spec: ScenarioSpec) -> ScenarioRun:
                return ScenarioRun(cluster, spec, chaos.directory, chaos.judge, scenario_id=spec.id)

            passed = run_spec(scenario.spec, start).passed
            return None if passed else _failed_checks(chaos.directory.path / scenario.spec.id)
        return run

    def work() -> None:
        ordered = [(settings, f) for settings, group in group_by_broker_settings(scenarios) for f in group]
        for settings, scenario in ordered:
            chaos.use_cluster_for(bool(scenario.spec.migration), settings)
            _progress(f"scenario {scenario.spec.id}: workload and fault schedule")
            record = chaos.run_case(f"file:{scenario.path}", "scenario-file", body(scenario),
                                    scenario=scenario.spec.id)
            chaos.done_with(bool(scenario.spec.migration))
            _report_outcome(scenario.spec.id, record.outcome, record.error)

    result = _chaos_session(chaos, work)
    return 0 if result is not None and result.succeeded else 1


def _cmd_explore(args: argparse.Namespace) -> int:
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
                     progress=_progress, metadata=args.metadata)
    base = load_base(args.file, chaos, options.during)
    space_for(base, chaos, options)  # refuse an impossible space before any container starts

    def work() -> None:
        exploration = explore(chaos, base, options, _progress)
        _progress(f"rounds and coverage: {write_exploration(exploration, chaos.directory.path)}")
        for line in summary_lines(exploration, chaos.directory.path, cluster_flags(args)):
            _progress(line)

    result = _chaos_session(chaos, work)
    return 0 if result is not None and result.succeeded else 1


def _cmd_shrink(args: argparse.Namespace) -> int:
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
                     progress=_progress, metadata=args.metadata)
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
            _progress(f"no recorded violation beside {path}: running the round once to see what it breaks")
            target = run_round(scenario.spec)
        if not target:
            _progress("the round violated nothing: nothing to shrink")
            write_shrink_result(chaos.directory.path, scenario.spec, target, None, None, None)
            return
        _progress(f"shrinking towards: {', '.join(sorted(target))}")
        shrunk, shrinker = shrink_round(scenario.spec, target, run_round, args.runs, args.needed, _progress,
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
        _progress(f"{len(scenario.spec.schedule)} fault(s) -> {len(shrunk.schedule)} in "
                  f"{shrinker.rounds_run} run(s)"
                  + (" (budget spent: not shown minimal)" if shrinker.stopped_early else "")
                  + f"; written to {out}")

    _chaos_session(chaos, work)
    return 0 if written else 1


# A failure's detail can be long (a liveness check lists every partition); the report has it all.
FAILURE_LINE_CHARS = 200


def _report_outcome(scenario_id: str, outcome: str, error: str) -> None:
    """A scenario's outcome on the terminal: every failed check and rule, one per line (the
    last alone would hide the others: a loss reported as only its truncation), or an
    error's last line (its message; the traceback is in the report)."""
    lines = error.splitlines()
    from harness.report.model import TestOutcome

    if outcome == TestOutcome.FAILED and len(lines) > 1:
        _progress(f"scenario {scenario_id}: FAILED ({len(lines)} checks and rules):")
        for line in lines:
            _progress("  " + (line if len(line) <= FAILURE_LINE_CHARS else line[:FAILURE_LINE_CHARS] + "..."))
        return
    _progress(f"scenario {scenario_id}: {outcome.upper()}" + (f": {lines[-1]}" if lines else ""))


def _failed_checks(scenario_dir: Path) -> str:
    """The failed checks and rules of a scenario, one per line, from what it recorded."""
    from harness.report.load import read_outcome

    return "\n".join(read_outcome(scenario_dir).failure_lines()) or "failed (see the scenario page)"


def _cmd_list(args: argparse.Namespace) -> int:
    """The project's scenarios: the chaos tests pytest collects and the registered files."""
    from harness.scenario.catalogue import collect

    found = collect(args.paths)
    width = max((len(entry.run) for entry in found.suite + found.files), default=0) + 2
    print("Scenario suite (pytest -m chaos):")
    for entry in found.suite:
        print(f"  {entry.run:{width}}{entry.title}")
    print("Scenario files (kafka-chaos run FILE):")
    for entry in found.files:
        print(f"  {entry.run:{width}}{entry.title}")
    if found.errors:
        print(f"kafka-chaos: collecting the suite failed (pytest exit {found.errors})", file=sys.stderr)
        return 1
    return 0


def _cmd_matrix(args: argparse.Namespace) -> int:
    """The suite (or chosen scenarios) across versions in turn, then a summary grid."""
    from harness.entry.matrix import matrix_runs, run_versions, write_summary

    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    runs = matrix_runs(versions, args.metadata)  # refused here, in one line, before anything starts
    matrix_id = args.matrix_id or f"matrix-{new_run_id()}"
    selection = ["-k", args.scenarios] if args.scenarios else []
    results = run_versions(runs, matrix_id, [*selection, *args.pytest_args], _progress)
    summary = write_summary(matrix_id, results)
    _progress(f"summary: {summary}")
    return 0 if all(r.exit_code == 0 for r in results) else 1


def _cmd_clean(args: argparse.Namespace) -> int:
    from harness.cluster.engine import ensure_engine
    from harness.cluster.resources import reap_stale

    reaped = reap_stale(ensure_engine(start_if_missing=False), include_kept=args.all)
    print(f"removed leftovers of {len(reaped)} run(s){': ' + ', '.join(reaped) if reaped else ''}")
    return 0


def _cmd_versions(args: argparse.Namespace) -> int:
    for version in supported_versions():
        modes = ", ".join(release(version).metadata_modes)
        print(f"{version}  {modes}" + ("  (default)" if version == DEFAULT_VERSION else ""))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """Validate declarations with no engine: one line per problem on stderr, exit 2."""
    from harness.scenario.chaos_run import session_topology
    from harness.scenario.check_files import check_paths
    from harness.scenario.run_topology import RunTopology

    topology = session_topology(args.topology, args.metadata, args.kafka_version)
    checked = check_paths(args.paths, RunTopology(args.topology, topology, args.kafka_version))
    for line in checked.problems:
        print(f"kafka-chaos: {line}", file=sys.stderr)
    if not checked.ok:
        return EXIT_USAGE
    print(f"{len(checked.files)} file(s) checked on topology {topology.name}, Kafka {args.kafka_version}: "
          "no problem found")
    return 0


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-chaos")
    except PackageNotFoundError:
        return "(not installed: run 'bash docker/setup.sh')"


def _mode_list(value: str) -> list[str]:
    """Comma-separated metadata modes, each one of METADATA_MODES."""
    modes = [m.strip() for m in value.split(",") if m.strip()]
    wrong = [m for m in modes if m not in METADATA_MODES]
    if wrong or not modes:
        raise argparse.ArgumentTypeError(f"{(wrong or [value])[0]!r} is not a metadata mode; modes are "
                                         + ", ".join(METADATA_MODES))
    return modes


def _positive_minutes(value: str) -> float:
    try:
        minutes = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of minutes: {value!r}") from None
    if not minutes > 0 or math.isinf(minutes):
        raise argparse.ArgumentTypeError(f"minutes must be a positive number, not {value!r}")
    return minutes




def _command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
             help: str) -> argparse.ArgumentParser:
    """A subcommand whose one-line help in the list is also its own --help's description."""
    return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-chaos",
        description="Chaos tests of Apache Kafka's durability and availability promises on real "
                    "three-zone clusters in Docker, judged by a Spark reconciliation, shown in an HTML "
                    "report.",
        epilog="Start with 'kafka-chaos check FILE' (no engine needed), then 'kafka-chaos run FILE'. "
               "'kafka-chaos COMMAND --help' describes each command.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    setup = _command(sub, "setup", help="start a Docker engine if needed and build the images")
    setup.add_argument("--kafka-version", action="append", type=checked_version,
                       help=f"version(s) to build (default {DEFAULT_VERSION})")
    setup.set_defaults(func=_cmd_setup)

    up = _command(sub, "up", help="start a cluster and keep it until Ctrl-C")
    add_arguments(up, helps={RUN_ID: "names the cluster's containers (default: time-based)"})
    up.add_argument("--port-base", type=int, default=None,
                    help="publish ports on 127.0.0.1 from this port up (default: free ports)")
    up.add_argument("--keep", action="store_true", help="leave the cluster running on exit")
    up.set_defaults(func=_cmd_up)

    run = _command(sub, "run", help="run scenario files, or the whole chaos suite, and write the report")
    run.add_argument("files", nargs="*", help="scenario files (TOML); none = the whole suite")
    run.add_argument("-k", dest="select", default=None, metavar="EXPR",
                     help="with no files: only the suite's tests whose names match this pytest -k "
                          "expression, e.g. 's04 or s05'")
    add_arguments(run)
    run.add_argument("--pytest-args", dest="pytest_args", nargs=argparse.REMAINDER, default=[],
                     help="passed on to pytest when running the suite")
    run.set_defaults(func=_cmd_run)

    explore = _command(sub, "explore", help="run rounds of random fault schedules against a safety "
                                             "configuration (a scenario file) and judge what it promises")
    explore.add_argument("file", help="scenario file whose topic, clients and settings are explored")
    explore.add_argument("--seed", type=int, default=0, help="names every round's schedule (default 0)")
    explore.add_argument("--rounds", type=int, default=None, help="stop after this many rounds")
    explore.add_argument("--minutes", type=float, default=15.0,
                         help="stop starting rounds after this long (default 15; ignored with --rounds)")
    explore.add_argument("--faults", default="", help="comma-separated fault kinds to draw from "
                                                      "(default: every kind but topic_config)")
    explore.add_argument("--max-concurrent", type=int, default=2, help="faults in force at once, at most")
    explore.add_argument("--until-violation", action="store_true",
                         help="stop after the first round that violates something")
    explore.add_argument("--during", choices=["migration"], default=None,
                         help="'migration': each round migrates a ZooKeeper-mode cluster of its own to "
                              "KRaft, its faults anchored to the migration's phases")
    add_arguments(explore)
    explore.set_defaults(func=_cmd_explore)

    replay = _command(sub, "replay", help="run a recorded round (or any scenario of a report) again, "
                                           "exactly as it ran")
    replay.add_argument("round", help="the round's folder (reports/<run>/<round>) or its scenario.toml")
    add_arguments(replay)
    replay.set_defaults(func=_cmd_replay)

    shrink = _command(sub, "shrink", help="cut a failing exploration round down to the smallest schedule "
                                           "that still fails, written as a scenario file")
    shrink.add_argument("file", help="the round's scenario.toml (reports/<run>/<round>/scenario.toml)")
    shrink.add_argument("--runs", type=int, default=3, help="runs per candidate, at most (default 3)")
    shrink.add_argument("--needed", type=int, default=None,
                        help="failed runs that make a candidate count as failing (default: a majority "
                             "of --runs, so the shrunk file fails again more often than not)")
    shrink.add_argument("--minutes", type=_positive_minutes, default=None,
                        help="stop searching after this long and write the smallest schedule seen to "
                             "fail so far (default: no limit)")
    shrink.add_argument("--out", default=None, help="where to write it (default: <round id>-shrunk.toml "
                                                    "beside the file)")
    add_arguments(shrink)
    shrink.set_defaults(func=_cmd_shrink)

    from harness.report import cli as report_cli

    report = _command(sub, "report", help=report_cli.HELP)
    report_cli.add_arguments(report)
    report.set_defaults(func=report_cli.command)

    listing = _command(sub, "list", help="list the project's scenarios (pytest's chaos tests and "
                                          "the scenario files registered in pyproject.toml)")
    listing.add_argument("paths", nargs="*", help="where pytest collects (default: its configured testpaths)")
    listing.set_defaults(func=_cmd_list)

    matrix = _command(sub, "matrix", help="run the suite across Kafka versions and metadata modes; write a "
                                          "summary grid")
    matrix.add_argument("--versions", default=",".join(supported_versions()),
                        help="comma-separated versions (default: every supported one)")
    matrix.add_argument("--metadata", default=None, type=_mode_list,
                        help="comma-separated metadata modes, e.g. 'zookeeper,kraft' (default: every mode "
                             "each version runs, so 3.9 runs both side by side)")
    matrix.add_argument("--scenarios", default=None,
                        help="pytest -k expression choosing scenarios, e.g. 's04 or s05'")
    matrix.add_argument("--matrix-id", default=None, help="summary folder name under reports/")
    matrix.add_argument("--pytest-args", dest="pytest_args", nargs=argparse.REMAINDER, default=[],
                        help="passed on to pytest for every version")
    matrix.set_defaults(func=_cmd_matrix)

    clean = _command(sub, "clean", help="remove leftovers of killed runs")
    clean.add_argument("--all", action="store_true", help="also remove clusters kept with --keep")
    clean.set_defaults(func=_cmd_clean)

    versions = _command(sub, "versions", help="list supported Kafka versions")
    versions.set_defaults(func=_cmd_versions)

    check = _command(sub, "check", help="validate scenario files, exploration files and topologies "
                                         "without a Docker engine (exit 0, or 2 with one line per problem)")
    check.add_argument("paths", nargs="+", metavar="FILE|DIR",
                       help="TOML files, or folders searched for them")
    add_arguments(check, (TOPOLOGY, METADATA, KAFKA_VERSION), helps={
        TOPOLOGY: "the topology scenario files are checked on (default three_az)",
        KAFKA_VERSION: "the release whose broker settings they are checked against "
                       f"(default {DEFAULT_VERSION})",
    })
    check.set_defaults(func=_cmd_check)
    return parser


def _show_long_waits() -> None:
    """The harness's waits past LONG_WAIT_S, on stderr as they happen."""
    import logging

    from harness.cluster.waiting import PROGRESS_LOGGER

    logger = logging.getLogger(PROGRESS_LOGGER)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[kafka-chaos] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    _show_long_waits()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if getattr(args, "kafka_version", None) is None and args.command == "setup":
            args.kafka_version = [DEFAULT_VERSION]
        return int(args.func(args))
    except USER_ERRORS as err:
        print(f"kafka-chaos: {err}", file=sys.stderr)
        return EXIT_USAGE
    except argparse.ArgumentTypeError as err:
        print(f"kafka-chaos: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
