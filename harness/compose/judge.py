"""The Spark reconciliation as a run uses it: one session for every scenario of a run,
started and warmed while the cluster and the workload run.

A Spark session takes seconds to start and its first job seconds more (class loading,
code generation, the Python workers); a single scenario-file run would otherwise pay all
of it between the final drain and the verdict. :meth:`Judge.warm_up` starts the session
in the background and judges a tiny synthetic history once, so the scenario's own
judgement runs on a warm session.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import history as hist
from harness.errors import describe_error

if TYPE_CHECKING:
    from spark_jobs.findings import Verdict

# A history this small is judged in well under a second once warm, and exercises every
# stage of the job (both sweeps, the final log, every anomaly kind's plan) and every pass
# a scenario may need: a consumer group's, transactions', a pipeline's. A pass never run
# before costs its own class loading and code generation at the scenario's judgement.
WARM_UP_SENDS = 200


class Judge:
    """The Spark reconciliation, with one session shared by every scenario of a run."""

    def __init__(self, master: str | None = None) -> None:
        self._master = master
        self._spark: Any = None
        self._lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self.warm_up_error: str | None = None
        self.warm_up_s: float | None = None

    def _session(self) -> Any:
        """The session, started on first use; callers hold the lock."""
        from spark_jobs.session import build_session

        if self._spark is None:
            self._spark = build_session(self._master, {"spark.driver.memory": "1g"})
        return self._spark

    def warm_up(self) -> None:
        """Start the session and judge a tiny history in the background; a later
        :meth:`verdict` waits for it. A warm-up that fails is only slower: the verdict
        starts the session itself (and meets the same error, with its own text)."""
        if self._warming is not None or self._spark is not None:
            return
        self._warming = threading.Thread(target=self._warm, name="judge-warm-up", daemon=True)
        self._warming.start()

    def _warm(self) -> None:
        from spark_jobs.reconcile import reconcile
        from spark_jobs.synthetic import SynthSpec, generate

        started = time.monotonic()
        try:
            with self._lock, tempfile.TemporaryDirectory(prefix="kafka-chaos-warm-") as folder:
                generate(SynthSpec(sends=WARM_UP_SENDS, partitions=2, producers=2, consumers=1, groups=True,
                                   transactions=True, pipelines=True), folder)
                reconcile(self._session(), Path(folder))
            self.warm_up_s = time.monotonic() - started
        except Exception as err:  # recorded; the real judgement reports its own failure
            self.warm_up_error = describe_error(err)

    def verdict(self, history_dir: Path) -> Verdict:
        from spark_jobs.reconcile import reconcile

        with self._lock:
            findings = reconcile(self._session(), history_dir)
        manifest = hist.read_manifest(history_dir)
        return findings.judge(manifest.expectations)

    def close(self) -> None:
        if self._warming is not None:
            self._warming.join()
        with self._lock:
            if self._spark is not None:
                self._spark.stop()
                self._spark = None
