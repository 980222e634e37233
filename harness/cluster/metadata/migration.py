"""Migration mode: a cluster on its way from ZooKeeper to KRaft, its metadata in both.

A migrating cluster starts as a ZooKeeper-mode cluster: the ensemble, then the brokers in
plain ZooKeeper mode. The migration driver (:mod:`harness.cluster.migration.driver`) then
walks Kafka's steps (:mod:`harness.cluster.migration.plan`) through this mode, which
keeps what each node was last configured as (:class:`NodeConfig`). Every start of a node
- a step's restart, a fault's kill and start, recovery - brings it back in that
configuration, because each reconfiguration rewrites the ``server.properties`` its
container starts from.

Where the state is read follows the brokers (:class:`StateSource`): from ZooKeeper while
every broker is still a ZooKeeper-mode broker (in dual-write the KRaft controller writes
every partition's leader and ISR there, and ``/controller`` names it); while they roll to
KRaft, the brokers and partitions from the brokers' own metadata (a KRaft broker is not in
``/brokers/ids``) and the controller from ZooKeeper, which the KRaft controller still
writes; and from the quorum through the brokers once all are KRaft brokers (a
ZooKeeper-mode broker does not answer for the quorum). The quorum before then is seen
through the ``/migration`` znode, which the active controller's migration driver creates
on taking the lead and moves on with each write it mirrors to ZooKeeper.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from enum import StrEnum
from typing import Any

from harness.cluster.describe_quorum import describe_quorum
from harness.cluster.metadata.base import QuorumHost, StateReader
from harness.cluster.metadata.kraft import KRaftMode, KRaftReader, voter_roles
from harness.cluster.metadata.zookeeper import ZooKeeperMode
from harness.cluster.migration.plan import NodeConfig, Phase
from harness.cluster.migration.znodes import MIGRATION_ZNODE, MigrationRecord, migration_record
from harness.cluster.node_config import (
    MetadataSettings,
    controller_properties,
    migrated_broker_settings,
    migrating_broker_settings,
    zookeeper_broker_settings,
)
from harness.cluster.state import EPOCHS_OF_ZOOKEEPER, ClusterState, PartitionState
from harness.cluster.zkstate import ZkObserver
from harness.errors import ChaosError, describe_error
from topologies.model import BrokerNode


class StateSource(StrEnum):
    """Where a migrating cluster's state is read (module doc)."""

    ZOOKEEPER = "zookeeper"  # every broker still a ZooKeeper-mode broker
    # Brokers rolling to KRaft: a KRaft broker is not in /brokers/ids, so the brokers and
    # partitions come from the brokers' metadata, and the controller and its epoch from
    # /controller and /controller_epoch, which the KRaft controller still writes.
    ROLLING = "rolling"
    KRAFT = "kraft"  # every broker a KRaft broker: from the quorum, as in KRaft mode


# A controller answers DescribeQuorum in milliseconds; a frozen one never does.
ROLE_READ_TIMEOUT_S = 1.0
CLUSTER_ID_ZNODE = "/cluster/id"


class MigrationMode:
    """The metadata of a migrating cluster (module doc)."""

    name = "migration"

    def __init__(self, host: QuorumHost) -> None:
        self._host = host
        self._zookeeper = ZooKeeperMode(host)
        self._kraft = KRaftMode(host)
        topology = host.topology
        self.configs: dict[str, NodeConfig] = {b.name: NodeConfig.ZOOKEEPER for b in topology.brokers}
        self._controllers = tuple(c.name for c in topology.dedicated_controllers)
        # The phase the driver is in (None before it starts and after it ends): samples carry it.
        self.phase: Phase | None = None

    # -- what each node is now -------------------------------------------------------------
    @property
    def provisioned(self) -> tuple[str, ...]:
        """The controllers started and not stopped for good, in start order."""
        return tuple(c for c in self._controllers if c in self.configs)

    @property
    def brokers_on_kraft(self) -> bool:
        """True once every broker runs as a KRaft broker: the state is read from the quorum."""
        return all(self.configs[b.name] is NodeConfig.KRAFT for b in self._host.topology.brokers)

    @property
    def state_source(self) -> StateSource:
        """Where the cluster state is read now (:class:`StateSource`)."""
        kraft = [self.configs[b.name] is NodeConfig.KRAFT for b in self._host.topology.brokers]
        return StateSource.KRAFT if all(kraft) else StateSource.ROLLING if any(kraft) else \
            StateSource.ZOOKEEPER

    def provision(self) -> str:
        """Start each dedicated controller with migration enabled, its storage formatted
        with the ZooKeeper cluster's id (which Kafka requires); returns that id."""
        cluster_id = self.zookeeper_cluster_id()
        self._kraft.cluster_id = cluster_id
        for controller in self._host.topology.dedicated_controllers:
            volume = self._host.create_volume(controller.name)
            self._host.nodes.start_controller(controller, volume, cluster_id, migrating=True)
            self.configs[controller.name] = NodeConfig.MIGRATING
        return cluster_id

    def reconfigure(self, node: str, config: NodeConfig) -> None:
        """Write ``node``'s configuration as ``config`` (read at its next start) and keep it."""
        topology = self._host.topology
        if node in self._controllers:
            controller = next(c for c in topology.dedicated_controllers if c.name == node)
            migrating = config is NodeConfig.MIGRATING
            text = controller_properties(self._host.fabric, controller, migrating=migrating,
                                         advertise=self._host.release.controllers_advertise)
        else:
            broker = next(b for b in topology.brokers if b.name == node)
            text = self._host.nodes.broker_properties(broker.broker_id, self._settings(broker, config))
        self._host.nodes.write_config(node, "server.properties", text)
        self.configs[node] = config

    def retire(self, node: str) -> None:
        """Stop a controller for good (a rollback)."""
        self._host.nodes.retire(node)
        self.configs.pop(node, None)

    def record(self) -> MigrationRecord | None:
        """The ``/migration`` znode as it is now (None: no controller has led yet);
        ValueError when it is there without data."""
        observer = self._zookeeper.observer
        data = observer.read_json(MIGRATION_ZNODE)
        if data is None and observer.stat(MIGRATION_ZNODE) is not None:
            # A controller's migration driver reads its state from there: an empty one is
            # what it cannot read (before 3.9.2 it keeps trying, KAFKA-19480).
            raise ValueError(f"{MIGRATION_ZNODE} exists and holds no data")
        return migration_record(data)

    def zookeeper_cluster_id(self) -> str:
        found = self._zookeeper.observer.read_json(CLUSTER_ID_ZNODE)
        if not found or not found.get("id"):
            raise ChaosError(f"{CLUSTER_ID_ZNODE} holds no cluster id ({found!r}): no broker has registered")
        return str(found["id"])

    def _settings(self, broker: BrokerNode, config: NodeConfig) -> MetadataSettings:
        fabric = self._host.fabric
        if config is NodeConfig.MIGRATING:
            return migrating_broker_settings(fabric, broker, self._host.release.protocol_version)
        if config is NodeConfig.KRAFT:
            return migrated_broker_settings(fabric, broker)
        return zookeeper_broker_settings(fabric, broker)

    # -- the quorum ----------------------------------------------------------------------
    @property
    def quorum_nodes(self) -> tuple[str, ...]:
        return (*self._zookeeper.quorum_nodes, *self.provisioned)

    def start_quorum(self, timeout_s: float) -> None:
        self._zookeeper.start_quorum(timeout_s)

    def broker_settings(self, broker: BrokerNode) -> MetadataSettings:
        return self._settings(broker, self.configs[broker.name])

    def quorum_roles(self) -> dict[str, str | None]:
        return {**self._zookeeper.quorum_roles(), **self._controller_roles()}

    def _controller_roles(self) -> dict[str, str | None]:
        """The controllers' roles: the quorum's own account through the brokers once they
        are KRaft brokers; before, asked of the controllers themselves, since a
        ZooKeeper-mode broker does not forward DescribeQuorum (the leader answers; a
        follower says it is not the leader). None for a controller not in the quorum, or
        for all while no controller answers."""
        if not self.provisioned:
            return {}
        if self.brokers_on_kraft:
            roles = self._kraft.quorum_roles()
            return {c: roles.get(c) for c in self.provisioned}
        voters = {c.node_id: c.name for c in self._host.topology.dedicated_controllers}
        for controller in self.provisioned:
            try:
                answer = describe_quorum(self._host.observer_address(controller), ROLE_READ_TIMEOUT_S)
            except Exception:  # unreachable, or an answer cut short: this controller says nothing
                continue
            if answer["error_code"] == 0 and answer["leader_id"] >= 0:
                roles = voter_roles(answer, voters, time.time() * 1000)
                return {c: roles.get(c) for c in self.provisioned}
        return dict.fromkeys(self.provisioned)

    def quorum_problems(self) -> list[tuple[str, str | None]]:
        problems = self._zookeeper.quorum_problems()
        if problems or not self.provisioned:
            return problems
        if self.brokers_on_kraft:
            return [(p, n) for p, n in self._kraft.quorum_problems() if n is None or n in self.provisioned]
        try:
            record = self.record()
        except Exception as err:
            return [(f"{MIGRATION_ZNODE} unreadable: {describe_error(err)}", None)]
        if record is None:
            # The active controller's migration driver creates the znode on taking the
            # lead, every field -1 until the copy is done.
            return [(f"no KRaft controller has taken the lead ({MIGRATION_ZNODE} is absent)", None)]
        return []

    def role_readers(self) -> dict[str, Callable[[], str | None]]:
        def role_of(node: str) -> Callable[[], str | None]:
            return lambda: self._controller_roles().get(node)

        return {**self._zookeeper.role_readers(), **{c: role_of(c) for c in self._controllers}}

    def data_dir(self, node: str) -> str | None:
        return self._zookeeper.data_dir(node)

    # -- the state -----------------------------------------------------------------------
    @property
    def reader(self) -> StateReader:
        return FollowingReader(self, lambda: self._zookeeper.observer, lambda: self._kraft.kraft_reader,
                               owned=False)

    def open_reader(self) -> StateReader:
        hosts = self._zookeeper.hosts()
        return FollowingReader(self, lambda: ZkObserver(hosts), self._kraft.open_kraft_reader, owned=True)

    def diagnostics(self) -> tuple[str, dict[str, Any]]:
        found: dict[str, Any] = {"phase": self.phase, "configs": {n: str(c) for n, c in self.configs.items()}}
        _, found["zookeeper"] = self._zookeeper.diagnostics()
        if self.brokers_on_kraft:
            _, found["kraft"] = self._kraft.diagnostics()
        return "migration.json", found

    # -- brokers' registrations ------------------------------------------------------------
    @property
    def registration_timeout_s(self) -> float:
        return max(self._zookeeper.registration_timeout_s, self._kraft.registration_timeout_s)

    @property
    def registration_expiry_bound_s(self) -> float:
        return max(self._zookeeper.registration_expiry_bound_s, self._kraft.registration_expiry_bound_s)

    def registration_holder(self, broker_id: int) -> str | None:
        """A broker still registering in ZooKeeper waits for its old session to expire;
        a KRaft broker retries its registration itself."""
        broker = self._host.topology.broker(broker_id)
        if self.configs[broker.name] is NodeConfig.KRAFT:
            return None
        return self._zookeeper.registration_holder(broker_id)

    # -- features --------------------------------------------------------------------------
    def raise_metadata_version(self, timeout_s: float) -> str:
        """Once the brokers are KRaft brokers, as a KRaft cluster does; before, the
        release's ``metadata.version`` is the controllers' and cannot move (Kafka's
        migration forbids it)."""
        if not self.brokers_on_kraft:
            raise ChaosError("metadata.version cannot be raised during a migration (Kafka forbids it); "
                             "it can once every broker is a KRaft broker")
        return self._kraft.raise_metadata_version(timeout_s)

    # -- replica moves ---------------------------------------------------------------------
    def request_reassignment(self, topic: str, partition: int, replicas: list[int]) -> None:
        raise ChaosError("a replica move during a ZooKeeper-to-KRaft migration is not supported by Kafka "
                         "(its operations guide); move replicas before or after")

    def reassignment_pending(self) -> bool:
        return self._kraft.reassignment_pending() if self.brokers_on_kraft else \
            self._zookeeper.reassignment_pending()

    def zookeeper(self) -> ZooKeeperMode:
        return self._zookeeper

    def migration(self) -> MigrationMode:
        return self

    def address_lines(self) -> list[str]:
        return [*self._zookeeper.address_lines(), *(self._kraft.address_lines() if self.provisioned else [])]

    def describe(self) -> dict[str, Any]:
        return {"mode": self.name, "cluster_id": self._kraft.cluster_id if self.provisioned else None,
                "quorum": list(self._zookeeper.quorum_nodes), "controllers": list(self._controllers)}

    def close(self) -> None:
        try:
            self._zookeeper.close()
        finally:
            self._kraft.close()


class FollowingReader:
    """A state reader that reads where the migration says the state is now
    (:attr:`MigrationMode.state_source`), each sample carrying the driver's phase."""

    def __init__(self, mode: MigrationMode, zookeeper: Callable[[], ZkObserver],
                 kraft: Callable[[], KRaftReader], owned: bool) -> None:
        self._mode = mode
        self._open_zookeeper, self._open_kraft = zookeeper, kraft
        self._zookeeper: ZkObserver | None = None
        self._kraft: KRaftReader | None = None
        self._owned = owned  # the readers are this one's to close

    @property
    def zookeeper(self) -> ZkObserver:
        if self._zookeeper is None:
            self._zookeeper = self._open_zookeeper()
        return self._zookeeper

    @property
    def kraft(self) -> KRaftReader:
        if self._kraft is None:
            self._kraft = self._open_kraft()
        return self._kraft

    def snapshot(self, topics: list[str] | None = None) -> ClusterState:
        source = self._mode.state_source
        if source is StateSource.ZOOKEEPER:
            state = self.zookeeper.snapshot(topics)
        elif source is StateSource.KRAFT:
            state = self.kraft.snapshot(topics)
        else:
            controller, epoch = self.zookeeper.controller_and_epoch()
            state = replace(self.kraft.brokers_state(topics), controller=controller, controller_epoch=epoch,
                            epoch_count=EPOCHS_OF_ZOOKEEPER)
        phase = self._mode.phase
        return replace(state, migration_phase=None if phase is None else str(phase))

    def live_brokers(self) -> tuple[int, ...]:
        return self.snapshot([]).live_brokers

    def topic_state(self, topic: str) -> list[PartitionState]:
        return self.snapshot([topic]).topic(topic)

    def close(self) -> None:
        if self._owned:
            for reader in (self._zookeeper, self._kraft):
                if reader is not None:
                    reader.close()
        self._zookeeper = self._kraft = None


__all__ = ["CLUSTER_ID_ZNODE", "MIGRATION_ZNODE", "FollowingReader", "MigrationMode", "StateSource"]
