"""DescribeQuorum v1 as the harness speaks it to a controller, without a controller: the
request's bytes, and a response built field by field as Kafka's schema lays it out."""

from __future__ import annotations

import struct

from harness.cluster.describe_quorum import _compact_string, _uvarint, parse, request
from harness.cluster.metadata.kraft import voter_roles


def test_the_request_asks_for_the_metadata_logs_partition_in_v1() -> None:
    wire = request(correlation_id=7)
    (size,) = struct.unpack(">i", wire[:4])
    assert size == len(wire) - 4
    api_key, version, correlation = struct.unpack(">hhi", wire[4:12])
    assert (api_key, version, correlation) == (55, 1, 7)
    assert b"\x13__cluster_metadata\x02\x00\x00\x00\x00\x00\x00\x00" in wire  # one topic, partition 0


def _replica(replica_id: int, end: int, fetched: int) -> bytes:
    return struct.pack(">iqqq", replica_id, end, fetched, fetched) + _uvarint(0)


def _response(leader: int, error: int = 0, tags: bytes = _uvarint(0)) -> bytes:
    voters = _uvarint(4) + _replica(100, 50, -1) + _replica(101, 50, 8_000) + _replica(102, 10, 1)
    observers = _uvarint(2) + _replica(0, 50, 1_000)
    partition = struct.pack(">ihiiq", 0, error, leader, 4, 50) + voters + observers + tags
    topic = _compact_string("__cluster_metadata") + _uvarint(2) + partition + _uvarint(0)
    return struct.pack(">i", 1) + _uvarint(0) + struct.pack(">h", 0) + _uvarint(2) + topic + _uvarint(0)


def test_a_leaders_answer_reads_as_kafka_pythons_and_gives_each_voter_its_role() -> None:
    # A tagged field (HighWatermarkUpdateTimeMs, tag 0, 8 bytes) is skipped, not misread.
    answer = parse(_response(100, tags=_uvarint(1) + _uvarint(0) + _uvarint(8) + b"\x00" * 8))
    assert (answer["error_code"], answer["leader_id"], answer["leader_epoch"], answer["high_watermark"]) == \
        (0, 100, 4, 50)
    assert [v["replica_id"] for v in answer["current_voters"]] == [100, 101, 102]
    assert answer["observers"][0] == {"replica_id": 0, "log_end_offset": 50, "last_fetch_timestamp": 1_000,
                                      "last_caught_up_timestamp": 1_000}
    roles = voter_roles(answer, {100: "kraft-a", 101: "kraft-b", 102: "kraft-c"}, now_ms=10_000)
    assert roles == {"kraft-a": "leader", "kraft-b": "follower", "kraft-c": None}


def test_a_follower_says_it_is_not_the_leader() -> None:
    answer = parse(_response(-1, error=6))
    assert (answer["error_code"], answer["leader_id"]) == (6, -1)
