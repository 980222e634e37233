"""``kafka-chaos setup``, ``up`` and ``clean``: the Docker engine, the images, a cluster
started by hand, and the leftovers of killed runs.

The commands that act on the engine and its containers, apart from running scenarios
(``run``), so what they leave behind and remove is read in one place.
"""

from __future__ import annotations

import argparse
import threading
import time

from harness.entry.commands.terminal import progress


def cmd_setup(args: argparse.Namespace) -> int:
    """Start a Docker engine if needed and build the images of each version asked for."""
    from harness.cluster.engine import ensure_engine
    from harness.cluster.images import ensure_images, ensure_java_client

    started = time.monotonic()
    client = ensure_engine()
    for version in args.kafka_version:
        images = ensure_images(client, version, progress)
        progress(f"images ready for Kafka {version}: {images.kafka}, {images.toxiproxy}")
    for version in args.java_client:
        progress(f"Java client image ready: {ensure_java_client(client, version, images.base, progress)}")
    progress(f"setup done in {time.monotonic() - started:.1f} s")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    """A cluster to poke at by hand: its addresses printed, then held until Ctrl-C (or
    SIGTERM), which removes it unless ``--keep``."""
    from harness.cluster.lifecycle import Cluster
    from harness.cluster.resources import RunIdentity, new_run_id
    from harness.cluster.waiting import hold
    from harness.scenario.chaos_run import session_topology, unwind_on_sigterm

    topology = session_topology(args.topology, args.metadata, args.kafka_version)
    unwind_on_sigterm()
    identity = RunIdentity(args.run_id or new_run_id(), keep=args.keep)
    cluster = Cluster(
        topology, args.kafka_version, identity=identity,
        host_port_base=args.port_base, progress=progress,
    )
    try:
        cluster.start()
        print(f"run id: {cluster.run_id}")
        for zone in cluster.topology.zones:
            print(f"zone {zone} clients: bootstrap.servers={cluster.bootstrap_servers(zone)}")
        for line in cluster.metadata.address_lines():
            print(line)
        print(f"Toxiproxy API: http://127.0.0.1:{cluster.host_ports['toxiproxy-api']}")
        print("Ctrl-C removes the cluster." if not args.keep else "Ctrl-C leaves it running (--keep).",
              flush=True)
        # Nothing sets the event: the hold ends with Ctrl-C (SIGTERM unwinds as one).
        hold(threading.TIMEOUT_MAX, until=threading.Event())
    except KeyboardInterrupt:
        progress("interrupted: removing the cluster")
    finally:
        cluster.close()
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """Remove the containers and networks of runs that are gone (and kept ones with --all)."""
    from harness.cluster.engine import ensure_engine
    from harness.cluster.resources import reap_stale

    reaped = reap_stale(ensure_engine(start_if_missing=False), include_kept=args.all)
    print(f"removed leftovers of {len(reaped)} run(s){': ' + ', '.join(reaped) if reaped else ''}")
    return 0
