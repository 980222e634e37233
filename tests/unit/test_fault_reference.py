"""docs/FAULTS.md and the docs it is made from agree with the code, and the README stays inside.

The fault reference is generated, so the checks here are what keep it honest: the page
on disk is the page the code renders now, every registered kind has a doc and every doc
a kind, every documented parameter is accepted (and every accepted one documented, with
the default the code really uses), and every TOML example on the page builds.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from faults.errors import FaultSpecError
from faults.reference import (
    TARGET_DOCS,
    TOPIC,
    accepted_keys,
    main,
    problems,
    render_markdown,
)
from faults.registry import FAULT_DOCS, FAULTS, FaultDoc, build_fault
from faults.schedule import Schedule
from faults.targets import TARGET_KINDS, parse_target
from harness.scenario.file_format import KNOWN_KEYS
from harness.workload.clients import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS
from topologies import load_topology

ROOT = Path(__file__).resolve().parents[2]
FAULTS_PAGE = ROOT / "docs" / "FAULTS.md"
SCENARIOS_PAGE = ROOT / "docs" / "SCENARIOS.md"
README = ROOT / "README.md"
PLACEHOLDER = "placeholder-topic"


def substitute(value: Any) -> Any:
    """``value`` with the scenario-file topic placeholder replaced, as a scenario run would."""
    if value == TOPIC:
        return PLACEHOLDER
    if isinstance(value, list):
        return [substitute(v) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v) for k, v in value.items()}
    return value


def full_spec(doc: FaultDoc) -> dict[str, Any]:
    """A spec giving every documented parameter its example value."""
    return substitute({"fault": doc.kind, **{p.name: p.example for p in doc.params}})


def minimal_spec(doc: FaultDoc) -> dict[str, Any]:
    """A spec giving only the parameters documented as required."""
    return substitute({"fault": doc.kind, **{p.name: p.example for p in doc.params if p.required}})


DOCS = list(FAULT_DOCS.values())
IDS = [doc.kind for doc in DOCS]


def test_the_page_on_disk_is_the_page_the_code_renders() -> None:
    assert FAULTS_PAGE.read_text() == render_markdown(), (
        "docs/FAULTS.md is stale; regenerate it with: python3 -m faults.reference > docs/FAULTS.md"
    )


def test_docs_and_code_tables_agree() -> None:
    assert problems() == []


def test_every_registered_kind_has_a_doc_and_every_doc_a_kind() -> None:
    assert set(FAULTS) == set(FAULT_DOCS)
    assert all(kind == doc.kind for kind, doc in FAULT_DOCS.items())


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_documented_parameter_is_accepted_and_every_accepted_one_documented(doc: FaultDoc) -> None:
    fault = build_fault(full_spec(doc))
    fault.check(load_topology("three_az"))
    assert accepted_keys(full_spec(doc)) == {"fault"} | {p.name for p in doc.params}
    assert all(p.meaning and p.type for p in doc.params)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_required_parameters_are_required_and_defaults_are_the_codes(doc: FaultDoc) -> None:
    minimal = minimal_spec(doc)
    saved = build_fault(minimal).to_spec()
    for param in doc.params:
        if param.required:
            without = {k: v for k, v in minimal.items() if k != param.name}
            with pytest.raises(FaultSpecError):
                build_fault(without)
        elif param.name in saved:  # to_spec leaves out what it cannot hold (stream both, all partitions)
            assert saved[param.name] == param.default, f"{doc.kind}.{param.name}"


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_the_example_builds_and_fits_the_default_topology(doc: FaultDoc) -> None:
    build_fault(substitute(dict(doc.example))).check(load_topology("three_az"))


def test_every_toml_example_on_the_page_parses_and_builds() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", FAULTS_PAGE.read_text(), re.S)
    entries = [b for b in blocks if b.startswith("[[schedule]]")]
    assert len(entries) == len(FAULTS)
    kinds = []
    for block in entries:
        data = tomllib.loads(block)
        schedule = Schedule.from_dict({"entries": substitute(data["schedule"])}, "FAULTS.md example")
        schedule.check(load_topology("three_az"))
        kinds.append(data["schedule"][0]["fault"])
    assert kinds == list(FAULTS)
    links = [b for b in blocks if b.startswith("links")]
    for line in links[0].splitlines():
        build_fault({"fault": "cut", **tomllib.loads(line)})


def test_every_target_form_is_documented_and_its_examples_parse() -> None:
    assert list(TARGET_DOCS) == sorted(TARGET_DOCS, key=list(TARGET_KINDS).index)
    assert set(TARGET_DOCS) == set(TARGET_KINDS)
    for kind, doc in TARGET_DOCS.items():
        for example in doc.examples:
            assert parse_target(substitute(example)).kind == kind


def test_check_mode_exits_1_with_one_line_when_the_page_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh, stale = tmp_path / "fresh.md", tmp_path / "stale.md"
    fresh.write_text(render_markdown())
    stale.write_text(render_markdown().replace("### kill", "### kill -9"))
    assert main(["--check", str(fresh)]) == 0
    assert main(["--check", str(stale)]) == 1
    message = capsys.readouterr().err
    assert message.count("\n") == 1 and "stale" in message


def test_the_module_runs_as_a_script() -> None:
    done = subprocess.run([sys.executable, "-m", "faults.reference", "--check", str(FAULTS_PAGE)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_an_undocumented_kind_makes_rendering_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(FAULTS, "explode", FAULTS["kill"])
    assert any("explode" in p for p in problems())
    with pytest.raises(ValueError, match="fault kinds without documentation: explode"):
        render_markdown()


# -- the hand-written scenario page and the README ------------------------------------------
def test_the_scenario_page_names_every_scenario_file_key_expectation_and_client_default() -> None:
    page = SCENARIOS_PAGE.read_text()
    named = set(re.findall(r"`([^`]+)`", page))
    missing = (KNOWN_KEYS | set(PRODUCER_DEFAULTS) | set(CONSUMER_DEFAULTS)) - named
    assert not missing, f"docs/SCENARIOS.md does not name {sorted(missing)}"
    # The expectation keys are the anomaly kinds, listed once: in HISTORY.md's generated tables.
    assert "(HISTORY.md#anomaly-kinds-what-the-reconciliation-reports)" in page
    history = (ROOT / "docs" / "HISTORY.md").read_text()
    assert "\n## Anomaly kinds (what the reconciliation reports)\n" in history
    for number in range(1, 13):
        assert re.search(rf"^## S{number}\b", page, re.M), f"S{number} missing"
    for module in re.findall(r"tests/chaos/scenarios/test_s\d\d_\w+\.py", page):
        assert (ROOT / module).is_file(), module
    for module in sorted((ROOT / "tests/chaos/kraft").glob("test_k[0-9][0-9]_*.py")):
        heading = f"K{int(module.name[6:8])}"
        assert re.search(rf"^### {heading}\b", page, re.M), f"{heading} missing"


def test_readme_points_nowhere_outside_the_repository() -> None:
    text = README.read_text()
    links = re.findall(r"\]\(([^)]*)\)", text) + re.findall(r"`([^`]*)`", text)
    outside = [link for link in links if link.startswith("../") or "/../" in link]
    assert not outside, outside
    assert not re.search(r"(^|[\s(`'\"])\.\./", text), "README.md names a path outside the repository"
