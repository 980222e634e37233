"""The rendered pages: verdict first, self-contained, every link resolves, all text escaped."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness.report import render_run
from harness.report.cli import report
from tests.report.sample_run import RUN_ID, build_sample_run

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'


class _Page(HTMLParser):
    """Collects what the assertions need: links, resource URLs, tags and visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.sources: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self._hidden = 0  # inside <style> or <title>: not page text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._hidden += tag in ("style", "title")
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "a" and a.get("href"):
            self.hrefs.append(str(a["href"]))
        for name in ("src", "srcset", "data", "xlink:href", "href"):
            value = a.get(name)
            # matplotlib's SVG refers to its own symbols by fragment (#m...): not a load
            if value and tag != "a" and not value.startswith("#"):
                self.sources.append(value)

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("style", "title")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.text.append(data)

    @property
    def visible(self) -> str:
        return " ".join(" ".join(self.text).split())


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = build_sample_run(tmp_path_factory.mktemp("rendered"))
    render_run(run_dir)
    return run_dir


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return build_sample_run(tmp_path)


def test_render_writes_index_and_one_page_per_scenario(rendered: Path) -> None:
    assert sorted(p.name for p in rendered.glob("*.html")) == [
        "index.html",
        "s3-kill-leader.html",
        "s5-unclean-election.html",
        "s7-link-cut.html",
    ]
    assert not list(rendered.rglob(".*.tmp"))


def test_index_puts_the_verdict_first(rendered: Path) -> None:
    page = parse(rendered / "index.html")
    text = page.visible
    assert text.index("failed 3 scenarios") < text.index("Scenarios")  # run verdict before the table
    assert "3 scenarios: 1 passed, 1 failed, 1 not judged" in text
    assert "verdicts" in page.ids
    assert "lost 30, truncated 60" in text
    assert "duplicate 2" in text
    assert "no verdict" in text
    assert "incomplete" not in page.ids
    assert {"s5-unclean-election.html", "s3-kill-leader.html", "s7-link-cut.html"} <= set(page.hrefs)


def test_scenario_page_sections_come_in_reading_order(rendered: Path) -> None:
    page = parse(rendered / "s5-unclean-election.html")
    text = page.visible
    order = [
        "Reconciliation verdict",
        "Timeline",
        "Measured windows",
        "Anomalies",
        "Configuration",
        "Raw files",
    ]
    positions = [text.index(h) for h in order]
    assert positions == sorted(positions)
    assert "svg" in page.tags and "rules" in page.ids
    # the example a reviewer checks: id, producer, partition, offset, and what the log holds there
    assert "pc-40 pc orders-0 40 +13.1 s" in text
    assert "pb-131" in text
    assert "unavailability orders-0 (leader killed, follower down) 12.20" in text


def test_missing_verdict_is_stated_plainly_and_never_shown_passed(rendered: Path) -> None:
    page = parse(rendered / "s7-link-cut.html")
    text = page.visible
    assert "No verdict" in text and "not judged" in text
    head = text[: text.index("Reconciliation verdict")]
    assert "passed" not in head.lower().replace("assertions", "")
    row = parse(rendered / "index.html").visible.split("s7-link-cut")[1]
    assert row.startswith(" not judged no verdict")


def test_every_link_resolves_to_a_file_in_the_run_directory(rendered: Path) -> None:
    for html in rendered.glob("*.html"):
        for href in parse(html).hrefs:
            assert "://" not in href and not href.startswith("/"), href
            target = (rendered / unquote(href)).resolve()
            assert target.is_file(), f"{html.name}: {href}"
            assert rendered.resolve() in target.parents


def test_raw_history_files_and_replayable_schedule_are_linked(rendered: Path) -> None:
    hrefs = parse(rendered / "s3-kill-leader.html").hrefs
    assert "s3-kill-leader/schedule.json" in hrefs
    assert "s3-kill-leader/history/manifest.json" in hrefs
    assert any(h.startswith("s3-kill-leader/history/sends/part-") for h in hrefs)
    schedule = json.loads((rendered / "s3-kill-leader" / "schedule.json").read_text())
    assert schedule["entries"][0]["fault"] == "kill"


def test_pages_are_self_contained(rendered: Path) -> None:
    for html in rendered.glob("*.html"):
        page = parse(html)
        raw = html.read_text()
        assert "script" not in page.tags and "link" not in page.tags and "iframe" not in page.tags
        assert page.sources == [], f"{html.name} loads {page.sources}"
        assert "<?xml" not in raw and "<!DOCTYPE svg" not in raw
        assert "Content-Security-Policy" in raw


def test_everything_from_data_is_escaped(run_dir: Path) -> None:
    sdir = run_dir / "s3-kill-leader"
    config = json.loads((sdir / "config.json").read_text())
    config["scenario"]["title"] = HOSTILE
    config["scenario"]["expected"] = HOSTILE
    config["broker_settings"][HOSTILE] = HOSTILE
    config["schedule"][0]["fault"] = HOSTILE
    (sdir / "config.json").write_text(json.dumps(config))
    verdict = json.loads((sdir / "verdict.json").read_text())
    verdict["partitions"][0]["examples"]["duplicate"][0]["message_id"] = HOSTILE
    (sdir / "verdict.json").write_text(json.dumps(verdict))
    events = json.loads((sdir / "cluster_events.json").read_text())
    events[0]["detail"] = HOSTILE
    (sdir / "cluster_events.json").write_text(json.dumps(events))

    render_run(run_dir)
    for html in (run_dir / "index.html", run_dir / "s3-kill-leader.html"):
        raw = html.read_text()
        page = parse(html)
        assert "<script" not in raw and "<img" not in raw
        assert "script" not in page.tags and "img" not in page.tags
        assert '<script>alert("x")</script>' in page.visible  # shown literally, as text
    assert parse(run_dir / "s3-kill-leader.html").visible.count("onerror=alert(1)") >= 5


def test_fault_names_in_the_svg_are_escaped(run_dir: Path) -> None:
    faults = run_dir / "s3-kill-leader" / "history" / "faults"
    for part in faults.iterdir():
        part.unlink()
    config_path = run_dir / "s3-kill-leader" / "config.json"
    config = json.loads(config_path.read_text())
    config["schedule"][0]["fault"] = "<b>$x$</b>"
    config_path.write_text(json.dumps(config))
    render_run(run_dir)
    raw = (run_dir / "s3-kill-leader.html").read_text()
    assert "<b>" not in raw
    assert "&lt;b&gt;$x$&lt;/b&gt;" in raw  # literal dollars: not read as mathematics


@pytest.mark.parametrize("status", ["running", "interrupted"])
def test_an_incomplete_run_is_labelled_on_every_page(run_dir: Path, status: str) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    data.update(status=status, finished=None)
    (run_dir / "run.json").write_text(json.dumps(data))
    render_run(run_dir)
    pages = list(run_dir.glob("*.html"))
    assert len(pages) == 4
    for html in pages:
        page = parse(html)
        assert "incomplete" in page.ids, html.name
        assert f"Incomplete run: status \u201c{status}\u201d" in page.visible


def test_a_run_killed_early_still_renders(tmp_path: Path) -> None:
    """The shape a real interrupted run leaves: history still "running", no part files,
    no verdict, assertions or cluster events."""
    run_dir = build_sample_run(tmp_path)
    sdir = run_dir / "s5-unclean-election"
    for name in ("verdict.json", "assertions.json", "cluster_events.json"):
        (sdir / name).unlink()
    for table in ("sends", "polls", "final_log", "faults"):
        shutil.rmtree(sdir / "history" / table)
        (sdir / "history" / table).mkdir()
    manifest = json.loads((sdir / "history" / "manifest.json").read_text())
    manifest.update(status="running", finished=None)
    (sdir / "history" / "manifest.json").write_text(json.dumps(manifest))
    data = json.loads((run_dir / "run.json").read_text())
    data.update(status="running", finished=None, scenarios=["s5-unclean-election"])
    (run_dir / "run.json").write_text(json.dumps(data))

    render_run(run_dir)
    text = parse(run_dir / "s5-unclean-election.html").visible
    assert "No verdict" in text and "No assertions recorded" in text
    assert "the history is not complete (status running)" in text
    assert "Nothing to draw" not in text  # the schedule still gives fault windows
    assert "planned schedule (approximate)" in text
    index = parse(run_dir / "index.html").visible
    assert index.startswith("Incomplete run") and "not judged 1 scenario" in index


def test_cli_report_exits_nonzero_unless_the_run_passed(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report(run_dir) == 1
    assert capsys.readouterr().out == f"report: FAILED: {run_dir / 'index.html'}\n"
    data = json.loads((run_dir / "run.json").read_text())
    data["scenarios"] = ["s5-unclean-election"]
    (run_dir / "run.json").write_text(json.dumps(data))
    assert report(run_dir) == 0
    assert capsys.readouterr().out.startswith("report: PASSED: ")


def test_rendering_twice_gives_the_same_pages_but_the_footer(rendered: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(rendered, tmp_path / RUN_ID))
    render_run(copy)

    def body(p: Path) -> str:
        return p.read_text().split("<footer>")[0]

    for html in rendered.glob("*.html"):
        assert body(html) == body(copy / html.name), html.name
