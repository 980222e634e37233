"""What one particular broker believes: a Metadata request sent to that broker alone.

Client libraries pick whichever broker they like for metadata, but a split-brain or a
stale-metadata scenario is about brokers *disagreeing*, so the harness must ask each
broker separately. This module speaks just enough of the Kafka protocol for that:
MetadataRequest v7, over one socket to one broker's observer listener. v7 is the first
version with each partition's leader epoch, which the cluster state needs, and every
release the harness runs answers it (Kafka 2.1 on).
In KRaft mode the harness's cluster state is read this way too, from the broker that is
most up to date with the quorum (:mod:`harness.cluster.metadata.kraft`).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

METADATA_API_KEY = 3
METADATA_VERSION = 7


@dataclass(frozen=True)
class PartitionView:
    partition: int
    error_code: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int = -1


@dataclass(frozen=True)
class BrokerView:
    """One broker's metadata cache: live brokers, controller, partition leaders."""

    brokers: tuple[int, ...]
    controller: int
    topics: dict[str, tuple[PartitionView, ...]]

    def leader_of(self, topic: str, partition: int) -> int | None:
        for view in self.topics.get(topic, ()):
            if view.partition == partition:
                return view.leader
        return None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        (value,) = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += size
        return int(value)

    def string(self) -> str | None:
        length = self.take(">h")
        if length < 0:
            return None
        value = self._data[self._pos : self._pos + length].decode()
        self._pos += length
        return value

    def int_array(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(max(self.take(">i"), 0)))


def _request(topics: list[str] | None, correlation_id: int) -> bytes:
    client_id = b"kafka-chaos-observer"
    header = struct.pack(
        ">hhih", METADATA_API_KEY, METADATA_VERSION, correlation_id, len(client_id)
    )
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(
            struct.pack(">h", len(t.encode())) + t.encode() for t in topics
        )
    body += struct.pack(">b", 0)  # allow_auto_topic_creation: an observer creates nothing
    payload = header + client_id + body
    return struct.pack(">i", len(payload)) + payload


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes of a Kafka response; ConnectionError when the peer closes first."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("the peer closed the connection mid-response")
        chunks.extend(chunk)
    return bytes(chunks)


def _parse(data: bytes) -> BrokerView:
    reader = _Reader(data)
    reader.take(">i")  # correlation id
    reader.take(">i")  # throttle time
    brokers = []
    for _ in range(reader.take(">i")):
        brokers.append(reader.take(">i"))
        reader.string()  # host
        reader.take(">i")  # port
        reader.string()  # rack
    reader.string()  # cluster id
    controller = reader.take(">i")
    topics: dict[str, tuple[PartitionView, ...]] = {}
    for _ in range(reader.take(">i")):
        reader.take(">h")  # topic error
        name = reader.string() or ""
        reader.take(">b")  # is_internal
        partitions = []
        for _ in range(reader.take(">i")):
            error = reader.take(">h")
            partition = reader.take(">i")
            leader = reader.take(">i")
            leader_epoch = reader.take(">i")
            replicas = reader.int_array()
            isr = reader.int_array()
            reader.int_array()  # offline replicas
            partitions.append(PartitionView(partition, error, leader, replicas, isr, leader_epoch))
        topics[name] = tuple(sorted(partitions, key=lambda p: p.partition))
    return BrokerView(brokers=tuple(sorted(brokers)), controller=controller, topics=topics)


def broker_view(
    address: str, topics: list[str] | None = None, timeout_s: float = 5.0
) -> BrokerView:
    """Ask the broker at ``host:port`` for its metadata; raises OSError if unreachable."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(_request(topics, correlation_id=1))
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        return _parse(recv_exact(sock, size))
