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
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.errors import ChaosError
from harness.history import (
    ANOMALY_KINDS,
    FAULTS_SCHEMA,
    OUTCOME_ACKED,
    Expectations,
    HistoryError,
    part_files,
    read_manifest,
)
from harness.report.model import (
    SETTING_SOURCES,
    TEST_OUTCOMES,
    AckBucket,
    Assertions,
    Bucket,
    Check,
    ClientConfig,
    ClusterEvent,
    CoverageCell,
    EffectiveConfig,
    Escalation,
    Example,
    Exploration,
    ExploredRound,
    FaultAction,
    FaultWindow,
    HistoryInfo,
    PartitionSummary,
    RuleResult,
    Run,
    RunInfo,
    Scenario,
    ScenarioConfig,
    ScheduleEntry,
    SessionTest,
    Setting,
    TopicConfig,
    Verdict,
    Window,
)

T = TypeVar("T")
VERDICT_SCHEMA_VERSION = 1  # the verdict.json version this loader was written against
_HEADER_KEYS = ("scenario", "kafka_version", "schedule", "effective_config")
_PHASES = ("setup", "call", "teardown")
DIAGNOSTICS = "diagnostics"


class ReportError(ChaosError):
    """The run directory itself is unusable (absent, not a directory)."""


class _Malformed(ValueError):
    """A field of the wrong type or missing; caught per file and turned into a problem."""


# ------------------------------------------------------------------------ field readers


def _obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Malformed(f"{what} is not an object")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Malformed(f"{what} is not a list")
    return value


def _num(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Malformed(f"{what} is not a number: {value!r}")
    return float(value)


def _opt_num(value: object, what: str) -> float | None:
    return None if value is None else _num(value, what)


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Malformed(f"{what} is not an integer: {value!r}")
    return value


def _opt_int(value: object, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _bool(value: object, what: str) -> bool:
    # Strictly a JSON boolean: "false" or 0 read as a pass would be the worst misreading.
    if not isinstance(value, bool):
        raise _Malformed(f"{what} is not true/false: {value!r}")
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _Malformed(f"{what} is not a string: {value!r}")
    return value


def _one_of(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise _Malformed(f"{what} is {value!r}, not one of {', '.join(allowed)}")
    return str(value)


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
        raw = _obj(data, "run.json") if data is not None else {}
        ids = [str(s) for s in _list(raw.get("scenarios", []), "run.json scenarios")]
        info = RunInfo(
            run_id=str(raw.get("run_id") or run_dir.name),
            kafka_version=_opt_str(raw.get("kafka_version")),
            started=_opt_num(raw.get("started"), "run.json started"),
            finished=_opt_num(raw.get("finished"), "run.json finished"),
            status=str(raw.get("status") or "unknown"),
            scenario_ids=ids,
        )
    except _Malformed as exc:
        problems.append(f"run.json is malformed: {exc}")
        info = RunInfo(run_dir.name, None, None, None, "unknown", [])
    if data is None or not info.scenario_ids:
        # Without a usable list, show every scenario directory rather than an empty page.
        found = sorted(p.name for p in run_dir.iterdir() if (p / "config.json").is_file())
        info = RunInfo(info.run_id, info.kafka_version, info.started, info.finished, info.status, found)
    return info


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
    return run


def _fault_words(entry: Mapping[str, Any]) -> str:
    """A schedule entry in a few words: its kind, what it names, when and how long."""
    named = entry.get("target", entry.get("links"))
    what = "" if named is None else f" {json.dumps(named, sort_keys=True)}"
    when = f"at {entry.get('start_s', '?')} s for {entry.get('duration_s', 0)} s"
    return f"{entry.get('fault', '?')}{what} {when}"


def _explored_round(raw: object, root: Path) -> ExploredRound:
    r = _obj(raw, "round")
    scenario = str(r.get("scenario", ""))
    faults = [_fault_words(_obj(e, "schedule entry")) for e in _list(r.get("schedule", []), "schedule")]
    violated = [str(v) for v in _list(r.get("violated", []), "violated")]
    shrunk = f"{scenario}/{scenario}-shrunk.toml"  # where `kafka-chaos shrink` writes by default
    return ExploredRound(scenario, str(r.get("outcome", "")), faults, violated,
                         shrunk if scenario and (root / shrunk).is_file() else None)


def _coverage_cell(raw: object) -> CoverageCell:
    c = _obj(raw, "coverage cell")
    return CoverageCell(str(c.get("kind", "")), str(c.get("role", "")), _int(c.get("entries"), "entries"),
                        _num(c.get("seconds"), "seconds"))


def _exploration(raw: object, problems: list[str], root: Path) -> Exploration | None:
    """explore.json (harness.compose.explore.Exploration.to_dict); None, with a problem
    noted, when it cannot be read."""
    try:
        data = _obj(raw, "explore.json")
        missing = [str(k) for k in _list(data.get("kinds_not_exercised", []), "kinds_not_exercised")]
        return Exploration(_int(data.get("seed"), "seed"),
                           [_explored_round(r, root) for r in _list(data.get("rounds", []), "rounds")],
                           [_coverage_cell(c) for c in _list(data.get("coverage", []), "coverage")], missing)
    except _Malformed as exc:
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
        except _Malformed as exc:
            problems.append(f"run.json test {index} is malformed ({exc}); the run cannot pass without it")
            unreadable += 1
    return tests, unreadable


def _session_test(item: object) -> SessionTest:
    t = _obj(item, "test")
    phase = t.get("phase")
    scenario = t.get("scenario")
    error = t.get("error")
    return SessionTest(
        id=_str(t.get("id"), "id"),
        kind=str(t.get("kind") or "test"),
        outcome=_one_of(t.get("outcome"), TEST_OUTCOMES, "outcome"),
        phase=None if phase is None else _one_of(phase, _PHASES, "phase"),
        error="" if error is None else _str(error, "error"),
        duration_s=_num(t.get("duration_s", 0.0), "duration_s"),
        scenario=None if scenario is None else _str(scenario, "scenario"),
        diagnostics=_relative_folder(t.get("diagnostics")),
    )


def _relative_folder(value: object) -> str | None:
    """A folder inside the run directory, or None; anything pointing outside is refused."""
    if value is None:
        return None
    text = _str(value, "diagnostics")
    if text.startswith("/") or ".." in Path(text).parts:
        raise _Malformed(f"diagnostics folder {text!r} is outside the run")
    return text


def _escalations(value: object, problems: list[str]) -> list[Escalation]:
    entries = _entries(value, "escalations", problems) or []
    escalations = []
    for index, item in enumerate(entries, start=1):
        try:
            e = _obj(item, "escalation")
            escalations.append(
                Escalation(
                    ts=_num(e.get("ts"), "ts"),
                    after=str(e.get("after") or ""),
                    problems=[str(x) for x in _list(e.get("problems", []), "problems")],
                    actions=[str(x) for x in _list(e.get("actions", []), "actions")],
                    healthy=_bool(e.get("healthy"), "healthy"),
                )
            )
        except _Malformed as exc:
            problems.append(f"run.json escalation {index} is malformed ({exc}); not shown")
    return sorted(escalations, key=lambda e: e.ts)


# ----------------------------------------------------------------------------- scenario


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
    verdict = _read_json(sdir / "verdict.json", p, required=False)
    if verdict is None and not (sdir / "verdict.json").exists():
        p.append("verdict.json is missing: the run stopped before reconciliation, so it was not judged")
    scenario.verdict = _parse(_verdict, verdict, "verdict.json", p)
    scenario.assertions = _parse(_assertions, _read_json(sdir / "assertions.json", p), "assertions.json", p)
    events = _read_json(sdir / "cluster_events.json", p)
    scenario.events = _parse(_events, events, "cluster_events.json", p) or []
    scenario.history = _history(sdir / "history", p)
    _load_faults(scenario, sdir, run_started)
    if scenario.history:
        width = scenario.verdict.bucket_seconds if scenario.verdict else 1.0
        scenario.ack_buckets = ack_buckets(sdir / "history", width, p)
    scenario.diagnostics = _diagnostics(sdir)
    return scenario


def _load_faults(scenario: Scenario, sdir: Path, run_started: float | None) -> None:
    """Fault actions and windows: recorded in the history, else recorded in schedule.json
    (a scenario file's run), else placed from the plan and marked approximate."""
    p = scenario.problems
    scenario.has_schedule_file = (sdir / "schedule.json").is_file()
    saved: list[dict[str, Any]] = []
    if scenario.has_schedule_file:
        parsed = _parse(_schedule_file, _read_json(sdir / "schedule.json", p), "schedule.json", p)
        if parsed is not None:
            scenario.schedule_entries, saved = parsed
    rows = _fault_rows(sdir / "history", p) if scenario.history else []
    source = "history"
    if not rows and saved:
        rows, source = saved, "schedule.json"
    if rows:
        scenario.fault_actions = [_action(r) for r in rows]
        scenario.fault_actions_source = source
        scenario.faults = _windows(rows)
    elif scenario.planned:
        anchor = (scenario.history.started if scenario.history else None) or run_started
        scenario.faults = _planned_faults(scenario.planned, anchor)


def _schedule_file(data: Any, problems: list[str]) -> tuple[list[ScheduleEntry], list[dict[str, Any]]]:
    """schedule.json (faults/schedule.py ``Schedule.save``): planned entries and, after a
    run, the inject/heal rows it recorded (the history's faults-table layout)."""
    raw = _obj(data, "schedule.json")
    entries = [_schedule_entry(_obj(e, "schedule entry")) for e in _list(raw.get("entries", []), "entries")]
    rows = []
    for item in _list(raw.get("recorded", []), "recorded"):
        r = _obj(item, "recorded event")
        rows.append(
            {
                "ts": _num(r.get("ts"), "recorded ts"),
                "fault": str(r.get("fault", "?")),
                "action": str(r.get("action", "?")),
                "targets": _opt_str(r.get("targets")),
                "outcome": _opt_str(r.get("outcome")),
            }
        )
    return entries, sorted(rows, key=lambda r: r["ts"])


def _diagnostics(sdir: Path) -> list[str]:
    """Files under <scenario>/diagnostics/ (container logs, znodes.json), relative to the
    run directory so the page links them from disk. Logs first, then the rest."""
    ddir = sdir / DIAGNOSTICS
    if not ddir.is_dir():
        return []
    files = [
        f
        for f in ddir.rglob("*")
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(ddir).parts)
    ]
    rel = [str(f.relative_to(sdir.parent)).replace(os.sep, "/") for f in files]
    return sorted(rel, key=lambda r: (f"{sdir.name}/{DIAGNOSTICS}/logs/" not in r, r))


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


def _parse(parser: Callable[[Any, list[str]], T], data: Any, name: str, problems: list[str]) -> T | None:
    """Run one file's parser; a malformed file becomes a problem and None."""
    if data is None:
        return None
    try:
        return parser(data, problems)
    except (_Malformed, KeyError) as exc:
        problems.append(f"{name} is malformed: {exc}")
        return None


def _config(data: Any, problems: list[str]) -> ScenarioConfig:
    raw = _obj(data, "config.json")
    head = _obj(raw.get("scenario", {}), "scenario")
    schedule = [
        _schedule_entry(_obj(e, "schedule entry")) for e in _list(raw.get("schedule", []), "schedule")
    ]
    effective = None
    if raw.get("effective_config") is not None:
        try:
            effective = _effective(raw["effective_config"])
        except (_Malformed, KeyError) as exc:  # the rest of config.json still reads
            problems.append(f"config.json's effective_config is malformed: {exc}")
    return ScenarioConfig(
        title=str(head.get("title") or ""),
        description=str(head.get("description") or ""),
        expected=str(head.get("expected") or ""),
        kafka_version=_opt_str(raw.get("kafka_version")),
        schedule=schedule,
        sections={
            k: _full_rules(v) if k == "expectations" else v for k, v in raw.items() if k not in _HEADER_KEYS
        },
        effective=effective,
    )


def _settings(raw: Any, what: str) -> list[Setting]:
    rows = []
    for item in _list(raw, what):
        r = _obj(item, f"{what} setting")
        rows.append(
            Setting(
                key=_str(r["key"], f"{what} setting key"),
                value=r.get("value"),
                source=_one_of(r.get("source"), SETTING_SOURCES, f"{what} setting source"),
                replaced=r.get("replaced"),
                replaced_source=None
                if r.get("replaced_source") is None
                else _one_of(r.get("replaced_source"), SETTING_SOURCES, f"{what} replaced source"),
            )
        )
    return rows


def _effective(data: Any) -> EffectiveConfig:
    """config.json's effective_config (harness.compose.run_config.effective_config)."""
    raw = _obj(data, "effective_config")
    # "topics" (every topic, the scenario's own first); runs before pipelines wrote "topic".
    listed = raw.get("topics", [] if raw.get("topic") is None else [raw["topic"]])
    topics = []
    for item in _list(listed, "topics"):
        t = _obj(item, "topic")
        topics.append(TopicConfig(
            name=str(t.get("name", "")),
            partitions=_opt_int(t.get("partitions"), "topic partitions"),
            replication_factor=_opt_int(t.get("replication_factor"), "topic replication_factor"),
            settings=_settings(t.get("settings", []), "topic"),
        ))
    clients = []
    for item in _list(raw.get("clients", []), "clients"):
        c = _obj(item, "client")
        role = _one_of(c.get("role"), ("producer", "consumer"), "client role")
        name = _str(c.get("name"), "client name")
        settings = _settings(c.get("settings", []), name)
        clients.append(ClientConfig(role, name, str(c.get("zone", "")), settings))
    return EffectiveConfig(_settings(raw.get("brokers", []), "brokers"), topics, clients)


def _full_rules(value: Any) -> Any:
    """Every kind's rule, defaults included: a kind left out means "none allowed", and a
    page that showed only the listed kinds would suggest the others were unchecked."""
    try:
        return {k: str(v) for k, v in Expectations.from_dict(_obj(value, "expectations")).to_dict().items()}
    except (HistoryError, _Malformed):
        return value


def _schedule_entry(raw: Mapping[str, Any]) -> ScheduleEntry:
    return ScheduleEntry(
        start_s=_num(raw.get("start_s"), "schedule start_s"),
        duration_s=_num(raw.get("duration_s", 0.0), "schedule duration_s"),
        fault=str(raw.get("fault", "?")),
        params={k: v for k, v in raw.items() if k not in ("start_s", "duration_s", "fault")},
    )


# ------------------------------------------------------------------------------ verdict


def _bucket(raw: Any) -> Bucket:
    b = _obj(raw, "bucket")
    return Bucket(
        start=_num(b["start"], "bucket start"),
        acked=_int(b.get("acked", 0), "bucket acked"),
        failed=_int(b.get("failed", 0), "bucket failed"),
        unknown=_int(b.get("unknown", 0), "bucket unknown"),
    )


def _example(kind: str, raw: Any) -> Example:
    e = _obj(raw, f"{kind} example")
    return Example(
        kind=kind,
        message_id=_opt_str(e.get("message_id")),
        producer_id=_opt_str(e.get("producer_id")),
        topic=str(e.get("topic", "")),
        partition=_int(e.get("partition", -1), "example partition"),
        offset=_opt_int(e.get("offset"), "example offset"),
        ack_ts=_opt_num(e.get("ack_ts"), "example ack_ts"),
        final_message_id=_opt_str(e.get("final_message_id")),
        detail=str(e.get("detail", "")),
    )


def _counts(raw: Any, what: str) -> dict[str, int]:
    return {str(k): _int(v, f"{what} {k}") for k, v in _obj(raw, what).items()}


def _verdict(data: Any, problems: list[str]) -> Verdict:
    raw = _obj(data, "verdict")
    version = raw.get("schema_version")
    if version != VERDICT_SCHEMA_VERSION:
        problems.append(
            f"verdict.json has schema_version {version!r}; this report reads {VERDICT_SCHEMA_VERSION}"
        )
    passed = _bool(raw["passed"], "passed")
    kinds = [str(k) for k in _list(raw.get("kinds") or list(ANOMALY_KINDS), "kinds")]
    rules_raw = _obj(raw.get("rules", {}), "rules")
    rules = []
    for kind in [*kinds, *(k for k in rules_raw if k not in kinds)]:
        if kind in rules_raw:
            r = _obj(rules_raw[kind], f"rule {kind}")
            rules.append(
                RuleResult(
                    kind=kind,
                    rule=str(r.get("rule")),
                    count=_int(r.get("count", 0), f"rule {kind} count"),
                    passed=_bool(r.get("passed"), f"rule {kind} passed"),
                    reason=str(r.get("reason", "")),
                )
            )
    if passed and any(not r.passed for r in rules):
        problems.append("verdict.json says passed although a rule failed; shown as failed")
        passed = False
    availability = _obj(raw.get("availability", {}), "availability")
    outages = {
        (str(p.get("topic")), _int(p.get("partition"), "partition")): [
            _bucket(b) for b in _list(p.get("buckets", []), "availability partition buckets")
        ]
        for p in (
            _obj(x, "availability partition")
            for x in _list(availability.get("partitions", []), "availability partitions")
        )
    }
    partitions = []
    examples: dict[str, list[Example]] = {}
    for item in _list(raw.get("partitions", []), "partitions"):
        p = _obj(item, "partition")
        topic, number = str(p.get("topic", "")), _int(p.get("partition", -1), "partition")
        for kind, exs in _obj(p.get("examples", {}), "examples").items():
            examples.setdefault(str(kind), []).extend(_example(str(kind), e) for e in _list(exs, "examples"))
        partitions.append(
            PartitionSummary(
                topic=topic,
                partition=number,
                counts=_counts(p.get("counts", {}), "partition counts"),
                sends=_counts(p.get("sends", {}), "partition sends"),
                log=dict(_obj(p.get("log", {}), "partition log")),
                outage=outages.get((topic, number), []),
            )
        )
    return Verdict(
        passed=passed,
        kinds=kinds,
        counts=_counts(raw.get("counts", {}), "counts"),
        rules=rules,
        examples={k: examples[k] for k in [*kinds, *examples] if k in examples},
        totals=_counts(raw.get("totals", {}), "totals"),
        bucket_seconds=_num(availability.get("bucket_seconds", 1.0), "bucket_seconds") or 1.0,
        buckets=sorted(
            (_bucket(b) for b in _list(availability.get("buckets", []), "buckets")), key=lambda b: b.start
        ),
        partitions=partitions,
    )


# --------------------------------------------------------------------- assertions, events


def _assertions(data: Any, problems: list[str]) -> Assertions:
    raw = _obj(data, "assertions")
    checks = []
    for item in _list(raw.get("checks", []), "checks"):
        c = _obj(item, "check")
        ok = c.get("passed")
        checks.append(
            Check(
                str(c.get("name", "?")),
                None if ok is None else _bool(ok, "check passed"),
                str(c.get("detail", "")),
            )
        )
    windows = [
        Window(str(w.get("name", "?")), _opt_num(w.get("seconds"), "window seconds"))
        for w in (_obj(x, "window") for x in _list(raw.get("windows", []), "windows"))
    ]
    passed = _bool(raw["passed"], "passed")
    if passed and any(c.passed is False for c in checks):
        problems.append("assertions.json says passed although a check failed; shown as failed")
        passed = False
    return Assertions(passed, checks, windows)


def _events(data: Any, problems: list[str]) -> list[ClusterEvent]:
    events = [
        ClusterEvent(
            ts=_num(e.get("ts"), "event ts"),
            kind=str(e.get("kind", "?")),
            topic=_opt_str(e.get("topic")),
            partition=_opt_int(e.get("partition"), "event partition"),
            detail=str(e.get("detail", "")),
        )
        for e in (_obj(x, "event") for x in _list(data, "cluster_events.json"))
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


def _fault_rows(hdir: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The history's inject/heal rows in time order; unreadable is a problem and none."""
    try:
        parts = [pq.read_table(p, schema=FAULTS_SCHEMA) for p in part_files(hdir, "faults")]
    except (OSError, pa.ArrowException) as exc:
        problems.append(f"the history's faults table cannot be read: {exc}")
        return []
    return sorted((r for t in parts for r in t.to_pylist()), key=lambda r: r["ts"])


def _action(row: Mapping[str, Any]) -> FaultAction:
    outcome = row["outcome"]
    return FaultAction(
        ts=row["ts"],
        fault=row["fault"],
        action=row["action"],
        targets=_targets(row["targets"]),
        outcome="(no outcome recorded)" if outcome is None else str(outcome),
        ok=_ok(outcome),
    )


def _windows(rows: list[dict[str, Any]]) -> list[FaultWindow]:
    """Fault windows from inject/heal rows, paired first-in first-out per (fault,
    targets): the same fault may be injected again once healed. A window is ok only if
    its inject and its heal both were; their error texts travel with it."""
    open_: dict[tuple[str, str], list[dict[str, Any]]] = {}
    windows: list[FaultWindow] = []
    for row in rows:
        key = (row["fault"], _targets(row["targets"]))
        if row["action"] == "inject":
            open_.setdefault(key, []).append(row)
        elif row["action"] == "heal" and open_.get(key):
            start = open_[key].pop(0)
            windows.append(_window(key, start, row))
    for key, rest in open_.items():
        windows.extend(_window(key, r, None) for r in rest)
    return sorted(windows, key=lambda w: w.start)


def _window(key: tuple[str, str], inject: Mapping[str, Any], heal: Mapping[str, Any] | None) -> FaultWindow:
    done = [r for r in (inject, heal) if r is not None]
    errors = tuple(f"{r['action']}: {r['outcome']}" for r in done if not _ok(r["outcome"]))
    return FaultWindow(
        fault=key[0],
        targets=key[1],
        start=inject["ts"],
        end=None if heal is None else heal["ts"],
        ok=not errors,
        errors=errors,
    )


def _targets(text: str | None) -> str:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return str(text)
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _ok(outcome: str | None) -> bool:
    return outcome is not None and (outcome == "ok" or outcome.startswith("ok:"))


def _planned_faults(schedule: list[ScheduleEntry], anchor: float | None) -> list[FaultWindow]:
    """Windows from the schedule, placed from the history's start: used only when no
    inject/heal events were recorded, and marked approximate."""
    if anchor is None:
        return []
    return [
        FaultWindow(
            fault=e.fault,
            targets=", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in e.params.items()),
            start=anchor + e.start_s,
            end=anchor + e.start_s + e.duration_s,
            ok=True,
            approximate=True,
        )
        for e in schedule
    ]
