"""``kafka-chaos check``: scenario files, exploration files and topologies validated with
no Docker engine and no cluster.

A file is read as what it declares: a topology when it names ``zones`` or ``extends``
(the two keys only a topology has), else a scenario file (an exploration file is a
scenario file whose schedule the explorer draws). A scenario is checked on its own
(:func:`harness.scenario.spec_check.spec_problems`) and on the topology it would run on
(:func:`~harness.scenario.spec_check.topology_problems`, the default one unless
``--topology`` names another, or its migrating variant for a file with a ``[migration]``
table), with the broker settings the Kafka release needs; every
problem is one line naming the file, the key path and the value. The same checks run
again when ``run``, ``explore`` or pytest are given the file, before any container.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import USER_ERRORS
from harness.scenario.run_topology import RunTopology
from topologies import load_topology

TOPOLOGY_KEYS = ("zones", "extends")


@dataclass
class Checked:
    """What ``check`` found: each file it read, and the problem lines."""

    files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def declaration_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """The TOML files named, folders searched for ``*.toml`` (sorted); and a line per
    argument that is neither."""
    files: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.rglob("*.toml"))
            if not found:
                missing.append(f"{path}: a folder with no .toml file in it")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            missing.append(f"{path}: no such file or folder")
    return files, missing


def is_topology(path: Path) -> bool:
    """Whether ``path`` declares a topology rather than a scenario (a file that does not
    parse is read as a scenario file, whose reader says where it breaks)."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return any(key in data for key in TOPOLOGY_KEYS)


def check_scenario_file(path: Path, run: RunTopology) -> list[str]:
    """The problem lines of one scenario or exploration file on the topology it would run
    on in ``run`` (a migrating one for a file with a ``[migration]`` table)."""
    from harness.scenario.file_format import check_runnable, load_scenario_file

    try:
        scenario = load_scenario_file(path)
    except USER_ERRORS as err:
        return str(err).splitlines()
    try:
        topology = run.for_scenario(scenario)
    except USER_ERRORS as err:
        return [f"{path}: migration: {err}"]
    try:
        check_runnable(scenario, topology, run.release_settings)
    except USER_ERRORS as err:
        return str(err).splitlines()
    return []


def check_topology_file(path: Path) -> list[str]:
    try:
        load_topology(path)
    except USER_ERRORS as err:
        line = str(err)
        return [line if line.startswith(str(path)) else f"{path}: {line}"]
    return []


def check_paths(paths: Sequence[str | Path], run: RunTopology) -> Checked:
    """Every problem of every declaration under ``paths``, scenarios checked as ``run``
    would run them."""
    files, missing = declaration_files(paths)
    checked = Checked(files, list(missing))
    for path in files:
        if is_topology(path):
            checked.problems += check_topology_file(path)
        else:
            checked.problems += check_scenario_file(path, run)
    return checked
