"""One scenario, end to end: topic, workload, faults, heal, drain, judge, record.

The order is Jepsen's: clients run against the cluster while a nemesis breaks it; then
everything heals, a final read collects what survived, and the checker judges the
history. Data flows one way - the run writes a history, the Spark job turns it into a
verdict - and the test adds what ZooKeeper showed (checks and measured windows). All of
it lands in the run's folder (:mod:`harness.scenario.rundir`) for the HTML report.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness import history as hist
from harness.cluster.migration.plan import MigrationSpec
from harness.cluster.sampler import StateSampler
from harness.cluster.waiting import WaitTimeout, hold, wait_until_clear
from harness.files import write_json
from harness.history.verdict import VERDICT_FILE
from harness.scenario.broker_settings import ScenarioError, check_broker_settings, refuse_unrunnable
from harness.scenario.checks import Anchor, Moment, ProbeResult, evaluate_checks, isr_bound_s
from harness.scenario.evidence_reader import gather_evidence
from harness.scenario.isr_poll import IsrPoll, poll_isr_after_heal
from harness.scenario.judge import Judge
from harness.scenario.migration_walk import METADATA_CHECK, MIRROR_CHECK, walk_check, walk_migration
from harness.scenario.node_logs import keep_node_logs
from harness.scenario.probes import PROBE_TOPIC_SUFFIX
from harness.scenario.record import Check, ScenarioRecord
from harness.scenario.run_config import RunTopics, write_run_config
from harness.scenario.rundir import RunDirectory
from harness.scenario.schedule_run import PROBE_GRACE_S, run_schedule
from harness.scenario.spec import TOPIC, NamedTopic, ScenarioSpec, TopicSpec, substitute, topic_named
from harness.workload.driver import Workload, drain_final_log, record_final_offsets
from harness.workload.java_client import JAVA_CLIENTS_FILE
from harness.workload.pipeline import EXACTLY_ONCE

if TYPE_CHECKING:
    from faults.base import Fault
    from faults.events import EventLog
    from faults.schedule import Schedule
    from harness.cluster.lifecycle import Cluster
    from harness.history.verdict import Verdict

__all__ = [
    "METADATA_CHECK", "MIRROR_CHECK", "PROBE_GRACE_S", "TOPIC", "Check", "NamedTopic", "ScenarioError",
    "ScenarioRun", "ScenarioSpec", "TopicSpec", "substitute", "topic_named", "walk_check",
]
"""The spec's names are re-exported: tests and scenario files build a spec and run it
from this one module."""


def _partitions(topic: TopicSpec) -> list[int]:
    return list(range(topic.partition_count))


class ScenarioRun(ScenarioRecord):
    """A running scenario; use as a context manager, call :meth:`finish` to judge."""

    def __init__(self, cluster: Cluster, spec: ScenarioSpec, run: RunDirectory, judge: Judge,
                 scenario_id: str | None = None) -> None:
        from faults.events import EventLog

        self.cluster = cluster
        self.spec = spec
        self.judge = judge
        self.scenario_id = scenario_id or spec.id
        super().__init__(run.scenario_dir(self.scenario_id), spec.must_fail)
        self.topic = f"{self.scenario_id}-{uuid.uuid4().hex[:6]}"
        self.partitions = _partitions(spec.topic)
        # Each further topic's name -> its real name and partitions.
        self.named_topics = {t.name: (topic_named(self.topic, t.name), _partitions(t.spec))
                             for t in spec.topics}
        self.writer = hist.HistoryWriter(self.dir / "history", run.run_id, scenario={
            "id": self.scenario_id, "title": spec.title, "topic": self.topic,
            "expectations": dict(spec.expectations),
        })
        self.log: EventLog = EventLog(sink=self._record_fault)
        self._writer_lock = threading.Lock()
        self.sampler: StateSampler | None = None
        self._sampler_recorded = False
        self.workload: Workload | None = None
        self._finished = False
        # The workload's wall-clock span: gaps between acknowledgements end at its stop.
        self.workload_started: float | None = None
        self.workload_stopped: float | None = None
        self.workload_stopped_mono: float | None = None
        # When each schedule action began, and what the probes found, for the spec's
        # checks (filled by run_schedule).
        self.moments: dict[Anchor, Moment] = {}
        self.probe_results: dict[str, ProbeResult] = {}

    # -- recording -------------------------------------------------------------------------
    def _record_fault(self, row: Mapping[str, Any]) -> None:
        if self.workload is not None:
            self.workload.recorder.row("faults", row)
        else:
            with self._writer_lock:
                self.writer.append("faults", row)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, workload: bool = True) -> ScenarioRun:
        try:
            refuse_unrunnable(self)
        except ScenarioError as err:  # the page says why the scenario never ran
            self._close(hist.STATUS_ABORTED)
            self._error = str(err)
            self._write_assertions()
            raise
        topic = self.spec.topic
        assignment = None if topic.assignment is None else {p: list(r) for p, r in topic.assignment.items()}
        self.cluster.create_topic(self.topic, topic.partitions, topic.replication_factor,
                                  dict(topic.config), assignment=assignment)
        if any(probe.look == "produce" for probe in self.spec.probes):
            # Produce probes write beside the topic: their records are no workload's sends.
            self.cluster.create_topic(self.topic + PROBE_TOPIC_SUFFIX, topic.partitions,
                                      topic.replication_factor, dict(topic.config), assignment=assignment)
        for named in self.spec.topics:
            further = named.spec
            pinned = (None if further.assignment is None
                      else {p: list(r) for p, r in further.assignment.items()})
            self.cluster.create_topic(self.named_topics[named.name][0], further.partitions,
                                      further.replication_factor, dict(further.config), assignment=pinned)
        write_run_config(self.dir, self.cluster, self.spec, self.scenario_id, self.run_topics)
        check_broker_settings(self)
        sampled = [self.topic, *(real for real, _ in self.named_topics.values())]
        self.sampler = StateSampler.for_cluster(self.cluster, sampled, interval_s=self.spec.sample_interval_s)
        self.sampler.start()
        if workload:
            self.start_workload()
        return self

    @property
    def run_topics(self) -> RunTopics:
        """The real names this run gave the spec's topics."""
        return RunTopics(self.topic, self.named_topics)

    @property
    def cluster_state(self) -> StateSampler:
        """The run's one ZooKeeper sampler, for checks that ask when something changed;
        what it saw becomes the history's ``cluster_state`` table."""
        if self.sampler is None:
            raise ScenarioError("the scenario has not started: no cluster state is being sampled")
        return self.sampler

    def start_workload(self) -> Workload:
        self.workload_started = time.time()
        self.workload = Workload(self.cluster, self.topic, self.partitions, self.writer,
                                 self.spec.producers, self.spec.consumers, self.spec.pipelines,
                                 self.named_topics).start()
        return self.workload

    def stop_workload(self) -> dict[str, int]:
        if self.workload is None:
            return {}
        if self.workload_stopped is None:
            self.workload_stopped, self.workload_stopped_mono = time.time(), time.monotonic()
        self.workload.stop()
        return self.workload.outcomes()

    def inject(self, fault: Fault) -> tuple[str, ...]:
        return fault.inject(self.cluster, self.log)

    def heal(self, fault: Fault) -> None:
        fault.heal(self.cluster, self.log)

    def run_schedule(self, schedule: Schedule, timeout_s: float | None = None,
                     abandon: threading.Event | None = None) -> bool:
        """Run a fault schedule beside the workload and wait for it; one check of the run
        (:func:`harness.scenario.schedule_run.run_schedule`)."""
        return run_schedule(self, schedule, timeout_s, abandon)

    def run_migration(self, migration: MigrationSpec, schedule: Schedule | None,
                      schedule_grace_s: float) -> bool:
        """Walk ``migration`` beside the workload, with ``schedule``'s faults alongside;
        its checks (:mod:`harness.scenario.migration_walk`)."""
        return walk_migration(self, migration, schedule, schedule_grace_s)

    def await_acked(self, acked: int, timeout_s: float) -> bool:
        """Wait until the workload has ``acked`` acknowledgements and every group whose
        members commit has had a commit go through; a check of its own. A group joins,
        rebalances and (for a pipeline) initialises its transactions before it first
        commits, which a loaded machine stretches to seconds: a fault meant to strike a
        group that is committing must not strike before it started."""
        workload = self.workload
        groups = [] if workload is None else workload.committing_groups
        if acked <= 0 and not groups:
            return True
        counts: dict[str, int] = {}
        waiting: list[str] = []

        def short() -> list[str]:
            nonlocal counts, waiting
            if workload is None:
                return []
            counts, waiting = workload.outcomes(), workload.groups_yet_to_commit()
            return ([f"{counts.get('acked', 0)} of {acked} acknowledged"] if counts.get("acked", 0) < acked
                    else []) + [f"group {group} yet to commit" for group in waiting]

        with contextlib.suppress(WaitTimeout):
            wait_until_clear(short, timeout_s, "the workload flowing before the faults", interval_s=0.1)
        name = f"workload flowing before the faults: {acked} sends acknowledged"
        detail = (f"{counts.get('acked', 0)} acknowledged, {counts.get('failed', 0)} failed and "
                  f"{counts.get('unknown', 0)} in doubt so far")
        if groups:
            name += " and a commit of every group through"
            detail += f"; groups yet to commit: {', '.join(waiting) or 'none'}"
        return self.check(name, counts.get("acked", 0) >= acked and not waiting,
                          f"{detail} after at most {timeout_s:.0f} s")

    def settle(self, seconds: float) -> None:
        """Let the workload run for ``seconds`` (before, during or after a fault)."""
        hold(seconds)

    def finish(self) -> Verdict:
        """Stop clients, heal everything, drain the log, judge, and write the record."""
        from faults.heal import heal_all

        if self._finished:
            assert self.verdict is not None
            return self.verdict
        self.stop_workload()
        self._check_clients()
        self._keep_java_clients()
        heal_started = time.time()
        heal_all(self.cluster, self.log)
        self._check_fault_events()
        self._keep_node_logs()
        isr = self._poll_isr_after_heal(heal_started)
        self._stop_sampler()
        transactional = (any(p.transaction_size is not None for p in self.spec.producers)
                         or any(p.guarantee == EXACTLY_ONCE for p in self.spec.pipelines))
        topics: dict[str | None, tuple[str, list[int]]] = {None: (self.topic, self.partitions)}
        topics.update(self.named_topics)
        for topic, partitions in topics.values():
            drain_final_log(self.cluster.observer_bootstrap(), topic, partitions, self.writer,
                            read_committed_pass=transactional)
        record_final_offsets(self.cluster.observer_bootstrap(),
                             [(group, *topics[name]) for group, name in self.spec.groups()], self.writer)
        drained = time.monotonic()
        self._close(hist.STATUS_COMPLETE)
        self._evaluate_checks(isr)
        self.verdict = self.judge.verdict(self.dir / "history")
        self.window("end of the final drain to the verdict (history closed, checks, judgement)",
                    time.monotonic() - drained)
        self.verdict.write(self.dir / VERDICT_FILE)
        self._finished = True
        self._write_assertions()
        return self.verdict

    def _check_clients(self) -> None:
        """Every producer and consumer ran until told to stop: a client whose loop died
        left a history that stops early, and a verdict on it would look clean."""
        if self.workload is None:
            return
        died = self.workload.client_errors()
        names = ([p.name for p in self.spec.producers] + [c.name for c in self.spec.consumers]
                 + [p.name for p in self.spec.pipelines])
        self.check("every client ran until the workload stopped", not died,
                   "; ".join(f"{name}: {error}" for name, error in died.items())
                   or f"{', '.join(names)} ran to the end")

    def _keep_java_clients(self) -> None:
        """Each Java client's effective configuration and stderr, in ``java_clients.json``."""
        clients = {} if self.workload is None else self.workload.java_clients()
        if clients:
            write_json(self.dir / JAVA_CLIENTS_FILE, clients)

    def _check_fault_events(self) -> None:
        """Every fault event of the scenario succeeded: an inject or heal that raised
        means the scenario did not test what it says, whatever the verdict."""
        failed = [f"{e.action} {e.fault} {', '.join(e.targets)}: {e.outcome}" for e in self.log if not e.ok]
        injected = sum(1 for e in self.log if e.action == "inject")
        healed = len(self.log) - injected
        self.check("faults injected and healed without error", not failed,
                   "; ".join(failed) or f"{injected} injections and {healed} heals, all ok")

    def _keep_node_logs(self) -> None:
        """Every node's log around each fault window, for the page (passing or not)."""
        keep_node_logs(self.cluster, list(self.log), self.started, time.time(), self.dir)

    # -- checks ----------------------------------------------------------------------------
    def _poll_isr_after_heal(self, heal_started: float) -> IsrPoll | None:
        """Poll until every ISR is full or the longest ISR check's bound has passed since
        the last heal: the last heal event recorded (a schedule's or heal_all's), else the
        moment finish began healing. None when no check bounds the ISR after the heal."""
        bound = isr_bound_s(self.spec.checks)
        if bound is None:
            return None
        healed_at = max((e.ts for e in self.log if e.action == "heal"), default=heal_started)
        return poll_isr_after_heal(self.cluster, self.topic, healed_at, bound)

    def _evaluate_checks(self, isr: IsrPoll | None) -> None:
        """Judge the spec's checks on what the run recorded; each becomes one check line."""
        if not self.spec.checks:
            return
        try:
            _, checks = self.spec.for_topic(self.topic)
            evidence = gather_evidence(self, isr)
        except Exception as err:  # evidence that cannot be read fails every check, with the reason
            for check in self.spec.checks:
                self.check(check.name, False, f"the run's evidence could not be read: {err!r}")
            return
        # Named as the spec wrote them, partitions as "p0": the topic's full name is noise.
        for declared, result in zip(self.spec.checks, evaluate_checks(checks, evidence), strict=True):
            self.check(declared.name.replace(f"{TOPIC}-", "p"), result.passed,
                       result.detail.replace(f"{self.topic}-", "p"))

    def _stop_sampler(self) -> None:
        """Stop sampling ZooKeeper, once, and record what it saw: its samples as the
        history's cluster_state rows, and the changes derived from them for the report."""
        if self.sampler is None or self._sampler_recorded:
            return
        self._sampler_recorded = True
        events = self.sampler.stop()
        for row in self.sampler.rows():
            self.writer.append("cluster_state", row)
        write_json(self.dir / "cluster_events.json", [e.to_dict() for e in events])

    def _close(self, status: str) -> None:
        self._stop_sampler()
        self.writer.close(status)

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
                self.workload.stop(drain_timeout_s=5, catch_up_timeout_s=0)
        finally:
            if not self._finished:
                self._close(hist.STATUS_ABORTED)
            self._error = "".join(traceback.format_exception_only(exc)).strip()
            self._write_assertions()
