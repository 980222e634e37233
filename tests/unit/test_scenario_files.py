"""Scenario files are validated whole before anything runs (pure, no Docker)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cluster.recovery import ClusterKeeper
from harness.scenario.chaos_run import ChaosRun
from harness.scenario.checks import (
    BOUND_KEYS,
    ControllerChanges,
    CountRange,
    IsrFullAfterHeal,
    LeaderEpochChanges,
)
from harness.scenario.file_format import (
    HARNESS_BROKER_SETTINGS,
    ScenarioFile,
    ScenarioFileError,
    check_broker_settings,
    check_runnable,
    group_by_broker_settings,
    load_scenario_file,
)
from topologies import Topology, load_topology

BUILTIN = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("path", BUILTIN, ids=[p.stem for p in BUILTIN])
def test_builtin_scenario_files_load(path: Path) -> None:
    """Each shipped file makes a claim about loss: none (0), or a loss it must catch."""
    scenario = load_scenario_file(path)
    assert scenario.spec.expectations["lost"] in (0, "at_least_one")
    assert scenario.spec.schedule


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("id = [\n", "does not parse"),
        ('colour = "red"\n', "unknown key(s) colour"),
        ('[expectations]\nlost = "sometimes"\n', "lost"),
        ('[[schedule]]\nstart_s = 0\nfault = "melt"\n', "unknown fault"),
        ('[[schedule]]\nstart_s = -1\nfault = "kill"\ntarget = { broker = 0 }\n', "start_s"),
        ('[[producers]]\nzone = "a"\n', "needs a 'name'"),
        ('warmup_s = -3\n', "'warmup_s' must be a non-negative number"),
    ],
)
def test_malformed_scenario_files_are_refused_before_anything_runs(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content)
    with pytest.raises(ScenarioFileError) as err:
        load_scenario_file(path)
    assert message in str(err.value)


def test_clients_in_unknown_zones_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "zone.toml"
    path.write_text('[[producers]]\nname = "p"\nzone = "q"\n')
    zones = r'producers\[1\].zone = "q": topology three_az has zones a, b, c'
    with pytest.raises(ScenarioFileError, match=zones):
        check_runnable(load_scenario_file(path), load_topology())


# --------------------------------------------------------------- [bounds] and [brokers]

BOUNDED = """
[topic]
partitions = 3

[bounds]
max_failed = 200
max_in_doubt = 20
max_unavailable_s = 40
unavailable_s = { "1" = 5 }
controller_changes = { min = 1, max = 2 }
leader_epoch_changes = { "0" = { min = 1 } }
isr_full_after_heal_s = 60

[brokers]
settings = { "log.flush.interval.messages" = 1, "unclean.leader.election.enable" = true }
"""


def _load(tmp_path: Path, content: str) -> ScenarioFile:
    path = tmp_path / "scenario.toml"
    path.write_text(content)
    return load_scenario_file(path)


def test_bounds_and_broker_settings_load_into_the_spec(tmp_path: Path) -> None:
    scenario = _load(tmp_path, BOUNDED)
    checks = scenario.spec.checks
    assert [c.name for c in checks[:4]] == [
        "at most 200 sends failed", "at most 20 sends in doubt",
        "no partition without an acknowledgement for more than 40 s",
        "partition 1 without an acknowledgement for at most 5 s"]
    assert checks[4:] == (ControllerChanges(CountRange(1, 2)), LeaderEpochChanges(CountRange(1, None), (0,)),
                          IsrFullAfterHeal(60))
    assert scenario.spec.broker_settings == {"log.flush.interval.messages": 1,
                                             "unclean.leader.election.enable": True}


def test_a_file_without_bounds_or_brokers_has_none(tmp_path: Path) -> None:
    scenario = _load(tmp_path, 'title = "no bounds"\n')
    assert scenario.spec.checks == () and scenario.spec.broker_settings == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[bounds]\nmax_lost = 1\n", "[bounds] unknown key(s) max_lost"),
        ('[bounds]\nmax_failed = "ten"\n', "[bounds] max_failed must be a non-negative integer"),
        ("[bounds]\nmax_in_doubt = -1\n", "[bounds] max_in_doubt must be a non-negative integer"),
        ("[bounds]\nmax_unavailable_s = true\n", "[bounds] max_unavailable_s must be a non-negative number"),
        ('[bounds]\nunavailable_s = { "x" = 5 }\n', "key 'x' is not a partition number"),
        ("[bounds]\ncontroller_changes = { min = 2, max = 1 }\n", "min 2 is above max 1"),
        ("[bounds]\nleader_epoch_changes = { at_least = 1 }\n", "key 'at_least' is not a partition number"),
        ("bounds = 3\n", "[bounds] must be a table"),
        ('[topic]\npartitions = 2\n[bounds]\nunavailable_s = { "2" = 5 }\n',
         "[bounds] names partition(s) 2; the topic has partitions 0 to 1"),
        ('[bounds]\nleader_epoch_changes = { "6" = 1 }\n', "names partition(s) 6"),
        ("[brokers]\nlog_flush = 1\n", "[brokers] unknown key(s) log_flush; known: settings"),
        ("brokers = 1\n", "[brokers] must be a table"),
        ("[brokers]\nsettings = 1\n", "[brokers] settings must be a table"),
        ('[brokers]\nsettings = { "num.io.threads" = [1, 2] }\n', "num.io.threads must be a string, number"),
        ('[brokers]\nsettings = { "x" = { y = 1 } }\n', "x must be a string, number"),
        ('[brokers]\nsettings = { "log.dirs" = "/tmp" }\n', "log.dirs is set by the harness"),
        ('[brokers]\nsettings = { "advertised.listeners" = "x" }\n', "advertised.listeners is set by"),
        ('[brokers]\nsettings = { "a b" = 1 }\n', "'a b' is not a Kafka setting name"),
        ('[brokers]\nsettings = { "x" = "1\\nlisteners=PLAINTEXT://evil:1" }\n', "on one line"),
        ('[brokers]\nsettings = { "x" = nan }\n', "x must be a string, number"),
    ],
)
def test_malformed_bounds_and_broker_settings_are_refused_before_anything_runs(
    tmp_path: Path, content: str, message: str
) -> None:
    with pytest.raises(ScenarioFileError) as err:
        _load(tmp_path, content)
    assert message in str(err.value)
    assert str(tmp_path / "scenario.toml") in str(err.value)


def test_broker_settings_the_topology_or_the_release_cannot_take_are_refused(tmp_path: Path) -> None:
    topology = load_topology()
    fine = _load(tmp_path, BOUNDED)
    check_broker_settings(fine, topology, {})
    impossible = _load(tmp_path, '[brokers]\nsettings = { "default.replication.factor" = 5 }\n')
    with pytest.raises(ScenarioFileError, match="replication factor 5 is impossible on 3 broker"):
        check_broker_settings(impossible, topology, {})
    with pytest.raises(ScenarioFileError, match=r"overridden by this Kafka release: log.flush.interval"):
        check_broker_settings(fine, topology, {"log.flush.interval.messages": "5"})
    check_broker_settings(fine, topology, {"log.flush.interval.messages": "1"})  # the same value is fine


def _file(tmp_path: Path, name: str, settings: str = "") -> ScenarioFile:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'title = "{name}"\n' + (f"[brokers]\nsettings = {{ {settings} }}\n" if settings else ""))
    return load_scenario_file(path)


def test_files_are_grouped_by_broker_settings_in_the_order_given(tmp_path: Path) -> None:
    files = [_file(tmp_path, "plain1"), _file(tmp_path, "flush1", '"log.flush.interval.messages" = 1'),
             _file(tmp_path, "plain2"), _file(tmp_path, "flush2", '"log.flush.interval.messages" = "1"'),
             _file(tmp_path, "other", '"num.io.threads" = 2')]
    groups = group_by_broker_settings(files)
    assert [[f.path.stem for f in group] for _, group in groups] == [
        ["plain1", "plain2"], ["flush1", "flush2"], ["other"]]
    assert [dict(settings) for settings, _ in groups] == [
        {}, {"log.flush.interval.messages": 1}, {"num.io.threads": 2}]


@dataclass
class _Made:
    topology: Topology
    closed: bool = False

    def start(self) -> _Made:
        return self

    def close(self) -> None:
        self.closed = True


def _run_keeping_made_clusters(run_id: str) -> tuple[ChaosRun, list[_Made]]:
    """A run whose keeper makes stand-in clusters from the run's topology, kept in order."""
    chaos = ChaosRun(run_id, "3.7.2", "three_az", healer=lambda cluster: None)
    made: list[_Made] = []

    def factory() -> _Made:
        made.append(_Made(chaos.topology))
        return made[-1]

    chaos.keeper = ClusterKeeper(factory, lambda cluster: None)  # type: ignore[arg-type]
    return chaos, made


def test_a_run_changes_cluster_only_when_the_broker_settings_change() -> None:
    chaos, made = _run_keeping_made_clusters("unit-settings")
    assert chaos.use_broker_settings({}) is False
    chaos.keeper.current()
    assert chaos.use_broker_settings({"log.flush.interval.messages": 1}) is True
    assert made[0].closed, "one cluster at a time: the old one is removed before the next starts"
    chaos.keeper.current()
    first = made[-1]
    assert first.topology.broker_settings["log.flush.interval.messages"] == 1
    assert chaos.use_broker_settings({"log.flush.interval.messages": 1}) is False
    assert chaos.keeper.current() is first and not first.closed
    assert chaos.use_broker_settings({}) is True and first.closed
    base = chaos.base_topology.broker_settings["log.flush.interval.messages"]
    assert chaos.keeper.current().topology.broker_settings["log.flush.interval.messages"] == base != 1


def test_a_run_changes_cluster_when_the_topology_changes_shape() -> None:
    chaos, made = _run_keeping_made_clusters("unit-shape")
    chaos.keeper.current()
    assert chaos.use_topology(load_topology("three_az_two_in_a")) is True
    assert made[0].closed, "one cluster at a time: the old one is removed before the next starts"
    assert len(chaos.keeper.current().topology.brokers) == 4
    assert chaos.use_topology(load_topology("three_az_two_in_a")) is False and not made[1].closed
    assert chaos.use_topology(chaos.base_topology) is True and made[1].closed
    assert len(chaos.keeper.current().topology.brokers) == 3


def test_the_scenario_page_documents_every_bound_and_the_brokers_table() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "SCENARIOS.md").read_text()
    named = set(re.findall(r"`([^`]+)`", page))
    missing = (set(BOUND_KEYS) | {"bounds", "brokers", "settings"} | HARNESS_BROKER_SETTINGS) - named
    assert not missing, f"docs/SCENARIOS.md does not name {sorted(missing)}"
    assert "[bounds]" in page and "[brokers]" in page


def test_the_pages_bounds_and_brokers_examples_load(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "SCENARIOS.md").read_text()
    blocks = re.findall(r"((?:^    .*\n)+)", page, re.M)
    examples = [b for b in blocks if b.lstrip().startswith(("[bounds]", "[brokers]"))]
    assert len(examples) == 2, examples
    scenario = _load(tmp_path, "[topic]\npartitions = 2\n" + "".join(
        "\n".join(line[4:] for line in block.splitlines()) + "\n" for block in examples))
    assert "partition 1 without an acknowledgement for at most 5 s" in [c.name for c in scenario.spec.checks]
    assert scenario.spec.broker_settings["log.flush.interval.messages"] == 1


GROUP_MEMBERS = '''
[[consumers]]
name = "m1"
zone = "a"
group = "readers"
commit = "sync"

[[consumers]]
name = "m2"
zone = "b"
group = "readers"
commit = "auto"
restart_every_s = 4
process_ms = 5
'''


def test_group_members_load_with_their_commit_mode_and_restarts(tmp_path: Path) -> None:
    consumers = _load(tmp_path, GROUP_MEMBERS).spec.consumers
    assert [(c.name, c.group, c.commit, c.restart_every_s, c.process_ms) for c in consumers] == [
        ("m1", "readers", "sync", None, 0.0), ("m2", "readers", "auto", 4.0, 5.0)]
    assert consumers[1].to_dict() == {"name": "m2", "zone": "b", "settings": {}, "group": "readers",
                                      "commit": "auto", "restart_every_s": 4.0, "process_ms": 5.0}


@pytest.mark.parametrize(("consumer", "message"), [
    ('commit = "sometimes"\ngroup = "g"\n', "commit must be one of none, auto, sync, async"),
    ('commit = "auto"\n', "'commit', 'restart_every_s' and 'process_ms' need a 'group'"),
    ('group = "g"\nrestart_every_s = 0\n', "restart_every_s must be positive"),
    ('group = "g"\nprocess_ms = -1\n', "process_ms cannot be negative"),
    ('group = "g"\nrebalance = "often"\n', "unknown key(s) rebalance"),
])
def test_malformed_group_members_are_refused_in_one_line(tmp_path: Path, consumer: str, message: str) -> None:
    with pytest.raises(ScenarioFileError, match=re.escape(message)):
        _load(tmp_path, f'[[consumers]]\nname = "m"\nzone = "a"\n{consumer}')


PIPELINE = '''
[[topics]]
name = "out"
partitions = 3
config = { "min.insync.replicas" = 2 }

[[pipelines]]
name = "p-a"
zone = "a"
group = "etl"
output = "out"
guarantee = "at_least_once"
restart_every_s = 9
restart = "crash"
consumer_settings = { "session.timeout.ms" = 6000 }

[[consumers]]
name = "reader"
zone = "c"
topic = "out"
'''


def test_further_topics_and_pipeline_members_load(tmp_path: Path) -> None:
    spec = _load(tmp_path, PIPELINE).spec
    (out,) = spec.topics
    assert (out.name, out.spec.partitions, dict(out.spec.config)) == ("out", 3, {"min.insync.replicas": 2})
    (member,) = spec.pipelines
    assert (member.group, member.output, member.guarantee, member.restart, member.restart_every_s) == (
        "etl", "out", "at_least_once", "crash", 9.0)
    assert spec.consumers[0].topic == "out"


@pytest.mark.parametrize(("change", "message"), [
    (('output = "out"', 'output = "sideways"'), "pipeline p-a: output 'sideways' is none of the scenario's"),
    (('topic = "out"', 'topic = "elsewhere"'), "consumer reader: topic 'elsewhere' is none of"),
    (('guarantee = "at_least_once"', 'guarantee = "maybe"'), "guarantee must be one of exactly_once"),
    (('restart = "crash"', 'restart = "crash"\nabort_ratio = 0.5'),
     "'abort_ratio' and 'transactional_id' need"),
    (('restart = "crash"', 'restart = "crash"\nspeed = 3'), "pipeline p-a: unknown key(s) speed"),
    (('group = "etl"\n', ''), "pipeline p-a: needs 'group'"),
    (('name = "out"', 'name = "out-1"'), "letters, digits and '_' only"),
    (('partitions = 3', 'partitions = 3\nsegments = 1'),
     "topics[1].segments = 1: no such key; known: assignment"),
])
def test_malformed_pipelines_and_topics_are_refused_in_one_line(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    with pytest.raises(ScenarioFileError, match=re.escape(message)) as info:
        _load(tmp_path, PIPELINE.replace(*change, 1))
    assert "\n" not in str(info.value)


def test_a_pipeline_member_in_an_unknown_zone_is_refused(tmp_path: Path) -> None:
    scenario = _load(tmp_path, PIPELINE.replace('zone = "a"', 'zone = "q"', 1))
    with pytest.raises(ScenarioFileError, match=r'pipelines\[1\].zone = "q": topology three_az has zones'):
        check_runnable(scenario, load_topology())
