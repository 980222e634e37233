"""`kafka-chaos list` reads the project's registry: what pytest collects with -m chaos and
the scenario-file folders pyproject.toml names - not a path into the installed package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.scenario.catalogue import scenario_folders

ROOT = Path(__file__).resolve().parents[2]


def test_the_registered_folders_come_from_the_projects_pyproject(tmp_path: Path) -> None:
    assert scenario_folders(ROOT) == [ROOT / "tests" / "scenarios"]
    assert scenario_folders(tmp_path) == []  # no pyproject: no files registered
    (tmp_path / "pyproject.toml").write_text('[tool.kafka-chaos]\nscenario-files = ["mine", "theirs"]\n')
    assert scenario_folders(tmp_path) == [tmp_path / "mine", tmp_path / "theirs"]


def test_list_shows_the_collected_chaos_tests_and_the_registered_files_from_another_directory(
    tmp_path: Path,
) -> None:
    # Run from a project of its own: a chaos test and a registered scenario file there.
    (tmp_path / "pyproject.toml").write_text('[tool.kafka-chaos]\nscenario-files = ["files"]\n'
                                             '[tool.pytest.ini_options]\ntestpaths = ["checks"]\n')
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "test_mine.py").write_text(
        '"""M1 my own scenario."""\nimport pytest\n\n@pytest.mark.chaos\ndef test_mine():\n    pass\n\n'
        'def test_not_chaos():\n    pass\n')
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "mine.toml").write_text('id = "mine"\ntitle = "My scenario file"\n')
    listed = subprocess.run([sys.executable, "-m", "harness.entry.cli", "list"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "checks/test_mine.py::test_mine" in listed.stdout and "M1 my own scenario." in listed.stdout
    assert "test_not_chaos" not in listed.stdout
    assert "files/mine.toml" in listed.stdout and "My scenario file" in listed.stdout
    assert "test_s01" not in listed.stdout, "the installed package's own tests are not the project's"
