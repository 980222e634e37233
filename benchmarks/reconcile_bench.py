"""Benchmark the reconciliation on synthetic histories of 1M, 10M (and 100M) sends.

    python benchmarks/reconcile_bench.py                    # 1M and 10M
    python benchmarks/reconcile_bench.py --sizes 1M --runs 3
    python benchmarks/reconcile_bench.py --with-100m        # ~8 GB disk, ~20 GB memory, ~35 min
    python benchmarks/reconcile_bench.py --master 'local-cluster[2,1,2048]'
    python benchmarks/reconcile_bench.py --sizes 100k --master sc://127.0.0.1:15002  # Spark Connect

Each history has matching polls and final log and every anomaly kind planted at a small
rate, the consumer-group kinds too (so most polls are a group's reads, with their commits
and rebalances; ``--no-groups`` plants no group kind, a history without group data, which
the judge skips the group pass for), and the transaction kinds (so a transactional
producer writes beside the others, with commit markers, aborted records and a
transactions table; ``--no-txn`` plants no transaction kind, a history without
transaction data, which the judge skips the transaction pass and the judged-outcome join
for); the run fails loudly if the counts found differ from the counts planted, so a fast
but wrong plan cannot look good. Printed per size: wall time with and without Spark
session start-up (start-up is paid once per process), records per second (sends + polls +
final log + commits + rebalances + transactions), the group, transaction and pipeline
passes' shares of the best run, and peak resident memory of this process tree (driver JVM + Python),
sampled from /proc so no extra dependency is needed. The reduce side runs in the
executors' Python workers (spark_jobs/sweep.py through mapInArrow), children of the
driver JVM, so they are counted too; with a Spark Connect master the server is another
process tree and only the client is measured.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.history import ANOMALY_KINDS, GROUP_KINDS, TXN_KINDS
from tests.synthetic.core import SynthSpec, generate

ANOMALY_RATE = 1e-4  # of sends, per kind
PAGE = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants (the JVM is a child of Python)."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except OSError:
            continue
        stack.extend(_children(pid))
    return total


class PeakRss:
    """Samples the process tree's RSS every 100 ms in a background thread."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(os.getpid()))
            self._stop.wait(0.1)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1], 1)
    return int(float(text.rstrip("KMG")) * scale)


def _generated(spec: SynthSpec, path: Path) -> tuple[dict[str, int], int, int]:
    """Run in a child process: write the history, and return its planted counts per kind,
    its rows and the generator's peak resident bytes. The generator's memory is then given
    back before the judge runs, so the peak measured around the judge is the judge's."""
    truth = generate(spec, path)
    want = {k: sum(v.values()) for k, v in truth.expected.items()}
    return want, sum(truth.rows.values()), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="1M,10M", help="comma-separated send counts (1M,10M)")
    p.add_argument("--with-100m", action="store_true", help="also run 100M sends")
    p.add_argument("--runs", type=int, default=2, help="reconciliations per size (best kept)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--workdir", help="where to write histories (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep generated histories")
    p.add_argument("--no-groups", action="store_true", help="no consumer group: plant no group kind")
    p.add_argument("--no-txn", action="store_true", help="no transactions: plant no transaction kind")
    args = p.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    if args.with_100m:
        sizes.append(100_000_000)

    from spark_jobs.reconcile import reconcile
    from spark_jobs.session import build_session

    work = Path(args.workdir or tempfile.mkdtemp(prefix="reconcile-bench-"))
    with PeakRss() as rss:
        t0 = time.perf_counter()
        spark = build_session(args.master, {"spark.driver.memory": args.driver_memory})
        startup = time.perf_counter() - t0
    print(f"spark session start-up: {startup:.1f} s (master {spark.conf.get('spark.master', args.master)})")
    # A warm session: the first judgement of a process pays for class loading and code
    # generation, which a session that has judged anything before no longer does.
    warm = work / "warm-up"
    generate(SynthSpec(sends=2_000, anomalies=dict.fromkeys(ANOMALY_KINDS, 1), seed=1), warm)
    w0 = time.perf_counter()
    reconcile(spark, warm)
    print(f"first judgement (warm-up, 2,000 sends, untimed below): {time.perf_counter() - w0:.1f} s")
    shutil.rmtree(warm, ignore_errors=True)
    print(
        f"{'sends':>12} {'records':>12} {'gen s':>7} {'job s':>7} {'+startup s':>10} "
        f"{'records/s':>12} {'peak RSS':>9} {'groups s':>8} {'txn s':>6} {'pipes s':>7}"
    )
    try:
        for n in sizes:
            path = work / f"history-{n}"
            shutil.rmtree(path, ignore_errors=True)
            per_kind = max(1, int(n * ANOMALY_RATE))
            skip = (GROUP_KINDS if args.no_groups else ()) + (TXN_KINDS if args.no_txn else ())
            kinds = [k for k in ANOMALY_KINDS if k not in skip]
            g0 = time.perf_counter()
            spec = SynthSpec(sends=n, anomalies=dict.fromkeys(kinds, per_kind), seed=n % 9973)
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                want, records, gen_peak = pool.apply(_generated, (spec, path))
            gen = time.perf_counter() - g0
            print(f"generated {n:,} sends: {gen:.1f} s, its peak RSS {gen_peak / 2**30:.2f} GiB", flush=True)
            best, timings = float("inf"), {}
            with PeakRss() as rss:
                for _ in range(args.runs):
                    r0 = time.perf_counter()
                    found = reconcile(spark, path)
                    took = time.perf_counter() - r0
                    if took < best:  # the passes' shares of the best run
                        best, timings = took, found.timings
                    if found.counts() != want:
                        raise SystemExit(f"WRONG counts at {n}: {found.counts()} != {want}")
            print(
                f"{n:>12,} {records:>12,} {gen:>7.1f} {best:>7.1f} {best + startup:>10.1f} "
                f"{records / best:>12,.0f} {rss.peak / 2**30:>7.2f}Gi {timings.get('groups_s', 0.0):>8.1f} "
                f"{timings.get('transactions_s', 0.0):>6.1f} {timings.get('pipelines_s', 0.0):>7.1f}",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(path, ignore_errors=True)
    finally:
        spark.stop()
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
