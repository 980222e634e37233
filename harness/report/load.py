"""Reading a run directory into the report model, tolerating whatever a failed run left.

A report is most needed exactly when a run went wrong, so nothing here gives up on the
whole run because one file is missing or malformed: each file is read on its own, and a
failure becomes one sentence in ``problems`` that the page shows. Only a missing run
directory is an error. Values are checked as they are read so that the templates never
have to guess whether a field is a number, a string or absent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from faults.schedule import entry_words
from harness.cluster.log_excerpts import NODE_LOGS
from harness.errors import ChaosError
from harness.history import (
    OUTCOME_ACKED,
    Expectations,
    HistoryError,
    RuleResult,
    part_files,
    read_manifest,
)
from harness.history.fields import (
    Malformed,
    as_bool,
    as_int,
    as_list,
    as_num,
    as_obj,
    as_one_of,
    as_opt_int,
    as_opt_num,
    as_opt_str,
    as_str,
)
from harness.history.gaps import first_ack_after, longest_gaps
from harness.history.verdict import VERDICT_FILE, Verdict
from harness.report.load_faults import (
    explain_overruns,
    fault_action,
    fault_rows,
    fault_windows,
    planned_faults,
    schedule_entry,
    schedule_file,
)
from harness.report.load_panels import (
    acked_offsets,
    client_errors,
    group_activity,
    latency_buckets,
    leader_spans,
    partition_health,
    transaction_spans,
)
from harness.report.load_verdict import parse_verdict
from harness.report.model import (
    SETTING_SOURCES,
    SHRINK_FILE,
    TEST_OUTCOMES,
    AckBucket,
    Assertions,
    Check,
    ClientConfig,
    ClusterEvent,
    CoverageCell,
    EffectiveConfig,
    Escalation,
    Exploration,
    ExploredRound,
    FaultWindow,
    HistoryInfo,
    MetadataComparison,
    MetadataDifference,
    MigrationPhase,
    Run,
    RunInfo,
    Scenario,
    ScenarioConfig,
    SessionTest,
    Setting,
    ShrinkResult,
    TopicConfig,
    Window,
)
from harness.workload.client_settings import DEFAULT_CLIENT

T = TypeVar("T")
_HEADER_KEYS = ("scenario", "kafka_version", "schedule", "effective_config")
_PHASES = ("setup", "call", "teardown")
DIAGNOSTICS = "diagnostics"


class ReportError(ChaosError):
    """The run directory itself is unusable (absent, not a directory)."""


def _read_json(path: Path, problems: list[str], required: bool = True) -> Any:
    """The parsed file, or None with a sentence in ``problems`` (if it was required)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            problems.append(f"{path.name} is missing")
        return None
    except OSError as exc:
        problems.append(f"{path.name} cannot be read: {exc.strerror or exc}")
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        problems.append(f"{path.name} is not valid JSON: {exc}")
        return None


# ---------------------------------------------------------------------------------- run


def page_name(scenario_id: str) -> str | None:
    """The scenario's page file, or None if the id is unsafe as a file name.

    Ids come from data, so an id like ``../x`` or ``index`` must not decide where a page
    lands or overwrite the index.
    """
    bad = (
        not scenario_id
        or scenario_id in (".", "..", "index")
        or scenario_id.startswith(".")
        or any(c in scenario_id for c in "/\\\0")
    )
    return None if bad else f"{scenario_id}.html"


def _run_info(run_dir: Path, problems: list[str]) -> RunInfo:
    data = _read_json(run_dir / "run.json", problems)
    try:
        raw = as_obj(data, "run.json") if data is not None else {}
        ids = [str(s) for s in as_list(raw.get("scenarios", []), "run.json scenarios")]
        info = RunInfo(
            run_id=str(raw.get("run_id") or run_dir.name),
            kafka_version=as_opt_str(raw.get("kafka_version")),
            started=as_opt_num(raw.get("started"), "run.json started"),
            finished=as_opt_num(raw.get("finished"), "run.json finished"),
            status=str(raw.get("status") or "unknown"),
            scenario_ids=ids,
            progress=_progress(raw.get("progress")),
        )
    except Malformed as exc:
        problems.append(f"run.json is malformed: {exc}")
        info = RunInfo(run_dir.name, None, None, None, "unknown", [])
    if data is None or not info.scenario_ids:
        # Without a usable list, show every scenario directory rather than an empty page.
        found = sorted(p.name for p in run_dir.iterdir() if (p / "config.json").is_file())
        info = RunInfo(info.run_id, info.kafka_version, info.started, info.finished, info.status, found,
                       info.progress)
    return info


def _progress(raw: object) -> tuple[int, int | None] | None:
    """run.json's ``progress`` while the run goes on: tests done, of how many (None: not
    known); absent or unreadable, None."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("done"), int):
        return None
    total = raw.get("total")
    return int(raw["done"]), (total if isinstance(total, int) else None)


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` holds a run: its run.json, or at least one scenario folder."""
    return (path / "run.json").is_file() or any((p / "config.json").is_file() for p in path.iterdir())


def load_run(run_dir: str | os.PathLike[str]) -> Run:
    """Everything the report shows about one run directory."""
    root = Path(run_dir)
    if not root.is_dir():
        raise ReportError(f"run directory {root} does not exist")
    problems: list[str] = []
    info = _run_info(root, problems)
    seen: set[str] = set()
    scenarios = []
    for sid in info.scenario_ids:
        if sid in seen:
            problems.append(f"scenario {sid!r} is listed twice in run.json; shown once")
            continue
        seen.add(sid)
        scenarios.append(load_scenario(root, sid, info.started))
    run = Run(info, scenarios, problems)
    raw = _read_json(root / "run.json", [])
    if isinstance(raw, Mapping):
        run.tests, run.unreadable_tests = _session_tests(raw.get("tests"), problems)
        run.escalations = _escalations(raw.get("escalations"), problems)
    if (root / "explore.json").exists():
        run.exploration = _exploration(_read_json(root / "explore.json", problems), problems, root)
    if (root / SHRINK_FILE).exists():
        run.shrink = _shrink(_read_json(root / SHRINK_FILE, problems), problems)
    return run


def _shrink(raw: object, problems: list[str]) -> ShrinkResult | None:
    """shrink.json (harness.rounds.shrink_round.write_shrink_result); None, with a
    problem noted, when it cannot be read - the run is then judged like any other."""
    try:
        data = as_obj(raw, SHRINK_FILE)
        after = data.get("faults_after")
        written = data.get("written")
        return ShrinkResult(
            round_id=str(data.get("round", "")),
            target=[str(t) for t in as_list(data.get("target", []), "target")],
            faults_before=as_int(data.get("faults_before"), "faults_before"),
            faults_after=None if after is None else as_int(after, "faults_after"),
            shrunk_faults=[str(f) for f in as_list(data.get("shrunk_faults", []), "shrunk_faults")],
            runs=as_int(data.get("runs"), "runs"),
            stopped_early=bool(data.get("stopped_early", False)),
            written=None if written is None else str(written),
            flaky=[str(f) for f in as_list(data.get("flaky", []), "flaky")])
    except Malformed as exc:
        problems.append(f"{SHRINK_FILE} is malformed ({exc}); the shrink is not shown")
        return None


def _explored_round(raw: object, root: Path) -> ExploredRound:
    r = as_obj(raw, "round")
    scenario = str(r.get("scenario", ""))
    faults = [entry_words(as_obj(e, "schedule entry")) for e in as_list(r.get("schedule", []), "schedule")]
    violated = [str(v) for v in as_list(r.get("violated", []), "violated")]
    shrunk = f"{scenario}/{scenario}-shrunk.toml"  # where `kafka-chaos shrink` writes by default
    return ExploredRound(scenario, str(r.get("outcome", "")), faults, violated,
                         shrunk if scenario and (root / shrunk).is_file() else None)


def _coverage_cell(raw: object) -> CoverageCell:
    c = as_obj(raw, "coverage cell")
    return CoverageCell(str(c.get("kind", "")), str(c.get("role", "")), as_int(c.get("entries"), "entries"),
                        as_num(c.get("seconds"), "seconds"))


def _exploration(raw: object, problems: list[str], root: Path) -> Exploration | None:
    """explore.json (harness.rounds.explore.Exploration.to_dict); None, with a problem
    noted, when it cannot be read."""
    try:
        data = as_obj(raw, "explore.json")
        missing = [str(k) for k in as_list(data.get("kinds_not_exercised", []), "kinds_not_exercised")]
        return Exploration(as_int(data.get("seed"), "seed"),
                           [_explored_round(r, root) for r in as_list(data.get("rounds", []), "rounds")],
                           [_coverage_cell(c) for c in as_list(data.get("coverage", []), "coverage")],
                           missing)
    except Malformed as exc:
        problems.append(f"explore.json is malformed ({exc}); the exploration is not shown")
        return None


# ------------------------------------------------------------------- tests, escalations


def _entries(value: object, name: str, problems: list[str]) -> list[Any] | None:
    """The list run.json holds under ``name``; absent is an empty list (an older run)."""
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"run.json {name} is not a list; not shown")
        return None
    return value


def _session_tests(value: object, problems: list[str]) -> tuple[list[SessionTest], int]:
    """The tests run.json lists, and how many entries could not be read.

    An unreadable entry is counted rather than dropped: it may have been a failure, so
    the run must not pass on the strength of the entries that happened to be readable.
    """
    entries = _entries(value, "tests", problems)
    if entries is None:
        return [], 1
    tests, unreadable = [], 0
    for index, item in enumerate(entries, start=1):
        try:
            tests.append(_session_test(item))
        except Malformed as exc:
            problems.append(f"run.json test {index} is malformed ({exc}); the run cannot pass without it")
            unreadable += 1
    return tests, unreadable


def _session_test(item: object) -> SessionTest:
    t = as_obj(item, "test")
    phase = t.get("phase")
    scenario = t.get("scenario")
    error = t.get("error")
    return SessionTest(
        id=as_str(t.get("id"), "id"),
        kind=str(t.get("kind") or "test"),
        outcome=as_one_of(t.get("outcome"), TEST_OUTCOMES, "outcome"),
        phase=None if phase is None else as_one_of(phase, _PHASES, "phase"),
        error="" if error is None else as_str(error, "error"),
        duration_s=as_num(t.get("duration_s", 0.0), "duration_s"),
        scenario=None if scenario is None else as_str(scenario, "scenario"),
        diagnostics=_relative_folder(t.get("diagnostics")),
    )


def _relative_folder(value: object) -> str | None:
    """A folder inside the run directory, or None; anything pointing outside is refused."""
    if value is None:
        return None
    text = as_str(value, "diagnostics")
    if text.startswith("/") or ".." in Path(text).parts:
        raise Malformed(f"diagnostics folder {text!r} is outside the run")
    return text


def _escalations(value: object, problems: list[str]) -> list[Escalation]:
    entries = _entries(value, "escalations", problems) or []
    escalations = []
    for index, item in enumerate(entries, start=1):
        try:
            e = as_obj(item, "escalation")
            escalations.append(
                Escalation(
                    ts=as_num(e.get("ts"), "ts"),
                    after=str(e.get("after") or ""),
                    problems=[str(x) for x in as_list(e.get("problems", []), "problems")],
                    actions=[str(x) for x in as_list(e.get("actions", []), "actions")],
                    healthy=as_bool(e.get("healthy"), "healthy"),
                )
            )
        except Malformed as exc:
            problems.append(f"run.json escalation {index} is malformed ({exc}); not shown")
    return sorted(escalations, key=lambda e: e.ts)


# ----------------------------------------------------------------------------- scenario


ASSERTIONS_FILE = "assertions.json"  # the scenario's checks and measured windows


@dataclass
class Outcome:
    """A scenario's verdict and checks as its folder recorded them, read and parsed once
    for the page, the CLI's failure lines and the shrinker alike; what could not be read
    is in ``problems``."""

    verdict: Verdict | None
    assertions: Assertions | None
    problems: list[str] = field(default_factory=list)

    def failed_checks(self) -> list[Check]:
        return [] if self.assertions is None else [c for c in self.assertions.checks if c.passed is False]

    def failed_rules(self) -> list[RuleResult]:
        return [] if self.verdict is None else [r for r in self.verdict.rules if not r.passed]

    def failure_lines(self) -> list[str]:
        """Each failed check and rule in one line: ``name: detail``, then the rules' reasons."""
        return ([f"{c.name}: {c.detail}" for c in self.failed_checks()]
                + [r.reason for r in self.failed_rules()])


def read_outcome(sdir: Path) -> Outcome:
    """``sdir``'s verdict.json and assertions.json, parsed; a missing verdict says why."""
    problems: list[str] = []
    verdict = _read_json(sdir / VERDICT_FILE, problems, required=False)
    if verdict is None and not (sdir / VERDICT_FILE).exists():
        problems.append(f"{VERDICT_FILE} is missing: the run stopped before reconciliation, "
                        "so it was not judged")
    parsed = _parse(parse_verdict, verdict, VERDICT_FILE, problems)
    assertions = _parse(_assertions, _read_json(sdir / ASSERTIONS_FILE, problems), ASSERTIONS_FILE, problems)
    return Outcome(parsed, assertions, problems)


def load_scenario(run_dir: Path, sid: str, run_started: float | None = None) -> Scenario:
    page = page_name(sid)
    scenario = Scenario(id=sid, page=page)
    if page is None:
        scenario.problems.append(
            f"scenario id {sid!r} cannot be used as a file name; its files were not read"
        )
        return scenario
    sdir = run_dir / sid
    if not sdir.is_dir():
        scenario.problems.append(f"scenario directory {sid}/ is missing: the run did not reach it")
        return scenario
    p = scenario.problems
    scenario.config = _parse(_config, _read_json(sdir / "config.json", p), "config.json", p)
    outcome = read_outcome(sdir)
    scenario.verdict, scenario.assertions = outcome.verdict, outcome.assertions
    p.extend(outcome.problems)
    events = _read_json(sdir / "cluster_events.json", p)
    scenario.events = _parse(_events, events, "cluster_events.json", p) or []
    scenario.history = _history(sdir / "history", p)
    _load_faults(scenario, sdir, run_started)
    if scenario.history:
        scenario.ack_buckets = ack_buckets(sdir / "history", scenario.bucket_seconds, p)
        sends = send_times(sdir / "history", p)
        scenario.ack_stalls = ack_stalls(sends)
        scenario.first_ack_after_leader_s = first_ack_after_leader(sends, scenario.events, scenario.faults)
        scenario.migration = migration_phases(sdir / "history", p)
        scenario.latency = latency_buckets(sdir / "history", scenario.bucket_seconds, p)
        scenario.partition_health = partition_health(sdir / "history", p)
        scenario.client_errors = client_errors(sdir / "history", p)
        scenario.groups = group_activity(sdir / "history", p)
        scenario.transactions = transaction_spans(sdir / "history", p)
        mapped = _mapped(scenario)
        scenario.acked_offsets = acked_offsets(sdir / "history", mapped, p)
        end = scenario.history.finished or max((f.end or f.start for f in scenario.faults), default=0.0)
        scenario.leader_spans = leader_spans(sdir / "history", mapped, end, p)
    if (sdir / "metadata.json").is_file():
        scenario.metadata = _parse(_metadata, _read_json(sdir / "metadata.json", p), "metadata.json", p)
    scenario.diagnostics = _diagnostics(sdir)
    scenario.node_logs = _files_under(sdir, NODE_LOGS)
    return scenario


def _load_faults(scenario: Scenario, sdir: Path, run_started: float | None) -> None:
    """Fault actions and windows: recorded in the history, else recorded in schedule.json
    (a scenario file's run), else placed from the plan and marked approximate."""
    p = scenario.problems
    scenario.has_schedule_file = (sdir / "schedule.json").is_file()
    saved: list[dict[str, Any]] = []
    if scenario.has_schedule_file:
        parsed = _parse(schedule_file, _read_json(sdir / "schedule.json", p), "schedule.json", p)
        if parsed is not None:
            scenario.schedule_entries, saved = parsed
    rows = fault_rows(sdir / "history", p) if scenario.history else []
    source = "history"
    if not rows and saved:
        rows, source = saved, "schedule.json"
    if rows:
        scenario.fault_actions = [fault_action(r) for r in rows]
        scenario.fault_actions_source = source
        scenario.faults = explain_overruns(fault_windows(rows), scenario.planned)
    elif scenario.planned:
        anchor = (scenario.history.started if scenario.history else None) or run_started
        scenario.faults = planned_faults(scenario.planned, anchor)


def _diagnostics(sdir: Path) -> list[str]:
    """Files under <scenario>/diagnostics/ (container logs, znodes.json), relative to the
    run directory so the page links them from disk. Logs first, then the rest."""
    rel = _files_under(sdir, DIAGNOSTICS)
    return sorted(rel, key=lambda r: (f"{sdir.name}/{DIAGNOSTICS}/logs/" not in r, r))


def _files_under(sdir: Path, folder: str) -> list[str]:
    """The files under <scenario>/<folder>/ (hidden ones left out), relative to the run
    directory, in name order."""
    ddir = sdir / folder
    if not ddir.is_dir():
        return []
    files = [
        f
        for f in ddir.rglob("*")
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(ddir).parts)
    ]
    return sorted(str(f.relative_to(sdir.parent)).replace(os.sep, "/") for f in files)


def _mapped(scenario: Scenario) -> set[tuple[str, int]]:
    """The partitions the verdict places a send-side finding in: the offset map's."""
    v = scenario.verdict
    return {(p.topic, p.partition) for p in (v.partitions if v else []) if any(p.ranges.values())}


def ack_buckets(hdir: Path, width: float, problems: list[str]) -> list[AckBucket] | None:
    """Acknowledgements per ``width`` seconds by the time they ARRIVED (ack_ts), read
    straight from the sends table: only two columns are read, and counted in Arrow."""
    try:
        tables = [pq.read_table(f, columns=["ack_ts", "outcome"]) for f in part_files(hdir, "sends")]
    except (OSError, pa.ArrowException) as exc:
        problems.append(f"the history's sends table cannot be read for acknowledgement times: {exc}")
        return None
    if not tables or width <= 0:
        return None
    sends = pa.concat_tables(tables)
    acked = sends.filter(pc.and_(pc.equal(sends["outcome"], OUTCOME_ACKED), pc.is_valid(sends["ack_ts"])))
    if acked.num_rows == 0:
        return []
    index = pc.floor(pc.divide(acked["ack_ts"], width))
    counts = pc.value_counts(index)
    pairs = zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True)
    return sorted((AckBucket(float(i) * width, int(c)) for i, c in pairs), key=lambda b: b.start)


def migration_phases(hdir: Path, problems: list[str]) -> list[MigrationPhase]:
    """The migration's phases from the history's migration table, in the order walked;
    none for a history without the table (written before schema 8) or without rows."""
    try:
        files = part_files(hdir, "migration")
        rows = [row for f in files for row in pq.read_table(f).to_pylist()]
    except (OSError, pa.ArrowException) as exc:
        problems.append(f"the history's migration table cannot be read: {exc}")
        return []
    return [MigrationPhase(str(r["phase"]), float(r["ts"]), float(r["end_ts"]), str(r["outcome"]),
                           r["detail"]) for r in rows]


def send_times(hdir: Path, problems: list[str]) -> list[dict[str, Any]] | None:
    """Each send's partition, outcome and both times; None when the table cannot be read."""
    columns = ["partition", "outcome", "ack_ts", "send_ts"]
    try:
        tables = [pq.read_table(f, columns=columns) for f in part_files(hdir, "sends")]
    except (OSError, pa.ArrowException) as exc:
        problems.append(f"the history's sends table cannot be read for acknowledgement stalls: {exc}")
        return None
    if not tables:
        return None
    rows: list[dict[str, Any]] = pa.concat_tables(tables).to_pylist()
    return rows


def ack_stalls(rows: list[dict[str, Any]] | None) -> dict[int, float] | None:
    """Per partition, the longest it went without an acknowledgement while the producers
    were sending (from the first send to the last): :func:`harness.history.gaps.longest_gaps`
    over the sends."""
    if rows is None:
        return None
    if not rows:
        return {}
    sent = [float(r["send_ts"]) for r in rows]
    return longest_gaps(rows, min(sent), max(sent))


def first_ack_after_leader(rows: list[dict[str, Any]] | None, events: list[ClusterEvent],
                           faults: list[FaultWindow]) -> float | None:
    """Seconds from the first leader change to a live broker after the first fault to the
    first acknowledgement on that partition: how soon the clients found the new leader."""
    if not rows or not faults:
        return None
    started = min(f.start for f in faults)
    for event in events:
        if event.new_leader is not None and event.ts >= started and event.partition is not None:
            return first_ack_after(rows, event.partition, event.ts)
    return None


def _parse(parser: Callable[[Any, list[str]], T], data: Any, name: str, problems: list[str]) -> T | None:
    """Run one file's parser; a malformed file becomes a problem and None."""
    if data is None:
        return None
    try:
        return parser(data, problems)
    except (Malformed, KeyError) as exc:
        problems.append(f"{name} is malformed: {exc}")
        return None


def _metadata(data: Any, problems: list[str]) -> MetadataComparison:
    """metadata.json as the migration's check wrote it."""
    before, after = data["before"], data["after"]
    found = [MetadataDifference(str(d["path"]), d.get("before"), d.get("after")) for d in data["differences"]]
    return MetadataComparison(str(before["source"]), len(before["paths"]), str(after["source"]),
                              len(after["paths"]), found)


def _config(data: Any, problems: list[str]) -> ScenarioConfig:
    raw = as_obj(data, "config.json")
    head = as_obj(raw.get("scenario", {}), "scenario")
    schedule = [
        schedule_entry(as_obj(e, "schedule entry")) for e in as_list(raw.get("schedule", []), "schedule")
    ]
    effective = None
    if raw.get("effective_config") is not None:
        try:
            effective = _effective(raw["effective_config"])
        except (Malformed, KeyError) as exc:  # the rest of config.json still reads
            problems.append(f"config.json's effective_config is malformed: {exc}")
    return ScenarioConfig(
        title=str(head.get("title") or ""),
        description=str(head.get("description") or ""),
        expected=str(head.get("expected") or ""),
        kafka_version=as_opt_str(raw.get("kafka_version")),
        schedule=schedule,
        sections={
            k: _full_rules(v) if k == "expectations" else v for k, v in raw.items() if k not in _HEADER_KEYS
        },
        effective=effective,
    )


def _settings(raw: Any, what: str) -> list[Setting]:
    rows = []
    for item in as_list(raw, what):
        r = as_obj(item, f"{what} setting")
        rows.append(
            Setting(
                key=as_str(r["key"], f"{what} setting key"),
                value=r.get("value"),
                source=as_one_of(r.get("source"), SETTING_SOURCES, f"{what} setting source"),
                replaced=r.get("replaced"),
                replaced_source=None
                if r.get("replaced_source") is None
                else as_one_of(r.get("replaced_source"), SETTING_SOURCES, f"{what} replaced source"),
            )
        )
    return rows


def _effective(data: Any) -> EffectiveConfig:
    """config.json's effective_config (harness.scenario.run_config.effective_config)."""
    raw = as_obj(data, "effective_config")
    # "topics" (every topic, the scenario's own first); runs before pipelines wrote "topic".
    listed = raw.get("topics", [] if raw.get("topic") is None else [raw["topic"]])
    topics = []
    for item in as_list(listed, "topics"):
        t = as_obj(item, "topic")
        topics.append(TopicConfig(
            name=str(t.get("name", "")),
            partitions=as_opt_int(t.get("partitions"), "topic partitions"),
            replication_factor=as_opt_int(t.get("replication_factor"), "topic replication_factor"),
            settings=_settings(t.get("settings", []), "topic"),
        ))
    clients = []
    for item in as_list(raw.get("clients", []), "clients"):
        c = as_obj(item, "client")
        role = as_one_of(c.get("role"), ("producer", "consumer"), "client role")
        name = as_str(c.get("name"), "client name")
        settings = _settings(c.get("settings", []), name)
        clients.append(ClientConfig(role, name, str(c.get("zone", "")), settings,
                                    str(c.get("client", DEFAULT_CLIENT.label))))
    return EffectiveConfig(_settings(raw.get("brokers", []), "brokers"), topics, clients)


def _full_rules(value: Any) -> Any:
    """Every kind's rule, defaults included: a kind left out means "none allowed", and a
    page that showed only the listed kinds would suggest the others were unchecked."""
    try:
        return {k: str(v) for k, v in Expectations.from_dict(as_obj(value, "expectations")).to_dict().items()}
    except (HistoryError, Malformed):
        return value


# --------------------------------------------------------------------- assertions, events


def _assertions(data: Any, problems: list[str]) -> Assertions:
    raw = as_obj(data, "assertions")
    checks = []
    for item in as_list(raw.get("checks", []), "checks"):
        c = as_obj(item, "check")
        ok = c.get("passed")
        checks.append(
            Check(
                str(c.get("name", "?")),
                None if ok is None else as_bool(ok, "check passed"),
                str(c.get("detail", "")),
            )
        )
    windows = [
        Window(str(w.get("name", "?")), as_opt_num(w.get("seconds"), "window seconds"))
        for w in (as_obj(x, "window") for x in as_list(raw.get("windows", []), "windows"))
    ]
    passed = as_bool(raw["passed"], "passed")
    if passed and any(c.passed is False for c in checks):
        problems.append("assertions.json says passed although a check failed; shown as failed")
        passed = False
    return Assertions(passed, checks, windows)


def _events(data: Any, problems: list[str]) -> list[ClusterEvent]:
    events = [
        ClusterEvent(
            ts=as_num(e.get("ts"), "event ts"),
            kind=str(e.get("kind", "?")),
            topic=as_opt_str(e.get("topic")),
            partition=as_opt_int(e.get("partition"), "event partition"),
            detail=str(e.get("detail", "")),
        )
        for e in (as_obj(x, "event") for x in as_list(data, "cluster_events.json"))
    ]
    return sorted(events, key=lambda e: e.ts)


# ------------------------------------------------------------------------------ history


def _history(hdir: Path, problems: list[str]) -> HistoryInfo | None:
    if not hdir.is_dir():
        problems.append("history/ is missing")
        return None
    try:
        manifest = read_manifest(hdir)
        status, started, finished = manifest.status, manifest.started, manifest.finished
    except HistoryError as exc:
        problems.append(str(exc))
        status, started, finished = "unreadable", None, None
    if status != "complete" and status != "unreadable":
        problems.append(f"the history is not complete (status {status}): its tables may be partial")
    files = sorted(
        str(Path(dirpath, name).relative_to(hdir.parent)).replace(os.sep, "/")
        for dirpath, dirnames, names in os.walk(hdir)
        for name in names
        if not name.startswith((".", "_"))
        if not any(part.startswith(".") for part in Path(dirpath).relative_to(hdir).parts)
    )
    return HistoryInfo(status, started, finished, files)
