"""Walking a migration plan on a running cluster, one step at a time, each phase recorded.

The plan (:func:`~harness.cluster.migration.plan.migration_steps`) says what to do; this
module does it on a cluster started from a migrating topology, through its metadata mode
(:class:`~harness.cluster.metadata.migration.MigrationMode`), and records each phase's
start, end, outcome and steps (:class:`PhaseRecord`, a row of the history's ``migration``
table). The mode carries the phase while it runs, so every cluster-state sample does,
and a fault anchored to a phase (``when = { migration_phase = ... }``) strikes in it.

Every wait is bounded by Kafka's own timeouts with a margin (:data:`STEP_TIMEOUT_S`), and a
phase that does not finish fails the walk with the error as its record's detail: the
driver never moves on from a phase it could not complete.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import NoNodeError

from harness.cluster.migration.plan import Action, FoundZnode, NodeConfig, Phase, Step, phases_of
from harness.cluster.migration.znodes import MIGRATION_ZNODE, entity_configs
from harness.cluster.versions import check_upgrade, release
from harness.cluster.waiting import WaitTimeout, wait_until_clear
from harness.errors import ChaosError, describe_error

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster
    from harness.cluster.metadata.migration import MigrationMode

# The history's migration outcomes (harness/history/schema.py; this layer may not import
# it, a unit test holds them equal).
COMPLETED = "completed"
FAILED = "failed"
# One step's bound: a broker's controlled shutdown and restart, its log recovery and its
# replicas back in every ISR, or the controllers electing a leader and its migration
# driver claiming ZooKeeper, on a loaded two-core machine. Kafka's own bounds inside it:
# the ZooKeeper session (18 s) and broker session (9 s) timeouts, the controlled
# shutdown's retries, replica.lag.time.max.ms (30 s) for a follower's return to the ISR.
STEP_TIMEOUT_S = 180.0
# A change made through KRaft in dual-write reaches ZooKeeper with the controller's next
# write of its log there, in well under a second on a quiet machine.
MIRROR_TIMEOUT_S = 60.0
# The change made to show dual-write mirroring: a topic config no scenario sets, its value
# the harness's own, so it cannot be there by chance.
MIRROR_CONFIG = ("retention.ms", "604800123")
# The copy itself is one batch of records per topic and takes seconds; before it starts,
# the active controller waits for every broker's migration-mode registration.
COPY_TIMEOUT_S = 180.0


@dataclass
class PhaseRecord:
    """One phase as the driver walked it: both clocks of its start and end, its outcome,
    what it found (or the error it failed with), and the steps it took."""

    phase: Phase
    ts: float
    mono: float
    end_ts: float = 0.0
    end_mono: float = 0.0
    outcome: str = ""
    detail: str | None = None
    steps: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        """The history's ``migration`` row (docs/HISTORY.md)."""
        return {"phase": str(self.phase), "ts": self.ts, "mono": self.mono, "end_ts": self.end_ts,
                "end_mono": self.end_mono, "outcome": self.outcome, "detail": self.detail,
                "steps": "; ".join(self.steps) or None}


def _quiet(_: str) -> None:
    return None


class MigrationDriver:
    """Walks ``steps`` on ``cluster`` (module doc)."""

    def __init__(self, cluster: Cluster, steps: tuple[Step, ...], hold_s: float = 0.0,
                 progress: Callable[[str], None] = _quiet, mirror_topic: str | None = None,
                 change_at_s: float = 0.0, migration_znode: FoundZnode = FoundZnode.ABSENT) -> None:
        """``mirror_topic``: a topic whose config the dual-write hold changes through
        KRaft, ``change_at_s`` into it, then waits to see in ZooKeeper (:meth:`_mirror`).
        ``migration_znode``: what ``/migration`` holds as the controllers start."""
        self.cluster = cluster
        self.mode: MigrationMode = cluster.metadata.migration()
        self.steps = steps
        self.hold_s = hold_s
        self.change_at_s = change_at_s
        self.migration_znode = migration_znode
        self.progress = progress
        self.mirror_topic = mirror_topic
        self.records: list[PhaseRecord] = []
        # The change made through KRaft in dual-write: (topic, key, value) once made, and
        # the seconds ZooKeeper took to show it (None: it did not within its bound).
        self.mirrored: tuple[str, str, str] | None = None
        self.mirror_s: float | None = None

    def prepare(self) -> None:
        """What the walk needs before it starts: every release it upgrades to is one the
        cluster's may be upgraded to (UnsupportedVersion in one sentence if not), and its
        image is built now rather than under load in the middle of the walk."""
        for version in dict.fromkeys(s.release for s in self.steps if s.release is not None):
            check_upgrade(release(self.cluster.kafka_version), version)
            self.cluster.release_image(version)

    def run(self) -> list[PhaseRecord]:
        """Every phase in order; raises the first phase's failure after recording it."""
        try:
            for phase in phases_of(self.steps):
                self._walk(phase, [s for s in self.steps if s.phase == phase])
        finally:
            self.mode.phase = None
        return self.records

    def _walk(self, phase: Phase, steps: list[Step]) -> None:
        record = PhaseRecord(phase, time.time(), time.monotonic())
        self.records.append(record)
        self.mode.phase = phase
        self.progress(f"migration: {phase}")
        try:
            found = [self._do(step, record) for step in steps]
            record.detail = "; ".join(f for f in found if f) or None
            record.outcome = COMPLETED
        except BaseException as err:
            record.outcome, record.detail = FAILED, describe_error(err)
            raise
        finally:
            record.end_ts, record.end_mono = time.time(), time.monotonic()
            self.progress(f"migration: {phase} {record.outcome} in {record.end_mono - record.mono:.1f} s")

    def _do(self, step: Step, record: PhaseRecord) -> str | None:
        """One step; what it found, for the phase's detail."""
        record.steps.append(step.describe().split(": ", 1)[1])
        action = step.action
        if action is Action.START:
            return self._provision(step)
        if action is Action.RESTART:
            assert step.node is not None and step.config is not None
            self._restart(step.node, step.config)
            return None
        if action is Action.STOP:
            assert step.node is not None
            self.mode.retire(step.node)
            return None
        if action is Action.AWAIT_COPY:
            return self._await_copy()
        if action is Action.HOLD:
            return self._hold()
        if action is Action.RELEASE_CONTROLLER:
            return self._release_controller()
        if action is Action.UPGRADE:
            assert step.node is not None and step.release is not None
            self._upgrade(step.node, step.release)
            return None
        if action is Action.RAISE_METADATA_VERSION:
            return self._raise_metadata_version()
        raise ChaosError(f"the migration driver has no action {action!r}")

    def _provision(self, step: Step) -> str | None:
        """The controllers start together (a quorum needs a majority before any leads),
        on the first START step of the phase; the rest find them started."""
        if self.mode.provisioned:
            return None
        found = ""
        if self.migration_znode is FoundZnode.EMPTY:
            # No data at all, not an empty string: as Kafka's tools create a missing path.
            self.cluster.zookeeper.create_znode(MIGRATION_ZNODE, None)
            found = f"{MIGRATION_ZNODE} was there without data as the controllers started; "
        cluster_id = self.mode.provision()

        def not_led() -> list[str]:
            self._raise_if_a_controller_exited()
            return [p for p, _ in self.mode.quorum_problems()]

        waited = wait_until_clear(not_led, STEP_TIMEOUT_S,
                                  "a KRaft controller to take the lead of the migration")
        return (f"{found}formatted with cluster id {cluster_id}; a controller's migration driver wrote "
                f"{MIGRATION_ZNODE} {waited:.1f} s later")

    def _raise_if_a_controller_exited(self) -> None:
        """A controller that exited while the quorum forms (a refused format, a bad
        setting) will not come back: say so with its last words at once, rather than
        wait out the step's timeout for a leader that cannot appear."""
        for controller in self.cluster.topology.dedicated_controllers:
            state = self.cluster.container(controller.name).attrs["State"]
            if state.get("Status") == "exited":
                last = self.cluster.node_log(controller.name, lines=3).strip().splitlines()
                raise ChaosError(f"{controller.name} exited with code {state.get('ExitCode')} as the "
                                 f"controllers started: {last[-1] if last else 'no output'}")

    def _restart(self, node: str, config: NodeConfig) -> None:
        """Once the cluster is fully healthy, stop ``node`` cleanly (a broker's controlled
        shutdown moves its leaderships away first, as an operator's roll does), write its
        new configuration, start it, and wait for full health again (every ISR full, the
        quorum led). An operator rolls only a healthy cluster: a fault in force (a node
        down, a link cut) is healed before the next node goes down, and the roll never
        restarts a node a fault holds."""
        self.cluster.wait_healthy(STEP_TIMEOUT_S)
        self.mode.reconfigure(node, config)
        self.cluster.stop_node(node)
        self.cluster.start_node(node, timeout_s=STEP_TIMEOUT_S)
        self.cluster.wait_healthy(STEP_TIMEOUT_S)

    def _upgrade(self, node: str, version: str) -> None:
        """Once the cluster is fully healthy, stop ``node`` cleanly and start it on
        ``version`` with its configuration and data, then wait for full health again."""
        self.cluster.wait_healthy(STEP_TIMEOUT_S)
        self.cluster.upgrade_node(node, version)
        self.cluster.wait_healthy(STEP_TIMEOUT_S)

    def _raise_metadata_version(self) -> str:
        """Raise ``metadata.version`` alone to the newest level every node supports, as
        Kafka's upgrade notes finish an upgrade. Alone: ``--release-version`` would also
        raise ``kraft.version`` and turn a static quorum into a dynamic one (KAFKA-21426)."""
        return self.mode.raise_metadata_version(STEP_TIMEOUT_S)

    def _hold(self) -> str | None:
        """Dual-write for ``hold_s``, the mirroring shown ``change_at_s`` into it when asked for."""
        started = time.monotonic()
        found = None
        if self.mirror_topic is not None:
            time.sleep(self.change_at_s)
            found = self._mirror()
        time.sleep(max(0.0, self.hold_s - (time.monotonic() - started)))
        return found

    def _mirror(self) -> str:
        """Set a config on ``mirror_topic`` through the Admin API (which the brokers hand
        to the KRaft controller) and wait until ZooKeeper's ``/config/topics`` shows it:
        dual-write's promise, on which a rollback depends. Not shown in time is an
        outcome, not an error: the check that reads :attr:`mirrored` says so."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        assert self.mirror_topic is not None
        key, value = MIRROR_CONFIG
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, self.mirror_topic, incremental_configs=[entry])
        refusals: list[str] = []

        def refused() -> list[str]:
            try:
                for future in self.cluster.admin.incremental_alter_configs([resource]).values():
                    future.result(timeout=MIRROR_TIMEOUT_S)
            except KafkaException as err:
                refusals.append(describe_error(err))
                return refusals[-1:]
            return []

        # Asked again until accepted, as an operator's tool would: a fault in force may
        # have the request refused (no controller yet, or a broker answering for itself).
        # Every refusal is kept in the phase's detail; not accepted in time is an outcome.
        try:
            wait_until_clear(refused, MIRROR_TIMEOUT_S, f"{key}={value} accepted", interval_s=1.0)
        except WaitTimeout:
            return (f"{key}={value} was refused {len(refusals)} time(s) for {MIRROR_TIMEOUT_S:.0f} s and "
                    f"never set; the last refusal: {refusals[-1]}")
        first = (f"refused {len(refusals)} time(s) first (the first: {refusals[0]}); "
                 if refusals else "")
        self.mirrored = (self.mirror_topic, key, value)
        path = f"/config/topics/{self.mirror_topic}"

        def not_mirrored() -> list[str]:
            held = entity_configs(self.mode.zookeeper().observer.read_json(path)).get(key)
            return [] if held == value else [f"{path} holds {key}={held}"]

        try:
            self.mirror_s = wait_until_clear(not_mirrored, MIRROR_TIMEOUT_S, f"{key}={value} in {path}",
                                             transient=(ConnectionError, OSError))
        except WaitTimeout as err:
            return f"{first}{key}={value} set through KRaft did not reach {path}: {err}"
        return f"{first}{key}={value} set through KRaft reached {path} after {self.mirror_s:.1f} s"

    def _release_controller(self) -> str | None:
        """Once the KRaft controllers are gone, delete ``/controller`` so that a broker
        becomes the ZooKeeper-mode controller again, and ``/migration`` so that a
        migration can be tried again, its last content kept in the phase's detail (Kafka's
        rollback steps: "get /migration" then delete it)."""
        found = []
        try:
            self.cluster.zookeeper.delete_znode("/controller")
        except NoNodeError:
            found.append("/controller was already gone")
        record = self.mode.zookeeper().observer.read_json(MIGRATION_ZNODE)
        try:
            self.cluster.zookeeper.delete_znode(MIGRATION_ZNODE)
            found.append(f"{MIGRATION_ZNODE} deleted, it held {json.dumps(record, sort_keys=True)}")
        except NoNodeError:
            found.append(f"{MIGRATION_ZNODE} was already gone")
        return "; ".join(found)

    def _await_copy(self) -> str:
        def not_copied() -> list[str]:
            record = self.mode.record()
            return [] if record is not None and record.copied else [f"/migration is {record}"]

        waited = wait_until_clear(not_copied, COPY_TIMEOUT_S, "the KRaft controller's copy of ZooKeeper's "
                                  "metadata", transient=(ConnectionError, OSError))
        record = self.mode.record()
        assert record is not None
        return (f"copied to KRaft offset {record.metadata_offset} (epoch {record.metadata_epoch}) "
                f"in {waited:.1f} s")


__all__ = ["COMPLETED", "COPY_TIMEOUT_S", "FAILED", "STEP_TIMEOUT_S", "MigrationDriver", "PhaseRecord"]
