"""The ``kafka-chaos`` command line.

Subcommands: ``setup`` (engine and images), ``up`` (a cluster to poke at by hand, removed
on Ctrl-C), ``run`` (the chaos suite, reports written), ``clean`` (leftovers),
``versions`` and ``check-topology``. Every user error is one line on stderr and exit
status 2; nothing is left running.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from harness.errors import ChaosError
from harness.versions import DEFAULT_VERSION, release, supported_versions

EXIT_USAGE = 2


def _progress(line: str) -> None:
    print(f"[kafka-chaos] {line}", file=sys.stderr, flush=True)


def _cmd_setup(args: argparse.Namespace) -> int:
    from harness.engine import ensure_engine
    from harness.images import ensure_images

    started = time.monotonic()
    client = ensure_engine()
    for version in args.kafka_version:
        images = ensure_images(client, version, _progress)
        _progress(f"images ready for Kafka {version}: {images.kafka}, {images.toxiproxy}")
    _progress(f"setup done in {time.monotonic() - started:.1f} s")
    return 0


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _cmd_up(args: argparse.Namespace) -> int:
    from harness.cluster import Cluster
    from harness.resources import RunIdentity, new_run_id
    from topologies import load_topology

    signal.signal(signal.SIGTERM, _on_sigterm)
    identity = RunIdentity(args.run_id or new_run_id(), keep=args.keep)
    cluster = Cluster(
        load_topology(args.topology), args.kafka_version, identity=identity,
        host_port_base=args.port_base, progress=_progress,
    )
    try:
        cluster.start()
        print(f"run id: {cluster.run_id}")
        for zone in cluster.topology.zones:
            print(f"zone {zone} clients: bootstrap.servers={cluster.bootstrap_servers(zone)}")
        print(f"ZooKeeper (observer): {cluster.zookeeper_hosts()}")
        print(f"Toxiproxy API: http://127.0.0.1:{cluster.host_ports['toxiproxy-api']}")
        print("Ctrl-C removes the cluster." if not args.keep else "Ctrl-C leaves it running (--keep).",
              flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        _progress("interrupted: removing the cluster")
    finally:
        cluster.close()
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    """Run the chaos suite through pytest, which owns fixtures, cleanup and reports."""
    release(args.kafka_version)
    command = [sys.executable, "-m", "pytest", "-m", "chaos", "--kafka-version", args.kafka_version,
               "--topology", args.topology, *args.pytest_args]
    _progress("running: " + " ".join(command[2:]))
    return subprocess.call(command)


def _cmd_clean(args: argparse.Namespace) -> int:
    from harness.engine import ensure_engine
    from harness.resources import reap_stale

    reaped = reap_stale(ensure_engine(start_if_missing=False), include_kept=args.all)
    print(f"removed leftovers of {len(reaped)} run(s){': ' + ', '.join(reaped) if reaped else ''}")
    return 0


def _cmd_versions(args: argparse.Namespace) -> int:
    for version in supported_versions():
        print(version + (" (default)" if version == DEFAULT_VERSION else ""))
    return 0


def _cmd_check_topology(args: argparse.Namespace) -> int:
    from topologies import load_topology

    topology = load_topology(Path(args.path) if args.path.endswith(".toml") else args.path)
    print(f"topology {topology.name}: zones {', '.join(topology.zones)}, "
          f"{len(topology.brokers)} brokers, {len(topology.zookeepers)} ZooKeeper nodes")
    return 0


def _version(value: str) -> str:
    release(value)  # refuses unknown versions with the supported list
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-chaos", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    setup = sub.add_parser("setup", help="start a Docker engine if needed and build the images")
    setup.add_argument("--kafka-version", action="append", type=_version,
                       help=f"version(s) to build (default {DEFAULT_VERSION})")
    setup.set_defaults(func=_cmd_setup)

    up = sub.add_parser("up", help="start a cluster and keep it until Ctrl-C")
    up.add_argument("--kafka-version", default=DEFAULT_VERSION, type=_version)
    up.add_argument("--topology", default="three_az")
    up.add_argument("--port-base", type=int, default=None,
                    help="publish ports on 127.0.0.1 from this port up (default: free ports)")
    up.add_argument("--run-id", default=None)
    up.add_argument("--keep", action="store_true", help="leave the cluster running on exit")
    up.set_defaults(func=_cmd_up)

    run = sub.add_parser("run", help="run the chaos suite and write reports")
    run.add_argument("--kafka-version", default=DEFAULT_VERSION, type=_version)
    run.add_argument("--topology", default="three_az")
    run.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed on to pytest")
    run.set_defaults(func=_cmd_run)

    clean = sub.add_parser("clean", help="remove leftovers of killed runs")
    clean.add_argument("--all", action="store_true", help="also remove clusters kept with --keep")
    clean.set_defaults(func=_cmd_clean)

    versions = sub.add_parser("versions", help="list supported Kafka versions")
    versions.set_defaults(func=_cmd_versions)

    check = sub.add_parser("check-topology", help="validate a topology name or TOML file")
    check.add_argument("path")
    check.set_defaults(func=_cmd_check_topology)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if getattr(args, "kafka_version", None) is None and args.command == "setup":
            args.kafka_version = [DEFAULT_VERSION]
        return int(args.func(args))
    except ChaosError as err:
        print(f"kafka-chaos: {err}", file=sys.stderr)
        return EXIT_USAGE
    except argparse.ArgumentTypeError as err:
        print(f"kafka-chaos: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
