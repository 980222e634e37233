"""What a KRaft controller says of its quorum: a DescribeQuorum request sent to it alone.

A KRaft cluster's quorum is described through any broker, which forwards the request to
the active controller (:mod:`harness.cluster.metadata.kraft`). A migrating cluster's
brokers are ZooKeeper-mode brokers until they roll, and do not forward it, so the harness
asks the controllers themselves over their observer links (Kafka 3.7 and later answer
DescribeQuorum on their controller listener; only the quorum's leader answers, the others
with NOT_LEADER_OR_FOLLOWER). This module speaks just enough of the protocol for that:
DescribeQuorum v1 (each replica's last fetch, which says whether a follower follows),
a flexible version, so compact arrays and strings and empty tagged fields.

The answer has the shape kafka-python's ``describe_metadata_quorum`` gives a partition,
so :func:`harness.cluster.metadata.kraft.voter_roles` reads both.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from harness.cluster.broker_metadata import recv_exact

DESCRIBE_QUORUM_API_KEY = 55
DESCRIBE_QUORUM_VERSION = 1
METADATA_TOPIC = "__cluster_metadata"
CLIENT_ID = b"kafka-chaos-quorum"


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return _uvarint(len(data) + 1) + data


def request(correlation_id: int) -> bytes:
    """DescribeQuorum v1 for the metadata log's one partition, framed for the wire."""
    header = struct.pack(">hhih", DESCRIBE_QUORUM_API_KEY, DESCRIBE_QUORUM_VERSION, correlation_id,
                         len(CLIENT_ID)) + CLIENT_ID + _uvarint(0)
    partition = struct.pack(">i", 0) + _uvarint(0)
    topic = _compact_string(METADATA_TOPIC) + _uvarint(2) + partition + _uvarint(0)
    body = _uvarint(2) + topic + _uvarint(0)
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += struct.calcsize(fmt)
        return int(value)

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self._data[self._pos]
            self._pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def count(self) -> int:
        """A compact array's length (its stored length less one; 0 stored means null)."""
        return max(0, self.uvarint() - 1)

    def string(self) -> str:
        length = self.count()
        text = self._data[self._pos:self._pos + length].decode()
        self._pos += length
        return text

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # the tag
            self._pos += self.uvarint()  # its data


def _replicas(reader: _Reader) -> list[dict[str, int]]:
    replicas = []
    for _ in range(reader.count()):
        replica = {"replica_id": reader.take(">i"), "log_end_offset": reader.take(">q"),
                   "last_fetch_timestamp": reader.take(">q"), "last_caught_up_timestamp": reader.take(">q")}
        reader.skip_tags()
        replicas.append(replica)
    return replicas


def parse(data: bytes) -> dict[str, Any]:
    """The metadata partition's quorum from a DescribeQuorum v1 response (after its size):
    ``error_code`` (the request's, else the partition's), ``leader_id``, ``leader_epoch``,
    ``high_watermark``, ``current_voters`` and ``observers``."""
    reader = _Reader(data)
    reader.take(">i")  # correlation id
    reader.skip_tags()  # response header v1
    error = reader.take(">h")
    found: dict[str, Any] = {"error_code": error, "leader_id": -1, "leader_epoch": -1}
    for _ in range(reader.count()):
        reader.string()  # the topic: the metadata log, the one asked for
        for _ in range(reader.count()):
            reader.take(">i")  # partition index
            partition_error = reader.take(">h")
            found.update(error_code=error or partition_error, leader_id=reader.take(">i"),
                         leader_epoch=reader.take(">i"), high_watermark=reader.take(">q"),
                         current_voters=_replicas(reader), observers=_replicas(reader))
            reader.skip_tags()
        reader.skip_tags()
    return found


def describe_quorum(address: str, timeout_s: float = 2.0) -> dict[str, Any]:
    """Ask the controller at ``host:port`` to describe its quorum (see :func:`parse`);
    OSError when it cannot be reached or does not answer in time."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(request(correlation_id=1))
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        return parse(recv_exact(sock, size))


__all__ = ["describe_quorum", "parse", "request"]
