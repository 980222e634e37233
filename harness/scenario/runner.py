"""One scenario, end to end: topic, workload, faults, heal, drain, judge, record.

The order is Jepsen's: clients run against the cluster while a nemesis breaks it; then
everything heals, a final read collects what survived, and the checker judges the
history. Data flows one way - the run writes a history, the Spark job turns it into a
verdict - and the test adds what ZooKeeper showed (checks and measured windows). All of
it lands in the run's folder (:mod:`harness.scenario.rundir`) for the HTML report.
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from harness import history as hist
from harness.cluster.log_excerpts import Stretch, write_excerpts
from harness.cluster.migration.driver import MIRROR_TIMEOUT_S, STEP_TIMEOUT_S, MigrationDriver
from harness.cluster.migration.plan import MigrationSpec, Phase, Step, phases_of
from harness.cluster.migration.readers import MetadataUnread, kraft_snapshot, step, zookeeper_snapshot
from harness.cluster.migration.snapshot import MetadataSnapshot, differences, with_topic_config
from harness.cluster.node_config import format_value
from harness.cluster.sampler import StateSampler
from harness.cluster.waiting import wait_until
from harness.errors import ChaosError, describe_error
from harness.files import write_json
from harness.history.verdict import VERDICT_FILE
from harness.report.load import ASSERTIONS_FILE
from harness.scenario.checks import (
    Anchor,
    Evidence,
    Moment,
    Observed,
    ProbeResult,
    evaluate_checks,
    isr_bound_s,
)
from harness.scenario.isr_poll import IsrPoll, isr_after_heal, poll_isr_after_heal
from harness.scenario.judge import Judge
from harness.scenario.probes import PROBE_TOPIC_SUFFIX, Looker, ProbeTaker
from harness.scenario.run_config import RunTopics, broker_setting_differences, write_run_config
from harness.scenario.rundir import RunDirectory
from harness.scenario.spec import TOPIC, NamedTopic, ScenarioSpec, TopicSpec, substitute, topic_named
from harness.scenario.spec_check import ScenarioSpecError, topology_problems
from harness.workload.driver import Workload, drain_final_log, record_final_offsets
from harness.workload.pipeline import EXACTLY_ONCE

if TYPE_CHECKING:
    from faults.base import Fault
    from faults.events import EventLog, FaultEvent
    from faults.schedule import Schedule, ScheduleRun
    from harness.cluster.lifecycle import Cluster
    from harness.cluster.metadata.migration import MigrationMode
    from harness.history.verdict import Verdict

__all__ = [
    "PROBE_GRACE_S", "TOPIC", "Check", "NamedTopic", "ScenarioError", "ScenarioRun", "ScenarioSpec",
    "TopicSpec", "substitute", "topic_named",
]
"""The spec's names are re-exported: tests and scenario files build a spec and run it
from this one module."""


# How long past the schedule's end a probe set after its last action may still be taken.
PROBE_GRACE_S = 30.0
# How often a schedule's wait looks whether it was abandoned (see _wait_unless_abandoned).
ABANDON_LOOK_S = 1.0
# How long one DescribeConfigs may take before it is asked again (see _broker_config).
CONFIG_REQUEST_TIMEOUT_S = 15.0


def _partitions(topic: TopicSpec) -> list[int]:
    return list(range(topic.partition_count))


class ScenarioError(ChaosError):
    """A scenario that cannot run on the cluster it was given."""


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""


# The migration's metadata check, by the name a control run's ``must_fail`` gives it.
METADATA_CHECK = "metadata carried over: topics, ids, partitions, replicas, configs, group offsets"
# Dual-write's check: its detail says when ZooKeeper showed the change ("after 1.2 s").
MIRROR_CHECK = "dual-write mirrored a config set through KRaft into ZooKeeper"


def walk_check(steps: tuple[Step, ...]) -> str:
    """The name of the check that a migration of ``steps`` walked every phase (what a
    control run's ``must_fail`` gives it)."""
    return f"migration walked: {', '.join(str(p) for p in phases_of(steps))}"


class ScenarioRun:
    """A running scenario; use as a context manager, call :meth:`finish` to judge."""

    def __init__(self, cluster: Cluster, spec: ScenarioSpec, run: RunDirectory, judge: Judge,
                 scenario_id: str | None = None) -> None:
        from faults.events import EventLog

        self.cluster = cluster
        self.spec = spec
        self._controls_evaluated: set[str] = set()
        self.judge = judge
        self.scenario_id = scenario_id or spec.id
        self.dir = run.scenario_dir(self.scenario_id)
        self.topic = f"{self.scenario_id}-{uuid.uuid4().hex[:6]}"
        self.partitions = _partitions(spec.topic)
        # Each further topic's name -> its real name and partitions.
        self.named_topics = {t.name: (topic_named(self.topic, t.name), _partitions(t.spec))
                             for t in spec.topics}
        self.checks: list[Check] = []
        self.windows: list[dict[str, Any]] = []
        self.verdict: Verdict | None = None
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
        self._error: str | None = None
        self.started = time.time()
        # The workload's wall-clock span: gaps between acknowledgements end at its stop.
        self._workload_started: float | None = None
        self._workload_stopped: float | None = None
        self._workload_stopped_mono: float | None = None
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

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        """Record a check for the report; returns ``passed`` to assert on. A check the spec
        names in ``must_fail`` is inverted: it passes when it failed, as a control run
        requires."""
        if name in self.spec.must_fail:
            self._controls_evaluated.add(name)
            held = "held" if passed else "failed"
            name = f"{name} (must fail in this control run)"
            detail = f"{held}, as measured: {detail}"
            passed = not passed
        self.checks.append(Check(name, bool(passed), detail))
        return bool(passed)

    def check_controls(self) -> None:
        """Every check a control run names in ``must_fail`` was evaluated: a name that
        matches no check (misspelt, or the check never ran) would otherwise pass unseen.
        Called once the run's last check is made (:func:`~harness.scenario.spec_runner.run_spec`)."""
        if not self.spec.must_fail:
            return
        missing = [name for name in self.spec.must_fail if name not in self._controls_evaluated]
        self.check("every check the control run must see fail was evaluated", not missing,
                   "never evaluated: " + "; ".join(missing) if missing
                   else f"{len(self.spec.must_fail)} evaluated")

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
        try:
            self._refuse_missing_broker_settings()
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
        self._check_broker_settings()
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
        self._workload_started = time.time()
        self.workload = Workload(self.cluster, self.topic, self.partitions, self.writer,
                                 self.spec.producers, self.spec.consumers, self.spec.pipelines,
                                 self.named_topics).start()
        return self.workload

    def stop_workload(self) -> dict[str, int]:
        if self.workload is None:
            return {}
        if self._workload_stopped is None:
            self._workload_stopped, self._workload_stopped_mono = time.time(), time.monotonic()
        self.workload.stop()
        return self.workload.outcomes()

    def inject(self, fault: Fault) -> tuple[str, ...]:
        return fault.inject(self.cluster, self.log)

    def heal(self, fault: Fault) -> None:
        fault.heal(self.cluster, self.log)

    def run_schedule(self, schedule: Schedule, timeout_s: float | None = None,
                     abandon: threading.Event | None = None) -> bool:
        """Run a fault schedule beside the workload and wait for it to finish.

        The schedule is a check of its own: it passes only when every entry was injected
        and healed without error, within ``timeout_s`` past its latest planned end (every
        condition waited to its timeout) - a schedule that did not happen must not let the
        scenario pass as if it had. Conditions (``when``) read the run's one sampler.
        ``abandon``, once set, stops the wait: what the schedule waits for will not come
        (a migration whose walk failed has no later phase to anchor a fault to).
        """
        schedule.save(self.dir / "schedule.json")
        # Each `after` link waits behind a heal whose own length is not planned: a grace each.
        chained = sum(1 for e in schedule.entries if e.after is not None)
        with schedule.start(self.cluster, self.log, observe=self.cluster_state.latest) as running:
            probes = ProbeTaker(self.spec.probes, lambda: running.moments,
                                Looker(self.cluster, self.topic)).start()
            grace = None if timeout_s is None else schedule.longest_s + timeout_s * (1 + chained)
            finished = _wait_unless_abandoned(running, grace, abandon)
            probes.finish(max((p.after_s for p in self.spec.probes), default=0.0) + PROBE_GRACE_S)
        self.probe_results.update(probes.results)
        write_json(self.dir / "probes.json", [r.to_dict() for r in probes.results.values()])
        self.moments.update({Anchor(entry, action): Moment(ts, mono)
                             for (entry, action), (ts, mono) in running.moments.items()})
        schedule.save(self.dir / "schedule.json", self.log)
        problems = list(running.errors)
        if not finished and abandon is not None and abandon.is_set():
            problems.insert(0, "the schedule was abandoned unfinished when the migration's walk failed")
        elif not finished:
            problems.insert(0, f"the schedule had not finished {timeout_s:.0f} s after its latest "
                               "planned end")
        injected = sum(1 for e in self.log if e.action == "inject" and e.ok)
        if injected < len(schedule.entries):
            problems.append(f"{injected} of {len(schedule.entries)} entries injected")
        return self.check(f"fault schedule ran: {len(schedule.entries)} entries injected and healed",
                          not problems, "; ".join(problems) or f"{injected} injections, all healed")

    def run_migration(self, migration: MigrationSpec, schedule: Schedule | None,
                      schedule_grace_s: float) -> bool:
        """Walk ``migration`` on the cluster beside the workload, with ``schedule``'s faults
        (anchored to its phases or not) run alongside. Two checks: every phase completed
        (each phase is a row of the history's ``migration`` table, a failed one too), and
        the metadata read from ZooKeeper before it is the metadata the cluster holds after
        it (``metadata.json``: both readings and every difference, by path)."""
        before = zookeeper_snapshot(self.cluster.zookeeper.observer, self.cluster.admin,
                                    self.cluster.observer_bootstrap())
        driver = MigrationDriver(self.cluster, migration.steps(self.cluster.topology), migration.hold_s,
                                 progress=self.cluster.progress, mirror_topic=self.topic,
                                 change_at_s=migration.change_at_s, migration_znode=migration.migration_znode)
        driver.prepare()
        failure: list[BaseException] = []
        walk_failed = threading.Event()

        def walk() -> None:
            try:
                driver.run()
            except BaseException as err:  # recorded in the phase's row and in the check
                failure.append(err)
                walk_failed.set()

        walker = threading.Thread(target=walk, name="migration-driver", daemon=True)
        walker.start()
        if schedule is not None and schedule.entries:
            self.run_schedule(schedule, timeout_s=schedule_grace_s, abandon=walk_failed)
        walker.join(len(driver.steps) * STEP_TIMEOUT_S + migration.hold_s)
        for record in list(driver.records):
            self.writer.append("migration", record.row())
        phases = [f"{r.phase} {r.outcome} in {r.end_mono - r.mono:.1f} s" for r in driver.records]
        if walker.is_alive():
            failure.append(ChaosError("the migration driver had not finished within its steps' bounds"))
        detail = "; ".join(phases) + (f"; {describe_error(failure[0])}" if failure else "")
        walked = self.check(walk_check(driver.steps), not failure, detail)
        mirrored = self._check_mirrored(driver)
        if driver.mirrored is not None:
            before = with_topic_config(before, *driver.mirrored)
        return self._compare_metadata(before, driver.mode) and walked and mirrored

    def _check_mirrored(self, driver: MigrationDriver) -> bool:
        """Dual-write's promise, when the walk reached dual-write: a config set through
        KRaft is in ZooKeeper within its bound."""
        if Phase.DUAL_WRITE not in phases_of(driver.steps):
            return True
        name = MIRROR_CHECK
        if driver.mirrored is None:
            held = next((r for r in driver.records if r.phase == Phase.DUAL_WRITE and r.detail), None)
            why = held.detail if held is not None else "the walk never held in dual-write"
            return self.check(name, False, f"no change was made: {why}")
        topic, key, value = driver.mirrored
        path = f"/config/topics/{topic}"
        seen = f"in {path} after {driver.mirror_s:.1f} s" if driver.mirror_s is not None else \
            f"not in {path} within {MIRROR_TIMEOUT_S:.0f} s"
        return self.check(name, driver.mirror_s is not None, f"{key}={value} on {topic}: {seen}")

    def _compare_metadata(self, before: MetadataSnapshot, mode: MigrationMode) -> bool:
        """The metadata after the migration against ``before``: read from KRaft once every
        broker is a KRaft broker, else (a rollback, or a walk that stopped) from ZooKeeper."""
        name = METADATA_CHECK
        # ``before`` includes the change made in dual-write, which must be carried over too.
        brokers = [b.broker_id for b in self.cluster.topology.brokers]
        read: list[MetadataSnapshot] = []

        def reading() -> bool:
            self.cluster._admin = None  # a fresh client each try: the last may hold a dead connection
            admin, observer = self.cluster.admin, self.cluster.zookeeper.observer
            bootstrap = self.cluster.observer_bootstrap()
            read.append(kraft_snapshot(admin, bootstrap, brokers) if mode.brokers_on_kraft else
                        step("the znodes", partial(zookeeper_snapshot, observer, admin, bootstrap)))
            return True

        # Just after the last roll a broker may still be reconnecting to the controllers: a
        # request may time out until its session is renewed, twice over.
        bound = 2 * self.cluster.metadata.registration_timeout_s + 60.0
        try:
            wait_until(reading, bound, "the metadata after the migration", transient=(MetadataUnread,))
        except Exception as err:
            return self.check(name, False, "the metadata after the migration unreadable: "
                              + describe_error(err))
        after = read[-1]
        found = differences(before, after)
        write_json(self.dir / "metadata.json", {
            "before": {"source": before.source, "paths": before.flat()},
            "after": {"source": after.source, "paths": after.flat()},
            "differences": [{"path": d.path, "before": d.before, "after": d.after} for d in found]})
        shown = "; ".join(d.describe() for d in found[:5])
        shown += f"; {len(found) - 5} more" if len(found) > 5 else ""
        return self.check(name, not found, f"{len(before.flat())} paths read from {before.source} before, "
                          f"{len(after.flat())} from {after.source} after; "
                          + (f"{len(found)} differ: {shown}" if found else "none differs"))

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
        counts = workload.outcomes() if workload is not None else {}
        waiting = [] if workload is None else workload.groups_yet_to_commit()
        deadline = time.monotonic() + timeout_s
        while ((counts.get("acked", 0) < acked or waiting) and time.monotonic() < deadline
               and workload is not None):
            time.sleep(0.1)
            counts, waiting = workload.outcomes(), workload.groups_yet_to_commit()
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
        time.sleep(seconds)

    def finish(self) -> Verdict:
        """Stop clients, heal everything, drain the log, judge, and write the record."""
        from faults.heal import heal_all

        if self._finished:
            assert self.verdict is not None
            return self.verdict
        self.stop_workload()
        self._check_clients()
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
        write_excerpts(self.cluster, fault_stretches(list(self.log), self.started, time.time()), self.dir)

    # -- broker settings -------------------------------------------------------------------
    def _refuse_missing_broker_settings(self) -> None:
        """A scenario the cluster cannot run (more replicas than brokers, a broker or zone it
        lacks), or needing broker settings it was not started with, which would test
        something else: refuse it before anything is created."""
        problems = topology_problems(self.spec, self.cluster.topology)
        if problems:
            refused = ScenarioSpecError(problems, f"scenario {self.scenario_id}")
            raise ScenarioError("\n".join(refused.lines()))
        running = {k: format_value(v) for k, v in self.cluster.broker_settings().items()}
        missing = [f"{k}={format_value(v)} (cluster: {running.get(k, 'unset')})"
                   for k, v in self.spec.broker_settings.items() if running.get(k) != format_value(v)]
        if missing:
            raise ScenarioError(
                f"scenario {self.scenario_id} needs broker settings this cluster does not run: "
                f"{', '.join(missing)}; run it with `kafka-chaos run FILE`, which starts a cluster "
                "with a scenario file's [brokers] settings")

    def _check_broker_settings(self) -> None:
        """Ask every broker for the scenario's settings: Kafka ignores a name it does not
        know, so only the broker's own answer shows that a setting is in force."""
        declared = {k: format_value(v) for k, v in self.spec.broker_settings.items()}
        if not declared:
            return
        name = "brokers run the scenario's broker settings"
        try:
            reported = {b.broker_id: self._broker_config(b.broker_id) for b in self.cluster.topology.brokers}
        except Exception as err:  # any admin failure: the check cannot pass unread
            self.check(name, False, f"the brokers' configuration could not be read: {err}")
            return
        differences = broker_setting_differences(declared, reported)
        listing = ", ".join(f"{k}={v}" for k, v in declared.items())
        self.check(name, not differences, "; ".join(differences)
                   or f"{listing} on brokers {', '.join(map(str, sorted(reported)))}, as each reports it")

    def _broker_config(self, broker_id: int) -> dict[str, str | None]:
        """One broker's configuration, as it reports it.

        DescribeConfigs for a broker goes to that broker itself. Right after a cluster
        starts, the admin client's first connection to it can fail although the broker is
        registered (a KRaft run once failed T2 here: "Failed while waiting for broker").
        A registered broker that stays unreachable is fenced within its registration
        timeout, so the read is retried with a fresh admin client until that has passed
        twice over; beyond it the failure is the broker's and is reported."""
        from concurrent.futures import TimeoutError as FutureTimeout

        from confluent_kafka import KafkaException
        from confluent_kafka.admin import ConfigResource, ResourceType

        resource = ConfigResource(ResourceType.BROKER, str(broker_id))
        config: dict[str, str | None] = {}

        def read() -> bool:
            try:
                [future] = self.cluster.admin.describe_configs(
                    [resource], request_timeout=CONFIG_REQUEST_TIMEOUT_S).values()
                answer = future.result(timeout=2 * CONFIG_REQUEST_TIMEOUT_S)
            except (KafkaException, FutureTimeout):
                self.cluster._admin = None  # the next try connects afresh
                raise
            config.update({name: entry.value for name, entry in answer.items()})
            return True

        bound = 2 * self.cluster.metadata.registration_timeout_s + CONFIG_REQUEST_TIMEOUT_S
        wait_until(read, bound, f"broker {broker_id}'s configuration",
                   transient=(KafkaException, FutureTimeout))
        return config

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
            sends = self._rows("sends", ["producer_id", "partition", "send_ts", "ack_ts", "outcome",
                                         "message_id", "transaction_id"])
            polls = self._rows("polls", ["consumer_id", "partition", "offset", "poll_ts", "message_id",
                                         "isolation"])
            attempts = self._rows("attempts", ["producer_id", "ts", "error"])
            commits = self._rows("commits", ["group", "consumer_id", "topic", "partition", "offset", "ts",
                                             "outcome", "error"])
            transactions = self._rows("transactions", ["transaction_id", "producer_id", "begin_ts",
                                                       "end_requested_ts", "end_ts", "outcome", "error"])
            final_log = self._rows("final_log", ["message_id", "read_committed"])
            final_offsets = self._rows("final_offsets", ["group", "topic", "partition", "offset"])
            records = [] if self.sampler is None else self.sampler.records()
            timeline = [Observed(r.mono, r.held_until(), state) for r in records
                        if (state := r.with_modes()) is not None]
            stopped = (self._workload_stopped or time.time(), self._workload_stopped_mono or time.monotonic())
            rows = None if self.sampler is None else self.sampler.rows()
            evidence = Evidence(timeline, dict(self.moments), sends, Moment(*stopped), polls, attempts,
                                dict(self.probe_results), commits, transactions, final_log, final_offsets,
                                self.topic, rows, isr_after_heal(rows or [], self.topic, isr))
        except Exception as err:  # evidence that cannot be read fails every check, with the reason
            for check in self.spec.checks:
                self.check(check.name, False, f"the run's evidence could not be read: {err!r}")
            return
        # Named as the spec wrote them, partitions as "p0": the topic's full name is noise.
        for declared, result in zip(self.spec.checks, evaluate_checks(checks, evidence), strict=True):
            self.check(declared.name.replace(f"{TOPIC}-", "p"), result.passed,
                       result.detail.replace(f"{self.topic}-", "p"))

    def _rows(self, table: str, columns: list[str]) -> list[dict[str, Any]]:
        """The closed history's ``table``, those columns only, as rows."""
        return [row for part in hist.part_files(self.dir / "history", table)
                for row in pq.read_table(part, columns=columns).to_pylist()]

    @property
    def passed(self) -> bool:
        """Every check held, the verdict (if judged) passed, and nothing stopped the run."""
        return (self._error is None and all(c.passed for c in self.checks)
                and (self.verdict is None or self.verdict.passed))

    def failures(self) -> list[str]:
        """The failed checks and rules, one line each, for an assertion message."""
        lines = [f"{c.name}: {c.detail}" for c in self.checks if not c.passed]
        if self.verdict is not None and not self.verdict.passed:
            lines.extend(f"verdict: {r.reason}" for r in self.verdict.rules if not r.passed)
        return lines

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

    def _write_assertions(self) -> None:
        checks = [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks]
        if self._error:
            checks.append({"name": "scenario ran to completion", "passed": False, "detail": self._error})
        write_json(self.dir / ASSERTIONS_FILE, {
            "passed": all(c["passed"] for c in checks) and self._error is None,
            "checks": checks, "windows": self.windows,
            "duration_s": round(time.time() - self.started, 1),
        })

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


def fault_stretches(events: list[FaultEvent], started: float, now: float) -> list[Stretch]:
    """The stretches whose node logs a scenario keeps: each fault window as the page draws
    it (inject to the end of its heal; to ``now`` when never healed). A scenario that
    faulted no node (a migration walked under load, a group whose members restart) keeps
    its whole span, from ``started`` to ``now``, so every page has its nodes' side of the story."""
    from harness.report.load_faults import fault_windows

    stretches = [Stretch(w.label if w.end is not None else f"{w.label} (never healed)", w.start,
                         w.end if w.end is not None else now)
                 for w in fault_windows([e.to_row() for e in events])]
    return stretches or [Stretch("the whole scenario (no fault of a node was recorded)", started, now)]


def _wait_unless_abandoned(running: ScheduleRun, timeout_s: float | None,
                           abandon: threading.Event | None) -> bool:
    """``running.wait(timeout_s)``, looking every second whether ``abandon`` is set; True
    when the schedule finished."""
    if abandon is None:
        return running.wait(timeout_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        left = ABANDON_LOOK_S if deadline is None else min(ABANDON_LOOK_S, deadline - time.monotonic())
        if running.wait(max(left, 0.0)):
            return True
        if abandon.is_set() or (deadline is not None and time.monotonic() >= deadline):
            return False
