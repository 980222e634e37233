"""``kafka-chaos check``: every malformed declaration caught with no engine, one line
naming the file, the key path and the value; the shipped files pass; a spec built in
Python gets the same line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster.versions import DEFAULT_VERSION
from harness.scenario.check_files import check_paths
from harness.scenario.run_topology import RunTopology
from harness.scenario.runner import ScenarioSpec, TopicSpec
from harness.scenario.spec_check import ScenarioSpecError
from harness.workload.driver import ConsumerSpec, ProducerSpec
from topologies import load_topology

ROOT = Path(__file__).resolve().parents[2]
RUN = RunTopology("three_az", load_topology(), DEFAULT_VERSION)

SCENARIOS = [
    # (file text, the line's key path and value, why)
    ('title = "t"\n[topic]\nreplication_factor = 5\n',
     "topic.replication_factor = 5", "topology three_az has 3 brokers"),
    ('title = "t"\n[topic]\nassignment = { "0" = [0, 9] }\n',
     'topic.assignment."0" = [0, 9]', "no broker 9 in topology three_az"),
    ('title = "t"\n[topic]\npartitions = 3\n[[producers]]\nname = "pa"\nzone = "a"\npartitions = [7]\n',
     "producers[1].partitions = [7]", "the topic has partitions 0 to 2"),
    ('title = "t"\n[topic]\npartitions = 3\n[[schedule]]\nstart_s = 0\nfault = "kill"\n'
     'target = { leader_of = ["$topic", 9] }\n',
     'schedule[1].target.leader_of = ["$topic", 9]', "the topic has partitions 0 to 2"),
    ('title = "t"\n[[producers]]\nname = "x"\nzone = "a"\n[[consumers]]\nname = "x"\nzone = "b"\n',
     'consumers[1].name = "x"', "producers[1] has that name already"),
    ('title = "t"\n[topic]\npartitions = "three"\n',
     'topic.partitions = "three"', "must be a whole number of at least 1"),
    ("", "", "the file declares nothing"),
    # ten more
    ('title = "t"\n[[producers]]\nname = "p"\nzone = "q"\n',
     'producers[1].zone = "q"', "topology three_az has zones a, b, c"),
    ('title = "t"\n[topic]\npartitions = 0\n',
     "topic.partitions = 0", "must be a whole number of at least 1"),
    ('title = "t"\n[topic]\nreplication_factor = 0\n',
     "topic.replication_factor = 0", "must be a whole number of at least 1"),
    ('title = "t"\n[topic]\nassignment = { "0" = [0, 1], "1" = [2] }\n',
     'topic.assignment = {"0": [0, 1], "1": [2]}', "every partition needs as many replicas"),
    ('title = "t"\n[topic]\nassignment = { "0" = [1, 1] }\n',
     'topic.assignment."0" = [1, 1]', "a broker is named twice"),
    ('title = "t"\n[topic]\nconfig = "compact"\n', 'topic.config = "compact"', "must be a table"),
    ('title = "t"\n[topic]\npartitions = 3\n[[schedule]]\nstart_s = 0\nfault = "reassign"\n'
     'topic = "$topic"\npartition = 5\nreplicas = [0, 1]\n',
     "schedule[1].partition = 5", "the topic has partitions 0 to 2"),
    ('title = "t"\n[topic]\npartitions = 2\n[[schedule]]\nstart_s = 0\nfault = "preferred_election"\n'
     'topic = "$topic"\npartitions = [0, 4]\n',
     "schedule[1].partitions = [0, 4]", "the topic has partitions 0 to 1"),
    ('title = "t"\n[topic]\npartitions = 2\n[[schedule]]\nstart_s = 0\nfault = "pause"\n'
     'target = { broker = 0 }\nwhen = { leaves_isr = { broker = 1, topic = "$topic", partition = 8 } }\n',
     "schedule[1].when.leaves_isr.partition = 8", "the topic has partitions 0 to 1"),
    ('title = "t"\n[[schedule]]\nstart_s = 0\nfault = "kill"\ntarget = { broker = 9 }\n',
     'schedule[1].fault = "kill"', "broker 9"),
    ('title = "t"\nshedule = []\n', "", "unknown key(s) shedule; known:"),
    ('title = "t"\n[[producers]]\nname = "p"\nzone = "a"\n[[producers]]\nname = "p"\nzone = "b"\n',
     'producers[2].name = "p"', "producers[1] has that name already"),
]

TOPOLOGIES = [
    ('zones = ["a", "b", "c"]\nbroker_heap_mb = "big"\n',
     'broker_heap_mb = "big"', "must be a whole number of at least 1"),
    ('extends = "nope"\n', 'extends = "nope"', "no such topology; built-in ones: three_az"),
    ('zones = ["a"]\n[[brokers]]\nzone = "a"\n', "brokers[1].id = null", "must be a whole number"),
    ('zones = ["a"]\ncolour = "red"\n', 'colour = "red"', "no such topology key"),
    ('zones = "abc"\n', 'zones = "abc"', "must be a list of zone names"),
]


def _check(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return check_paths([path], RUN).problems


@pytest.mark.parametrize(("text", "key", "why"), SCENARIOS + TOPOLOGIES)
def test_a_malformed_declaration_is_one_line_naming_the_file_the_key_and_the_value(
        tmp_path: Path, text: str, key: str, why: str) -> None:
    [line] = _check(tmp_path, text)
    assert line.startswith(f"{tmp_path / 'bad.toml'}: "), line
    assert key in line and why in line, line


def test_the_shipped_scenarios_explorations_and_topologies_pass() -> None:
    checked = check_paths([ROOT / "tests" / "scenarios", ROOT / "tests" / "explore", ROOT / "topologies"],
                          RUN)
    assert checked.problems == [] and len(checked.files) >= 12, checked


def test_a_path_that_is_no_file_and_a_folder_without_declarations_are_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    problems = check_paths([tmp_path / "missing.toml", empty], RUN).problems
    assert problems == [f"{tmp_path / 'missing.toml'}: no such file or folder",
                        f"{empty}: a folder with no .toml file in it"]


def test_a_spec_built_in_python_is_refused_at_construction_with_the_files_words() -> None:
    with pytest.raises(ScenarioSpecError) as err:
        ScenarioSpec(id="mine", title="mine", topic=TopicSpec(partitions=3),
                     producers=(ProducerSpec("p", "a", partitions=(7,)),),
                     consumers=(ConsumerSpec("p", "b"),))
    assert err.value.lines() == [
        'scenario mine: consumers[1].name = "p": producers[1] has that name already',
        "scenario mine: producers[1].partitions = [7]: the topic has partitions 0 to 2"]


def test_check_needs_no_engine_and_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(SCENARIOS[0][0])
    (tmp_path / "b.toml").write_text(SCENARIOS[2][0])
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}"}

    def check(*paths: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness.entry.cli", "check", *map(str, paths)],
                              capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)

    bad = check(tmp_path)
    assert bad.returncode == 2, bad
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith(f"kafka-chaos: {tmp_path}/") for line in lines), lines
    assert "Traceback" not in bad.stderr
    good = check(ROOT / "tests" / "scenarios", ROOT / "topologies")
    assert good.returncode == 0 and "no problem found" in good.stdout, good


def test_a_chaos_session_checks_the_registered_scenario_files_before_any_container(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.kafka-chaos]\nscenario-files = ["mine"]\n')
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "bad.toml").write_text(SCENARIOS[0][0])
    chaos_test = "import pytest\n\n\n@pytest.mark.chaos\ndef test_mine():\n    pass\n"
    (tmp_path / "test_mine.py").write_text(chaos_test)
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}",
           "KAFKA_CHAOS_REPORTS": str(tmp_path / "reports"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_mine.py"],
                            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 4, out
    assert "the project's scenario files do not check" in out
    assert "mine/bad.toml: topic.replication_factor = 5: topology three_az has 3 brokers" in out
    assert "no Docker engine" not in out  # refused before the engine was even asked for


def test_a_migration_file_is_checked_on_the_migrating_cluster_it_runs_on(tmp_path: Path) -> None:
    path = tmp_path / "migration.toml"
    path.write_text('[migration]\nhold_s = 5\n[[schedule]]\nstart_s = 0\nduration_s = 5\nfault = "kill"\n'
                    'target = "quorum_leader"\nwhen = { migration_phase = "copy" }\n')
    assert check_paths([path], RunTopology("three_az", load_topology(), "3.9.1")).problems == []
    [line] = check_paths([path], RunTopology("three_az", load_topology(), "3.5.2")).problems
    assert line.startswith(f"{path}: migration: Kafka 3.5.2 cannot migrate from ZooKeeper to KRaft"), line
