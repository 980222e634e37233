"""Writing the HTML report of one run directory: index.html plus one page per scenario.

Pages are rendered from jinja2 templates with autoescaping always on, because nearly
every string on them (titles, broker settings, message ids, error details) comes from
data that a test, a broker or a user controls. The only markup not produced by the
templates is the timeline SVG, which matplotlib writes with its own escaping. Files are
written under a temporary name and renamed, so a reviewer refreshing a page while a
report is regenerated never sees half of it.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any, NamedTuple

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from harness.files import write_text
from harness.history.verdict import VERDICT_FILE
from harness.report import format as fmt
from harness.report.load import ASSERTIONS_FILE, load_run
from harness.report.migration_summary import migration_summary, phase_costs
from harness.report.model import Outcome, Run, Scenario
from harness.report.offset_map import offset_map_svg
from harness.report.story import rule_words, story
from harness.report.timeline import origin, timeline_svg

MAX_EXAMPLES = 20  # per kind on a page; verdict.json has them all
MAX_EVENTS = 500  # cluster changes listed in the table (all are drawn in the timeline)
INDEX = "index.html"


@functools.cache
def environment() -> Environment:
    """One environment per process: templates are compiled once, however many runs render."""
    env = Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=True,  # every template, whatever its extension
        undefined=StrictUndefined,  # a template typo fails the test, not a reviewer
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        utc=fmt.utc,
        rel=fmt.rel,
        duration=fmt.duration,
        count=fmt.count,
        scalar=fmt.scalar,
        params=fmt.params,
        href=lambda path: fmt.href(*path) if isinstance(path, tuple | list) else fmt.href(path),
        rule=fmt.rule,
        kind=fmt.kind,
        source=fmt.source,
    )
    env.tests.update(scalar=fmt.is_scalar)
    env.globals.update(
        migration_summary=migration_summary,
        phase_costs=phase_costs,
        record_columns=fmt.record_columns,
        offset_range=fmt.offset_range,
        rule_words=rule_words,
        Outcome=Outcome,
        NONE=fmt.NONE,
        MAX_EXAMPLES=MAX_EXAMPLES,
        MAX_EVENTS=MAX_EVENTS,
    )
    return env


def _raw_files(run_dir: Path, scenario: Scenario) -> list[str]:
    """The scenario's JSON files that exist, then its history files, relative to run_dir."""
    sdir = run_dir / scenario.id
    names = ("config.json", "schedule.json", VERDICT_FILE, ASSERTIONS_FILE, "cluster_events.json",
             "metadata.json")
    files = [f"{scenario.id}/{n}" for n in names if (sdir / n).is_file()]
    if scenario.history:
        files += [f"{scenario.id}/{f}" for f in scenario.history.files]
    return files


def scenario_context(run_dir: Path, run: Run, scenario: Scenario) -> dict[str, Any]:
    t0 = origin(scenario)
    end = scenario.history.finished if scenario.history else None
    svg = timeline_svg(scenario, t0, end) if t0 is not None else None
    mapped = offset_map_svg(scenario, t0) if t0 is not None else None
    return {
        "run": run,
        "s": scenario,
        "t0": t0,
        "timeline": Markup(svg) if svg else None,  # matplotlib output; it escapes its own text
        "offset_map": Markup(mapped) if mapped else None,
        "raw_files": _raw_files(run_dir, scenario),
        "approximate_faults": any(f.approximate for f in scenario.faults),
        "story": story(scenario, t0),
        "generated": time.time(),
    }


def render_run(run_dir: str | os.PathLike[str]) -> Path:
    """Render the report of ``run_dir`` (reports/<run_id>) in place; returns index.html.

    Re-rendering is safe and cheap, so the runner may call this after every scenario to
    keep a report of a run in progress.
    """
    return render_run_with_outcome(run_dir).index_html


def render_progress(run_dir: str | os.PathLike[str], pages: Collection[str]) -> Path:
    """The index of a run still going, and the pages of the scenarios named."""
    root = Path(run_dir)
    return write_report(root, load_run(root), pages)


class Rendered(NamedTuple):
    """A rendered report: its index, the headline the index shows (the outcome word, or
    what a shrink did), and whether the run did what it was for (the command's exit)."""

    index_html: Path
    headline: str
    succeeded: bool


def render_run_with_outcome(run_dir: str | os.PathLike[str]) -> Rendered:
    """Render like :func:`render_run`, and also return the run's headline as the index
    shows it, so a command can print it and exit by it without loading the run again."""
    root = Path(run_dir)
    run = load_run(root)
    return Rendered(write_report(root, run), run.headline, run.succeeded)


def write_report(root: Path, run: Run, pages: Collection[str] | None = None) -> Path:
    """Render an already loaded run into ``root``; returns index.html. ``pages`` names the
    scenarios whose pages to write (None: all), so a run in progress rewrites its index
    and the page of the scenario just finished, not every page after every test."""
    env = environment()
    page = env.get_template("scenario.html.j2")
    for scenario in run.scenarios:
        if scenario.page is not None and (pages is None or scenario.id in pages):
            write_text(root / scenario.page, page.render(scenario_context(root, run, scenario)))
    index = root / INDEX
    write_text(index, env.get_template("index.html.j2").render(run=run, generated=time.time()))
    return index
