"""The ZooKeeper-to-KRaft migration as Kafka documents it, laid out as named steps.

Pure: from the migrating topology (:func:`topologies.model.migration_topology`) it says
which node restarts in which configuration, in which phase, and what each phase waits
for. The driver that walks a plan on a real cluster records each phase's start, end and
outcome; faults anchored to a phase strike while it runs.

The phases, in Kafka's order (its operations guide, "ZooKeeper to KRaft Migration"):

``provision``
    The dedicated controllers are formatted with the ZooKeeper cluster's id and started
    with ``zookeeper.metadata.migration.enable``; they reach ZooKeeper and wait.
``enter_migration``
    Each broker but the last is restarted, one at a time, in migration mode: still a
    ZooKeeper-mode broker, it also registers with the controller quorum.
``copy``
    The last broker is restarted in migration mode. Once it has registered, the active
    controller copies ZooKeeper's metadata into its log and claims ``/controller`` with
    a KRaft epoch; the phase ends when the ``/migration`` znode records the copy. So a
    fault anchored to the copy strikes while the copy is about to start or under way,
    not after it (the copy itself takes well under a second).
``dual_write``
    The KRaft controller leads the ZooKeeper-mode brokers and writes every metadata
    change to ZooKeeper too, so that a rollback still finds it there. The plan holds the
    cluster here for a while with every broker still in ZooKeeper mode.
``broker_roll``
    Each broker is restarted as a KRaft broker, keeping its id; the controllers still
    write to ZooKeeper.
``finalize``
    Each controller is restarted without the migration setting and without ZooKeeper.
    After this there is no way back.
``upgrade`` (when the spec asks for one)
    The migrated cluster is upgraded to a newer KRaft release, as Kafka's upgrade notes
    say: each node restarted on the new release, controllers first, then brokers; once
    all run it, ``metadata.version`` is raised to the newest they support.

A rollback, possible until ``finalize``, follows the guide's table for the last phase
completed: after ``broker_roll`` the brokers first go back to migration mode; then the
controllers are stopped, ``/controller`` is deleted so a broker takes the old role back,
and the brokers are rolled to plain ZooKeeper mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from harness.fields import Fields
from topologies.errors import TopologyError
from topologies.model import Topology


class Phase(StrEnum):
    """A named stretch of the migration; ``when = { migration_phase = ... }`` anchors a
    fault to one."""

    PROVISION = "provision"
    ENTER_MIGRATION = "enter_migration"
    COPY = "copy"
    DUAL_WRITE = "dual_write"
    BROKER_ROLL = "broker_roll"
    FINALIZE = "finalize"
    UPGRADE = "upgrade"
    ROLLBACK = "rollback"


# What the harness does in each phase, as a clause after the phase's name: what a report
# says each phase did.
PHASE_PURPOSE: dict[Phase, str] = {
    Phase.PROVISION: "started the KRaft controllers with the migration enabled, formatted with the "
                     "cluster's id",
    Phase.ENTER_MIGRATION: "restarted every broker but the last in migration mode, one at a time",
    Phase.COPY: "restarted the last broker so and waited for the active controller to copy ZooKeeper's "
                "metadata into KRaft",
    Phase.DUAL_WRITE: "held the cluster with a KRaft controller leading it and writing each change to "
                      "ZooKeeper too",
    Phase.BROKER_ROLL: "restarted each broker as a KRaft broker, one at a time",
    Phase.FINALIZE: "restarted each controller off ZooKeeper, one at a time",
    Phase.UPGRADE: "restarted each node on the newer release, controllers first, and raised "
                   "metadata.version",
    Phase.ROLLBACK: "stopped the KRaft controllers, cleared /controller and /migration and rolled the "
                    "brokers back to ZooKeeper mode",
}

FORWARD: tuple[Phase, ...] = (Phase.PROVISION, Phase.ENTER_MIGRATION, Phase.COPY, Phase.DUAL_WRITE,
                              Phase.BROKER_ROLL, Phase.FINALIZE)
# The phases throughout which the KRaft controllers run: they start in provision and stop
# for good in a rollback.
CONTROLLERS_RUN_IN: tuple[Phase, ...] = (Phase.ENTER_MIGRATION, Phase.COPY, Phase.DUAL_WRITE,
                                         Phase.BROKER_ROLL, Phase.FINALIZE, Phase.UPGRADE)
# A rollback is possible after these phases, and not after finalize.
ROLLBACK_AFTER: tuple[Phase, ...] = (Phase.ENTER_MIGRATION, Phase.COPY, Phase.DUAL_WRITE, Phase.BROKER_ROLL)


class NodeConfig(StrEnum):
    """The configuration a node restarts in."""

    ZOOKEEPER = "zookeeper"  # a broker in plain ZooKeeper mode
    MIGRATING = "migrating"  # a broker in migration mode, or a controller with migration enabled
    KRAFT = "kraft"  # a broker rolled to KRaft, or a controller off ZooKeeper (finalized)


class Action(StrEnum):
    START = "start"  # format (a controller) and start a node that was not running
    RESTART = "restart"  # stop a node and start it again in another configuration
    STOP = "stop"  # stop and remove a node for good
    AWAIT_COPY = "await_copy"  # wait for the controller's copy of ZooKeeper's metadata
    HOLD = "hold"  # keep the cluster as it is for the phase's hold time
    RELEASE_CONTROLLER = "release_controller"  # delete /controller so a broker takes the role back
    UPGRADE = "upgrade"  # stop a node and start it on another release, its configuration kept
    RAISE_METADATA_VERSION = "raise_metadata_version"  # to the newest the nodes support


@dataclass(frozen=True)
class Step:
    """One thing the driver does: ``action`` on ``node`` (None for the whole cluster), the
    node coming up in ``config``."""

    phase: Phase
    action: Action
    node: str | None = None
    config: NodeConfig | None = None
    release: str | None = None  # the release an UPGRADE step starts the node on

    def describe(self) -> str:
        if self.action is Action.UPGRADE:
            return f"{self.phase}: upgrade {self.node} to {self.release}"
        what = {Action.START: "start", Action.RESTART: "restart", Action.STOP: "stop"}.get(self.action)
        if what is not None:
            shown = f" as {self.config}" if self.config is not None else ""
            return f"{self.phase}: {what} {self.node}{shown}"
        return f"{self.phase}: {self.action.replace('_', ' ')}"


def phase_named(name: str) -> Phase:
    """The phase called ``name``, or one sentence naming those there are."""
    try:
        return Phase(name)
    except ValueError:
        raise TopologyError(f"migration_phase {name!r} is not a phase of the migration; phases: "
                            + ", ".join(p.value for p in Phase)) from None


def migration_steps(topology: Topology, rollback_after: Phase | None = None,
                    upgrade_to: str | None = None) -> tuple[Step, ...]:
    """The steps of a migration of ``topology`` (a migrating one), finalized, then
    upgraded to the release ``upgrade_to`` when given; or, with ``rollback_after``,
    walked up to the end of that phase and then rolled back."""
    if not topology.migrating:
        raise TopologyError(f"topology {topology.name!r} is not migrating (metadata = {topology.metadata!r})")
    if rollback_after is not None and rollback_after not in ROLLBACK_AFTER:
        raise TopologyError(f"a rollback is possible after {', '.join(ROLLBACK_AFTER)}, not after "
                            f"{rollback_after}")
    if rollback_after is not None and upgrade_to is not None:
        raise TopologyError(f"a migration rolled back after {rollback_after} is not upgraded: the upgrade "
                            "to a KRaft release follows finalize")
    controllers = [c.name for c in topology.dedicated_controllers]
    brokers = [b.name for b in topology.brokers]
    forward = {
        Phase.PROVISION: [Step(Phase.PROVISION, Action.START, c, NodeConfig.MIGRATING) for c in controllers],
        Phase.ENTER_MIGRATION: [Step(Phase.ENTER_MIGRATION, Action.RESTART, b, NodeConfig.MIGRATING)
                                for b in brokers[:-1]],
        # The last broker's registration in migration mode is what starts the copy.
        Phase.COPY: [Step(Phase.COPY, Action.RESTART, brokers[-1], NodeConfig.MIGRATING),
                     Step(Phase.COPY, Action.AWAIT_COPY)],
        Phase.DUAL_WRITE: [Step(Phase.DUAL_WRITE, Action.HOLD)],
        Phase.BROKER_ROLL: [Step(Phase.BROKER_ROLL, Action.RESTART, b, NodeConfig.KRAFT) for b in brokers],
        Phase.FINALIZE: [Step(Phase.FINALIZE, Action.RESTART, c, NodeConfig.KRAFT) for c in controllers],
    }
    last = FORWARD.index(rollback_after) if rollback_after is not None else len(FORWARD) - 1
    steps = [step for phase in FORWARD[:last + 1] for step in forward[phase]]
    if upgrade_to is not None:
        steps += [Step(Phase.UPGRADE, Action.UPGRADE, node, release=upgrade_to)
                  for node in controllers + brokers]
        steps.append(Step(Phase.UPGRADE, Action.RAISE_METADATA_VERSION))
    if rollback_after is not None:
        steps += _rollback(rollback_after, controllers, brokers)
    return tuple(steps)


def _rollback(after: Phase, controllers: list[str], brokers: list[str]) -> list[Step]:
    """Kafka's way back to ZooKeeper mode after ``after``: brokers rolled to KRaft go back
    to migration mode first (so they register in ZooKeeper again, the controllers still
    there); then the controllers go, ``/controller`` is released at once so that a broker
    becomes the ZooKeeper-mode controller, and the brokers are rolled to plain ZooKeeper
    mode."""
    back = Phase.ROLLBACK
    steps = []
    if after == Phase.BROKER_ROLL:
        steps += [Step(back, Action.RESTART, b, NodeConfig.MIGRATING) for b in brokers]
    steps += [Step(back, Action.STOP, c) for c in controllers]
    steps.append(Step(back, Action.RELEASE_CONTROLLER))
    steps += [Step(back, Action.RESTART, b, NodeConfig.ZOOKEEPER) for b in brokers]
    return steps


class FoundZnode(StrEnum):
    """What ZooKeeper's ``/migration`` znode holds when the migration begins."""

    ABSENT = "absent"  # a cluster that never migrated
    # Created without data: what Kafka's zookeeper-security-migration tool leaves when run
    # without --enable.path.check (it creates every secure root path it finds missing, and
    # /migration is one). Before 3.9.2 the controllers cannot read it and never migrate
    # (KAFKA-19480).
    EMPTY = "empty"


@dataclass(frozen=True)
class MigrationSpec:
    """A scenario's migration: how long the cluster stays in dual-write with every broker
    still in ZooKeeper mode, when in it the harness makes its change through KRaft (a
    fault anchored to dual-write's start is then already in force, or already healed), and
    the phase after which it rolls back (None: finalized)."""

    hold_s: float = 10.0
    rollback_after: Phase | None = None
    change_at_s: float = 0.0
    # A KRaft release the migrated cluster is upgraded to after finalize (None: not upgraded).
    upgrade_to: str | None = None
    # What /migration holds as the controllers start (FoundZnode).
    migration_znode: FoundZnode = FoundZnode.ABSENT

    def __post_init__(self) -> None:
        if self.change_at_s > self.hold_s:
            raise TopologyError(f"migration.change_at_s = {self.change_at_s:g}: the change is made in "
                                f"dual-write, which lasts hold_s = {self.hold_s:g} s")
        if self.rollback_after is not None and self.upgrade_to is not None:
            raise TopologyError(f"migration.upgrade_to = {self.upgrade_to!r}: a migration rolled back after "
                                f"{self.rollback_after} is not upgraded (the upgrade follows finalize)")

    def steps(self, topology: Topology) -> tuple[Step, ...]:
        return migration_steps(topology, self.rollback_after, self.upgrade_to)

    def to_dict(self) -> dict[str, object]:
        """As a scenario file's ``[migration]`` table spells it."""
        out: dict[str, object] = {"hold_s": self.hold_s}
        if self.change_at_s:
            out["change_at_s"] = self.change_at_s
        if self.upgrade_to is not None:
            out["upgrade_to"] = self.upgrade_to
        if self.rollback_after is not None:
            out["rollback_after"] = str(self.rollback_after)
        if self.migration_znode is not FoundZnode.ABSENT:
            out["migration_znode"] = str(self.migration_znode)
        return out

    @classmethod
    def from_dict(cls, raw: object) -> MigrationSpec:
        """A ``[migration]`` table: ``hold_s`` (seconds in dual-write, default 10),
        ``change_at_s`` (seconds into dual-write at which the harness makes its change
        through KRaft, default 0, at most ``hold_s``), ``rollback_after`` (a phase after
        which a rollback is possible; absent: the migration is finalized) and
        ``upgrade_to`` (a KRaft release the finalized cluster is upgraded to; whether the
        harness runs it is checked where the releases are known,
        :func:`harness.cluster.versions.check_upgrade`) and ``migration_znode`` (what
        ``/migration`` holds as the controllers start: ``absent``, the default, or
        ``empty``). Every problem is one TopologyError line naming the key."""
        if not isinstance(raw, dict):
            raise TopologyError(f"'migration' must be a table ([migration]), not {raw!r}")
        known = ("hold_s", "change_at_s", "rollback_after", "upgrade_to", "migration_znode")
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise TopologyError(f"migration: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}")
        hold = _seconds(raw, "hold_s", cls.hold_s)
        change_at = _seconds(raw, "change_at_s", cls.change_at_s)
        upgrade_to = raw.get("upgrade_to")
        if upgrade_to is not None and not isinstance(upgrade_to, str):
            raise TopologyError(f"migration.upgrade_to must be a Kafka release such as \"4.4.0\", not "
                                f"{upgrade_to!r}")
        found = raw.get("migration_znode", str(FoundZnode.ABSENT))
        if found not in tuple(FoundZnode):
            raise TopologyError(f"migration.migration_znode must be one of "
                                f"{', '.join(repr(str(f)) for f in FoundZnode)}, not {found!r}")
        after = raw.get("rollback_after")
        phase = None
        if after is not None:
            if not isinstance(after, str):
                raise TopologyError(f"migration.rollback_after must be a phase name, not {after!r}")
            phase = phase_named(after)
            if phase not in ROLLBACK_AFTER:
                raise TopologyError(f"migration.rollback_after {after!r}: a rollback is possible after "
                                    f"{', '.join(ROLLBACK_AFTER)}, not after {phase}")
        return cls(hold, phase, change_at, upgrade_to, FoundZnode(found))


def _seconds(raw: dict[str, object], key: str, default: float) -> float:
    """``raw[key]`` as a non-negative number of seconds, or one line naming the key."""
    return Fields(raw, "migration", TopologyError).number(key, default, at_least=0)


def phases_of(steps: tuple[Step, ...]) -> tuple[Phase, ...]:
    """The phases ``steps`` walk through, in order, each once."""
    return tuple(dict.fromkeys(step.phase for step in steps))


__all__ = ["CONTROLLERS_RUN_IN", "FORWARD", "ROLLBACK_AFTER", "Action", "FoundZnode", "MigrationSpec",
           "NodeConfig", "Phase", "Step", "migration_steps", "phase_named", "phases_of"]
