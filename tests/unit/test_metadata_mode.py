"""The metadata mode enters through one interface: no code outside its implementations
(harness/cluster/metadata/) branches on which mode a cluster runs. The topology
declaration (topologies/) is where the mode is declared and validated, so it is the one
other place that names it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "faults", "spark_jobs")
IMPLEMENTATIONS = ROOT / "harness" / "cluster" / "metadata"
MODE_NAMES = {"zookeeper", "kraft", "migration"}
MODE_CONSTANTS = {"ZOOKEEPER", "KRAFT", "MIGRATION"}  # topologies.model's names for them
MODE_CLASSES = {"ZooKeeperMode", "KRaftMode"}


def mode_branches(source: str) -> list[int]:
    """The lines of ``source`` that compare something with a mode's name or test a
    mode's class: ``x == "kraft"``, ``mode in ("zookeeper", ...)``,
    ``isinstance(m, ZooKeeperMode)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            names = {c.value for o in operands for c in ast.walk(o)
                     if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            names |= {n.id for o in operands for n in ast.walk(o) if isinstance(n, ast.Name)}
            names |= {n.attr for o in operands for n in ast.walk(o) if isinstance(n, ast.Attribute)}
            if names & (MODE_NAMES | MODE_CONSTANTS):
                found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
              and len(node.args) == 2 and {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
              & MODE_CLASSES):
            found.append(node.lineno)
    return found


def test_the_detector_sees_each_kind_of_branch() -> None:
    assert mode_branches('if topology.metadata == "kraft":\n    pass\n') == [1]
    assert mode_branches('ok = mode in ("zookeeper", "x")\n') == [1]
    assert mode_branches("if isinstance(cluster.metadata, ZooKeeperMode):\n    pass\n") == [1]
    assert mode_branches("if cluster.topology.metadata == KRAFT:\n    pass\n") == [1]
    assert mode_branches("if model.KRAFT != mode:\n    pass\n") == [1]
    assert mode_branches("if topology.metadata != MIGRATION:\n    pass\n") == [1]
    assert mode_branches('name = "zookeeper"\nif name:\n    pass\n') == []


def test_no_code_outside_the_implementations_branches_on_the_metadata_mode() -> None:
    branches = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if IMPLEMENTATIONS in path.parents:
                continue
            branches += [f"{path.relative_to(ROOT)}:{line}" for line in mode_branches(path.read_text())]
    assert branches == [], "mode branches outside harness/cluster/metadata/: " + ", ".join(branches)
