"""What an fsync before every acknowledgement costs: acks=all throughput with Kafka's
default flush settings against ``flush.messages=1``, on the same cluster.

    python benchmarks/flush_bench.py [--records 20000] [--runs 3] [--disk host|tmpfs]

The power-loss scenarios (tests/scenarios/power_loss_*.toml) show what the fsync buys:
nothing acknowledged is lost when every broker loses power at once. This prints its
price. ``--disk host`` (the default) puts each broker's log directory on a volume of the
host's disk, where an fsync reaches the device; ``--disk tmpfs`` uses the topology's
in-memory broker disks, where an fsync costs nothing, as a control. Each topic has RF 3
and min.insync.replicas=2; one producer in zone a sends as fast as acks=all allows
(idempotent, linger 5 ms). Figures, best of ``--runs``, not assertions.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import uuid

from harness.cluster.lifecycle import Cluster
from harness.cluster.versions import DEFAULT_VERSION
from harness.workload.clients import make_producer, send_batch
from topologies import load_topology


def _rate(cluster: Cluster, topic: str, records: int) -> float:
    producer = make_producer(cluster, "a", {"acks": "all", "enable.idempotence": True, "linger.ms": 5})
    send_batch(producer, topic, 200, prefix="warm", timeout_s=60)  # connections and metadata
    started = time.monotonic()
    tally = send_batch(producer, topic, records, prefix="bench", timeout_s=600)
    elapsed = time.monotonic() - started
    if len(tally.acked) != records:
        failed = len(tally.failed)
        raise SystemExit(f"{topic}: {len(tally.acked)} of {records} acknowledged ({failed} failed)")
    return records / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--disk", choices=["host", "tmpfs"], default="host")
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    args = parser.parse_args()
    topology = load_topology()
    if args.disk == "host":
        topology = dataclasses.replace(topology, broker_disk_mb=None)
    best: dict[str, float] = {}
    with Cluster(topology, args.kafka_version) as cluster:
        for run in range(args.runs):
            for name, config in (("default flush", {}), ("flush.messages=1", {"flush.messages": 1})):
                topic = f"flush-bench-{uuid.uuid4().hex[:8]}"
                cluster.create_topic(topic, partitions=3, replication_factor=3,
                                     config={"min.insync.replicas": 2, **config})
                rate = _rate(cluster, topic, args.records)
                best[name] = max(best.get(name, 0.0), rate)
                print(f"run {run + 1}: {name:18s} {rate:9.0f} acks/s")
    print(f"best of {args.runs} ({args.records} records each, broker disks on {args.disk}):")
    for name, rate in best.items():
        print(f"  {name:18s} {rate:9.0f} acks/s")
    print(f"  per-message fsync costs {100 * (1 - best['flush.messages=1'] / best['default flush']):.0f}% "
          "of the throughput")


if __name__ == "__main__":
    main()
