"""The ``kafka-chaos`` command line: its parser and ``main``.

Subcommands: ``setup`` (engine and images), ``check`` (validate declarations with no
engine), ``up`` (a cluster to poke at by hand, removed on Ctrl-C), ``run`` (scenario files,
or the chaos suite, reports written), ``explore`` (random fault schedules against a
safety configuration), ``replay`` (a recorded round again), ``shrink`` (a failing round
cut down), ``report``, ``list``, ``matrix``, ``clean`` (leftovers) and ``versions``. Every
user error is one line on stderr and exit status 2; nothing is left running.

This module holds every command's options and help, and the dispatch: what each command
does is in ``harness/entry/commands/`` (one module per group of commands), the report's
in ``harness/report/cli.py``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from harness.cluster.versions import DEFAULT_VERSION, supported_versions
from harness.entry.cluster_options import (
    KAFKA_VERSION,
    METADATA,
    RUN_ID,
    RUN_OPTIONS,
    TOPOLOGY,
    add_arguments,
    checked_version,
)
from harness.entry.commands.catalogue import cmd_check, cmd_list, cmd_versions
from harness.entry.commands.cluster import cmd_clean, cmd_setup, cmd_up
from harness.entry.commands.explore import cmd_explore, cmd_shrink
from harness.entry.commands.matrix import cmd_matrix
from harness.entry.commands.run import cmd_replay, cmd_run
from harness.entry.commands.terminal import EXIT_USAGE
from harness.errors import USER_ERRORS
from harness.workload.client_settings import DEFAULT_CLIENT
from topologies.model import METADATA_MODES

__all__ = ["EXIT_USAGE", "build_parser", "main"]


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
    setup.add_argument("--java-client", action="append", default=[], metavar="VERSION",
                       help="also build the Java client image of this kafka-clients release (repeatable)")
    setup.set_defaults(func=cmd_setup)

    up = _command(sub, "up", help="start a cluster and keep it until Ctrl-C")
    add_arguments(up, helps={RUN_ID: "names the cluster's containers (default: time-based)"})
    up.add_argument("--port-base", type=int, default=None,
                    help="publish ports on 127.0.0.1 from this port up (default: free ports)")
    up.add_argument("--keep", action="store_true", help="leave the cluster running on exit")
    up.set_defaults(func=cmd_up)

    run = _command(sub, "run", help="run scenario files, or the whole chaos suite, and write the report")
    run.add_argument("files", nargs="*", help="scenario files (TOML); none = the whole suite")
    run.add_argument("-k", dest="select", default=None, metavar="EXPR",
                     help="with no files: only the suite's tests whose names match this pytest -k "
                          "expression, e.g. 's04 or s05'")
    add_arguments(run, RUN_OPTIONS)
    run.add_argument("--pytest-args", dest="pytest_args", nargs=argparse.REMAINDER, default=[],
                     help="passed on to pytest when running the suite")
    run.set_defaults(func=cmd_run)

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
    explore.set_defaults(func=cmd_explore)

    replay = _command(sub, "replay", help="run a recorded round (or any scenario of a report) again, "
                                           "exactly as it ran")
    replay.add_argument("round", help="the round's folder (reports/<run>/<round>) or its scenario.toml")
    add_arguments(replay, RUN_OPTIONS)
    replay.set_defaults(func=cmd_replay)

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
    shrink.set_defaults(func=cmd_shrink)

    from harness.report import cli as report_cli

    report = _command(sub, "report", help=report_cli.HELP)
    report_cli.add_arguments(report)
    report.set_defaults(func=report_cli.command)

    listing = _command(sub, "list", help="list the project's scenarios (pytest's chaos tests and "
                                          "the scenario files registered in pyproject.toml)")
    listing.add_argument("paths", nargs="*", help="where pytest collects (default: its configured testpaths)")
    listing.set_defaults(func=cmd_list)

    matrix = _command(sub, "matrix", help="run the suite across Kafka versions and metadata modes; write a "
                                          "summary grid")
    matrix.add_argument("--versions", default=",".join(supported_versions()),
                        help="comma-separated versions (default: every supported one)")
    matrix.add_argument("--metadata", default=None, type=_mode_list,
                        help="comma-separated metadata modes, e.g. 'zookeeper,kraft' (default: every mode "
                             "each version runs, so 3.9 runs both side by side)")
    matrix.add_argument("--clients", default=DEFAULT_CLIENT.spelled,
                        help="comma-separated clients to run each scenario on, e.g. "
                             "'librdkafka,java,java:4.0.0' (java: Kafka's Java client of the column's "
                             "release; default librdkafka)")
    matrix.add_argument("--scenarios", default=None,
                        help="pytest -k expression choosing scenarios, e.g. 's04 or s05'")
    matrix.add_argument("--matrix-id", default=None, help="summary folder name under reports/")
    matrix.add_argument("--pytest-args", dest="pytest_args", nargs=argparse.REMAINDER, default=[],
                        help="passed on to pytest for every version")
    matrix.set_defaults(func=cmd_matrix)

    clean = _command(sub, "clean", help="remove leftovers of killed runs")
    clean.add_argument("--all", action="store_true", help="also remove clusters kept with --keep")
    clean.set_defaults(func=cmd_clean)

    versions = _command(sub, "versions", help="list supported Kafka versions")
    versions.set_defaults(func=cmd_versions)

    check = _command(sub, "check", help="validate scenario files, exploration files and topologies "
                                         "without a Docker engine (exit 0, or 2 with one line per problem)")
    check.add_argument("paths", nargs="+", metavar="FILE|DIR",
                       help="TOML files, or folders searched for them")
    add_arguments(check, (TOPOLOGY, METADATA, KAFKA_VERSION), helps={
        TOPOLOGY: "the topology scenario files are checked on (default three_az)",
        KAFKA_VERSION: "the release whose broker settings they are checked against "
                       f"(default {DEFAULT_VERSION})",
    })
    check.set_defaults(func=cmd_check)
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
