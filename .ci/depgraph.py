"""Draw the dependency graph between kafka-chaos's packages and layers, from the code.

    python3 .ci/depgraph.py            # text: one line per edge, with its import count
    python3 .ci/depgraph.py --mermaid  # the same as a Mermaid diagram (docs/ARCHITECTURE.md)

Nodes are the layers of pyproject's import-linter contract (the sub-packages of harness/,
and faults/, spark_jobs/, topologies/). The graph is built by grimp, the import-linter's
own graph builder, so it shows exactly what `lint-imports` checks. Exits 1, naming the
cycle, when any two nodes import each other directly or through others.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from graphlib import CycleError, TopologicalSorter

import grimp

ROOTS = ("harness", "faults", "spark_jobs", "topologies")
# Top to bottom, as the layers contract lists them.
NODES = ("harness.entry", "harness.rounds", "harness.scenario", "harness.report", "harness.explore", "faults",
         "spark_jobs", "harness.workload", "harness.cluster", "harness.history", "topologies",
         "harness.tagged", "harness.fields", "harness.files", "harness.errors")


def node_of(module: str) -> str | None:
    """The layer node a module belongs to (the longest node name that prefixes it)."""
    matches = [n for n in NODES if module == n or module.startswith(n + ".")]
    return max(matches, key=len) if matches else None


def edges() -> Counter[tuple[str, str]]:
    """(importer node, imported node) -> number of module-level imports between them."""
    graph = grimp.build_graph(*ROOTS, cache_dir=None)
    counted: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        source = node_of(module)
        for imported in graph.find_modules_directly_imported_by(module):
            target = node_of(imported)
            if source and target and source != target:
                counted[(source, target)] += 1
    return counted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")
    args = parser.parse_args(argv)
    counted = edges()
    order = {n: i for i, n in enumerate(NODES)}
    ranked = sorted(counted.items(), key=lambda kv: (order[kv[0][0]], order[kv[0][1]]))
    if args.mermaid:
        print("flowchart TD")
        for (source, target), count in ranked:
            src, dst = source.replace(".", "_"), target.replace(".", "_")
            print(f"    {src}[{source}] -->|{count}| {dst}[{target}]")
    else:
        for (source, target), count in ranked:
            print(f"{source:18} -> {target:18} {count:3d} import(s)")
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for (source, target) in counted:
        sorter.add(source, target)
    try:
        sorter.prepare()
    except CycleError as err:
        print(f"cycle between packages: {' -> '.join(err.args[1])}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
