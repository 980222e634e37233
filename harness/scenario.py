"""One scenario, end to end: topic, workload, faults, heal, drain, judge, record.

The order is Jepsen's: clients run against the cluster while a nemesis breaks it; then
everything heals, a final read collects what survived, and the checker judges the
history. Data flows one way - the run writes a history, the Spark job turns it into a
verdict - and the test adds what ZooKeeper showed (checks and measured windows). All of
it lands in the run's folder (:mod:`harness.rundir`) for the HTML report.
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import history as hist
from harness.node_config import format_value
from harness.rundir import RunDirectory, write_json
from harness.sampler import ZkSampler
from harness.workload import ConsumerSpec, ProducerSpec, Workload, drain_final_log
from topologies.model import SettingValue

if TYPE_CHECKING:
    from faults.base import Fault
    from faults.events import EventLog
    from faults.schedule import Schedule
    from harness.cluster import Cluster
    from spark_jobs.findings import Verdict


@dataclass(frozen=True)
class TopicSpec:
    """The scenario's topic; ``assignment`` pins replicas (partition -> broker ids)."""

    partitions: int = 6
    replication_factor: int = 3
    config: Mapping[str, SettingValue] = field(default_factory=dict)
    assignment: Mapping[int, Sequence[int]] | None = None

    def to_dict(self, name: str) -> dict[str, Any]:
        return {"name": name, "partitions": self.partitions,
                "replication_factor": self.replication_factor, "config": dict(self.config),
                "assignment": None if self.assignment is None
                else {str(p): list(r) for p, r in self.assignment.items()}}


@dataclass(frozen=True)
class ScenarioSpec:
    """What a scenario is: its text, topic, clients and what it accepts."""

    id: str
    title: str
    description: str = ""
    expected: str = ""
    topic: TopicSpec = TopicSpec()
    producers: tuple[ProducerSpec, ...] = (ProducerSpec("pa", "a"),)
    consumers: tuple[ConsumerSpec, ...] = (ConsumerSpec("ca", "a"),)
    expectations: Mapping[str, hist.Rule] = field(default_factory=dict)
    schedule: Schedule | None = None


class Judge:
    """The Spark reconciliation, with one session shared by every scenario of a run."""

    def __init__(self, master: str | None = None) -> None:
        self._master = master
        self._spark: Any = None
        self._lock = threading.Lock()

    def verdict(self, history_dir: Path) -> Verdict:
        from spark_jobs.reconcile import reconcile
        from spark_jobs.session import build_session

        with self._lock:
            if self._spark is None:
                self._spark = build_session(self._master, {"spark.driver.memory": "1g"})
            findings = reconcile(self._spark, history_dir)
        manifest = hist.read_manifest(history_dir)
        return findings.judge(manifest.expectations)

    def close(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""


class ScenarioRun:
    """A running scenario; use as a context manager, call :meth:`finish` to judge."""

    def __init__(self, cluster: Cluster, spec: ScenarioSpec, run: RunDirectory, judge: Judge,
                 scenario_id: str | None = None) -> None:
        from faults.events import EventLog

        self.cluster = cluster
        self.spec = spec
        self.judge = judge
        self.scenario_id = scenario_id or spec.id
        self.dir = run.scenario_dir(self.scenario_id)
        self.topic = f"{self.scenario_id}-{uuid.uuid4().hex[:6]}"
        self.partitions = list(range(spec.topic.partitions if spec.topic.assignment is None
                                     else len(spec.topic.assignment)))
        self.checks: list[Check] = []
        self.windows: list[dict[str, Any]] = []
        self.verdict: Verdict | None = None
        self.writer = hist.HistoryWriter(self.dir / "history", run.run_id, scenario={
            "id": self.scenario_id, "title": spec.title, "topic": self.topic,
            "expectations": dict(spec.expectations),
        })
        self.log: EventLog = EventLog(sink=self._record_fault)
        self._writer_lock = threading.Lock()
        self.sampler: ZkSampler | None = None
        self.workload: Workload | None = None
        self._finished = False
        self._error: str | None = None
        self.started = time.time()

    # -- recording -------------------------------------------------------------------------
    def _record_fault(self, row: Mapping[str, Any]) -> None:
        if self.workload is not None:
            self.workload.recorder.row("faults", row)
        else:
            with self._writer_lock:
                self.writer.append("faults", row)

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        """Record a ZooKeeper-side check for the report; returns ``passed`` to assert on."""
        self.checks.append(Check(name, bool(passed), detail))
        return bool(passed)

    def record_test_outcome(self, passed: bool, detail: str) -> None:
        """The pytest result of the test that ran this scenario, added to its checks."""
        self.checks.append(Check("test assertions (pytest)", passed, detail))
        self._write_assertions()

    def window(self, name: str, seconds: float) -> float:
        """Record a measured window (e.g. unavailability of a partition) for the report."""
        self.windows.append({"name": name, "seconds": round(seconds, 3)})
        return seconds

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, workload: bool = True) -> ScenarioRun:
        topic = self.spec.topic
        assignment = None if topic.assignment is None else {p: list(r) for p, r in topic.assignment.items()}
        self.cluster.create_topic(self.topic, topic.partitions, topic.replication_factor,
                                  dict(topic.config), assignment=assignment)
        self._write_config()
        self.sampler = ZkSampler(self.cluster.zookeeper_hosts(), [self.topic])
        self.sampler.start()
        if workload:
            self.start_workload()
        return self

    def start_workload(self) -> Workload:
        self.workload = Workload(self.cluster, self.topic, self.partitions, self.writer,
                                 self.spec.producers, self.spec.consumers).start()
        return self.workload

    def stop_workload(self) -> dict[str, int]:
        if self.workload is None:
            return {}
        self.workload.stop()
        return self.workload.outcomes()

    def inject(self, fault: Fault) -> tuple[str, ...]:
        return fault.inject(self.cluster, self.log)

    def heal(self, fault: Fault) -> None:
        fault.heal(self.cluster, self.log)

    def run_schedule(self, schedule: Schedule, timeout_s: float | None = None) -> bool:
        """Run a fault schedule beside the workload and wait for it to finish.

        The schedule is a check of its own: it passes only when every entry was injected
        and healed without error, within ``timeout_s`` past its planned length - a
        schedule that did not happen must not let the scenario pass as if it had.
        """
        schedule.save(self.dir / "schedule.json")
        with schedule.start(self.cluster, self.log) as running:
            finished = running.wait(None if timeout_s is None else schedule.length_s + timeout_s)
        schedule.save(self.dir / "schedule.json", self.log)
        problems = list(running.errors)
        if not finished:
            problems.insert(0, f"the schedule had not finished {timeout_s:.0f} s after its planned end")
        injected = sum(1 for e in self.log if e.action == "inject" and e.ok)
        if injected < len(schedule.entries):
            problems.append(f"{injected} of {len(schedule.entries)} entries injected")
        return self.check(f"fault schedule ran: {len(schedule.entries)} entries injected and healed",
                          not problems, "; ".join(problems) or f"{injected} injections, all healed")

    def settle(self, seconds: float) -> None:
        """Let the workload run for ``seconds`` (before, during or after a fault)."""
        time.sleep(seconds)

    def finish(self) -> Verdict:
        """Stop clients, heal everything, drain the log, judge, and write the record."""
        from faults.heal import heal_all

        if self._finished:
            assert self.verdict is not None
            return self.verdict
        self.stop_workload()
        heal_all(self.cluster, self.log)
        self._check_fault_events()
        drain_final_log(self.cluster.observer_bootstrap(), self.topic, self.partitions, self.writer)
        self._close(hist.STATUS_COMPLETE)
        self.verdict = self.judge.verdict(self.dir / "history")
        self.verdict.write(self.dir / "verdict.json")
        self._finished = True
        self._write_assertions()
        return self.verdict

    def _check_fault_events(self) -> None:
        """Every fault event of the scenario succeeded: an inject or heal that raised
        means the scenario did not test what it says, whatever the verdict."""
        failed = [f"{e.action} {e.fault} {', '.join(e.targets)}: {e.outcome}" for e in self.log if not e.ok]
        injected = sum(1 for e in self.log if e.action == "inject")
        healed = len(self.log) - injected
        self.check("faults injected and healed without error", not failed,
                   "; ".join(failed) or f"{injected} injections and {healed} heals, all ok")

    def _close(self, status: str) -> None:
        if self.sampler is not None:
            events = self.sampler.stop()
            write_json(self.dir / "cluster_events.json", [e.to_dict() for e in events])
        self.writer.close(status)

    def _write_assertions(self) -> None:
        checks = [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks]
        if self._error:
            checks.append({"name": "scenario ran to completion", "passed": False, "detail": self._error})
        write_json(self.dir / "assertions.json", {
            "passed": all(c["passed"] for c in checks) and self._error is None,
            "checks": checks, "windows": self.windows,
            "duration_s": round(time.time() - self.started, 1),
        })

    def _write_config(self) -> None:
        schedule = [] if self.spec.schedule is None else self.spec.schedule.to_dict().get("entries", [])
        settings = self.cluster.topology.broker_settings
        write_json(self.dir / "config.json", {
            "scenario": {"id": self.scenario_id, "title": self.spec.title,
                         "description": self.spec.description, "expected": self.spec.expected},
            "kafka_version": self.cluster.kafka_version,
            "topology": self.cluster.topology.describe(),
            "broker_settings": {k: format_value(v) for k, v in self.cluster.broker_settings().items()},
            "topic": self.spec.topic.to_dict(self.topic),
            "producer": [{"name": p.name, "zone": p.zone, "rate_per_s": p.rate_per_s,
                          "settings": dict(p.settings)} for p in self.spec.producers],
            "consumer": [{"name": c.name, "zone": c.zone, "settings": dict(c.settings)}
                         for c in self.spec.consumers],
            "schedule": schedule,
            "expectations": dict(self.spec.expectations),
            "test_timeouts": {k: settings[k] for k in (
                "zookeeper.session.timeout.ms", "replica.lag.time.max.ms") if k in settings},
        })
        if self.spec.schedule is not None:
            self.spec.schedule.save(self.dir / "schedule.json")

    def __enter__(self) -> ScenarioRun:
        return self.start()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            if not self._finished:
                self.finish()
            self._write_assertions()
            return
        # The test failed or was interrupted: record that, never a verdict it did not earn.
        try:
            if self.workload is not None:
                self.workload.stop(drain_timeout_s=5)
        finally:
            if not self._finished:
                self._close(hist.STATUS_ABORTED)
            self._error = "".join(traceback.format_exception_only(exc)).strip()
            self._write_assertions()


def measure_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.1) -> float | None:
    """Seconds until ``predicate`` holds, or None if it never did within ``timeout_s``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if predicate():
            return time.monotonic() - started
        time.sleep(interval_s)
    return None
