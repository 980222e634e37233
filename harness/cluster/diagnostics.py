"""What a failed test leaves for the person who has to explain it: logs and metadata.

A verdict says *that* something went wrong; the brokers' and ZooKeeper's own logs and
the znodes Kafka's controller works from say *why*. They are gone once the cluster is
healed, restarted or removed, so they are copied out the moment a test fails or leaves
the cluster unhealthy, into ``<folder>/diagnostics/``::

    logs/<node>.log    every container's output (brokers, ZooKeeper, Toxiproxy)
    znodes.json        in ZooKeeper mode (the metadata mode's own dump): /controller,
                       /controller_epoch, /brokers/ids/*, and per topic the assignment
                       and each partition's state; plus what could not be read, so an
                       unreadable ensemble is visible as such
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster.fabric import TOXIPROXY_HOST

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster

LOG_TAIL_LINES = 20000  # per container; a run's logs are far shorter, a runaway one is cut


def collect_diagnostics(cluster: Cluster, dest: Path) -> Path:
    """Write every node's log and the metadata mode's dump under ``dest``; return ``dest``.

    Each part is attempted on its own, so a metadata quorum that answers nothing still
    leaves the logs, and a vanished container still leaves the others'.
    """
    logs = dest / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for node in [TOXIPROXY_HOST, *cluster.topology.node_names]:
        try:
            text = cluster.container(node).logs(tail=LOG_TAIL_LINES, timestamps=True)
            (logs / f"{node}.log").write_bytes(text)
        except Exception as err:
            (logs / f"{node}.log").write_text(f"(logs could not be read: {err})\n")
    name, dump = cluster.metadata.diagnostics()
    (dest / name).write_text(json.dumps(dump, indent=2) + "\n")
    return dest
