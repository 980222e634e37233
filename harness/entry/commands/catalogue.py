"""``kafka-chaos list``, ``check`` and ``versions``: what the project holds, told with no
Docker engine.

The commands a user starts with (which scenarios there are, whether a file is right,
which releases run) need no engine and start nothing; keeping them apart keeps them so.
"""

from __future__ import annotations

import argparse
import sys

from harness.cluster.versions import DEFAULT_VERSION, release, supported_versions
from harness.entry.commands.terminal import EXIT_USAGE


def cmd_list(args: argparse.Namespace) -> int:
    """The project's scenarios: the chaos tests pytest collects and the registered files."""
    from harness.scenario.catalogue import collect

    found = collect(args.paths)
    width = max((len(entry.run) for entry in found.suite + found.files), default=0) + 2
    print("Scenario suite (pytest -m chaos):")
    for entry in found.suite:
        print(f"  {entry.run:{width}}{entry.title}")
    print("Scenario files (kafka-chaos run FILE):")
    for entry in found.files:
        print(f"  {entry.run:{width}}{entry.title}")
    if found.errors:
        print(f"kafka-chaos: collecting the suite failed (pytest exit {found.errors})", file=sys.stderr)
        return 1
    return 0


def cmd_versions(args: argparse.Namespace) -> int:
    """The supported Kafka releases, each with its metadata modes; the default marked."""
    for version in supported_versions():
        modes = ", ".join(release(version).metadata_modes)
        print(f"{version}  {modes}" + ("  (default)" if version == DEFAULT_VERSION else ""))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Validate declarations with no engine: one line per problem on stderr, exit 2."""
    from harness.scenario.chaos_run import session_topology
    from harness.scenario.check_files import check_paths
    from harness.scenario.run_topology import RunTopology

    topology = session_topology(args.topology, args.metadata, args.kafka_version)
    checked = check_paths(args.paths, RunTopology(args.topology, topology, args.kafka_version))
    for line in checked.problems:
        print(f"kafka-chaos: {line}", file=sys.stderr)
    if not checked.ok:
        return EXIT_USAGE
    print(f"{len(checked.files)} file(s) checked on topology {topology.name}, Kafka {args.kafka_version}: "
          "no problem found")
    return 0
