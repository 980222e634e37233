"""Bad input to the command line: one clear line on stderr and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.entry.cli", *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )


def _one_line_error(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kafka-chaos: ")
    assert expected in lines[0]


def test_unknown_kafka_version_is_refused_with_the_supported_list() -> None:
    result = _cli("up", "--kafka-version", "3.7.99")
    _one_line_error(result, "Kafka '3.7.99' is not supported; supported versions: 2.8.2")


def test_version_never_released_on_maven_central_is_refused() -> None:
    _one_line_error(_cli("setup", "--kafka-version", "9.9.9"), "is not supported")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('zones = ["a", "b", "c"]\n[[brokers]]\nid = 0\nzone = "a"\n', "zone 'b' of topology"),
        ('zones = ["a"]\nbrokers_per_zone = 1\n[topic_defaults]\n"replication.factor" = 3\n',
         "replication factor 3 is impossible on 1 broker(s)"),
        ('zones = ["a", "a"]\n', "repeats zone(s)"),
        ("zones = [\n", "does not parse"),
    ],
)
def test_malformed_topology_is_refused(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content)
    _one_line_error(_cli("check", str(path)), expected)
    # The same declaration handed to `up` fails before any container exists.
    _one_line_error(_cli("up", "--topology", str(path)), expected)


def test_no_docker_engine_is_one_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-docker.sock"
    result = _cli("up", env={"DOCKER_HOST": f"unix://{missing}"})
    _one_line_error(result, "no Docker engine answers")


def test_report_refuses_a_folder_that_is_not_a_run_and_writes_nothing_into_it(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a run")
    _one_line_error(_cli("report", str(tmp_path)), "is not a run folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_the_version_and_every_command_and_option_have_words() -> None:
    from harness.entry.cli import build_parser

    version = _cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("kafka-chaos "), version
    parser = build_parser()
    [commands] = [a for a in parser._actions if a.dest == "command"]  # argparse keeps them here
    for name, command in commands.choices.items():  # type: ignore[union-attr]
        assert command.description, f"'kafka-chaos {name}' has no description"
        for action in command._actions:
            assert action.help, f"'kafka-chaos {name}' option {action.dest} has no help"


ZOOKEEPER_FAULT = """id = "zk-on-kraft"
title = "expire a session"
[topic]
partitions = 1
[[producers]]
name = "pa"
zone = "a"
[[schedule]]
start_s = 1
fault = "expire_session"
target = { broker = 1 }
"""


@pytest.mark.parametrize(("args", "expected"), [
    (("run", "--kafka-version", "4.4.0"),
     "Kafka 4.4.0 does not run in zookeeper mode here (it runs in kraft)"),
    (("up", "--kafka-version", "4.0.0", "--metadata", "zookeeper"),
     "Kafka 4.0.0 does not run in zookeeper mode"),
    (("run", "--metadata", "kraft"), "Kafka 3.7.2 does not run in kraft mode here"),
])
def test_a_metadata_mode_the_release_lacks_is_one_line_before_any_container(
        args: tuple[str, ...], expected: str) -> None:
    _one_line_error(_cli(*args), expected)


def test_a_zookeeper_fault_on_kraft_and_a_controller_role_on_zookeeper_are_one_line(tmp_path: Path) -> None:
    zookeeper_fault = tmp_path / "zk.toml"
    zookeeper_fault.write_text(ZOOKEEPER_FAULT)
    result = _cli("run", str(zookeeper_fault), "--kafka-version", "3.9.1", "--metadata", "kraft")
    _one_line_error(result, "fault 'expire_session' acts on ZooKeeper, and topology 'three_az_kraft' "
                            "has none")
    assert 'kind = "kraft-broker"' in result.stderr, "the KRaft counterpart is named"
    controller_role = tmp_path / "majority.toml"
    controller_role.write_text(ZOOKEEPER_FAULT.replace('"expire_session"', '"kill"')
                               .replace("{ broker = 1 }", '"controller_majority"'))
    result = _cli("run", str(controller_role))
    _one_line_error(result, "target 'controller_majority' names KRaft controllers, and topology 'three_az' "
                            "has none")


MIGRATION_FILE = """id = "m"
title = "a migration"
[migration]
hold_s = 5
"""


@pytest.mark.parametrize(
    ("extra", "args", "expected"),
    [
        ("", ("--kafka-version", "3.5.2"), "Kafka 3.5.2 cannot migrate from ZooKeeper to KRaft here"),
        ('rollback_after = "finalize"\n', ("--kafka-version", "3.9.1"),
         "migration.rollback_after 'finalize': a rollback is possible after enter_migration"),
        ('rollback_after = "dual-write"\n', ("--kafka-version", "3.9.1"),
         "migration_phase 'dual-write' is not a phase of the migration"),
        ("hold = 5\n", ("--kafka-version", "3.9.1"), "migration: unknown key(s) hold"),
        ("change_at_s = 9\n", ("--kafka-version", "3.9.1"),
         "migration.change_at_s = 9: the change is made in dual-write, which lasts hold_s = 5 s"),
        ("", ("--kafka-version", "3.9.1", "--metadata", "kraft"), "a migration starts from a ZooKeeper-mode"),
        ('[[schedule]]\nstart_s = 0\nduration_s = 5\nfault = "kill"\ntarget = "controller_majority"\n',
         ("--kafka-version", "3.9.1"), "acts on the KRaft controllers, which a migration starts in its "
                                       "provision phase"),
    ],
)
def test_a_migration_file_that_cannot_run_is_refused_before_any_container(
        tmp_path: Path, extra: str, args: tuple[str, ...], expected: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(MIGRATION_FILE + extra)
    missing = tmp_path / "no-such-docker.sock"  # nothing may reach an engine first
    _one_line_error(_cli("run", str(path), *args, env={"DOCKER_HOST": f"unix://{missing}"}), expected)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--kafka-version", "3.5.2"), "Kafka 3.5.2 cannot migrate from ZooKeeper to KRaft here"),
        (("--kafka-version", "3.9.1", "--metadata", "kraft"), "a migration starts from a ZooKeeper-mode"),
        (("--kafka-version", "3.9.1", "--faults", "kill,reassign"),
         "explore: fault kind(s) reassign are not drawn during a migration"),
    ],
)
def test_an_exploration_during_a_migration_that_cannot_run_is_refused_before_any_container(
        tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    missing = tmp_path / "no-such-docker.sock"
    result = _cli("explore", "tests/explore/safe.toml", "--during", "migration", "--rounds", "1", *args,
                  env={"DOCKER_HOST": f"unix://{missing}"})
    _one_line_error(result, expected)


def test_a_migration_file_is_explored_only_during_a_migration(tmp_path: Path) -> None:
    base = Path("tests/explore/safe.toml").read_text()
    path = tmp_path / "m.toml"
    path.write_text(base + "\n[migration]\nhold_s = 20\n")
    missing = tmp_path / "no-such-docker.sock"
    result = _cli("explore", str(path), "--kafka-version", "3.9.1", "--rounds", "1",
                  env={"DOCKER_HOST": f"unix://{missing}"})
    _one_line_error(result, "[migration]: the file walks a migration; explore it with --during migration")
