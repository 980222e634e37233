"""``kafka-chaos matrix``: the suite (or chosen scenarios) across Kafka versions, metadata
modes and clients in turn, then a summary grid.

The command's wiring only; the runs and the grid are ``harness.entry.matrix``.
"""

from __future__ import annotations

import argparse

from harness.cluster.resources import new_run_id
from harness.entry.commands.terminal import progress


def cmd_matrix(args: argparse.Namespace) -> int:
    """The suite (or chosen scenarios) across versions in turn, then a summary grid."""
    from harness.entry.matrix import matrix_runs, run_versions, write_summary
    from harness.workload.client_settings import ClientChoice

    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    clients = [ClientChoice.parse(c) for c in args.clients.split(",") if c.strip()]
    runs = matrix_runs(versions, args.metadata, clients)  # refused here, in one line, before anything starts
    matrix_id = args.matrix_id or f"matrix-{new_run_id()}"
    selection = ["-k", args.scenarios] if args.scenarios else []
    results = run_versions(runs, matrix_id, [*selection, *args.pytest_args], progress)
    summary = write_summary(matrix_id, results)
    progress(f"summary: {summary}")
    return 0 if all(r.exit_code == 0 for r in results) else 1
