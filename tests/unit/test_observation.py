"""Pure pieces of observation: ZooKeeper state diffs, send classification, broker
metadata decoding, and run identity rules."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import KafkaError

from harness import history as hist
from harness.cluster.broker_metadata import _parse, _request
from harness.cluster.resources import RunIdentity
from harness.cluster.sampler import diff_states
from harness.cluster.state import ClusterState, PartitionState
from harness.cluster.zkstate import zookeeper_mode
from harness.errors import ChaosError
from harness.workload.driver import classify


def _state(leader: int, epoch: int, isr: tuple[int, ...], controller: int = 0,
           brokers: tuple[int, ...] = (0, 1, 2)) -> ClusterState:
    partition = PartitionState("t", 0, leader, epoch, isr, 1, (0, 1, 2))
    return ClusterState(brokers, controller, 1 if controller == 0 else 2, {("t", 0): partition})


def test_diff_reports_leader_isr_controller_and_broker_changes() -> None:
    before = _state(0, 0, (0, 1, 2))
    after = _state(1, 1, (1, 2), controller=1, brokers=(1, 2))
    kinds = {e.kind: e.detail for e in diff_states(before, after, 10.0)}
    assert kinds["leader"] == "leader 0 -> 1 (epoch 1)"
    assert kinds["isr"] == "isr [0, 1, 2] -> [1, 2]"
    assert kinds["controller"] == "controller 0 (epoch 1) -> 1 (epoch 2)"
    assert kinds["broker_down"] == "broker 0 no longer registered"
    assert diff_states(after, after, 11.0) == []


def test_isr_order_alone_is_not_a_change() -> None:
    assert diff_states(_state(0, 0, (0, 1, 2)), _state(0, 0, (2, 1, 0)), 1.0) == []


@pytest.mark.parametrize(
    ("code", "retries", "possibly_written", "outcome"),
    [
        (None, True, True, hist.OUTCOME_ACKED),
        # No attempt may have appended it: a refusal, or a timeout in the producer's queue.
        (KafkaError.NOT_ENOUGH_REPLICAS, True, False, hist.OUTCOME_FAILED),
        (KafkaError._MSG_TIMED_OUT, True, False, hist.OUTCOME_FAILED),
        # An attempt may have been appended (say it timed out in flight): in doubt,
        # whatever the last attempt's answer was.
        (KafkaError.NOT_ENOUGH_REPLICAS, True, True, hist.OUTCOME_UNKNOWN),
        (KafkaError._MSG_TIMED_OUT, True, True, hist.OUTCOME_UNKNOWN),
        (KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, True, False, hist.OUTCOME_UNKNOWN),
        (KafkaError.NOT_LEADER_FOR_PARTITION, True, False, hist.OUTCOME_UNKNOWN),
        (KafkaError.NOT_LEADER_FOR_PARTITION, False, False, hist.OUTCOME_FAILED),
    ],
)
def test_send_outcomes_are_failed_only_when_certainly_not_written(
    code: int | None, retries: bool, possibly_written: bool, outcome: str
) -> None:
    error = None if code is None else KafkaError(code)
    assert classify(error, retries, possibly_written=possibly_written) == outcome
    # Without knowledge of the attempts, nothing is called failed.
    assert classify(error, retries) == (hist.OUTCOME_ACKED if error is None else hist.OUTCOME_UNKNOWN)


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(value)) + value.encode()


def test_metadata_v7_response_is_decoded_into_one_brokers_view() -> None:
    body = struct.pack(">ii", 7, 0)  # correlation id, throttle time
    body += struct.pack(">i", 2)
    for node, rack in ((0, "a"), (2, None)):
        body += struct.pack(">i", node) + _string("127.0.0.1")
        body += struct.pack(">i", 9000 + node) + _string(rack)
    body += _string("cluster-id") + struct.pack(">i", 2)  # cluster id, controller
    body += struct.pack(">i", 1) + struct.pack(">h", 0) + _string("t") + struct.pack(">b", 0)
    body += struct.pack(">i", 1)
    body += struct.pack(">hiii", 0, 0, 2, 5)  # error, partition, leader, leader epoch
    body += struct.pack(">iiii", 3, 2, 0, 1) + struct.pack(">iii", 2, 2, 0) + struct.pack(">ii", 1, 1)
    view = _parse(body)
    assert view.brokers == (0, 2)
    assert view.controller == 2
    assert view.leader_of("t", 0) == 2
    assert view.topics["t"][0].isr == (2, 0)
    assert view.topics["t"][0].leader_epoch == 5
    request = _request(["t"], correlation_id=1)
    assert struct.unpack(">i", request[:4])[0] == len(request) - 4
    assert struct.unpack(">hh", request[4:8]) == (3, 7)
    assert request[-1:] == b"\x00"  # no topic created by asking


@pytest.mark.parametrize("bad", ["", "has space", "../escape", "-leading-dash", "x" * 65])
def test_run_ids_that_cannot_name_containers_are_refused(bad: str) -> None:
    with pytest.raises(ChaosError, match="run id"):
        RunIdentity(bad)


def test_a_silent_zookeeper_node_costs_the_mode_read_only_its_timeout() -> None:
    """A frozen ZooKeeper accepts the connection (the kernel does) and never answers: the
    sampler's mode thread must get None after its short timeout, not the default 2 s."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        started = time.monotonic()
        assert zookeeper_mode(f"127.0.0.1:{server.getsockname()[1]}", timeout_s=0.2) is None
        assert time.monotonic() - started < 1.0
