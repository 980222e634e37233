"""KRaft mode: the cluster's metadata in a quorum of KRaft controllers.

Every node's storage is formatted with the run's cluster id before its first start
(Kafka's ``StorageTool format``, run in the node's container ahead of the broker or
controller process; ``--ignore-formatted`` makes a restart's second format a no-op).
Dedicated controllers start before the brokers, which register with the quorum's leader
once it has one; combined controllers are the brokers themselves.

The cluster state is read through the brokers' observer listeners. The quorum comes from
DescribeQuorum, through kafka-python (librdkafka does not expose it): the active
controller is the quorum's leader, the controller epoch its leader epoch, each voter's
last fetch its liveness. A broker forwards DescribeQuorum to the quorum, so it answers as
long as one broker can reach the leader. The rest comes from one broker's metadata image,
a Metadata request (:mod:`harness.cluster.broker_metadata`): per partition its leader,
leader epoch, ISR and replicas, and the brokers registered and not fenced. That broker is
the one most up to date with the quorum, by the quorum's own account of its observers,
compared with the next one (the image further along wins): a broker cut off from the
controllers keeps answering from a stale image (that is what S8, S9 and S11 show), and a
client library that picks any broker would record its stale view as the cluster's.
Partitions and brokers come from the same answer, so they never mix two brokers' images.

A broker killed without a word stays registered until the controllers' broker session
times out (``broker.session.timeout.ms``). Unlike a ZooKeeper-mode broker it may start
again at once: it retries its registration (DUPLICATE_BROKER_REGISTRATION) until the old
session has expired, so the restart policy has nothing to wait for.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness.cluster.broker_metadata import BrokerView, broker_view
from harness.cluster.describe_quorum import describe_quorum
from harness.cluster.metadata.base import QuorumHost, StateReader
from harness.cluster.node_config import MetadataSettings, kraft_broker_settings
from harness.cluster.state import EPOCHS_OF_THE_QUORUM, ClusterState, PartitionState
from harness.cluster.waiting import wait_for_answer, wait_until_clear
from harness.errors import ChaosError, describe_error
from topologies.model import BrokerNode

if TYPE_CHECKING:
    from harness.cluster.metadata.migration import MigrationMode
    from harness.cluster.metadata.zookeeper import ZooKeeperMode

# kafka-python logs every connection it loses at ERROR, and faults make it lose many; what
# the harness makes of a failed read is said where it reads.
logging.getLogger("kafka").setLevel(logging.CRITICAL)

# Kafka's broker.session.timeout.ms when the topology does not set it.
DEFAULT_BROKER_SESSION_TIMEOUT_MS = 9000
# A registration can outlive the session by a heartbeat check and a loaded machine.
SESSION_EXPIRY_MARGIN_S = 15.0
# A voter counts as in the quorum while the leader saw it fetch this recently: twice
# Kafka's controller.quorum.fetch.timeout.ms default, after which it would start an
# election of its own.
VOTER_FETCH_WITHIN_MS = 4000
READ_TIMEOUT_MS = 5000
# A broker answers Metadata from its image in milliseconds; a frozen one accepts the
# connection and never answers, so the next broker is asked after this.
BROKER_READ_TIMEOUT_S = 2.0
# A quorum with a leader answers DescribeQuorum in milliseconds; one without waits.
QUORUM_READ_TIMEOUT_MS = 1500
# The cluster's own reader rides out a broker going away for this long (as the ZooKeeper
# observer rides out a reconnect); a sampler's reader fails at once and records the gap.
# kafka-python picks the broker to ask at random among those it knows, and one that is
# restarting (a bounce) can cost a request's whole timeout (twice 5 s) before the next
# try: 15 s was seen to be two unlucky tries during a broker's three hard bounces.
RIDE_OUT_S = 60.0
QUORUM_TRIES_PER_BROKER = 2
# A broker can be current by the quorum's account and still answer from an image behind
# what it fetched: S10 on KRaft once read broker 0, 0.3 s after its zone's cut was healed,
# naming itself leader of partitions the controller had moved meanwhile. So two brokers'
# images are read, the most trusted first, and the one further along the log is kept.
VIEWS_COMPARED = 2
RETRY_PAUSE_S = 0.2
METADATA_TOPIC = "__cluster_metadata"
METADATA_VERSION = "metadata.version"


def new_cluster_id() -> str:
    """A cluster id as Kafka writes one: a random UUID, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class KRaftReader:
    """The cluster state: the quorum through kafka-python, the metadata image from the
    most current broker (module doc); one client per reader."""

    def __init__(self, brokers: Mapping[int, str], voters: dict[int, str], ride_out_s: float = 0.0) -> None:
        """``brokers``: each broker's observer address by id. ``ride_out_s``: how long a
        read retries when no broker answers (one killed, restarting or timing out) before
        it raises; 0 fails after one round of the brokers."""
        self._voters = voters  # node id -> node name
        self._addresses = dict(brokers)
        self._brokers = len(self._addresses)
        bootstrap = list(self._addresses.values())
        self._leaderless = False  # no broker could get the quorum described, last time
        self._ride_out_s = ride_out_s
        self._bootstrap = bootstrap
        self._admin = self._brokers_client()
        # The quorum on a client of its own with a short timeout: a broker forwards
        # DescribeQuorum to the active controller, and while the quorum has none the
        # request waits out its timeout, which must not slow the brokers' own answers.
        self._quorum_admin = self._quorum_client()
        self._lock = threading.Lock()  # one request at a time on the client
        self._quorum_lock = threading.Lock()

    def close(self) -> None:
        try:
            self._admin.close()
        finally:
            self._quorum_admin.close()

    def quorum(self) -> dict[str, Any]:
        """The metadata partition's quorum as its leader describes it. A client learns the
        request versions its brokers take when it connects first, so once they run another
        release (an upgrade) it refuses with IncompatibleBrokerVersion: it is made anew
        and asked again."""
        from kafka.errors import IncompatibleBrokerVersion

        with self._quorum_lock:
            try:
                answer = self._quorum_admin.describe_metadata_quorum()
            except IncompatibleBrokerVersion:
                self._quorum_admin.close()
                self._quorum_admin = self._quorum_client()
                answer = self._quorum_admin.describe_metadata_quorum()
            except KeyError:
                # kafka-python 3.0 cannot read an answer below v2 (it looks for the
                # error_message v2 added), and Kafka before 3.8 answers v1 at most: the
                # harness's own v1 request, through a broker, which forwards it.
                return self._quorum_v1()
        partition = answer["topics"][0]["partitions"][0]
        if partition.get("error"):
            raise ChaosError(f"DescribeQuorum: {partition['error']}")
        return dict(partition)

    def _quorum_v1(self) -> dict[str, Any]:
        """The quorum asked with DescribeQuorum v1 of each broker in turn; the last
        broker's error when none answers."""
        failure: OSError | None = None
        for address in self._bootstrap:
            try:
                partition = describe_quorum(address, QUORUM_READ_TIMEOUT_MS / 1000)
            except OSError as err:
                failure = err
                continue
            if partition.get("error_code"):
                raise ChaosError(f"DescribeQuorum: error code {partition['error_code']}")
            return partition
        assert failure is not None
        raise failure

    def answered_quorum(self) -> dict[str, Any] | None:
        """The quorum as any broker can get it described, or None when none can.

        A broker forwards DescribeQuorum to the active controller, so one broker can fail
        to answer while the quorum has a leader: it is cut off from the controller, or it
        is down. Taking that one failure for a quorum with no leader would record a
        controller-less state that never existed, so the quorum is asked again: kafka-python
        picks the next broker at random, the failed one included, so each broker gets two
        chances. Once no broker could answer, one try a read is enough to see a leader come
        back, and a quorum lost for long does not cost six timeouts a read.

        A leader cut off from the other voters goes on answering as the leader through a
        broker that still reaches it, until it learns of the election it lost (S11 on
        KRaft once read "kraft-a serves" for 12 s of kraft-a's isolation that way). An
        answer whose leader has no majority fetching from it lately (:func:`confirmed`)
        is asked again, and the later election of the two answers is taken.
        """
        answers: list[dict[str, Any]] = []
        for _ in range(1 if self._leaderless else QUORUM_TRIES_PER_BROKER * self._brokers):
            try:
                answers.append(self.quorum())
            except Exception:
                continue
            if confirmed(answers[-1], time.time() * 1000) or len(answers) > 1:
                break
        self._leaderless = not answers
        return latest(answers)

    def roles(self, quorum: dict[str, Any] | None = None) -> dict[str, str | None]:
        """Each voter's role: ``leader``, ``follower`` (it fetched from the leader lately)
        or None (out of the quorum, or no broker could get the quorum described)."""
        quorum = quorum or self.answered_quorum()
        if quorum is None:
            return dict.fromkeys(self._voters.values())
        return voter_roles(quorum, self._voters, time.time() * 1000)

    def snapshot(self, topics: list[str] | None = None) -> ClusterState:
        """The quorum's leader and the most current broker's metadata. A quorum that
        cannot answer (no leader: a majority down or cut off) is a state with no
        controller, while the brokers' metadata, which they keep serving, is still read."""
        quorum = self.answered_quorum() or {"leader_id": -1}
        view = self._current_view(quorum, topics)
        leader = int(quorum["leader_id"])
        return ClusterState(
            live_brokers=view.brokers,
            controller=None if leader < 0 else leader,
            controller_epoch=None if leader < 0 else int(quorum["leader_epoch"]),
            partitions={(p.topic, p.partition): p for p in partition_states(view)},
            epoch_count=EPOCHS_OF_THE_QUORUM,
        )

    def brokers_state(self, topics: list[str] | None = None) -> ClusterState:
        """The brokers' metadata alone, no quorum asked: what a migration reads while
        some brokers are still in ZooKeeper mode (they answer Metadata from what the KRaft
        controller sent them, but not DescribeQuorum); controller and epoch None."""
        view = self._current_view(None, topics)
        return ClusterState(live_brokers=view.brokers, controller=None, controller_epoch=None,
                            partitions={(p.topic, p.partition): p for p in partition_states(view)})

    def live_brokers(self) -> tuple[int, ...]:
        return self._current_view(self.answered_quorum(), []).brokers

    def _current_view(self, quorum: dict[str, Any] | None, topics: list[str] | None) -> BrokerView:
        """The metadata furthest along of the first :data:`VIEWS_COMPARED` brokers to
        answer, the most current asked first (:func:`current_first`, :func:`furthest_on`);
        while none answers, every broker is asked again until ``ride_out_s`` has passed,
        then the last broker's error is raised."""
        def one_round() -> BrokerView:
            failure: OSError | None = None
            views: list[BrokerView] = []
            for broker in current_first(quorum, self._addresses, time.time() * 1000):
                try:
                    views.append(broker_view(self._addresses[broker], topics, BROKER_READ_TIMEOUT_S))
                except OSError as err:
                    failure = err
                if len(views) == VIEWS_COMPARED:
                    break
            if views:
                return furthest_on(views)
            assert failure is not None
            raise failure

        return wait_for_answer(one_round, self._ride_out_s, "a broker's metadata", transient=(OSError,),
                               interval_s=RETRY_PAUSE_S)

    def _quorum_client(self) -> Any:
        from kafka.admin import KafkaAdminClient  # a dependency of KRaft mode alone

        return KafkaAdminClient(bootstrap_servers=self._bootstrap, client_id="kafka-chaos-quorum",
                                request_timeout_ms=QUORUM_READ_TIMEOUT_MS)

    def _brokers_client(self) -> Any:
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self._bootstrap, client_id="kafka-chaos-observer",
                                request_timeout_ms=READ_TIMEOUT_MS)

    def _asked(self, request: Callable[[Any], Any]) -> Any:
        """One request on the brokers' client, retried on Kafka's retriable errors for
        ``ride_out_s`` (kafka-python asks another broker once one has failed it).

        A request for the controller goes to the broker a Metadata answer names, and
        kafka-python 3.0 looks that broker up in the cluster view it keeps, refreshed only
        every few minutes: after a bounce that view can lack a broker that is back, and the
        request fails with UnknownBrokerIdError (the KRaft run's reassignment test, right
        after the bounce tests). A fresh client bootstraps a fresh view, so it is made
        anew and the request asked again; so too when its brokers were upgraded under it
        (IncompatibleBrokerVersion: see :meth:`quorum`)."""
        from kafka.errors import IncompatibleBrokerVersion, RetriableError, UnknownBrokerIdError

        def ask() -> Any:
            try:
                with self._lock:
                    return request(self._admin)
            except (UnknownBrokerIdError, IncompatibleBrokerVersion):
                with self._lock:  # the next try, if any, on a fresh client
                    self._admin.close()
                    self._admin = self._brokers_client()
                raise

        return wait_for_answer(ask, self._ride_out_s, "an answer from the brokers",
                               transient=(RetriableError, UnknownBrokerIdError, IncompatibleBrokerVersion),
                               interval_s=RETRY_PAUSE_S)

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        """AlterPartitionReassignments for one partition; ChaosError with the partition's error."""
        from kafka.structs import TopicPartition

        answer = self._asked(lambda admin: admin.alter_partition_reassignments(
            {TopicPartition(topic, partition): replicas}))
        error = next(iter(answer.values()), None) if answer else None
        if error is not None:
            raise ChaosError(f"AlterPartitionReassignments of {topic}-{partition} refused: {error.__name__}")

    def metadata_version(self) -> tuple[int, int]:
        """``metadata.version`` as a broker reports it: the level finalized for the cluster,
        and the newest level that broker supports."""
        answer = self._asked(lambda admin: admin.describe_features())
        # kafka-python 3.0 answers {feature: {"supported": (min, max), "finalized": (min, max),
        # "finalized_epoch": e}} (its docstring shows another shape).
        feature = answer.get(METADATA_VERSION, {})
        if "finalized" not in feature or "supported" not in feature:
            raise ChaosError(f"ApiVersions reported no {METADATA_VERSION} (features: {answer})")
        return int(feature["finalized"][1]), int(feature["supported"][1])

    def finalize_metadata_version(self, level: int) -> None:
        """UpdateFeatures of ``metadata.version`` alone to ``level``; ChaosError with the
        controller's refusal (a node that does not support it, a downgrade)."""
        answer = self._asked(lambda admin: admin.update_features({METADATA_VERSION: level}))
        outcome = answer.get(METADATA_VERSION)
        if outcome != "OK":
            raise ChaosError(f"UpdateFeatures {METADATA_VERSION} to level {level} refused: {outcome}")

    def reassignments(self) -> int:
        """How many partitions have a replica move under way (ListPartitionReassignments)."""
        return len(self._asked(lambda admin: admin.list_partition_reassignments()))

    def topic_state(self, topic: str) -> list[PartitionState]:
        view = self._current_view(self.answered_quorum(), [topic])
        return sorted(partition_states(view), key=lambda p: p.partition)


def current_first(quorum: dict[str, Any] | None, brokers: Iterable[int], now_ms: float) -> list[int]:
    """The brokers in the order their metadata is trusted: the quorum's leader (a combined
    node) and those the leader saw fetch the metadata log lately first, the furthest
    along first, then the rest by id. Without a quorum answer, by id."""
    leader = -1 if quorum is None else int(quorum.get("leader_id", -1))
    replicas = {int(r["replica_id"]): r for key in ("current_voters", "observers")
                for r in (quorum or {}).get(key, [])}

    def trust(broker: int) -> tuple[bool, int, int]:
        replica = replicas.get(broker, {})
        fresh = broker == leader or fetched_lately(replica, now_ms)
        return (not fresh, -int(replica.get("log_end_offset", -1)), broker)

    return sorted(brokers, key=trust)


def furthest_on(views: Sequence[BrokerView]) -> BrokerView:
    """The image furthest along the metadata log: the one with the most leader epochs in
    all (a broker's image is a prefix of the one log, so a later image's epoch is at least
    an earlier one's for every partition, and a partition it alone knows adds to it). On
    a tie, the first: the broker the quorum trusts most."""
    return max(views, key=lambda view: sum(p.leader_epoch + 1 for ps in view.topics.values() for p in ps))


def confirmed(quorum: Mapping[str, Any], now_ms: float) -> bool:
    """Whether the leader of a DescribeQuorum answer has a majority of the voters, itself
    included, fetching from it lately: one that has not may have lost an election it
    has not heard of."""
    leader = int(quorum.get("leader_id", -1))
    voters = quorum.get("current_voters", [])
    with_it = [v for v in voters if int(v["replica_id"]) == leader or fetched_lately(v, now_ms)]
    return leader >= 0 and 2 * len(with_it) > len(voters)


def latest(answers: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Of DescribeQuorum answers, the one of the latest election (the highest leader
    epoch); the first on a tie; None for none."""
    return max(answers, key=lambda answer: int(answer.get("leader_epoch", -1)), default=None)


def fetched_lately(replica: Mapping[str, Any], now_ms: float) -> bool:
    """Whether the quorum's leader saw this replica (a voter or an observing broker) fetch
    the metadata log within :data:`VOTER_FETCH_WITHIN_MS`."""
    fetched = replica.get("last_fetch_timestamp", -1)
    return fetched is not None and fetched >= 0 and now_ms - fetched <= VOTER_FETCH_WITHIN_MS


def voter_roles(quorum: dict[str, Any], voters: dict[int, str], now_ms: float) -> dict[str, str | None]:
    """Each voter's role from a DescribeQuorum answer (see :meth:`KRaftReader.roles`)."""
    leader = int(quorum.get("leader_id", -1))
    roles: dict[str, str | None] = dict.fromkeys(voters.values())
    for voter in quorum.get("current_voters", []):
        node = voters.get(int(voter["replica_id"]))
        if node is None:
            continue
        if int(voter["replica_id"]) == leader:
            roles[node] = "leader"
        elif fetched_lately(voter, now_ms):
            roles[node] = "follower"
    return roles


def partition_states(view: BrokerView) -> list[PartitionState]:
    """Every partition of one broker's metadata answer (a topic it does not know has none)."""
    return [PartitionState(topic=topic, partition=p.partition, leader=p.leader, leader_epoch=p.leader_epoch,
                           isr=p.isr, controller_epoch=-1,  # KRaft keeps no controller epoch per partition
                           replicas=p.replicas)
            for topic, partitions in view.topics.items() for p in partitions]


class KRaftMode:
    """The metadata in the topology's KRaft controller quorum (module doc)."""

    name = "kraft"

    def __init__(self, host: QuorumHost) -> None:
        self._host = host
        self.cluster_id = new_cluster_id()
        self._reader: KRaftReader | None = None

    @property
    def _voters(self) -> dict[int, str]:
        return {c.node_id: c.name for c in self._host.topology.controllers}

    # -- the quorum ----------------------------------------------------------------------
    @property
    def quorum_nodes(self) -> tuple[str, ...]:
        return tuple(c.name for c in self._host.topology.dedicated_controllers)

    def start_quorum(self, timeout_s: float) -> None:
        """Start the dedicated controllers; the brokers register once they elect a leader
        (no read of the quorum before then: it is read through the brokers)."""
        for controller in self._host.topology.dedicated_controllers:
            self._host.nodes.start_controller(controller, self._host.create_volume(controller.name),
                                              self.cluster_id)

    def broker_settings(self, broker: BrokerNode) -> MetadataSettings:
        return kraft_broker_settings(self._host.fabric, broker, self.cluster_id)

    def quorum_roles(self) -> dict[str, str | None]:
        try:
            return self._kraft_reader.roles()
        except Exception:
            return dict.fromkeys(self._voters.values())

    def quorum_problems(self) -> list[tuple[str, str | None]]:
        try:
            quorum = self._kraft_reader.quorum()
        except Exception as err:
            return [(f"the KRaft quorum unreadable: {describe_error(err)}", None)]
        if int(quorum.get("leader_id", -1)) < 0:
            return [("the KRaft quorum has no leader", None)]
        roles = voter_roles(quorum, self._voters, time.time() * 1000)
        return [(f"{node} not in the KRaft quorum", node) for node, role in roles.items() if role is None]

    def role_readers(self) -> dict[str, Callable[[], str | None]]:
        def role_of(node: str) -> Callable[[], str | None]:
            return lambda: self.quorum_roles().get(node)

        return {name: role_of(name) for name in self._voters.values()}

    def data_dir(self, node: str) -> str | None:
        return None  # a controller keeps its metadata log where a broker keeps its log

    # -- the state -----------------------------------------------------------------------
    @property
    def _kraft_reader(self) -> KRaftReader:
        if self._reader is None:
            self._reader = self._open(RIDE_OUT_S)
        return self._reader

    def _open(self, ride_out_s: float = 0.0) -> KRaftReader:
        brokers = {b.broker_id: self._host.observer_address(b.name) for b in self._host.topology.brokers}
        return KRaftReader(brokers, self._voters, ride_out_s)

    @property
    def reader(self) -> StateReader:
        return self._kraft_reader

    @property
    def kraft_reader(self) -> KRaftReader:
        """The cluster's own reader, as its own type (a migration reads parts of it)."""
        return self._kraft_reader

    def open_reader(self) -> StateReader:
        return self._open()

    def open_kraft_reader(self) -> KRaftReader:
        """A fresh reader that fails at once, as its own type."""
        return self._open()

    def diagnostics(self) -> tuple[str, dict[str, Any]]:
        found: dict[str, Any] = {"cluster_id": self.cluster_id}
        errors: dict[str, str] = {}
        for what, read in (("quorum", lambda: self._kraft_reader.quorum()),
                           ("state", lambda: _state_dict(self._kraft_reader.snapshot()))):
            try:
                found[what] = read()
            except Exception as err:
                errors[what] = describe_error(err)
        return "kraft.json", {**found, "errors": errors}

    # -- brokers' registrations ------------------------------------------------------------
    @property
    def registration_timeout_s(self) -> float:
        """The controllers' broker session timeout."""
        settings = {**self._host.broker_settings(), **self._host.topology.controller_settings}
        return int(settings.get("broker.session.timeout.ms", DEFAULT_BROKER_SESSION_TIMEOUT_MS)) / 1000

    @property
    def registration_expiry_bound_s(self) -> float:
        return self.registration_timeout_s + SESSION_EXPIRY_MARGIN_S

    def registration_holder(self, broker_id: int) -> str | None:
        return None  # a restarted broker retries its registration until the old session expires

    # -- features --------------------------------------------------------------------------
    def raise_metadata_version(self, timeout_s: float) -> str:
        """Raise ``metadata.version`` to the newest level the brokers support and wait
        until a broker reports it finalized; what was done, in words."""
        reader = self._kraft_reader
        before, newest = reader.metadata_version()
        if newest <= before:
            return f"{METADATA_VERSION} already at level {before}, the newest the brokers support"
        reader.finalize_metadata_version(newest)
        waited = wait_until_clear(lambda: [] if reader.metadata_version()[0] == newest else ["not yet"],
                                  timeout_s, f"{METADATA_VERSION} level {newest} finalized",
                                  transient=(OSError,))
        return f"{METADATA_VERSION} raised from level {before} to {newest} (finalized after {waited:.1f} s)"

    # -- replica moves ---------------------------------------------------------------------
    def request_reassignment(self, topic: str, partition: int, replicas: list[int]) -> None:
        self._kraft_reader.reassign(topic, partition, replicas)

    def reassignment_pending(self) -> bool:
        return self._kraft_reader.reassignments() > 0

    def zookeeper(self) -> ZooKeeperMode:
        raise ChaosError("this is a KRaft cluster: it has no ZooKeeper; its metadata lives in the controller "
                         f"quorum ({', '.join(self._voters.values())})")

    def migration(self) -> MigrationMode:
        raise ChaosError("this KRaft cluster is not migrating: a migration runs on a cluster "
                         "started from a migrating topology (topologies.model.migration_topology)")

    def address_lines(self) -> list[str]:
        return [f"KRaft controllers: {', '.join(self._voters.values())} (cluster id {self.cluster_id}); "
                "their quorum answers through any broker's observer address"]

    def describe(self) -> dict[str, Any]:
        return {"mode": self.name, "cluster_id": self.cluster_id,
                "layout": self._host.topology.controller_layout,
                "voters": {str(i): name for i, name in self._voters.items()}}

    def close(self) -> None:
        if self._reader is not None:
            try:
                self._reader.close()
            finally:
                self._reader = None


def _state_dict(state: ClusterState) -> dict[str, Any]:
    return {"live_brokers": list(state.live_brokers), "controller": state.controller,
            "controller_epoch": state.controller_epoch,
            "partitions": {f"{t}-{p}": {"leader": s.leader, "leader_epoch": s.leader_epoch,
                                        "isr": list(s.isr), "replicas": list(s.replicas)}
                           for (t, p), s in sorted(state.partitions.items())}}
