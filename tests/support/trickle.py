"""The small workload fault tests need: unique topics, and writes that keep logs moving.

:class:`Trickle` keeps writing to a topic from a background thread: several effects
(a follower falling out of the ISR because it no longer keeps up) need the leader's
log to move while the fault is on. Topics are created with
:meth:`Cluster.create_topic`, which retries while its admin client still names a
controller that a fault test has just moved.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from harness.cluster.lifecycle import Cluster
from harness.workload.clients import make_producer, send_batch


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Trickle:
    """A few writes every ``interval_s`` to ``topic`` from zone ``zone``'s clients: acks=1
    unless ``settings`` say otherwise. ``acked`` holds every acknowledged value and
    ``failed`` counts the sends that failed."""

    def __init__(self, cluster: Cluster, topic: str, zone: str = "a", interval_s: float = 0.2,
                 settings: Mapping[str, Any] | None = None, batch: int = 5) -> None:
        merged = {"acks": "1", "message.timeout.ms": 5000, **(settings or {})}
        self._producer = make_producer(cluster, zone, merged)
        self._timeout_s = int(merged["message.timeout.ms"]) / 1000 + 1  # every report is in by then
        self._topic = topic
        self._interval_s = interval_s
        self._batch = batch
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trickle", daemon=True)
        self.acked: set[bytes] = set()
        self.failed = 0

    def _run(self) -> None:
        batch = 0
        while not self._stop.is_set():
            tally = send_batch(self._producer, self._topic, self._batch, prefix=f"trickle-{batch}",
                               timeout_s=self._timeout_s)
            self.acked.update(tally.acked)
            self.failed += len(tally.failed)
            batch += 1
            self._stop.wait(self._interval_s)

    def __enter__(self) -> Trickle:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
