"""``kafka-chaos report <run_dir>``: render a run directory's HTML report.

Wiring in ``harness/entry/cli.py``::

    from harness.report import cli as report_cli
    report = sub.add_parser("report", help=report_cli.HELP)
    report_cli.add_arguments(report)
    report.set_defaults(func=report_cli.command)

A missing run directory raises ``ReportError`` (a ``ChaosError``), which the main CLI
prints as one line with exit status 2. The exit status otherwise says whether the run
passed, so a script can render and gate in one step.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.report.load import ReportError, is_run_folder
from harness.report.render import render_run_with_outcome

HELP = "write the HTML report of a run directory (reports/<run_id>)"
EXIT_PASSED, EXIT_NOT_PASSED = 0, 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory, e.g. reports/<run_id>")


def command(args: argparse.Namespace) -> int:
    """Render, print where the index is and the run's outcome; 0 only if the run passed."""
    return report(args.run_dir)


def report(run_dir: Path) -> int:
    """The same rendering a run does when it ends (``ChaosRun.finish``), so a report
    rendered again later is the one the run wrote."""
    if run_dir.is_dir() and not is_run_folder(run_dir):
        raise ReportError(f"{run_dir} is not a run folder: it holds no run.json and no scenario folder "
                          "(a run writes reports/<run id>/run.json); nothing was written")
    rendered = render_run_with_outcome(run_dir)
    print(f"report: {rendered.headline.upper()}: {rendered.index_html}")
    return EXIT_PASSED if rendered.succeeded else EXIT_NOT_PASSED
