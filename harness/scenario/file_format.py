"""Scenarios as data files, so users add scenarios without writing Python.

A scenario file (TOML) declares the topic, the clients, the fault schedule and the
expectations; :func:`load_scenario_file` validates all of it before anything starts and
:func:`run_scenario_file` drives it through the same :class:`ScenarioRun` the pytest
suite uses. Fault targets may name the scenario's topic as ``"$topic"``: the real topic
name is only known when the run creates it.

    id = "kill-leader-acks-all"
    title = "Kill the leader under acks=all"
    expected = "A new leader from the ISR; nothing acknowledged lost."
    warmup_s = 3
    cooldown_s = 3

    [topic]
    partitions = 3
    replication_factor = 3
    config = { "min.insync.replicas" = 2 }

    [[producers]]
    name = "pa"
    zone = "a"
    rate_per_s = 200
    settings = { acks = "all" }

    [[consumers]]
    name = "cb"
    zone = "b"

    [expectations]
    lost = 0
    duplicate = "any"

    [[checks]]
    unavailable_s = { max = 30 }

    [[checks]]
    isr_full_after_heal_s = 60

    [brokers]
    settings = { "log.flush.interval.messages" = 1 }

    [[schedule]]
    start_s = 0
    duration_s = 10
    fault = "kill"
    target = { leader_of = ["$topic", 0] }
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster.migration.plan import MigrationSpec
from harness.cluster.node_config import format_value
from harness.errors import ChaosError
from harness.fields import Fields
from harness.history import Expectations, HistoryError
from harness.scenario.checks import Check, CheckSpecError, Seen, check_anchors, parse_check
from harness.scenario.checks.bounds import bounds_as_checks
from harness.scenario.probes import Probe
from harness.scenario.spec import TOPIC, NamedTopic, ScenarioSpec, TopicSpec, substitute
from harness.scenario.spec_check import Problem, ScenarioSpecError, topic_problems, topology_problems
from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.pipeline import PipelineSpec
from topologies.errors import TopologyError
from topologies.model import SettingValue, Topology

TOPIC_PLACEHOLDER = TOPIC
KNOWN_KEYS = {"id", "title", "description", "expected", "warmup_s", "warmup_acked", "cooldown_s", "min_acked",
              "sample_interval_s", "topic", "producers", "consumers", "expectations", "bounds", "brokers",
              "schedule", "checks", "probes", "must_fail", "topics", "pipelines", "migration"}
TOPIC_KEYS = {"partitions", "replication_factor", "config", "assignment"}
# Broker settings the harness writes itself: listeners and addresses route every
# connection through the fault proxies, so a scenario changing them would leave the
# cluster unreachable or unbreakable (harness/cluster/node_config.py broker_properties).
HARNESS_BROKER_SETTINGS = frozenset({
    "broker.id", "broker.rack", "listeners", "advertised.listeners", "listener.security.protocol.map",
    "inter.broker.listener.name", "zookeeper.connect", "log.dirs",
})
_SETTING_NAME = re.compile(r"[A-Za-z0-9]+([._-][A-Za-z0-9]+)*")
DEFAULT_MIN_ACKED = ScenarioSpec.min_acked


class ScenarioFileError(ChaosError):
    """A scenario file that cannot be run as written."""


@dataclass(frozen=True)
class ScenarioFile:
    """A loaded scenario file: where it came from and the spec it spells."""

    path: Path
    spec: ScenarioSpec

    @property
    def broker_settings(self) -> Mapping[str, SettingValue]:
        return self.spec.broker_settings


def _number(data: dict[str, Any], key: str, default: float, where: str) -> float:
    return Fields(data, where, ScenarioFileError).number(key, default, at_least=0)


def _clients(raw: Any, kind: str, where: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        raise ScenarioFileError(f"{where}: '{kind}' must be a list of tables ([[{kind}]])")
    for client in raw:
        for key in ("name", "zone"):
            if not isinstance(client.get(key), str):
                raise ScenarioFileError(f"{where}: every entry of '{kind}' needs a '{key}' string")
    return raw


def load_scenario_file(path: str | Path) -> ScenarioFile:
    """Parse and validate a scenario file; every problem is one ScenarioFileError line."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ScenarioFileError(f"cannot read scenario file {path}: {err.strerror}") from err
    return ScenarioFile(path, parse_scenario(text, str(path), default_id=path.stem))


def parse_scenario(text: str, where: str, default_id: str = "scenario") -> ScenarioSpec:
    """The spec a scenario file's text spells; every problem is one ScenarioFileError line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioFileError(f"scenario file {where} does not parse: {err}") from err
    if not data:
        raise ScenarioFileError(f"{where}: the file declares nothing; a scenario file needs at least a "
                                "title, its clients and a [[schedule]] (docs/SCENARIOS.md, scenario files)")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise ScenarioFileError(f"{where}: unknown key(s) {', '.join(unknown)}; known: "
                                f"{', '.join(sorted(KNOWN_KEYS))}")
    scenario_id = data.get("id", default_id)
    if not isinstance(scenario_id, str) or not scenario_id.replace("-", "").replace("_", "").isalnum():
        raise ScenarioFileError(f"{where}: 'id' must be letters, digits, '-' or '_'")
    try:
        topic = _topic(data.get("topic", {}))
        producers = tuple(
            ProducerSpec.from_dict(c)
            for c in _clients(data.get("producers", [{"name": "pa", "zone": "a"}]), "producers", where))
        consumers = tuple(
            ConsumerSpec.from_dict(c) for c in _clients(data.get("consumers", []), "consumers", where))
        topics = _named_topics(data.get("topics", []))
        pipelines = tuple(
            PipelineSpec.from_dict(c) for c in _clients(data.get("pipelines", []), "pipelines", where))
        expectations = dict(data.get("expectations", {}))
        Expectations.from_dict(expectations)
        bound_checks = [] if "bounds" not in data else bounds_as_checks(data["bounds"], topic.partition_count)
    except ScenarioSpecError as err:
        raise _file_error(err, where) from err
    except (TypeError, ValueError, HistoryError) as err:  # CheckSpecError is a ValueError
        raise ScenarioFileError(f"{where}: {err}") from err
    broker_settings = _broker_settings(data.get("brokers"), where)
    schedule = data.get("schedule", [])
    if not isinstance(schedule, list):
        raise ScenarioFileError(f"{where}: 'schedule' must be a list of tables ([[schedule]])")
    _check_schedule(schedule, where)
    probes = _probes(data.get("probes", []), len(schedule), where)
    checks = _checks(data.get("checks", []), len(schedule), {p.name for p in probes}, where)
    checks += tuple(bound_checks)
    try:  # the names a spec's parts give each other must meet
        return ScenarioSpec(id=scenario_id, title=str(data.get("title", scenario_id)),
                            description=str(data.get("description", "")),
                            expected=str(data.get("expected", "")), topic=topic, topics=topics,
                            pipelines=pipelines,
                            producers=producers, consumers=consumers, expectations=expectations,
                            broker_settings=broker_settings, schedule=tuple(schedule),
                            checks=checks, probes=probes,
                            sample_interval_s=_number(data, "sample_interval_s", 0.25, where),
                            warmup_s=_number(data, "warmup_s", 3, where),
                            warmup_acked=int(_number(data, "warmup_acked", 0, where)),
                            cooldown_s=_number(data, "cooldown_s", 3, where),
                            min_acked=int(_number(data, "min_acked", DEFAULT_MIN_ACKED, where)),
                            must_fail=_must_fail(data.get("must_fail", []), where),
                            migration=_migration(data.get("migration"), where))
    except ScenarioSpecError as err:
        raise _file_error(err, where) from err
    except ValueError as err:
        raise ScenarioFileError(f"{where}: {err}") from err


def _file_error(err: ScenarioSpecError, where: str) -> ScenarioFileError:
    """Every problem of a spec as one line naming the file."""
    return ScenarioFileError("\n".join(f"{where}: {problem}" for problem in err.problems))


def _migration(raw: Any, where: str) -> MigrationSpec | None:
    """``[migration]``: a ZooKeeper-to-KRaft migration walked beside the workload."""
    if raw is None:
        return None
    try:
        return MigrationSpec.from_dict(raw)
    except TopologyError as err:
        raise ScenarioFileError(f"{where}: {err}") from err


def _must_fail(raw: Any, where: str) -> tuple[str, ...]:
    """``must_fail``: the names of the checks a control run must see fail."""
    if not isinstance(raw, list) or not all(isinstance(name, str) and name for name in raw):
        raise ScenarioFileError(f"{where}: 'must_fail' must be a list of check names")
    return tuple(raw)


def _named_topics(raw: Any) -> tuple[NamedTopic, ...]:
    """``[[topics]]``: further topics, each a ``name`` and what ``[topic]`` takes."""
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise TypeError("'topics' must be a list of tables ([[topics]])")
    named = []
    for i, table in enumerate(raw, start=1):
        name = table.get("name")
        if not isinstance(name, str):
            raise ValueError("every entry of 'topics' needs a 'name' string")
        rest = {k: v for k, v in table.items() if k != "name"}
        named.append(NamedTopic(name, _topic(rest, f"topics[{i}]")))
    return tuple(named)


def _topic(raw: Any, key: str = "topic") -> TopicSpec:
    """``[topic]``: partitions and replication factor, or an ``assignment`` pinning each
    partition's replicas (``{ "0" = [0, 1], "1" = [1, 2] }``), and topic settings."""
    if not isinstance(raw, dict):
        raise ScenarioSpecError([Problem(key, raw, "must be a table")])
    unknown = sorted(set(raw) - TOPIC_KEYS)
    if unknown:
        known = ", ".join(sorted(TOPIC_KEYS))
        raise ScenarioSpecError([Problem(f"{key}.{unknown[0]}", raw[unknown[0]],
                                         f"no such key; known: {known}")])
    assignment = raw.get("assignment")
    if assignment is not None:
        if not isinstance(assignment, dict) or not all(
                isinstance(k, str) and k.isdigit() and isinstance(v, list)
                and all(isinstance(b, int) and not isinstance(b, bool) for b in v)
                for k, v in assignment.items()):
            raise ScenarioSpecError([Problem(f"{key}.assignment", assignment,
                                             'must be a table of "partition" = [broker ids]')])
        assignment = {int(k): tuple(v) for k, v in sorted(assignment.items(), key=lambda kv: int(kv[0]))}
        if sorted(assignment) != list(range(len(assignment))):
            shown = {str(p): list(r) for p, r in assignment.items()}
            raise ScenarioSpecError([Problem(f"{key}.assignment", shown,
                                             "must name partitions 0, 1, ... without a gap")])
    config = raw.get("config", {})
    if not isinstance(config, dict):
        raise ScenarioSpecError([Problem(f"{key}.config", config, 'must be a table of "setting" = value')])
    topic = TopicSpec(partitions=raw.get("partitions", 6 if assignment is None else len(assignment)),
                      replication_factor=raw.get("replication_factor", 3),
                      config=dict(config), assignment=assignment)
    problems = topic_problems(topic, key)
    if problems:
        raise ScenarioSpecError(problems)
    return topic


def _checks(raw: Any, entries: int, probes: set[str], where: str) -> tuple[Check, ...]:
    if not isinstance(raw, list):
        raise ScenarioFileError(f"{where}: 'checks' must be a list of tables ([[checks]])")
    try:
        checks = tuple(parse_check(item, f"check {i}") for i, item in enumerate(raw, start=1))
        check_anchors(checks, entries)
    except CheckSpecError as err:
        raise ScenarioFileError(f"{where}: {err}") from err
    for index, check in enumerate(checks, start=1):
        if isinstance(check, Seen) and check.probe not in probes:
            known = ", ".join(sorted(probes)) or "none"
            raise ScenarioFileError(f"{where}: check {index} reads probe {check.probe!r}, which "
                                    f"[[probes]] does not name (probes: {known})")
    return checks


def _probes(raw: Any, entries: int, where: str) -> tuple[Probe, ...]:
    if not isinstance(raw, list):
        raise ScenarioFileError(f"{where}: 'probes' must be a list of tables ([[probes]])")
    try:
        probes = tuple(Probe.parse(item, f"probe {i}") for i, item in enumerate(raw, start=1))
    except CheckSpecError as err:
        raise ScenarioFileError(f"{where}: {err}") from err
    names = [p.name for p in probes]
    for index, probe in enumerate(probes, start=1):
        if names.count(probe.name) > 1:
            raise ScenarioFileError(f"{where}: probe {index}: the name {probe.name!r} is used twice")
        if probe.at.entry > entries:
            raise ScenarioFileError(f"{where}: probe {index} ({probe.name}): {probe.at.describe()} - the "
                                    f"schedule has {entries} entr{'y' if entries == 1 else 'ies'}")
    return probes


def _broker_settings(raw: Any, where: str) -> dict[str, SettingValue]:
    """``[brokers] settings = { name = value }``: plain values only, never a setting the
    harness owns, and nothing that could break out of ``server.properties``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScenarioFileError(f"{where}: [brokers] must be a table")
    unknown = sorted(set(raw) - {"settings"})
    if unknown:
        raise ScenarioFileError(f"{where}: [brokers] unknown key(s) {', '.join(unknown)}; known: settings")
    settings = raw.get("settings", {})
    if not isinstance(settings, dict):
        raise ScenarioFileError(f"{where}: [brokers] settings must be a table of \"name\" = value")
    for name, value in settings.items():
        if not _SETTING_NAME.fullmatch(name):
            raise ScenarioFileError(f"{where}: [brokers] settings: {name!r} is not a Kafka setting name")
        if name in HARNESS_BROKER_SETTINGS:
            raise ScenarioFileError(f"{where}: [brokers] settings: {name} is set by the harness (every "
                                    "connection goes through the fault proxies) and cannot be changed")
        plain = isinstance(value, str | int | float | bool) and not (isinstance(value, float)
                                                                     and not math.isfinite(value))
        if not plain or (isinstance(value, str) and ("\n" in value or "\r" in value)):
            raise ScenarioFileError(f"{where}: [brokers] settings: {name} must be a string, number or "
                                    f"true/false on one line, not {value!r}")
    return dict(settings)


def check_broker_settings(scenario: ScenarioFile, topology: Topology,
                          release_settings: Mapping[str, str]) -> None:
    """Refuse broker settings the topology rejects (an impossible replication factor) or
    the Kafka release overrides, before any container starts."""
    settings = scenario.broker_settings
    overridden = [f"{k} (the release needs {release_settings[k]})" for k, v in settings.items()
                  if k in release_settings and format_value(v) != release_settings[k]]
    if overridden:
        raise ScenarioFileError(f"{scenario.path}: [brokers] settings overridden by this Kafka release: "
                                f"{', '.join(overridden)}")
    try:
        topology.with_broker_settings(settings)
    except TopologyError as err:
        raise ScenarioFileError(f"{scenario.path}: [brokers] settings: {err}") from err


def group_by_broker_settings(
        scenarios: Sequence[ScenarioFile]) -> list[tuple[Mapping[str, SettingValue], list[ScenarioFile]]]:
    """Scenario files grouped by their broker settings, so each group runs on one cluster:
    groups in the order their first file was given, files within a group in given order.
    Settings are compared as config files spell them (``1`` and ``"1"`` are one group)."""
    groups: dict[tuple[tuple[str, str], ...], tuple[Mapping[str, SettingValue], list[ScenarioFile]]] = {}
    for scenario in scenarios:
        key = tuple(sorted((k, format_value(v)) for k, v in scenario.broker_settings.items()))
        groups.setdefault(key, (scenario.broker_settings, []))[1].append(scenario)
    return list(groups.values())


def _check_schedule(entries: list[Any], where: str) -> None:
    from faults.errors import FaultError
    from faults.schedule import Schedule

    try:
        Schedule.from_dict({"entries": substitute(entries, "placeholder-topic")}, where)
    except FaultError as err:
        raise ScenarioFileError(str(err)) from err


def check_runnable(scenario: ScenarioFile, topology: Topology,
                   release_settings: Mapping[str, str] | None = None) -> None:
    """Refuse what the cluster cannot run - more replicas than brokers, brokers, zones or
    fault targets it does not have, broker settings it rejects - before any container
    starts: every problem one line naming the file, the key and the value."""
    problems = topology_problems(scenario.spec, topology)
    if problems:
        raise _file_error(ScenarioSpecError(problems), str(scenario.path))
    if release_settings is not None:
        check_broker_settings(scenario, topology, release_settings)
