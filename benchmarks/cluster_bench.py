"""Cluster start-up, health-restore and memory figures, per topology.

Prints, over several runs with images already cached: cold start to healthy, the time
to restore health between tests (after a clean test, and after a test that killed a
broker and cut a link), and the memory the cluster's containers use. Several topologies
are measured in one run, one cluster at a time, so ZooKeeper mode and KRaft stand side by
side on the same release. Targets on a 2-core machine: healthy in <= 30 s, restored in
<= 5 s. Figures, not assertions.

    python benchmarks/cluster_bench.py --runs 3 [--kafka-version 3.9.1] [--topologies three_az,three_az_kraft]
"""

from __future__ import annotations

import argparse
import statistics
import time

import docker

from harness.cluster.engine import ensure_engine
from harness.cluster.fabric import LinkKind
from harness.cluster.images import ensure_images
from harness.cluster.lifecycle import Cluster
from harness.cluster.versions import DEFAULT_VERSION
from topologies import load_topology
from topologies.model import Topology


def _memory_mib(cluster: Cluster) -> dict[str, float]:
    usage = {}
    for node in ["toxiproxy", *cluster.topology.node_names]:
        stats = cluster.container(node).stats(stream=False)
        mem = stats.get("memory_stats", {})
        cache = mem.get("stats", {}).get("cache", 0) or mem.get("stats", {}).get("inactive_file", 0)
        usage[node] = (mem.get("usage", 0) - cache) / 2**20
    return usage


def _summary(values: list[float]) -> str:
    return (f"median {statistics.median(values):6.2f}  min {min(values):6.2f}  "
            f"max {max(values):6.2f}  (n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--topologies", default="three_az", help="comma-separated topology names or files")
    args = parser.parse_args()

    client = ensure_engine()
    ensure_images(client, args.kafka_version)  # cached images: cold start excludes builds
    for name in args.topologies.split(","):
        _measure(client, load_topology(name), args.kafka_version, args.runs)


def _measure(client: docker.DockerClient, topology: Topology, kafka_version: str, runs: int) -> None:
    starts, clean_restores, fault_restores, memory = [], [], [], []
    per_node: dict[str, float] = {}
    for run in range(runs):
        cluster = Cluster(topology, kafka_version, docker_client=client)
        began = time.monotonic()
        cluster.start()
        starts.append(time.monotonic() - began)
        try:
            topic = f"bench-{run}"
            cluster.create_topic(topic, partitions=6, replication_factor=3)
            time.sleep(2)
            clean_restores.append(cluster.restore_health())
            # A typical damaged state: one broker killed, one link cut, then healed.
            cluster.container("kafka-2").kill()
            cluster.proxies.set_enabled(
                cluster.fabric.one("kafka-1", "kafka-0", LinkKind.REPLICATION).name, False)
            time.sleep(1)
            fault_restores.append(cluster.restore_health())
            time.sleep(3)
            memory.append(sum(_memory_mib(cluster).values()))
            per_node = _memory_mib(cluster)
        finally:
            cluster.close()
        print(f"run {run + 1}: healthy in {starts[-1]:.1f} s, restore clean "
              f"{clean_restores[-1]:.2f} s, restore after kill+cut {fault_restores[-1]:.1f} s, "
              f"memory {memory[-1]:.0f} MiB", flush=True)
    print()
    print(f"Kafka {kafka_version}, topology {topology.name} ({topology.metadata} mode: "
          f"{', '.join(topology.node_names)} + Toxiproxy)")
    print(f"cold start to healthy (s)          {_summary(starts)}")
    print(f"restore health, clean test (s)     {_summary(clean_restores)}")
    print(f"restore health, kill+cut (s)       {_summary(fault_restores)}")
    print(f"cluster memory (MiB)               {_summary(memory)}")
    print("last run per node (MiB): " + ", ".join(f"{k} {v:.0f}" for k, v in per_node.items()))


if __name__ == "__main__":
    main()
