"""Faults at the ZooKeeper and admin level: sessions, controller, leaders, replicas.

These act on Kafka's metadata rather than on processes or packets: a broker's session
expires (as after a long pause or a partition from ZooKeeper), the controller loses its
``/controller`` claim, leadership is moved back to preferred replicas, or replicas are
moved between brokers. Each waits until ZooKeeper shows the effect, so the event log's
time marks when the change had happened, not merely when it was asked for. None of
them is undone by heal: they leave a healthy cluster in a different state, which is the
point; heal only waits for what the cluster repairs by itself (a re-registration).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.exceptions import NoNodeError

from faults import nodes, zksession
from faults.base import Fault
from faults.draw import TOPIC, broker_role
from faults.errors import FaultError, FaultSpecError, TargetError
from faults.kinds import METADATA_HEAL, TIMEOUT_MEANING, FaultDoc, Param, fault_kind, target_param
from faults.spec import check_keys, optional, positive, required, typed
from faults.targets import Controller, Target, needs_zookeeper, partition_state, target_from
from faults.waiting import wait_until, wait_until_clear
from harness.cluster.fabric import LinkKind
from harness.cluster.migration.plan import Phase
from harness.errors import ChaosError
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl

# What a KRaft cluster does instead of a ZooKeeper-only fault, as its refusal says.
FENCE_ON_KRAFT = ('fence the broker by cutting its heartbeats, {fault = "cut", links = {from = {broker = N}, '
                  'to = "all_controllers", kind = "kraft-broker"}}')
NEW_CONTROLLER_ON_KRAFT = ('make the quorum elect another leader, {fault = "kill", target = '
                           '"active_controller"} or {fault = "isolate", target = "active_controller"}')
CONTROLLER_PATH = "/controller"
ELECT_ANSWER_S = 10.0  # one ElectLeaders request's wait; its election completes in well under 1 s
# Why a migration round never draws the kinds that act through ZooKeeper's admin paths.
ADMIN_PATHS = ("it acts through ZooKeeper's admin paths, which a KRaft controller leading the cluster does "
               "not read the way a ZooKeeper one did (a finding about the harness's call, not about the "
               "migration)")


@fault_kind(
    FaultDoc(
        "expire_session",
        "Closes each target broker's ZooKeeper session, as a long pause or a partition from ZooKeeper "
        "would; returns once the old session's /brokers/ids entry is gone. The controller treats the "
        "broker as dead until it registers again, which it does by itself.",
        "Waits until each broker has registered again with a new session.",
        (
            target_param({"broker": 2},
                         "The broker(s) whose session is closed; a target naming no broker fails."),
            Param("timeout_s", "float", "Seconds to wait for the old registration to vanish; healing waits "
                  "this plus the session timeout for the new one.", 20.0, 30.0),
        ),
        {"fault": "expire_session", "target": {"broker": 2}},
        5.0,
    ),
    draw=lambda d: {"target": broker_role(d)},
    # An expired ZooKeeper session means something only while brokers still hold one,
    # before they roll to KRaft.
    migration_phases=(Phase.ENTER_MIGRATION, Phase.COPY, Phase.DUAL_WRITE),
)
class ExpireSession(Fault):
    """Close each target broker's ZooKeeper session (see :mod:`faults.zksession`).

    Returns once ZooKeeper no longer holds the old session's ``/brokers/ids/<id>``; the
    broker then opens a new session and registers again by itself, which heal awaits.
    """

    kind = "expire_session"

    def __init__(self, target: Target, timeout_s: float = 30.0) -> None:
        super().__init__()
        self.target = target
        self.timeout_s = positive(timeout_s, "expire_session timeout_s")
        self.sessions: dict[str, tuple[int, int | None]] = {}  # node -> (old, new session)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> ExpireSession:
        what = "fault 'expire_session'"
        check_keys(spec, ["fault", "target", "timeout_s"], what)
        return cls(target_from(spec, "target", what), optional(spec, "timeout_s", float, 30.0, what))

    def describe(self) -> str:
        return f"{self.kind} {self.target.describe()}"

    def to_spec(self) -> dict[str, Any]:
        return {"fault": self.kind, "target": self.target.to_spec(), "timeout_s": self.timeout_s}

    def check(self, topology: Topology) -> None:
        needs_zookeeper(topology, f"fault {self.kind!r}", FENCE_ON_KRAFT)
        self.target.check(topology)

    def check_exists(self, cluster: ClusterControl) -> None:
        self.check(cluster.topology)
        self.target.check_exists(cluster)

    def _resolve(self, cluster: ClusterControl) -> tuple[str, ...]:
        resolved = self.target.resolve(cluster)
        brokers = tuple(n for n in resolved if nodes.broker_id(cluster, n) is not None)
        if not brokers:
            raise TargetError(f"expire_session needs a broker, but the target is {', '.join(resolved)}")
        return brokers

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        details = []
        for node in resolved:
            old = _session_of(cluster, node)
            if old is None:
                raise TargetError(f"{node} is not registered in ZooKeeper, so it has no session")
            zksession.close_session(cluster.zookeeper.hosts(), old)
            _wait_session_ended(cluster, node, old, self.timeout_s)
            self.sessions[node] = (old, None)
            details.append(f"{node} session 0x{old:x} closed")
        return "; ".join(details)

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        details = []
        for node in resolved:
            nodes.wait_back(cluster, node, self.timeout_s + nodes.session_timeout_s(cluster))
            new = _session_of(cluster, node)
            old = self.sessions.get(node, (0, None))[0]
            self.sessions[node] = (old, new)
            details.append(f"{node} registered again with session 0x{new or 0:x}")
        return "; ".join(details)


def _wait_session_ended(cluster: ClusterControl, node: str, session: int, timeout_s: float) -> None:
    wait_until_clear(
        lambda: "/brokers/ids still held by it" if _session_of(cluster, node) == session else None,
        timeout_s,
        f"session 0x{session:x} of {node} ending",
    )


def _session_of(cluster: ClusterControl, node: str) -> int | None:
    """The session that owns ``/brokers/ids/<id>`` now, or None when it is absent."""
    return cluster.zk.ephemeral_owner(f"/brokers/ids/{nodes.broker_id(cluster, node)}")


@fault_kind(
    FaultDoc(
        "delete_controller",
        "Deletes /controller, so every broker races to become controller; returns once a controller holds "
        "it with a higher /controller_epoch.",
        METADATA_HEAL,
        (Param("timeout_s", "float", TIMEOUT_MEANING, 20.0, 30.0),),
        {"fault": "delete_controller"},
    ),
    draw=lambda d: {},
    not_during_migration=ADMIN_PATHS,
)
class DeleteController(Fault):
    """Delete ``/controller``: every broker races to recreate it and the epoch rises."""

    kind = "delete_controller"

    def __init__(self, timeout_s: float = 30.0) -> None:
        super().__init__()
        self.timeout_s = positive(timeout_s, "delete_controller timeout_s")
        self.epochs: tuple[int | None, int | None] = (None, None)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> DeleteController:
        what = "fault 'delete_controller'"
        check_keys(spec, ["fault", "timeout_s"], what)
        return cls(optional(spec, "timeout_s", float, 30.0, what))

    def describe(self) -> str:
        return self.kind

    def to_spec(self) -> dict[str, Any]:
        return {"fault": self.kind, "timeout_s": self.timeout_s}

    def check(self, topology: Topology) -> None:
        needs_zookeeper(topology, f"fault {self.kind!r}", NEW_CONTROLLER_ON_KRAFT)

    def _resolve(self, cluster: ClusterControl) -> tuple[str, ...]:
        """The controller whose claim is deleted. While an election is under way
        (``/controller`` empty, as after a ZooKeeper outage expired the old controller's
        session) the claim to delete is the one that election makes: wait for it, within
        ``timeout_s``, rather than fail a fault drawn at that moment."""
        found: list[tuple[str, ...]] = []

        def elected() -> None:
            found[:] = [Controller().resolve(cluster)]  # TargetError while there is none: retried

        wait_until_clear(elected, self.timeout_s, "a controller to take the claim of")
        return found[0]

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        before = cluster.zk.controller_epoch()
        claim = cluster.zk.stat(CONTROLLER_PATH)
        if claim is not None:  # None: already gone, an election is under way anyway
            _delete_claim(cluster, claim.czxid, self.timeout_s)
        wait_until(
            lambda: (
                cluster.zk.controller() is not None and (cluster.zk.controller_epoch() or 0) > (before or 0)
            ),
            self.timeout_s,
            "a new controller being elected",
        )
        after = cluster.zk.controller_epoch()
        self.epochs = (before, after)
        return f"controller {resolved[0]} -> kafka-{cluster.zk.controller()}, epoch {before} -> {after}"

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        return "nothing to undo"


def _delete_claim(cluster: ClusterControl, czxid: int, timeout_s: float) -> None:
    """Delete the ``/controller`` claim created at ``czxid``, retrying a delete whose
    connection dropped. A retry first checks that the claim is still that one: the first
    delete may have gone through, and the claim of the controller elected since must not
    be deleted too (that would be a second fault nobody drew)."""

    def deleted() -> str | None:
        current = cluster.zk.stat(CONTROLLER_PATH)
        if current is None or current.czxid != czxid:
            return None
        with contextlib.suppress(NoNodeError):
            cluster.zookeeper.delete_znode(CONTROLLER_PATH)
        return None

    wait_until_clear(deleted, timeout_s, f"{CONTROLLER_PATH} being deleted")


class PartitionFault(Fault):
    """A fault on partitions of one topic (all of them when ``partitions`` is None)."""

    def __init__(self, topic: str, partitions: list[int] | None = None, timeout_s: float = 30.0) -> None:
        super().__init__()
        self.topic = topic
        self.partitions = partitions
        self.timeout_s = positive(timeout_s, "timeout_s")

    def check_exists(self, cluster: ClusterControl) -> None:
        for partition in self.partitions or [0]:
            partition_state(cluster, self.topic, partition)

    def _resolve(self, cluster: ClusterControl) -> tuple[str, ...]:
        states = cluster.state([self.topic]).topic(self.topic)
        chosen = self.partitions if self.partitions is not None else [s.partition for s in states]
        return tuple(f"{self.topic}/{p}" for p in chosen)

    @staticmethod
    def _split(name: str) -> tuple[str, int]:
        topic, _, partition = name.rpartition("/")
        return topic, int(partition)

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        return "nothing to undo"


@fault_kind(
    FaultDoc(
        "preferred_election",
        "Asks the controller (ElectLeaders admin API) to hand leadership back to each partition's "
        "preferred replica; returns once every chosen partition whose preferred replica is in sync is "
        "led by it.",
        METADATA_HEAL,
        (
            Param("topic", "string", "The topic whose partitions are elected.", "$topic"),
            Param("partitions", "list of int", "The partitions to elect; all of the topic's when absent.",
                  [0], None),
            Param("timeout_s", "float", TIMEOUT_MEANING, 20.0, 30.0),
        ),
        {"fault": "preferred_election", "topic": "$topic", "partitions": [0]},
    ),
    draw=lambda d: {"topic": TOPIC},
)
class PreferredLeaderElection(PartitionFault):
    """Ask the controller (ElectLeaders admin API) to make preferred replicas lead again.

    Waits until every chosen partition whose preferred replica is in sync is led by it.
    """

    kind = "preferred_election"

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> PreferredLeaderElection:
        what = "fault 'preferred_election'"
        check_keys(spec, ["fault", "topic", "partitions", "timeout_s"], what)
        partitions = spec.get("partitions")
        if partitions is not None:
            partitions = [typed(p, int, f"{what}: partition") for p in typed(partitions, list, what)]
        timeout_s = optional(spec, "timeout_s", float, 30.0, what)
        return cls(required(spec, "topic", str, what), partitions, timeout_s)

    def describe(self) -> str:
        which = "" if self.partitions is None else f" {self.partitions}"
        return f"{self.kind} {self.topic}{which}"

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"fault": self.kind, "topic": self.topic, "timeout_s": self.timeout_s}
        if self.partitions is not None:
            spec["partitions"] = list(self.partitions)
        return spec

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        chosen = [self._split(name) for name in resolved]

        def elect() -> list[str]:
            """One ElectLeaders request; what it did not do. A fresh client each time: a
            long-lived one may still address a controller that a fault just deposed, and
            a request sent there can go unanswered (seen once right after the controller's
            session expired), so an unanswered request is asked again, not waited out."""
            admin = AdminClient({"bootstrap.servers": cluster.observer_bootstrap(), "log_level": 3})
            # No timeout keywords: confluent-kafka 2.16's binding rejects its documented
            # request_timeout/operation_timeout; the wait on the future bounds the call instead.
            future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(t, p) for t, p in chosen])
            return [f"{tp.topic}-{tp.partition}: {error}"
                    for tp, error in future.result(timeout=ELECT_ANSWER_S).items()
                    if error is not None and not _excused(cluster, tp.topic, tp.partition, error)]

        wait_until_clear(elect, self.timeout_s, "the controller to run a preferred leader election",
                         interval_s=1.0)

        def preferred_lead() -> bool:
            for topic, partition in chosen:
                state = partition_state(cluster, topic, partition)
                preferred = state.replicas[0]
                if preferred in state.isr and state.leader != preferred:
                    return False
            return True

        waited = wait_until(preferred_lead, self.timeout_s, "preferred replicas taking leadership")
        return f"preferred replicas lead after {waited:.2f} s"


def _excused(cluster: ClusterControl, topic: str, partition: int, error: object) -> bool:
    """Whether the controller's refusal to elect is Kafka doing what it should: the
    preferred replica already leads, or it is out of the ISR (dead, or behind: another
    fault's doing), which Kafka answers with PREFERRED_LEADER_NOT_AVAILABLE. The ISR is
    read from ZooKeeper, so a refusal while the preferred replica is in sync is retried."""
    code = _error_code(error)
    if code == KafkaError.ELECTION_NOT_NEEDED:
        return True
    if code != KafkaError.PREFERRED_LEADER_NOT_AVAILABLE:
        return False
    state = partition_state(cluster, topic, partition)
    return state.replicas[0] not in state.isr


def _error_code(error: object) -> int | None:
    if isinstance(error, KafkaException):
        error = error.args[0] if error.args else None
    return error.code() if isinstance(error, KafkaError) else None


@fault_kind(
    FaultDoc(
        "reassign",
        "Moves one partition's replicas to the given brokers: in ZooKeeper mode by writing "
        "/admin/reassign_partitions (which its controllers execute), in KRaft with the "
        "AlterPartitionReassignments admin API; returns once no move is pending, the assignment is the new "
        "list and every new replica is in the ISR. Fails if another reassignment is in progress.",
        METADATA_HEAL,
        (
            Param("topic", "string", "The partition's topic.", "$topic"),
            Param("partition", "int", "The partition to move.", 0),
            Param("replicas", "list of int", "The new replica list (distinct broker ids; the first is "
                  "preferred leader).", [2, 1]),
            Param("timeout_s", "float", TIMEOUT_MEANING, 90.0, 60.0),
        ),
        {"fault": "reassign", "topic": "$topic", "partition": 0, "replicas": [2, 1]},
    ),
    draw=lambda d: {"topic": TOPIC, "partition": d.partition(),
                    "replicas": d.rng.sample(list(d.space.brokers), d.space.replication_factor)},
    not_during_migration=ADMIN_PATHS,
)
class Reassign(PartitionFault):
    """Move one partition's replicas to ``replicas`` and wait until the move completes.

    The metadata mode makes the request (:meth:`MetadataMode.request_reassignment`: the
    ``/admin/reassign_partitions`` znode in ZooKeeper mode, AlterPartitionReassignments
    in KRaft). Done means: no move is pending, the topic's assignment is ``replicas``,
    and every new replica is in the ISR. When
    another fault holds one of the old or new replicas down (paused or not running), the
    reassignment is requested and not awaited, and the outcome says so: it cannot finish
    before that fault's heal, which a wait here would hold up.
    """

    kind = "reassign"

    def __init__(self, topic: str, partition: int, replicas: list[int], timeout_s: float = 60.0) -> None:
        super().__init__(topic, [partition], timeout_s)
        if not replicas:
            raise FaultSpecError("reassign needs at least one replica")
        if len(set(replicas)) != len(replicas):
            raise FaultSpecError(f"reassign replicas must be distinct, got {replicas}")
        self.partition = partition
        self.replicas = list(replicas)
        self.previous: tuple[int, ...] = ()

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Reassign:
        what = "fault 'reassign'"
        check_keys(spec, ["fault", "topic", "partition", "replicas", "timeout_s"], what)
        replicas = [typed(r, int, f"{what}: replica") for r in required(spec, "replicas", list, what)]
        return cls(
            required(spec, "topic", str, what),
            required(spec, "partition", int, what),
            replicas,
            optional(spec, "timeout_s", float, 60.0, what),
        )

    def check(self, topology: Topology) -> None:
        known = {b.broker_id for b in topology.brokers}
        unknown = [r for r in self.replicas if r not in known]
        if unknown:
            raise TargetError(f"reassign names unknown broker(s) {unknown}; brokers are {sorted(known)}")

    def check_exists(self, cluster: ClusterControl) -> None:
        self.check(cluster.topology)
        super().check_exists(cluster)

    def describe(self) -> str:
        return f"{self.kind} {self.topic}-{self.partition} to {self.replicas}"

    def to_spec(self) -> dict[str, Any]:
        return {
            "fault": self.kind,
            "topic": self.topic,
            "partition": self.partition,
            "replicas": list(self.replicas),
            "timeout_s": self.timeout_s,
        }

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        self.previous = partition_state(cluster, self.topic, self.partition).replicas
        started = time.monotonic()
        try:
            cluster.metadata.request_reassignment(self.topic, self.partition, self.replicas)
        except ChaosError as err:
            raise FaultError(str(err)) from None

        held, cut_off = self._held_elsewhere(cluster), self._cut_off_elsewhere(cluster)
        if held or cut_off:
            # It cannot complete while a replica is held down or cut off, and waiting here
            # would hold up the schedule: the heal of the fault that holds it is what lets
            # it finish.
            why = [*([f"{', '.join(held)} already down or stopped by another fault"] if held else []),
                   *([f"links of {', '.join(cut_off)} broken by another fault"] if cut_off else [])]
            return (f"replicas {list(self.previous)} -> {self.replicas} requested; completion not "
                    f"awaited: {'; '.join(why)}")

        def done() -> bool:
            if cluster.metadata.reassignment_pending():
                return False
            state = partition_state(cluster, self.topic, self.partition)
            return list(state.replicas) == self.replicas and set(self.replicas) <= set(state.isr)

        wait_until(done, self.timeout_s, f"reassignment of {self.topic}-{self.partition} completing")
        took = time.monotonic() - started
        return f"replicas {list(self.previous)} -> {self.replicas} in {took:.2f} s"

    def _replica_nodes(self, cluster: ClusterControl) -> list[str]:
        """The nodes of the old and new replica sets."""
        return [cluster.topology.broker(b).name for b in sorted(set(self.previous) | set(self.replicas))]

    def _held_elsewhere(self, cluster: ClusterControl) -> list[str]:
        """The brokers of the old or new replica set that another fault stopped or took down."""
        return list(nodes.held_down(cluster, self._replica_nodes(cluster)))

    def _cut_off_elsewhere(self, cluster: ClusterControl) -> list[str]:
        """The brokers of the old or new replica set whose links to other brokers or to
        the metadata (ZooKeeper, the KRaft controllers) another fault has disabled or
        slowed: a replica isolated by a cut is alive, so it is not held down, yet it cannot
        catch up (an exploration round that isolated a replica lost 60 s waiting here)."""
        broken = set(cluster.proxies.damaged())
        needed = (LinkKind.REPLICATION, LinkKind.ZK_SESSION, LinkKind.KRAFT_BROKER)
        return [name for name in self._replica_nodes(cluster)
                if any(link.kind in needed and link.name in broken for link in cluster.fabric.touching(name))]
