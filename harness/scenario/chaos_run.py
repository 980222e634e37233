"""One run of the harness, whoever drives it: the pytest plugin or ``kafka-chaos run FILE``.

A run owns the cluster (through a :class:`~harness.cluster.recovery.ClusterKeeper`, so a broken
cluster is restarted or replaced rather than failing every later test), the Spark judge,
the run folder, and the record of every test and scenario file that ran with its outcome
and error text. Its report is rendered from that record at the end, so the headline a
reviewer reads is decided by everything that ran, not only by the scenarios that got as
far as a verdict.
"""

from __future__ import annotations

import re
import signal
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from harness.cluster.diagnostics import collect_diagnostics
from harness.cluster.lifecycle import Cluster
from harness.cluster.node_config import format_value
from harness.cluster.recovery import ClusterKeeper, Escalation, Healer
from harness.cluster.resources import RunIdentity
from harness.cluster.versions import check_mode, release
from harness.report.model import RunStatus, TestOutcome
from harness.scenario.judge import Judge
from harness.scenario.run_topology import RunTopology
from harness.scenario.rundir import WORKERS_DIR, RunDirectory, reports_root, worker_headers
from harness.scenario.spec import ScenarioSpec
from harness.workload.client_settings import DEFAULT_CLIENT, ClientChoice
from topologies import load_topology
from topologies.model import SettingValue, Topology

if TYPE_CHECKING:  # the report is rendered only at the end, imported there
    from harness.report.render import Rendered

Progress = Callable[[str], None]

PASSED, FAILED, ERROR, SKIPPED = (TestOutcome.PASSED.value, TestOutcome.FAILED.value,
                                  TestOutcome.ERROR.value, TestOutcome.SKIPPED.value)


@dataclass
class TestRecord:
    """One test or scenario file as the run report lists it."""

    id: str
    kind: str = "test"  # "test" | "scenario-file"
    outcome: str = PASSED  # passed | failed | error | skipped
    phase: str | None = None  # where it failed, errored or was skipped
    error: str = ""
    duration_s: float = 0.0
    scenario: str | None = None  # the scenario folder it wrote, for a link
    diagnostics: str | None = None  # folder of container logs and znodes, relative to the run
    anomalies: dict[str, int] | None = None  # its verdict's non-zero counts (None: no verdict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quiet(_: str) -> None:
    pass


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def unwind_on_sigterm() -> None:
    """Make SIGTERM (a CI runner cancelling the job, ``timeout``) unwind like Ctrl-C, so
    the run's ``finally`` blocks remove its containers and mark its report interrupted.

    Installed by the entry points (the pytest plugin's configure hook, the CLI's
    commands that start clusters), never at import time.
    """
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def escalation_text(escalation: Escalation) -> str:
    """What a test left broken and what recovery did, as its error says it."""
    return (f"this test left the cluster unhealthy ({'; '.join(escalation.problems[:5])}); "
            f"recovery: {'; '.join(escalation.actions)}")


def safe_name(text: str, limit: int = 120) -> str:
    """A file name from a test id: letters, digits, '-', '_' and '.' only."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:limit] or "test"


def session_topology(topology: str, metadata: str | None, kafka_version: str) -> Topology:
    """The topology a run's clusters are made from: the named one, in ``metadata`` mode when
    given (a ZooKeeper topology's KRaft variant for "kraft"), refused in one line before
    any container when the release does not run that mode."""
    chosen = load_topology(topology, metadata=metadata)
    check_mode(release(kafka_version), chosen.metadata)
    return chosen


class ChaosRun:
    """The lifecycle of one run: cluster, judge, folder, records, report."""

    def __init__(self, run_id: str, kafka_version: str, topology: str, healer: Healer,
                 keep: bool = False, progress: Progress = _quiet, worker: str | None = None,
                 metadata: str | None = None, client: ClientChoice = DEFAULT_CLIENT) -> None:
        """``metadata`` asks for the topology in that metadata mode (``--metadata``).
        ``worker`` names a pytest-xdist worker: each worker runs its own cluster (its
        containers labelled ``<run id>-<worker>``, so no worker removes another's) and
        writes its records to ``workers/<worker>.json`` in the shared run folder; the
        controller merges them into one report (:meth:`absorb_workers`). ``client`` is
        the client every scenario's producers and consumers run on (``--client``)."""
        self.run_id = run_id
        self.client = client
        self.worker = worker
        self.kafka_version = kafka_version
        self.base_topology = session_topology(topology, metadata, kafka_version)
        self.run_topology = RunTopology(topology, self.base_topology, kafka_version)
        self.topology = self.base_topology  # what the next cluster is made from
        self.cluster_version = kafka_version  # and the release it runs
        self.identity = RunIdentity(f"{run_id}-{worker}" if worker else run_id, keep=keep)
        self.progress = progress
        self.keeper = ClusterKeeper(self._new_cluster, healer, progress)
        self.records: dict[str, TestRecord] = {}
        self.expected: int | None = None  # how many tests the session will run, once known
        self._ended: set[str] = set()
        self._directory: RunDirectory | None = None
        self._judge: Judge | None = None

    def on_client(self, spec: ScenarioSpec) -> ScenarioSpec:
        """``spec`` with its producers and consumers on the run's client (as it is on the
        default, librdkafka, which leaves each client as the spec chose it)."""
        if self.client == DEFAULT_CLIENT:
            return spec
        return spec.on_client(self.client.client, self.client.version)

    def _new_cluster(self) -> Cluster:
        return Cluster(self.topology, self.cluster_version, identity=self.identity, progress=self.progress)

    def use_broker_settings(self, settings: Mapping[str, SettingValue]) -> bool:
        """From now on, clusters run the base topology with ``settings`` over its broker
        settings; True when that meant removing a cluster with other settings."""
        topology = self.base_topology.with_broker_settings(settings)
        listing = ", ".join(f"{k}={format_value(v)}" for k, v in settings.items()) or "the topology's own"
        return self.use_topology(topology, f"broker settings from here on: {listing}")

    def use_topology(self, topology: Topology, why: str | None = None,
                     kafka_version: str | None = None) -> bool:
        """From now on, clusters are made from ``topology`` (another shape, other settings,
        another metadata mode) on ``kafka_version`` (default: the run's); True when that
        meant removing a cluster made from another one.

        The keeper makes every cluster (fresh or replacement) from :attr:`topology`, so
        changing it and closing the current cluster is enough; the next test's cluster
        starts from the new one. One cluster at a time: the old one is removed first.
        """
        version = kafka_version or self.kafka_version
        if topology == self.topology and version == self.cluster_version:
            return False
        check_mode(release(version), topology.metadata)
        had_cluster = self.keeper.started
        self.keeper.close()
        self.topology, self.cluster_version = topology, version
        self.progress(why or f"clusters from here on: topology {topology.name} "
                      f"({len(topology.brokers)} brokers in zones {', '.join(topology.zones)}, "
                      f"{topology.metadata} mode, Kafka {version})")
        return had_cluster

    def migrating_topology(self, settings: Mapping[str, SettingValue] | None = None) -> Topology:
        """The cluster a migration runs on (:meth:`RunTopology.migrating`)."""
        return self.run_topology.migrating(settings)

    def use_migration(self, settings: Mapping[str, SettingValue]) -> bool:
        """From now on, clusters are migrating ones (:meth:`migrating_topology`), on the
        run's release; the caller closes each after its one test, since a migrated cluster
        is not where the next migration starts."""
        return self.use_topology(self.migrating_topology(settings), "clusters from here on: a migrating one "
                                 f"per test (ZooKeeper mode with KRaft controllers beside it, Kafka "
                                 f"{self.kafka_version})")

    def use_cluster_for(self, migrates: bool, settings: Mapping[str, SettingValue]) -> bool:
        """The cluster a scenario needs next: a migrating one of its own when it walks a
        migration, else the base topology with ``settings``."""
        return self.use_migration(settings) if migrates else self.use_broker_settings(settings)

    def done_with(self, migrated: bool) -> None:
        """After a scenario: a migrated cluster is not where the next one starts, so it goes."""
        if migrated:
            self.keeper.close()

    # -- parts, made on first use -----------------------------------------------------------
    @property
    def directory(self) -> RunDirectory:
        if self._directory is None:
            header = f"{WORKERS_DIR}/{self.worker}.json" if self.worker else "run.json"
            self._directory = RunDirectory(self.run_id, self.kafka_version, header=header)
        return self._directory

    @property
    def opened(self) -> bool:
        """True once anything was written under reports/<run id>/."""
        return self._directory is not None

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            self._judge = Judge()
        return self._judge

    # -- records ----------------------------------------------------------------------------
    def record(self, test_id: str, kind: str = "test") -> TestRecord:
        """The record of ``test_id``, created in run order on first mention."""
        if test_id not in self.records:
            self.records[test_id] = TestRecord(test_id, kind)
        return self.records[test_id]

    def escalate_after(self, test_id: str) -> Escalation | None:
        """Restore health after ``test_id``; keep diagnostics of what it left broken."""

        def before(cluster: Cluster) -> None:
            self.keep_diagnostics(test_id, cluster, None)

        return self.keeper.recover(test_id, before_escalating=before)

    def keep_diagnostics(self, test_id: str, cluster: Cluster, scenario_dir: Path | None) -> None:
        """Container logs and znodes into the scenario's folder (or one named after the
        test), linked from the test's record. Never raises: diagnostics must not turn a
        failure into a different one."""
        record = self.record(test_id)
        if record.diagnostics is not None:
            return
        base = scenario_dir or self.directory.path / "tests" / safe_name(test_id)
        dest = base / "diagnostics"
        try:
            collect_diagnostics(cluster, dest)
        except Exception as err:  # the cluster may be beyond reading
            self.progress(f"diagnostics for {test_id} incomplete: {err}")
        record.diagnostics = str(dest.relative_to(self.directory.path))

    # -- one test's lifecycle, the same under pytest and the CLI ------------------------------
    def begin(self, test_id: str) -> Cluster:
        """The cluster for ``test_id`` at full health (started on first use). When the test
        before never ended (it was interrupted), health is restored first."""
        if self.keeper.started and self.keeper.handed_out:
            self.escalate_after(f"(before {test_id})")
        cluster = self.keeper.current()
        self.keeper.handed_out = True
        return cluster

    def end(self, test_id: str) -> Escalation | None:
        """Restore full health after ``test_id``; the escalation, when healing was not enough,
        is what fails the test at teardown (only that test: the next one gets a healthy
        cluster)."""
        escalation = self.escalate_after(test_id) if self.keeper.started else None
        self.keeper.handed_out = False
        return escalation

    def run_case(self, test_id: str, kind: str, body: Callable[[Cluster], str | None],
                 scenario: str | None = None) -> TestRecord:
        """Run one test outside pytest with the lifecycle the plugin gives a pytest test:
        :meth:`begin`, the body, diagnostics of a failure while the cluster still shows
        it, :meth:`end`. ``body`` returns None when it passed, else why it failed; an
        exception is an error with its traceback; Ctrl-C is recorded and re-raised."""
        record = self.record(test_id, kind)
        record.scenario = scenario
        started = time.monotonic()
        try:
            failure = body(self.begin(test_id))
            if failure is not None:
                record.outcome, record.phase, record.error = FAILED, "call", failure
        except KeyboardInterrupt:
            record.outcome, record.phase, record.error = ERROR, "call", "interrupted"
            raise
        except Exception as err:
            record.outcome, record.phase = ERROR, "call"
            record.error = "".join(traceback.format_exception(err)).strip()
        finally:
            record.duration_s = round(time.monotonic() - started, 3)
        if record.outcome != PASSED and self.keeper.started:
            scenario_dir = self.directory.path / scenario if scenario else None
            self.keep_diagnostics(test_id, self.keeper.current(), scenario_dir)
        escalation = self.end(test_id)
        if escalation is not None and record.outcome == PASSED:
            record.outcome, record.phase, record.error = ERROR, "teardown", escalation_text(escalation)
        self.checkpoint(test_id)
        return record

    def checkpoint(self, test_id: str) -> None:
        """After each test: run.json lists every test so far and how far the run got, and
        the index and that test's page are written again, so a long run can be read (and
        copied) while it runs; it says "running" throughout, never passed. Never raises: a
        page that cannot be drawn yet must not fail a test, and the run's end draws all."""
        self._ended.add(test_id)
        if self.worker is not None:
            return  # a pytest-xdist worker: the controller writes the one report
        from harness.report import render_progress

        run = self.directory
        run.header["tests"] = [r.to_dict() for r in self.records.values()]
        run.header["progress"] = {"done": len(self._ended), "total": self.expected}
        run.save()
        record = self.records.get(test_id)
        try:
            render_progress(run.path, [record.scenario] if record and record.scenario else [])
        except Exception as err:
            self.progress(f"the report could not be rewritten after {test_id}: {err}")

    # -- pytest-xdist: one report from several workers -----------------------------------------
    def absorb_workers(self) -> bool:
        """On the controller of a pytest-xdist session: take in what each worker wrote -
        the scenario folders, the escalations, and each test's scenario and diagnostics
        links - beside the controller's own records (every worker's test reports reach
        the controller, so outcomes and errors are already here, even from a worker that
        crashed). False when no worker wrote anything (no chaos test ran)."""
        headers = worker_headers(reports_root() / self.run_id)
        if not headers:
            return False
        run = self.directory
        for header in headers:
            for scenario in header.get("scenarios", []):
                if scenario not in run.header["scenarios"]:
                    run.header["scenarios"].append(scenario)
            run.header.setdefault("escalations", []).extend(header.get("escalations", []))
            for test in header.get("tests", []):
                record = self.records.get(test.get("id")) or self.record(str(test.get("id")))
                record.scenario = record.scenario or test.get("scenario")
                record.diagnostics = record.diagnostics or test.get("diagnostics")
        return True

    # -- end ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Judge and cluster gone; safe to call twice."""
        if self._judge is not None:
            self._judge.close()
            self._judge = None
        self.keeper.close()

    def finish(self, status: RunStatus = RunStatus.COMPLETE) -> Rendered | None:
        """Write the records, mark the run finished, render the report.

        Returns the rendered report, or None when the run wrote nothing.
        """
        if not self.opened:
            return None
        run = self.directory
        run.header["tests"] = [r.to_dict() for r in self.records.values()]
        run.header["escalations"] = [*run.header.get("escalations", []),
                                     *(e.to_dict() for e in self.keeper.escalations)]
        run.header.pop("progress", None)
        run.finish(status)
        if self.worker is not None:
            return None  # the controller renders the one report
        from harness.report import render_run_with_outcome

        return render_run_with_outcome(run.path)

