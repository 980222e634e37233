"""The anomaly kinds registry: every kind written once, and everything else derived from it.

Holds the tree to the rule that code names a kind only through the registry's look-ups
(``kind(...)``, ``code(...)``), that docs/HISTORY.md's tables are the registry's, and
that each kind's example sentence reads the facts its sweep gives it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from harness.history import ANOMALY_FAMILIES, ANOMALY_KINDS, Expectations, HistoryError
from harness.history import kinds as registry
from harness.history.kinds import KINDS, Family, code, kind, kinds_of, of_code
from harness.history.kinds_reference import COMMAND, rendered, table

ROOT = Path(__file__).resolve().parents[2]
HISTORY_PAGE = ROOT / "docs" / "HISTORY.md"
# The product's packages. The synthetic history generators are test data that plant kinds
# by name; they are checked against the registry when they plant (an unknown kind is
# refused there).
PRODUCT = ("harness", "spark_jobs", "faults", "topologies")
TEST_DATA = ("synthetic",)
LOOK_UPS = {"kind", "code"}
# Strings that spell a kind's name but mean something else.
NOT_KINDS = {("harness/history/schema.py", "REBALANCE_LOST")}


def _assigned_name(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    parent = parents.get(node)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    return None


def _called(func: ast.expr) -> str | None:
    """The name a call is made by: ``kind(...)`` and ``registry.kind(...)`` alike."""
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def unreached(source: str, where: str) -> list[str]:
    """Each place in ``source`` that spells a kind's name outside a registry look-up."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and node.value in ANOMALY_KINDS):
            continue
        call = parents.get(node)
        if isinstance(call, ast.Call) and _called(call.func) in LOOK_UPS:
            continue
        if (where, _assigned_name(node, parents)) in NOT_KINDS:
            continue
        found.append(f"{where}:{node.lineno}: {node.value!r}")
    return found


def product_sources() -> list[Path]:
    files = [p for package in PRODUCT for p in sorted((ROOT / package).rglob("*.py"))]
    return [p for p in files if p.name != "kinds.py" and not p.stem.startswith(TEST_DATA)]


def test_the_tree_names_a_kind_only_through_the_registry() -> None:
    found = [hit for p in product_sources() for hit in unreached(p.read_text(), str(p.relative_to(ROOT)))]
    why = "kinds named outside the registry; look them up with kind()/code():\n"
    assert not found, why + "\n".join(found)


def test_the_scan_catches_a_planted_kind_name() -> None:
    planted = ('counts = {"lost": 1}\nLOST = kind("lost").name\nif name == "txn_partial":\n    pass\n'
               'DUP = registry.kind("duplicate").name\n')
    assert unreached(planted, "planted.py") == ["planted.py:1: 'lost'", "planted.py:3: 'txn_partial'"]
    assert product_sources(), "the scan read no file"


def test_a_look_up_refuses_an_unknown_kind() -> None:
    with pytest.raises(KeyError, match="unknown anomaly kind 'lots'"):
        kind("lots")
    with pytest.raises(KeyError):
        code("lots")


def test_everything_kind_shaped_is_read_off_the_registry() -> None:
    assert tuple(k.name for k in KINDS) == ANOMALY_KINDS
    assert len(set(ANOMALY_KINDS)) == len(ANOMALY_KINDS)
    assert {f.value: kinds_of(f) for f in Family} == ANOMALY_FAMILIES
    assert sum(map(len, ANOMALY_FAMILIES.values())) == len(KINDS)
    assert set(Expectations().to_dict()) == set(ANOMALY_KINDS)
    for k in KINDS:
        assert of_code(k.family, code(k.name)) == k.name
        assert k.definition and k.unit


def test_expectations_take_every_kind_and_refuse_others() -> None:
    everything = Expectations.from_dict(dict.fromkeys(ANOMALY_KINDS, "any"))
    assert everything.rule(ANOMALY_KINDS[-1]) == "any"
    with pytest.raises(HistoryError, match="unknown anomaly kind"):
        Expectations.from_dict({"lots": 0})
    with pytest.raises(HistoryError, match="not an int"):
        Expectations.from_dict({"lost": True})


def test_the_history_page_holds_the_registry_s_tables() -> None:
    command = [sys.executable, "-m", "harness.history.kinds_reference", "--check", str(HISTORY_PAGE)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{done.stderr}regenerate with: {COMMAND}"
    page = HISTORY_PAGE.read_text()
    for family in Family:
        assert table(family) in page


def test_a_changed_definition_makes_the_page_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    page = HISTORY_PAGE.read_text()
    assert rendered(page) == page
    changed = registry.AnomalyKind("lost", Family.MESSAGES, "gone", "message", KINDS[0].detail, {})
    monkeypatch.setattr(registry, "KINDS", (changed, *KINDS[1:]))
    monkeypatch.setattr("harness.history.kinds_reference.KINDS", registry.KINDS)
    assert rendered(page) != page
    with pytest.raises(ValueError, match="no messages kinds table"):
        rendered(page.replace("kinds table: messages", "kinds table: elsewhere"))


SENTENCES = {
    "lost": "acknowledged at offset 7; absent from the final log (final log holds p-9)",
    "truncated": "read or acknowledged at offset 7; final log holds nothing there",
    "poll_skip": "c-1 (group g, assignment 2) read offset 9 right after offset 4, skipping 4 acknowledged "
                 "offsets from 5",
    "commit_beyond_read": "c-1 committed offset 9 for group g when the group had read up to offset 4 there; "
                          "offset 6 held a record",
    "txn_uncommitted_read": "consumer c-2 (read_committed) polled it 0.250 s before transaction t-1 asked "
                            "to commit",
    "txn_partial": "transaction t-1 was committed, yet only 1 of its 3 messages is readable under "
                   "read_committed on the final log",
    "pipeline_orphan": "a visible output of group g; at its source offset 4 the final log holds in-3, "
                       "not in-4",
}  # fmt: skip


def test_every_kind_tells_its_example_from_its_sweep_s_facts() -> None:
    for k in KINDS:
        assert k.detail(k.example).strip(), k.name
    for name, sentence in SENTENCES.items():
        assert registry.detail(name, kind(name).example) == sentence
    first = registry.detail("poll_skip", {**kind("poll_skip").example, "first_read": True})
    assert "first read offset 9, above its resume offset 0" in first
