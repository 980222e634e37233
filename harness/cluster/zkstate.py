"""Cluster state as ZooKeeper holds it, read with kazoo into the mode-neutral
:mod:`harness.cluster.state` objects.

ZooKeeper is the source of truth of a ZooKeeper-mode cluster: which brokers are alive
(ephemeral ``/brokers/ids/<id>``), who is controller (``/controller``, with its epoch in
``/controller_epoch``), and per partition the leader, leader epoch and ISR
(``/brokers/topics/<t>/partitions/<p>/state``) and the assigned replicas
(``/brokers/topics/<t>``). Chaos tests assert on these, never on a call returning.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import ZnodeStat
from kazoo.retry import KazooRetry, RetryFailedError

from harness.cluster.state import EPOCHS_OF_ZOOKEEPER, ClusterState, PartitionState

T = TypeVar("T")

# Faults make the observer's ZooKeeper connection drop and move between servers; kazoo
# logs each of those at WARNING, which would bury a test's own output.
logging.getLogger("kazoo.client").setLevel(logging.ERROR)


@dataclass(frozen=True)
class ZnodeRead:
    """A znode's data and the transactions that created and last changed it."""

    data: bytes
    czxid: int
    mzxid: int


# Reads of the controller pair before giving up on its epoch: each retry follows an
# election that fell between the two reads, and elections do not follow each other
# within milliseconds for long.
CONTROLLER_READS = 5


def paired_controller(read: Callable[[], tuple[ZnodeRead | None, ZnodeRead | None]],
                      attempts: int = CONTROLLER_READS) -> tuple[int | None, int | None]:
    """The controller and its epoch from ``read`` (``/controller``, ``/controller_epoch``).

    They live in two znodes, and a controller election changes both in one ZooKeeper
    transaction (Kafka's ``registerControllerAndIncrementControllerEpoch``: a multi that
    creates ``/controller`` and sets ``/controller_epoch``), so ``/controller``'s
    creating transaction is ``/controller_epoch``'s last change exactly when the two
    reads saw the same election. Read apart across an election, they pair one
    controller with another's epoch - a state that never existed, which a timeline
    would draw as "controller 0 (epoch 2)". Such a pair is read again; without a
    controller there is nothing to pair (the epoch is the last one's). When no two
    reads pair up within ``attempts``, the controller is returned with no epoch rather
    than a wrong one.
    """
    controller: ZnodeRead | None = None
    for _ in range(attempts):
        controller, epoch = read()
        if controller is None:
            return None, None if epoch is None else int(epoch.data.decode())
        if epoch is not None and epoch.mzxid == controller.czxid:
            return _controller_id(controller), int(epoch.data.decode())
    return (None if controller is None else _controller_id(controller)), None


def _controller_id(read: ZnodeRead) -> int:
    return int(json.loads(read.data.decode())["brokerid"])


class ZkObserver:
    """Reads cluster state from ZooKeeper through the harness's observer links.

    ``reconnect_grace_s`` > 0 makes every call ride out a dropped connection for that
    long. kazoo fails each request in flight with a bare ``ConnectionLoss`` when its
    connection drops (a missed ping on a loaded machine, the server it used going away)
    and with ``SessionExpiredError`` while it reconnects; neither says anything about
    the cluster. The cluster's own observer, which faults act through, passes its
    session timeout, enough to move to another server; the sampler's observer passes 0,
    because an unreadable stretch is what it measures. After the grace the call fails
    with ``ConnectionLoss`` naming how long it tried.
    """

    def __init__(self, hosts: str, timeout_s: float = 10.0, reconnect_grace_s: float = 0.0) -> None:
        # kazoo's default reconnect backoff grows towards an hour; after a long loss of
        # quorum the observer must be back within a second of ZooKeeper healing.
        self._client = KazooClient(
            hosts=hosts, timeout=timeout_s, read_only=False,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        )
        self._grace_s = reconnect_grace_s
        self._client.start(timeout=timeout_s)

    @property
    def client(self) -> KazooClient:
        return self._client

    def close(self) -> None:
        self._client.stop()
        self._client.close()

    def call(self, operation: Callable[..., T], *args: Any) -> T:
        """``operation(*args)`` on this observer's client, retried across a dropped
        connection for the reconnect grace (kazoo's own retry)."""
        if self._grace_s <= 0:
            return operation(*args)
        # kazoo's default ignore_expire=True retries SessionExpiredError too, which it
        # raises while it reconnects (it opens a new session of its own by itself).
        # kazoo gives up as soon as its next sleep would pass the deadline, so a long
        # sleep there would cut the grace short (with a 1 s cap, a 1 s grace ended after
        # 0.3-0.5 s); sleeps of at most a tenth of the grace use nearly all of it.
        step = min(1.0, self._grace_s / 10)
        retry = KazooRetry(max_tries=-1, delay=min(0.1, step), max_delay=step, deadline=self._grace_s)
        try:
            return retry(operation, *args)
        except RetryFailedError as err:
            raise ConnectionLoss(f"ZooKeeper did not answer within {self._grace_s:.0f} s") from err

    def stat(self, path: str) -> ZnodeStat | None:
        """The znode's stat (its ``czxid`` tells one incarnation from the next), or None."""
        return self.call(self._client.exists, path)

    def read_json(self, path: str) -> dict | None:
        """The znode's data decoded from JSON; None when it is absent or empty."""
        try:
            data, _ = self.call(self._client.get, path)
        except NoNodeError:
            return None
        return json.loads(data.decode()) if data else None

    def live_brokers(self) -> tuple[int, ...]:
        try:
            return tuple(sorted(int(b) for b in self.call(self._client.get_children, "/brokers/ids")))
        except NoNodeError:
            return ()

    def controller(self) -> int | None:
        data = self.read_json("/controller")
        return int(data["brokerid"]) if data else None

    def controller_epoch(self) -> int | None:
        try:
            data, _ = self.call(self._client.get, "/controller_epoch")
        except NoNodeError:
            return None
        return int(data.decode())

    def controller_and_epoch(self) -> tuple[int | None, int | None]:
        """The controller and the epoch it holds, read so that they belong together
        (:func:`paired_controller`)."""
        return paired_controller(self._controller_read)

    def _controller_read(self) -> tuple[ZnodeRead | None, ZnodeRead | None]:
        reads: list[ZnodeRead | None] = []
        for path in ("/controller", "/controller_epoch"):
            try:
                data, stat = self.call(self._client.get, path)
            except NoNodeError:
                reads.append(None)
                continue
            reads.append(ZnodeRead(data, int(stat.czxid), int(stat.mzxid)))
        return reads[0], reads[1]

    def topics(self) -> list[str]:
        try:
            return sorted(self.call(self._client.get_children, "/brokers/topics"))
        except NoNodeError:
            return []

    def assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
        data = self.read_json(f"/brokers/topics/{topic}") or {}
        return {int(p): tuple(r) for p, r in data.get("partitions", {}).items()}

    def partition(
        self, topic: str, partition: int, replicas: tuple[int, ...] = ()
    ) -> PartitionState | None:
        data = self.read_json(f"/brokers/topics/{topic}/partitions/{partition}/state")
        if data is None:
            return None
        if not replicas:
            replicas = self.assignment(topic).get(partition, ())
        return PartitionState(
            topic=topic,
            partition=partition,
            leader=int(data["leader"]),
            leader_epoch=int(data["leader_epoch"]),
            isr=tuple(data["isr"]),
            controller_epoch=int(data["controller_epoch"]),
            replicas=replicas,
        )

    def topic_state(self, topic: str) -> list[PartitionState]:
        states = []
        for partition, replicas in sorted(self.assignment(topic).items()):
            state = self.partition(topic, partition, replicas)
            if state is not None:
                states.append(state)
        return states

    def snapshot(self, topics: list[str] | None = None) -> ClusterState:
        chosen = self.topics() if topics is None else topics
        partitions = {
            (p.topic, p.partition): p for topic in chosen for p in self.topic_state(topic)
        }
        controller, epoch = self.controller_and_epoch()
        return ClusterState(
            live_brokers=self.live_brokers(),
            controller=controller,
            controller_epoch=epoch,
            partitions=partitions,
            epoch_count=EPOCHS_OF_ZOOKEEPER,
        )

    def ephemeral_owner(self, path: str) -> int | None:
        """The session that owns the ephemeral znode ``path``, or None when it is absent."""
        stat = self.stat(path)
        return None if stat is None else int(stat.ephemeralOwner)

    def pending_reassignment(self) -> bool:
        return self.stat("/admin/reassign_partitions") is not None


def four_letter_word(address: str, word: str = "srvr", timeout_s: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command (``srvr``, ``mntr``) and return the answer."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(word.encode())
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def zookeeper_mode(address: str, timeout_s: float = 2.0) -> str | None:
    """``leader``, ``follower`` or None when the node does not serve (no quorum, down).

    ``timeout_s`` bounds a frozen node's silence: a background sampler reading modes
    every second passes less than the default so one paused node cannot stall it."""
    try:
        answer = four_letter_word(address, timeout_s=timeout_s)
    except OSError:
        return None
    for line in answer.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None
