"""Scenario files are validated whole before anything runs (pure, no Docker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenario_file import ScenarioFileError, check_against, load_scenario_file

BUILTIN = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("path", BUILTIN, ids=[p.stem for p in BUILTIN])
def test_builtin_scenario_files_load(path: Path) -> None:
    scenario = load_scenario_file(path)
    assert scenario.spec.expectations["lost"] == 0
    assert scenario.schedule_entries


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
    with pytest.raises(ScenarioFileError, match="unknown zone 'q'"):
        check_against(load_scenario_file(path), ("a", "b", "c"))
