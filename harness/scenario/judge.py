"""The Spark reconciliation as a run uses it: one session for every scenario of a run,
started and warmed while the cluster and the workload run.

A Spark session takes seconds to start and its first job seconds more (class loading,
code generation, the Python workers); a single scenario-file run would otherwise pay all
of it between the final drain and the verdict. :meth:`Judge.warm_up` starts the session
in the background and judges tiny synthetic histories, so the scenario's own judgement
runs on a warm session. A verdict asked for before the warm-up is done interrupts the
warm-up's Spark jobs and starts at once on a session warmed that far.
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
    from harness.history.verdict import Verdict

# A history this small is judged in well under a second once warm. The warm-up judges two:
# a plain one first (the overview, the main pass and the look-up of examples: what every
# verdict runs), then one with a consumer group, transactions and a pipeline (the passes
# some scenarios need). A pass never run before costs its own class loading and code
# generation, seconds on a machine busy with a cluster; a verdict asked for while the
# warm-up runs interrupts it and takes the session as warm as it got.
# How often a waiting verdict (or close) interrupts the warm-up's jobs again: one started
# after the last interrupt would otherwise run to its end.
INTERRUPT_EVERY_S = 0.2


class Judge:
    """The Spark reconciliation, with one session shared by every scenario of a run."""

    def __init__(self, master: str | None = None) -> None:
        self._master = master
        self._spark: Any = None
        self._lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._wanted = threading.Event()  # a verdict or close is waiting: the warm-up stops
        # Whether the warm-up is judging, changed and read under ``_state`` only: a verdict
        # interrupts the session's operations only while they are the warm-up's.
        self._state = threading.Lock()
        self._warm_judging = False
        self.warm_up_error: str | None = None
        self.warm_up_s: float | None = None
        self.warm_up_stages = 0  # of spark_jobs.warm_up's histories, judged

    def _session(self) -> Any:
        """The session, started on first use; callers hold the lock."""
        from spark_jobs.session import build_session

        if self._spark is None:
            self._spark = build_session(self._master, {"spark.driver.memory": "1g"})
        return self._spark

    def warm_up(self) -> None:
        """Start the session and judge tiny histories in the background; a later
        :meth:`verdict` waits for the session and interrupts the judging. A warm-up that
        fails is only slower: the verdict starts the session itself (and meets the same
        error, with its own text)."""
        if self._warming is not None or self._spark is not None:
            return
        self._warming = threading.Thread(target=self._warm, name="judge-warm-up", daemon=True)
        self._warming.start()

    def _warm(self) -> None:
        from spark_jobs.reconcile import reconcile
        from spark_jobs.warm_up import warm_up_histories, write_history

        started = time.monotonic()
        try:
            for shipped in warm_up_histories():
                with self._lock:
                    if self._wanted.is_set():
                        break
                    with tempfile.TemporaryDirectory(prefix="kafka-chaos-warm-") as folder:
                        write_history(shipped, Path(folder))
                        spark = self._session()
                        with self._state:
                            self._warm_judging = True
                        try:
                            reconcile(spark, Path(folder))
                        finally:
                            with self._state:
                                self._warm_judging = False
                    self.warm_up_stages += 1
        except Exception as err:  # recorded; the real judgement reports its own failure
            if not self._wanted.is_set():  # else: interrupted by a verdict or close, as meant
                self.warm_up_error = describe_error(err)
        self.warm_up_s = time.monotonic() - started

    def _acquire(self) -> None:
        """Take the session's lock, stopping the warm-up first: it skips its stages to
        come, and its Spark jobs under way are interrupted (only while they are the
        warm-up's: ``_state`` keeps that so until the interrupt is sent)."""
        self._wanted.set()
        while not self._lock.acquire(timeout=INTERRUPT_EVERY_S):
            with self._state:
                if self._warm_judging and self._spark is not None:
                    self._spark.interruptAll()

    def verdict(self, history_dir: Path) -> Verdict:
        from spark_jobs.reconcile import reconcile

        self._acquire()
        try:
            findings = reconcile(self._session(), history_dir)
        finally:
            self._lock.release()
        manifest = hist.read_manifest(history_dir)
        return findings.judge(manifest.expectations)

    def close(self) -> None:
        """Stop the session; a warm-up under way is interrupted, not waited for (a run
        ended early or by Ctrl-C must not wait for it)."""
        self._acquire()
        try:
            if self._spark is not None:
                self._spark.stop()
                self._spark = None
        finally:
            self._lock.release()
        if self._warming is not None:
            self._warming.join()
