"""The layers hold: pyproject's import-linter contracts are kept by the code, a
deliberate back-import breaks them, and docs/ARCHITECTURE.md shows the graph as it is."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "faults", "spark_jobs", "topologies")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages under ``tree`` (found first on the path)."""
    return subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c; "
                               "sys.exit(c.main(['--no-cache'], standalone_mode=False))"],
        cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True, timeout=120)


def depgraph(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / ".ci" / "depgraph.py"), *args], cwd=tree,
                          env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.jar"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_code_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout, result.stdout[-2000:]


def test_a_back_import_from_faults_into_the_composition_layer_breaks_the_build(tree_copy: Path) -> None:
    spec = tree_copy / "faults" / "spec.py"
    spec.write_text(spec.read_text() + "\nimport harness.scenario.runner  # deliberate back-import\n")
    result = lint_imports(tree_copy)
    assert result.returncode != 0, result.stdout[-3000:]
    assert "faults.spec -> harness.scenario.runner" in result.stdout, result.stdout[-3000:]
    graph = depgraph(tree_copy)
    assert graph.returncode == 1 and "cycle between packages" in graph.stderr, graph


def test_topologies_importing_the_harness_breaks_the_build(tree_copy: Path) -> None:
    model = tree_copy / "topologies" / "model.py"
    model.write_text(model.read_text() + "\nimport harness.cluster.versions  # deliberate back-import\n")
    result = lint_imports(tree_copy)
    found = "topologies.model -> harness.cluster.versions" in result.stdout
    assert result.returncode != 0 and found, result.stdout


def test_the_architecture_doc_shows_the_graph_as_the_code_has_it() -> None:
    graph = depgraph(ROOT, "--mermaid")
    assert graph.returncode == 0, graph.stderr
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    assert graph.stdout.strip() in doc, "stale: paste `python3 .ci/depgraph.py --mermaid` into the doc"
