"""The report as a reviewer's browser shows it: headless Chromium, from disk, offline.

Unit tests check the HTML text; this checks what only a browser can: that the pages
load with no console message at all (the pages carry no script and a Content Security
Policy forbidding every fetch, so any message means something tried to run or load -
an unescaped ``<script>`` in a title would show up here as a CSP violation), that the
verdict table and the timeline SVG are in the DOM the browser built, and that a
laptop-sized screenshot is not blank. Set ``KAFKA_CHAOS_REPORT_SHOTS=DIR`` to keep the
screenshots for a look.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from harness.report import render_run
from tests.report.sample_run import build_sample_run, sample_tests

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless Chromium check needs /usr/bin/chromium (Debian: apt-get install -y chromium)",
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
LAPTOP = "--window-size=1366,900"
# Chromium logs page console output as "...:INFO:CONSOLE:12] "message", source: ..." (or,
# in older builds, "CONSOLE(12)"); CSP violations and uncaught errors arrive the same way.
CONSOLE = re.compile(r":CONSOLE[:(]")
HOSTILE_TITLE = '<script>console.error("not escaped")</script>S3 kill -9 <b>bold?</b>'
FAIL_RED = np.array([0xB3, 0x26, 0x1E]) / 255  # the "failed" badge text colour in style.css


@dataclass(frozen=True)
class Load:
    dom: str
    console: list[str]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = build_sample_run(tmp_path_factory.mktemp("chromium"))
    config = run_dir / "s3-kill-leader" / "config.json"
    data = json.loads(config.read_text())
    data["scenario"]["title"] = HOSTILE_TITLE
    config.write_text(json.dumps(data))
    render_run(run_dir)
    return run_dir


def chromium(page: Path, profile: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    profile.mkdir(parents=True)
    return subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *mode, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def load(page: Path, profile: Path) -> Load:
    done = chromium(page, profile, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    return Load(done.stdout, [line for line in done.stderr.splitlines() if CONSOLE.search(line)])


def screenshot(page: Path, profile: Path, png: Path) -> np.ndarray:
    done = chromium(page, profile, LAPTOP, f"--screenshot={png}")
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return matplotlib.image.imread(png)


PAGES = ("index.html", "s5-unclean-election.html", "s7-link-cut.html", "s3-kill-leader.html")
CANARY = "canary.html"  # a page that must produce console messages: proves the scan sees them
CANARY_HTML = """<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'"></head>
<body><img src="http://example.invalid/x.png"><script>console.error("canary")</script></body></html>"""


@pytest.fixture(scope="module")
def loads(report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Load]:
    """Every page loaded once, in parallel: a few browsers cost little more than one."""
    profiles = tmp_path_factory.mktemp("profiles")
    canary = profiles / CANARY
    canary.write_text(CANARY_HTML)
    pages = {p: report / p for p in PAGES} | {CANARY: canary}
    with ThreadPoolExecutor(max_workers=len(pages)) as pool:
        futures = {
            name: pool.submit(load, path, profiles / f"profile-{name}") for name, path in pages.items()
        }
        return {name: f.result() for name, f in futures.items()}


def test_the_console_scan_is_not_blind(loads: dict[str, Load]) -> None:
    assert any("Content Security Policy" in line for line in loads[CANARY].console)


@pytest.mark.parametrize("page", PAGES)
def test_pages_load_without_console_messages(loads: dict[str, Load], page: str) -> None:
    assert loads[page].console == []
    assert 'class="banner" id="incomplete"' not in loads[page].dom


def test_index_shows_the_verdict_table(loads: dict[str, Load]) -> None:
    dom = loads["index.html"].dom
    assert '<table id="verdicts">' in dom
    rows = dom.split('<table id="verdicts">')[1].split("</table>")[0]
    assert rows.count("<tr") == 4  # header and one row per scenario
    assert [o for o in ("passed", "failed", "not judged") if f'badge {o.replace(" ", "-")}"' in rows] == [
        "passed",
        "failed",
        "not judged",
    ]
    # escaped: shown as text in the table, never parsed as markup
    assert "&lt;script&gt;console.error" in dom and "<b>bold?</b>" not in dom


def test_index_shows_every_test_and_the_escalation(loads: dict[str, Load]) -> None:
    dom = loads["index.html"].dom
    assert '<table id="tests">' in dom
    rows = dom.split('<table id="tests">')[1].split("</table>")[0].split("<tbody>")[1]
    assert rows.count("<tr") == len(sample_tests())
    assert rows.count('<tr class="bad">') == 4  # 2 failed, 2 errors
    # the fabric test's traceback is folded, escaped text: no element was made of it
    assert "&lt;script&gt;console.error(\"traceback\")" in rows and "<details" in rows
    headline = dom.split('id="run-verdict"')[1].split("</div>")[0]
    assert "7 tests:" in headline and "2 errors" in headline
    assert 'id="escalations"' in dom and "cluster health was restored by restarted kafka-2" in dom


def test_scenario_page_has_verdict_first_then_the_timeline_svg(loads: dict[str, Load]) -> None:
    dom = loads["s5-unclean-election.html"].dom
    assert dom.index('id="rules"') < dom.index('<svg class="timeline"') < dom.index('id="checks"')
    assert "acknowledged" in dom.split('<svg class="timeline"')[1]  # the legend was drawn as text


def test_scenario_page_shows_fault_errors_and_diagnostics(loads: dict[str, Load]) -> None:
    dom = loads["s3-kill-leader.html"].dom
    assert '<table id="fault-actions">' in dom and "docker start kafka-0 did not return" in dom
    assert 'href="s3-kill-leader/diagnostics/logs/kafka-0.log"' in dom
    assert 'href="s3-kill-leader/diagnostics/znodes.json"' in dom
    assert "acks received /s" in loads["s5-unclean-election.html"].dom


def test_a_scenario_without_verdict_says_so(loads: dict[str, Load]) -> None:
    dom = loads["s7-link-cut.html"].dom
    assert "No verdict:" in dom and 'badge not-judged big">not judged' in dom


def test_screenshots_are_not_blank(report: Path, tmp_path: Path) -> None:
    keep = os.environ.get("KAFKA_CHAOS_REPORT_SHOTS")
    pages = ("index.html", "s5-unclean-election.html")
    with ThreadPoolExecutor(max_workers=2) as pool:
        shots = list(pool.map(lambda p: screenshot(report / p, tmp_path / p, tmp_path / f"{p}.png"), pages))
    for page, image in zip(pages, shots, strict=True):
        rgb = image[..., :3]
        inked = np.mean(np.any(rgb < 0.9, axis=-1))
        assert inked > 0.03, f"{page}: only {inked:.1%} of the screenshot is not white"
    # the index's FAILED badge is drawn in its colour: styles were applied, not just text
    assert np.any(np.all(np.abs(shots[0][..., :3] - FAIL_RED) < 0.03, axis=-1))
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for page in pages:
            shutil.copy(tmp_path / f"{page}.png", Path(keep) / f"{page}.png")
