"""The rendered pages: verdict first, self-contained, every link resolves, all text escaped."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from markupsafe import escape

from harness.history import HistoryWriter
from harness.report import render_run, render_run_with_outcome
from harness.report.cli import report
from tests.report.sample_run import (
    FABRIC_ERROR,
    FABRIC_TEST,
    HEAL_ERROR,
    RUN_ID,
    build_sample_run,
    sample_tests,
)

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
            # matplotlib's SVG refers to its own symbols by fragment (#m...), and embeds a
            # rasterized layer as a data: image: neither is a load from outside the page
            if value and tag != "a" and not value.startswith(("#", "data:image/png;base64,")):
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
    # killed before the schedule finished: schedule.json holds the plan, nothing recorded
    schedule = json.loads((sdir / "schedule.json").read_text())
    (sdir / "schedule.json").write_text(json.dumps({"version": 1, "entries": schedule["entries"]}))
    manifest = json.loads((sdir / "history" / "manifest.json").read_text())
    manifest.update(status="running", finished=None)
    (sdir / "history" / "manifest.json").write_text(json.dumps(manifest))
    data = json.loads((run_dir / "run.json").read_text())
    data.update(status="running", finished=None, scenarios=["s5-unclean-election"], tests=[], escalations=[])
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
    assert report(run_dir) == 1  # the scenario left passes, but failed tests still fail the run
    capsys.readouterr()
    data["tests"] = [t for t in data["tests"] if t["outcome"] in ("passed", "skipped")]
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


# ------------------------------------------------------------------ tests, escalations


def _rows(html: Path, table_id: str) -> list[str]:
    """Each row of one table as raw HTML, header excluded."""
    raw = html.read_text()
    body = raw.split(f'<table id="{table_id}">', 1)[1].split("</table>", 1)[0]
    return body.split("<tbody>", 1)[1].split("<tr")[1:]


def test_index_headline_counts_tests_and_scenarios(rendered: Path) -> None:
    text = parse(rendered / "index.html").visible
    assert text.startswith(
        "kafka-chaos run 20231114-221300-demo failed 3 scenarios: 1 passed, 1 failed, 1 not judged; "
        "7 tests: 2 passed, 2 failed, 2 errors, 1 skipped"
    )


def test_index_lists_every_test_with_its_error_escaped_and_folded(rendered: Path) -> None:
    page = parse(rendered / "index.html")
    rows = _rows(rendered / "index.html", "tests")
    assert len(rows) == len(sample_tests())
    for test, row in zip(sample_tests(), rows, strict=True):
        assert escape(test["id"]) in row
        assert ('class="bad"' in row) == (test["outcome"] in ("failed", "error")), test["id"]
        if test["error"]:
            assert f"<pre>{escape(test['error'])}</pre>" in row and "<details" in row
    fabric = rows[3]
    assert 'badge failed">failed<' in fabric and ">call<" in fabric
    assert "<summary>AssertionError: &lt;script&gt;" in fabric
    assert 'badge failed">error<' in rows[4] and ">setup<" in rows[4]
    assert 'badge skipped">skipped<' in rows[5]
    assert '<a href="s7-link-cut.html">s7-link-cut</a>' in rows[2]
    assert "script" not in page.tags
    assert "E AssertionError: <script>console.error(\"traceback\")</script> kafka-0 & zk-a" in page.visible


def _edit_run(run_dir: Path, **changes: object) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    data.update(changes)
    (run_dir / "run.json").write_text(json.dumps(data))


def _passing(tests: list[dict[str, object]]) -> list[dict[str, object]]:
    return [t | {"outcome": "passed", "phase": None, "error": ""} for t in tests]


def test_a_failed_fabric_test_makes_the_headline_failed_and_shows_why(run_dir: Path) -> None:
    tests = _passing(sample_tests())
    tests[3].update(outcome="failed", phase="call", error=FABRIC_ERROR)
    _edit_run(run_dir, scenarios=["s5-unclean-election"], tests=tests)
    index, outcome, _ = render_run_with_outcome(run_dir)
    assert outcome == "failed"
    text = parse(index).visible
    assert text.startswith("kafka-chaos run 20231114-221300-demo failed 1 scenario: 1 passed, 0 failed")
    assert "7 tests: 6 passed, 1 failed, 0 errors, 0 skipped" in text
    assert FABRIC_TEST in text and "still reachable from client-c" in text
    assert index.read_text().startswith("<!DOCTYPE html>") and "<title>FAILED" in index.read_text()


def test_the_same_run_with_the_fabric_test_passed_is_passed(run_dir: Path) -> None:
    _edit_run(run_dir, scenarios=["s5-unclean-election"], tests=_passing(sample_tests()))
    index, outcome, _ = render_run_with_outcome(run_dir)
    assert outcome == "passed"
    assert parse(index).visible.startswith("kafka-chaos run 20231114-221300-demo passed 1 scenario")
    assert 'class="bad"' not in index.read_text()


def test_render_run_with_outcome_says_not_judged_for_an_empty_run(run_dir: Path) -> None:
    _edit_run(run_dir, scenarios=[], tests=[])
    for sid in ("s3-kill-leader", "s5-unclean-election", "s7-link-cut"):
        shutil.rmtree(run_dir / sid)
    index, outcome, _ = render_run_with_outcome(run_dir)
    assert (index.name, outcome) == ("index.html", "not judged")


def test_escalations_are_shown(rendered: Path) -> None:
    page = parse(rendered / "index.html")
    assert "escalations" in page.ids
    text = page.visible
    assert "cluster health was restored by restarted kafka-2" in text
    assert "kafka-2 not in /brokers/ids" in text and "+110.0 s" in text


def test_an_escalation_that_did_not_restore_health_is_flagged(run_dir: Path) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    data["escalations"][0].update(healthy=False, actions=["restarted kafka-2", "replaced the cluster"])
    (run_dir / "run.json").write_text(json.dumps(data))
    render_run(run_dir)
    [row] = _rows(run_dir / "index.html", "escalation-table")
    assert 'class="bad"' in row and "still unhealthy" in row and "replaced the cluster" in row


def test_an_old_run_json_renders_without_tests_or_escalations(run_dir: Path) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    del data["tests"], data["escalations"]
    (run_dir / "run.json").write_text(json.dumps(data))
    render_run(run_dir)
    page = parse(run_dir / "index.html")
    assert "tests" not in page.ids and "escalations" not in page.ids
    assert "run.json lists no tests" in page.visible
    assert "3 scenarios: 1 passed, 1 failed, 1 not judged The run passes" in page.visible


# ------------------------------------------------------- scenario page: faults, diagnostics


def test_fault_error_text_is_shown_and_highlighted(rendered: Path) -> None:
    html = rendered / "s3-kill-leader.html"
    page = parse(html)
    assert "fault-actions" in page.ids
    inject, heal = _rows(html, "fault-actions")
    assert 'class="bad"' not in inject and ">ok<" in inject
    assert 'class="bad"' in heal and escape(HEAL_ERROR) in heal
    [window] = _rows(html, "faults")
    assert 'class="bad"' in window and escape(f"heal: {HEAL_ERROR}") in window
    assert "1 reported an error" in page.visible
    assert "all reported ok" in parse(rendered / "s5-unclean-election.html").visible


def test_diagnostics_are_linked_relative_to_the_page(rendered: Path) -> None:
    page = parse(rendered / "s3-kill-leader.html")
    assert "diagnostics" in page.ids
    logs = [h for h in page.hrefs if h.startswith("s3-kill-leader/diagnostics/logs/")]
    assert sorted(logs) == sorted(
        f"s3-kill-leader/diagnostics/logs/{n}.log"
        for n in ("kafka-0", "kafka-1", "kafka-2", "zk-a", "zk-b", "zk-c", "toxiproxy")
    )
    assert "s3-kill-leader/diagnostics/znodes.json" in page.hrefs
    assert "diagnostics" not in parse(rendered / "s5-unclean-election.html").ids


def test_zookeeper_gaps_are_listed_and_marked(rendered: Path) -> None:
    html = rendered / "s5-unclean-election.html"
    page = parse(html)
    assert "zk-gaps" in page.ids
    [row] = _rows(html, "zk-gaps")
    assert "+20.4 s" in row and "+23.9 s" in row and "ConnectionLoss" in row
    assert "ZooKeeper unreadable" in html.read_text()  # the timeline's legend
    assert "zk-gaps" not in parse(rendered / "s3-kill-leader.html").ids


def test_the_planned_schedule_and_recorded_actions_are_both_shown(rendered: Path) -> None:
    page = parse(rendered / "s7-link-cut.html")
    assert {"schedule-table", "fault-actions"} <= page.ids
    assert "2 actions recorded" in page.visible
    assert "(2 recorded actions)" in page.visible


def test_the_timeline_has_an_acknowledgement_panel(rendered: Path) -> None:
    raw = (rendered / "s5-unclean-election.html").read_text()
    assert "acks received /s" in raw
    assert "acknowledgements per second by the time they arrived" in parse(
        rendered / "s5-unclean-election.html"
    ).visible


def test_a_tests_diagnostics_are_linked_and_a_path_outside_the_run_is_refused(tmp_path: Path) -> None:
    from harness.report import load_run, render_run

    run_dir = tmp_path / "run-diag"
    run_dir.mkdir()
    entry = {"id": "tests/chaos/test_x.py::test_breaks", "kind": "test", "outcome": "error",
             "phase": "teardown", "error": "left the cluster unhealthy", "duration_s": 1.0,
             "scenario": None, "diagnostics": "tests/tests-chaos-test_x.py-test_breaks/diagnostics"}
    header = {"run_id": "run-diag", "kafka_version": "3.7.2", "started": 1.0, "finished": 2.0,
              "status": "complete", "scenarios": [], "tests": [entry]}
    (run_dir / "run.json").write_text(json.dumps(header))
    html = render_run(run_dir).read_text()
    assert 'href="tests/tests-chaos-test_x.py-test_breaks/diagnostics/znodes.json"' in html
    assert load_run(run_dir).outcome.value == "failed"

    header["tests"] = [{**entry, "diagnostics": "../../etc"}]
    (run_dir / "run.json").write_text(json.dumps(header))
    run = load_run(run_dir)
    assert run.unreadable_tests == 1 and run.outcome.value != "passed"


def _table_rows(path: Path, table_id: str) -> list[list[str]]:
    """The cells of each body row of the table with ``table_id``, as visible text."""

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[list[str]] = []
            self.classes: list[str] = []
            self._inside = self._body = False
            self._cell: list[str] | None = None

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if tag == "table":
                self._inside = a.get("id") == table_id
            elif self._inside and tag == "tbody":
                self._body = True
            elif self._inside and self._body and tag == "tr":
                self.rows.append([])
                self.classes.append(str(a.get("class") or ""))
            elif self._inside and self._body and tag == "td":
                self._cell = []

        def handle_endtag(self, tag: str) -> None:
            if tag == "td" and self._cell is not None:
                self.rows[-1].append(" ".join("".join(self._cell).split()))
                self._cell = None
            elif tag == "table":
                self._inside = self._body = False

        def handle_data(self, data: str) -> None:
            if self._cell is not None:
                self._cell.append(data)

    parser = Rows()
    parser.feed(path.read_text(encoding="utf-8"))
    return [[*row, cls] for row, cls in zip(parser.rows, parser.classes, strict=True)]


def test_each_client_shows_its_effective_configuration_with_defaults_marked(rendered: Path) -> None:
    page = rendered / "s5-unclean-election.html"
    text = parse(page).visible
    assert text.index("Effective configuration") > text.index("Configuration")
    assert "Producer pa (zone a, librdkafka)" in text and "Consumer cb (zone b, librdkafka)" in text
    producer = {row[0]: row for row in _table_rows(page, "effective-client-1")}
    assert producer["linger.ms"] == ["linger.ms", "5", "harness default", "inherited"]
    assert producer["retries"] == ["retries", "2147483647", "scenario", "set"]
    assert producer["enable.idempotence"] == [
        "enable.idempotence", "false", "scenario (same as the harness default)", "set"]
    assert producer["client.id"][1:3] == ["chosen per client by the harness", "harness"]
    consumer = {row[0]: row for row in _table_rows(page, "effective-client-4")}
    assert consumer["group.id"][1:3] == ["chosen per client by the harness", "harness"]
    assert consumer["enable.auto.commit"][1:3] == ["false", "harness default"]


def test_broker_and_topic_settings_show_who_set_them(rendered: Path) -> None:
    page = rendered / "s5-unclean-election.html"
    brokers = {row[0]: row[1:] for row in _table_rows(page, "effective-brokers")}
    assert brokers["log.flush.interval.messages"] == ["1", "scenario", "set"]
    assert brokers["replica.lag.time.max.ms"] == ["5000", "topology", "inherited"]
    topic = {row[0]: row[1:] for row in _table_rows(page, "effective-topic")}
    assert topic["min.insync.replicas"] == ["1", "scenario (same as the broker setting)", "set"]
    assert topic["unclean.leader.election.enable"] == ["true", "scenario", "set"]
    s3 = rendered / "s3-kill-leader.html"
    assert {row[0]: row[1:] for row in _table_rows(s3, "effective-topic")}["min.insync.replicas"] == [
        "2", "scenario (replaces 1 from broker setting)", "set"]


def test_every_topic_of_a_scenario_gets_its_own_settings_table(run_dir: Path) -> None:
    path = run_dir / "s3-kill-leader" / "config.json"
    config = json.loads(path.read_text())
    effective = config["effective_config"]
    own = effective.pop("topic")  # as runs before pipelines wrote it; now a list of every topic
    further = {"name": "s3-out", "partitions": 2, "replication_factor": 2,
               "settings": [{"key": "min.insync.replicas", "value": "1", "source": "scenario"}]}
    effective["topics"] = [own, further]
    path.write_text(json.dumps(config))
    render_run(run_dir)
    page = run_dir / "s3-kill-leader.html"
    text = parse(page).visible
    assert f"Topic {own['name']}" in text and "Topic s3-out" in text
    assert "2 partitions, replication factor 2" in text
    assert {row[0]: row[1:] for row in _table_rows(page, "effective-topic-2")}["min.insync.replicas"] == [
        "1", "scenario", "set"]
    assert "min.insync.replicas" in {row[0] for row in _table_rows(page, "effective-topic")}


def test_a_page_without_an_effective_configuration_says_so(run_dir: Path) -> None:
    path = run_dir / "s3-kill-leader" / "config.json"
    config = json.loads(path.read_text())
    del config["effective_config"]
    path.write_text(json.dumps(config))
    render_run(run_dir)
    text = parse(run_dir / "s3-kill-leader.html").visible
    assert "Not recorded for this scenario" in text
    assert "max.in.flight.requests.per.connection" in text  # the recorded producer section still shows


def test_effective_settings_from_data_are_escaped(run_dir: Path) -> None:
    path = run_dir / "s3-kill-leader" / "config.json"
    config = json.loads(path.read_text())
    config["effective_config"]["brokers"].append({"key": HOSTILE, "value": HOSTILE, "source": "scenario"})
    config["effective_config"]["clients"][0]["name"] = HOSTILE
    path.write_text(json.dumps(config))
    render_run(run_dir)
    raw = (run_dir / "s3-kill-leader.html").read_text()
    assert "<script" not in raw and "<img" not in raw
    assert parse(run_dir / "s3-kill-leader.html").visible.count('<script>alert("x")</script>') >= 3


def test_an_exploration_shows_its_rounds_and_coverage(run_dir: Path) -> None:
    (run_dir / "explore.json").write_text(json.dumps({
        "seed": 7,
        "rounds": [
            {"scenario": "s3-kill-leader", "outcome": "passed",
             "schedule": [{"start_s": 3.5, "duration_s": 8.0, "fault": "kill", "target": "controller"}]},
            {"scenario": "explore-7-r1", "outcome": "failed", "violated": ["rule lost"],
             "schedule": [{"start_s": 0.5, "duration_s": 2.0, "fault": "cut",
                           "links": {"isolate": {"zone": "a"}}, "mode": "blackhole"}]},
            {"scenario": "explore-7-r2", "outcome": "failed", "violated": [],
             "schedule": [{"start_s": 1.0, "duration_s": 2.0, "fault": "kill", "target": "controller"}]}],
        "coverage": [{"kind": "cut", "role": "isolate:zone", "entries": 1, "seconds": 2.0},
                     {"kind": "kill", "role": "controller", "entries": 1, "seconds": 8.0}],
        "kinds_not_exercised": ["pause", "reassign"]}))
    (run_dir / "explore-7-r1").mkdir()
    (run_dir / "explore-7-r1" / "explore-7-r1-shrunk.toml").write_text('id = "explore-7-r1-shrunk"\n')
    render_run(run_dir)
    index = run_dir / "index.html"
    text = parse(index).visible
    assert "Seed 7: 3 round(s), 1 violated, 1 could not be judged as drawn" in text
    assert 'href="explore-7-r1/explore-7-r1-shrunk.toml">shrunk schedule' in index.read_text()
    assert text.count("shrunk schedule") == 1  # only the round that was shrunk
    assert "Kinds never drawn: pause, reassign." in text
    rounds = _table_rows(index, "exploration-rounds")
    assert rounds[0][:2] == ["s3-kill-leader", "PASSED"]
    assert 'kill "controller" at 3.5 s for 8 s' in rounds[0][3]
    assert rounds[1][1:3] == ["FAILED", "rule lostshrunk schedule"] and rounds[1][-1] == "bad"
    assert rounds[2][1:3] == ["FAILED", "not judged as drawn"]
    assert "s3-kill-leader.html" in index.read_text()  # a round with a page links to it
    coverage = _table_rows(index, "exploration-coverage")
    assert [row[:4] for row in coverage] == [["cut", "isolate:zone", "1", "2.0"],
                                             ["kill", "controller", "1", "8.0"]]


def test_a_run_that_did_not_explore_has_no_exploration_section(rendered: Path) -> None:
    assert "Exploration" not in parse(rendered / "index.html").visible


def test_a_malformed_exploration_is_named_not_shown(run_dir: Path) -> None:
    (run_dir / "explore.json").write_text(json.dumps({"seed": "seven", "rounds": []}))
    render_run(run_dir)
    text = parse(run_dir / "index.html").visible
    assert "explore.json is malformed" in text and "Seed" not in text


SHRINK = {"round": "explore-r7", "target": ["rule lost"], "faults_before": 3, "faults_after": 2,
          "shrunk_faults": ["kill broker 0 at 5s for 10s", "isolate zone a at 8s for 12s"], "runs": 9,
          "stopped_early": False, "written": "reports/x/explore-r7/explore-r7-shrunk.toml",
          "flaky": ["candidate 4 (kill broker 0 at 5s for 10s) failed 1 of 3 runs"]}


def test_a_shrink_runs_headline_says_what_the_shrink_did_not_what_its_candidates_did(run_dir: Path) -> None:
    """The candidates fail by design (the shrink keeps the ones that still break the
    round), so the headline is the shrink's: 3 -> 2, exit 0; the candidates keep their
    own verdicts in the table."""
    (run_dir / "shrink.json").write_text(json.dumps(SHRINK))
    index, headline, succeeded = render_run_with_outcome(run_dir)
    assert (headline, succeeded) == ("shrunk 3 -> 2", True)
    text = parse(index).visible
    assert text.startswith("kafka-chaos run 20231114-221300-demo shrunk 3 -> 2 ")
    assert "cut from 3 faults to 2 in 9 runs: kill broker 0 at 5s for 10s; isolate zone a" in text
    assert "It still violates rule lost" in text and "(exit 0)" in text
    assert "Flaky, counted as passing: candidate 4" in text
    assert "<title>SHRUNK 3 -&gt; 2" in index.read_text()
    assert report(run_dir) == 0


def test_a_shrink_that_found_nothing_to_shrink_or_was_interrupted_does_not_succeed(run_dir: Path) -> None:
    (run_dir / "shrink.json").write_text(json.dumps({**SHRINK, "faults_after": None, "shrunk_faults": [],
                                                     "written": None, "runs": 0, "flaky": []}))
    index, headline, succeeded = render_run_with_outcome(run_dir)
    assert (headline, succeeded) == ("nothing to shrink", False)
    assert "violated nothing when it ran again" in parse(index).visible and report(run_dir) == 1
    (run_dir / "shrink.json").write_text(json.dumps(SHRINK))
    _edit_run(run_dir, status="interrupted")
    _, headline, succeeded = render_run_with_outcome(run_dir)
    assert headline != "shrunk 3 -> 2" and not succeeded


def test_a_migrations_phases_and_metadata_differences_are_tables_on_its_page(run_dir: Path) -> None:
    sdir = run_dir / "s3-kill-leader"
    writer = HistoryWriter(sdir / "history_migration", run_id="r")
    t = 1_700_000_000.0
    failure = "RuntimeError: kafka-1 did not start"
    for i, (phase, outcome) in enumerate((("provision", "completed"), ("enter_migration", "failed"))):
        writer.append("migration", {"phase": phase, "ts": t + 10 * i, "mono": 10.0 * i,
                                    "end_ts": t + 10 * i + 8, "end_mono": 10.0 * i + 8, "outcome": outcome,
                                    "detail": failure if outcome == "failed" else None, "steps": None})
    writer.close()
    for part in (sdir / "history_migration" / "migration").iterdir():
        (sdir / "history" / "migration").mkdir(exist_ok=True)
        part.replace(sdir / "history" / "migration" / part.name)
    (sdir / "metadata.json").write_text(json.dumps({
        "before": {"source": "zookeeper",
                   "paths": {"topics/t/configs/min.insync.replicas": "2", "topics/t/id": "x"}},
        "after": {"source": "kraft", "paths": {"topics/t/id": "x"}},
        "differences": [{"path": "topics/t/configs/min.insync.replicas", "before": "2", "after": None}]}))
    render_run(run_dir)
    visible = parse(run_dir / "s3-kill-leader.html").visible
    # The sample's sends: 120 in each phase's 8 s, 31 of enter_migration's failed or in doubt,
    # acknowledgements arriving in every second of both.
    assert ("The migration walked 2 phases in 18.0 s; enter_migration failed and the walk stopped there. "
            "provision (8.0 s) started the KRaft controllers with the migration enabled, formatted with the "
            "cluster's id: 120 sends, none failed, no stretch without an acknowledgement. enter_migration "
            "(8.0 s) restarted every broker but the last in migration mode, one at a time: 120 sends, 31 "
            "failed or in doubt, no stretch without an acknowledgement. It failed: RuntimeError: kafka-1 did "
            "not start.") in visible
    assert "RuntimeError: kafka-1 did not start" in visible
    assert "2 paths read from zookeeper before the migration, 1 from kraft after it; 1 differ" in visible
    assert "topics/t/configs/min.insync.replicas" in visible
    plain = parse(run_dir / "s5-unclean-election.html").visible
    assert "The migration walked" not in plain and "paths read from" not in plain


def test_a_loss_is_listed_where_it_happened_and_its_messages_are_not_listed_twice(rendered: Path) -> None:
    text = parse(rendered / "s5-unclean-election.html").visible
    lost, truncated = text.index("lost: 30"), text.index("truncated: 60")
    assert "orders-0 offsets 40\u201369 (30), acknowledged +13.1 s to +13.8 s" in text[lost:truncated]
    assert "Its first examples are the same messages as under lost, above." in text[truncated:]
    assert text.count("pc-40") == 1, "the lost examples are shown once"
    assert "acknowledged and lost (30)" in text


def test_only_the_families_judged_are_listed_and_the_others_are_named(rendered: Path) -> None:
    text = parse(rendered / "s5-unclean-election.html").visible
    rules = text[text.index("Anomaly Count Rule"):text.index("Timeline")]
    assert "unseen" in rules and "txn_partial" not in rules and "pipeline_orphan" not in rules
    assert ("Not judged, so not listed: the groups kinds (the history holds no consumer-group reads, "
            "commits or rebalances); the transactions kinds") in rules


def test_a_slow_heal_is_drawn_to_its_end_and_said_under_its_fault(run_dir: Path) -> None:
    """S3's kill is healed at its planned end but its broker is back 20 s later: the
    Faults table counts the fault over only then, and says why it lasted longer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    faults = run_dir / "s3-kill-leader" / "history" / "faults"
    [part] = list(faults.iterdir())
    rows = pq.read_table(part).to_pylist()
    for row in rows:
        row["done_ts"] = row["ts"] + (20.0 if row["action"] == "heal" else 0.0)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(part)), part)
    render_run(run_dir)
    [fault, note] = _rows(run_dir / "s3-kill-leader.html", "faults")
    assert ">+45.0 s<" in fault and ">35 s<" in fault  # injected +10 s, healed +25 s, back +45 s
    assert "Planned 15 s, lasted 35.0 s, because the heal took 20.0 s" in note
