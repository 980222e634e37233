"""The scenarios a project has, for ``kafka-chaos list``.

The registry is the project's own, not a path into the installed package: the Python
suite is what pytest collects with ``-m chaos`` from the project's configured test
paths (exactly what ``pytest -m chaos`` would run), and scenario files are those in the
folders its pyproject.toml names::

    [tool.kafka-chaos]
    scenario-files = ["tests/scenarios"]

So ``kafka-chaos list`` in a user's repository lists that repository's scenarios, and
this one's lists S1-S12, the fault tests and the built-in scenario files.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

CONFIG_TABLE = "kafka-chaos"
FILES_KEY = "scenario-files"


@dataclass(frozen=True)
class Listed:
    """One runnable scenario: how to run it and what it is."""

    run: str  # a pytest node id, or a scenario file's path
    title: str


class _Collector:
    """A pytest plugin that keeps what the collection found instead of running it."""

    def __init__(self) -> None:
        self.items: list[Listed] = []
        self.rootpath: Path | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.rootpath = session.config.rootpath
        for item in session.items:
            module = getattr(item, "module", None)
            doc = (getattr(module, "__doc__", None) or "").strip()
            self.items.append(Listed(item.nodeid, doc.splitlines()[0] if doc else ""))


@dataclass(frozen=True)
class Catalogue:
    suite: list[Listed]
    files: list[Listed]
    errors: int  # pytest's exit code when the collection failed, else 0


def collect(paths: Sequence[str] = ()) -> Catalogue:
    """The chaos tests pytest collects (from ``paths``, else the configured test paths)
    and the scenario files of the folders pyproject.toml registers."""
    from harness.scenario.file_format import load_scenario_file

    collector = _Collector()
    printed = io.StringIO()  # pytest's own listing; shown only when the collection failed
    with contextlib.redirect_stdout(printed):
        code = pytest.main(["--collect-only", "-q", "-m", "chaos", "-p", "no:cacheprovider", *paths],
                           plugins=[collector])
    failed = 0 if code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED) else int(code)
    if failed:
        print(printed.getvalue(), file=sys.stderr)
    root = collector.rootpath or Path.cwd()
    files = [Listed(str(path.relative_to(root)), load_scenario_file(path).spec.title)
             for folder in scenario_folders(root) for path in sorted(folder.glob("*.toml"))]
    return Catalogue(collector.items, files, failed)


def scenario_folders(root: Path) -> list[Path]:
    """The folders ``[tool.kafka-chaos] scenario-files`` names, relative to ``root``."""
    config = root / "pyproject.toml"
    if not config.is_file():
        return []
    table = tomllib.loads(config.read_text()).get("tool", {}).get(CONFIG_TABLE, {})
    return [root / folder for folder in table.get(FILES_KEY, [])]
