"""The HTML report reviewers read: a run directory rendered to self-contained pages.

``render_run(reports/<run_id>)`` writes ``index.html`` (verdict first: one row per
scenario) and ``<scenario_id>.html`` (verdict, timeline, ZooKeeper checks, anomalies
with examples, configuration, raw files). Modules, one job each:

    model.py     typed view of a run, and the pass/fail rule
    load.py      run directory -> model, turning unreadable files into stated problems
    timeline.py  matplotlib figure -> inline SVG
    format.py    how times, durations and settings read
    render.py    jinja2 templates (templates/) -> files
    cli.py       ``kafka-chaos report <run_dir>``
"""

from harness.report.load import ReportError, load_run
from harness.report.render import render_progress, render_run, render_run_with_outcome

__all__ = ["ReportError", "load_run", "render_progress", "render_run", "render_run_with_outcome"]
