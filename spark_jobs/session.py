"""Spark session set-up for the reconciliation, kept apart so tests and the CLI share it.

The master URL and any Spark conf are configuration, never code: the same job runs on
local[*], local-cluster, standalone, YARN or Kubernetes by changing a flag or the
KAFKA_CHAOS_SPARK_MASTER environment variable, and against a Spark Connect server by
naming its ``sc://host:port`` URL (as the master, the ``remote`` argument or the
KAFKA_CHAOS_SPARK_REMOTE environment variable). The job uses public DataFrame APIs only
(no JVM handles, no SparkContext), which is what lets it run through Spark Connect.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from pyspark.sql import SparkSession

MASTER_ENV = "KAFKA_CHAOS_SPARK_MASTER"
REMOTE_ENV = "KAFKA_CHAOS_SPARK_REMOTE"
DEFAULT_MASTER = "local[*]"  # what spark-submit picks when nobody chose

# Defaults tuned for a reconciliation, each overridable through ``conf``:
# - shuffle partitions: the job sizes its own shuffle from the input (see reconcile.py);
#   this is only the fallback for the small aggregations.
# - driver memory: in local mode the executors live in the driver JVM, and Spark's 1g
#   default spills a 10M-message aggregation to disk.
# - UI off: nobody looks at it in CI and it costs start-up time and a port.
# - log level WARN: Spark's INFO lines would bury the job's own output.
DEFAULT_CONF: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "4g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "WARN",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
}
# What a client may set on a Spark Connect session: runtime SQL settings. Everything else
# (memory, UI, log level) was fixed when the server started, and Connect refuses it.
REMOTE_CONF_PREFIX = "spark.sql."


def resolve_master(master: str | None) -> str | None:
    """Explicit argument, else the environment, else None.

    None means "leave it to spark-submit": under ``spark-submit --master yarn`` that keeps
    the submitter's choice, and a plain ``python`` launch defaults to local[*] there too.
    """
    return master or os.environ.get(MASTER_ENV) or None


def resolve_remote(master: str | None, remote: str | None) -> str | None:
    """The Spark Connect URL to use, or None for a classic session: ``remote``, else a
    master that is an ``sc://`` URL, else $KAFKA_CHAOS_SPARK_REMOTE unless a master was
    named explicitly (an explicit local[2] in a test must not be sent elsewhere)."""
    if remote:
        return remote
    if master:
        return master if master.startswith("sc://") else None
    return os.environ.get(REMOTE_ENV) or None


LOOPBACK_CONF: Mapping[str, str] = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def is_local(master: str | None) -> bool:
    """local, local[N], local[*] and local-cluster[...] keep every process on this host,
    so the driver listens on loopback only; anything else needs a reachable driver."""
    return master is None or master.startswith("local")


def build_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "kafka-chaos-reconcile",
    remote: str | None = None,
) -> SparkSession:
    """Create (or join) a session. Settings that only apply at JVM start (driver memory)
    take effect only if no session is running yet in this process; a Spark Connect
    session (see ``resolve_remote``) takes only the ``spark.sql.*`` ones, the server
    having been started with the rest."""
    url = resolve_remote(master, remote)
    if url:
        return _remote_session(url, {**DEFAULT_CONF, **(conf or {})}, app_name)
    builder = SparkSession.builder.appName(app_name)
    chosen = resolve_master(master)
    if chosen:
        builder = builder.master(chosen)
    # A session started from Python with a local master listens on loopback only. Under
    # spark-submit (which hands Python a gateway) with no master chosen here, the
    # submitter's master and driver address stand.
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    pin = is_local(chosen) if chosen or not under_submit else False
    loopback = LOOPBACK_CONF if pin else {}
    if pin:  # read by the JVM at launch, before any conf: which address is "this host"
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    merged = {**DEFAULT_CONF, **loopback, **(conf or {})}
    for key, value in merged.items():
        builder = builder.config(key, value)
    with _driver_output_kept(jvm_log_path()) if not under_submit else contextlib.nullcontext():
        return builder.getOrCreate()


def _remote_session(url: str, conf: Mapping[str, str], app_name: str) -> SparkSession:
    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in conf.items():
        if key.startswith(REMOTE_CONF_PREFIX):
            builder = builder.config(key, value)
    return builder.getOrCreate()


_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,")


def parallelism(spark: SparkSession) -> int:
    """How many tasks the session runs at once: what SparkContext.defaultParallelism
    says, from public settings only (no SparkContext exists under Spark Connect).

    spark.default.parallelism if set; else read from the master (local[N]: N, local[*]:
    this host's cores, local-cluster[n,c,m]: n*c); else executors x cores if set; else
    this host's cores, which is what a Connect server on this host has too."""

    def conf(key: str) -> str | None:
        with contextlib.suppress(Exception):
            return spark.conf.get(key, None)
        return None

    cores = os.cpu_count() or 1
    chosen = conf("spark.default.parallelism")
    if chosen and chosen.isdigit():
        return max(1, int(chosen))
    master = (conf("spark.master") or "").strip()
    if m := _LOCAL.match(master):
        n = m.group(1)
        return cores if n == "*" else max(1, int(n or 1))
    if m := _LOCAL_CLUSTER.match(master):
        return max(1, int(m.group(1)) * int(m.group(2)))
    executors, per_executor = conf("spark.executor.instances"), conf("spark.executor.cores")
    if executors and per_executor and executors.isdigit() and per_executor.isdigit():
        return max(1, int(executors) * int(per_executor))
    return cores


def jvm_log_path() -> Path:
    """Where the driver JVM's own output goes (start-up warnings, log4j, stack traces)."""
    cache = Path(os.environ.get("KAFKA_CHAOS_CACHE", Path.home() / ".cache" / "kafka-chaos"))
    return cache / "spark-driver.log"


@contextlib.contextmanager
def _driver_output_kept(path: Path) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``path`` while the driver JVM is launched.

    The JVM inherits them for its lifetime, so its start-up chatter (incubator modules,
    native-hadoop, log4j's default profile) and any later Java-side output go to a log
    file rather than between a test run's results; Python's own streams are restored at
    once. Java errors still reach Python as exceptions carrying their stack traces.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with path.open("ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
