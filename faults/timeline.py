"""Recording ZooKeeper's view over time, so a test can say *when* something changed.

"The new leader appeared 6.4 s after the kill" needs the state sampled while the fault
unfolds, not once afterwards. A :class:`StateRecorder` polls the cluster state from a
background thread (through the observer links, which faults never touch) and answers
"when was this first true" questions with monotonic times, comparable with the
``mono`` of fault events.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.cluster.zkstate import ClusterState

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster

Sample = tuple[float, ClusterState]


class StateRecorder:
    """Samples ``cluster.state(topics)`` every ``interval_s`` until stopped."""

    def __init__(self, cluster: Cluster, topics: list[str], interval_s: float = 0.05) -> None:
        self.cluster = cluster
        self.topics = topics
        self.interval_s = interval_s
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="state-recorder", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            taken = time.monotonic()
            try:
                state = self.cluster.state(self.topics)
            except Exception:  # the ensemble may be settling; try again
                state = None
            if state is not None:
                with self._lock:
                    self._samples.append((taken, state))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> StateRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    @property
    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)

    def first(self, predicate: Callable[[ClusterState], bool], after: float = 0.0) -> Sample | None:
        """The first sample taken at or after ``after`` for which ``predicate`` holds."""
        for taken, state in self.samples:
            if taken >= after and predicate(state):
                return taken, state
        return None

    def wait_for(
        self, predicate: Callable[[ClusterState], bool], timeout_s: float, after: float = 0.0
    ) -> Sample | None:
        """Block until a sample satisfies ``predicate`` (or the timeout); return it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.first(predicate, after)
            if found is not None:
                return found
            time.sleep(self.interval_s)
        return self.first(predicate, after)
