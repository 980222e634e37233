"""What a failed test leaves for the person who has to explain it: logs and znodes.

A verdict says *that* something went wrong; the brokers' and ZooKeeper's own logs and
the znodes Kafka's controller works from say *why*. They are gone once the cluster is
healed, restarted or removed, so they are copied out the moment a test fails or leaves
the cluster unhealthy, into ``<folder>/diagnostics/``::

    logs/<node>.log    every container's output (brokers, ZooKeeper, Toxiproxy)
    znodes.json        /controller, /controller_epoch, /brokers/ids/*, and per topic
                       the assignment and each partition's state; plus what could not be
                       read, so an unreadable ensemble is visible as such
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cluster.fabric import TOXIPROXY_HOST
from harness.errors import describe_error

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster

LOG_TAIL_LINES = 20000  # per container; a run's logs are far shorter, a runaway one is cut
MAX_ZNODES = 5000
# A ZooKeeper without quorum answers nothing, and kazoo's plain calls wait for it forever:
# each read gets this long, the whole dump ZNODE_DUMP_S, so diagnostics always finish.
ZNODE_READ_S = 5.0
ZNODE_DUMP_S = 30.0
ZK_ROOTS = ("/controller", "/controller_epoch", "/brokers/ids", "/brokers/topics",
            "/admin", "/isr_change_notification", "/log_dir_event_notification")


def collect_diagnostics(cluster: Cluster, dest: Path) -> Path:
    """Write every node's log and a znode dump under ``dest``; return ``dest``.

    Each part is attempted on its own, so a ZooKeeper without quorum still leaves the
    logs, and a vanished container still leaves the others'.
    """
    logs = dest / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for node in [TOXIPROXY_HOST, *cluster.topology.node_names]:
        try:
            text = cluster.container(node).logs(tail=LOG_TAIL_LINES, timestamps=True)
            (logs / f"{node}.log").write_bytes(text)
        except Exception as err:
            (logs / f"{node}.log").write_text(f"(logs could not be read: {err})\n")
    (dest / "znodes.json").write_text(json.dumps(dump_znodes(cluster), indent=2) + "\n")
    return dest


def dump_znodes(cluster: Cluster, budget_s: float = ZNODE_DUMP_S) -> dict[str, Any]:
    """{path: data (JSON-decoded where it is JSON)} for Kafka's znodes, plus errors; what
    is not read within ``budget_s`` is named in the errors, never waited for."""
    found: dict[str, Any] = {}
    errors: dict[str, str] = {}
    try:
        client = cluster.zk.client
    except Exception as err:
        return {"znodes": {}, "errors": {"/": f"ZooKeeper unreachable: {err}"}}
    deadline = time.monotonic() + budget_s
    for path in _walk(client, ZK_ROOTS, errors, deadline):
        try:
            data, _ = _read(client.get_async(path), deadline)
        except Exception as err:
            errors[path] = describe_error(err)
            continue
        found[path] = _decode(data)
    return {"znodes": found, "errors": errors}


def _read(pending: Any, deadline: float) -> Any:
    """A kazoo async result, waited for at most ZNODE_READ_S and never past ``deadline``."""
    left = min(ZNODE_READ_S, deadline - time.monotonic())
    if left <= 0:
        raise TimeoutError("not read: the znode dump's time was up")
    return pending.get(timeout=left)


def _walk(client: Any, roots: tuple[str, ...], errors: dict[str, str], deadline: float) -> Iterator[str]:
    pending = list(roots)
    seen = 0
    while pending and seen < MAX_ZNODES:
        path = pending.pop(0)
        try:
            if _read(client.exists_async(path), deadline) is None:
                continue
            children = _read(client.get_children_async(path), deadline)
        except Exception as err:
            errors[path] = describe_error(err)
            continue
        seen += 1
        yield path
        pending.extend(f"{path.rstrip('/')}/{child}" for child in sorted(children))


def _decode(data: bytes | None) -> Any:
    if not data:
        return None
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
