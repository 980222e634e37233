"""Choosing a consumer group id whose coordinator sits on a chosen broker.

A group's coordinator is the leader of one ``__consumer_offsets`` partition, fixed by the
group id's hash (:func:`faults.targets.offsets_partition`). A scenario that kills the
coordinator measures the coordinator's loss only if that broker is not also the
controller (whose loss adds an election of its own), so it picks the id for the broker
instead of taking whatever broker a fixed id happens to land on.
"""

from __future__ import annotations

import contextlib

from confluent_kafka import KafkaException

from faults import EventLog, PreferredLeaderElection
from faults.targets import GROUP_METADATA_TOPIC, offsets_partition
from harness.cluster.lifecycle import Cluster
from harness.cluster.waiting import CLUSTER_SETTLING, wait_until_clear

PROBE_GROUP = "kafka-chaos-probe"


def offsets_leaders(cluster: Cluster, timeout_s: float = 60.0) -> dict[int, int]:
    """``__consumer_offsets`` partition -> leader, creating the topic first if no group
    has asked for a coordinator yet (a FindCoordinator request creates it)."""

    def not_ready() -> str | None:
        states = cluster.state([GROUP_METADATA_TOPIC]).topic(GROUP_METADATA_TOPIC)
        if states and all(s.online for s in states):
            return None
        with contextlib.suppress(KafkaException):  # asking for a coordinator creates the topic
            cluster.admin.describe_consumer_groups([PROBE_GROUP])[PROBE_GROUP].result(10)
        return f"{len(states)} partition(s), {sum(not s.online for s in states)} offline"

    wait_until_clear(not_ready, timeout_s, f"{GROUP_METADATA_TOPIC} created with every partition led",
                     transient=CLUSTER_SETTLING)
    states = cluster.state([GROUP_METADATA_TOPIC]).topic(GROUP_METADATA_TOPIC)
    return {s.partition: s.leader for s in states}


def group_coordinated_by(cluster: Cluster, broker: int, prefix: str) -> str:
    """The first group id ``<prefix>-<n>`` whose coordinator is ``broker`` now. A broker
    that was stopped earlier in the session may lead no offsets partition any more (its
    leaderships moved and Kafka gives them back only after
    ``leader.imbalance.check.interval.seconds``); a preferred-leader election gives them
    back first."""
    leaders = offsets_leaders(cluster)
    if broker not in leaders.values():
        PreferredLeaderElection(GROUP_METADATA_TOPIC).inject(cluster, EventLog())
        leaders = offsets_leaders(cluster)
    for n in range(10_000):
        group = f"{prefix}-{n}"
        if leaders[offsets_partition(group, len(leaders))] == broker:
            return group
    raise AssertionError(f"no group id {prefix}-N is coordinated by broker {broker}: leaders {leaders}")
