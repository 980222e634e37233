"""Choosing a consumer group id whose coordinator sits on a chosen broker.

A group's coordinator is the leader of one ``__consumer_offsets`` partition, fixed by the
group id's hash (:func:`faults.targets.offsets_partition`). A scenario that kills the
coordinator measures the coordinator's loss only if that broker is not also the
controller (whose loss adds an election of its own), so it picks the id for the broker
instead of taking whatever broker a fixed id happens to land on.

The transaction coordinator is placed by the same rule on ``__transaction_state``
(tests/chaos/scenarios/_transactions.py), so the choosing itself is written once here,
for any coordinator topic and whatever makes a broker create it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from faults import EventLog, PreferredLeaderElection
from faults.targets import GROUP_METADATA_TOPIC, coordinator_partition
from harness.cluster.lifecycle import Cluster
from harness.cluster.waiting import CLUSTER_SETTLING, wait_until_clear

PROBE_GROUP = "kafka-chaos-probe"


def coordinator_topic_leaders(cluster: Cluster, topic: str, create: Callable[[], None],
                              timeout_s: float = 60.0) -> dict[int, int]:
    """``topic`` partition -> leader, calling ``create`` (a request that makes a broker
    create the coordinator topic) for as long as the topic is missing or a partition of
    it has no leader."""

    def not_ready() -> str | None:
        states = cluster.state([topic]).topic(topic)
        if states and all(s.online for s in states):
            return None
        create()
        return f"{len(states)} partition(s), {sum(not s.online for s in states)} offline"

    wait_until_clear(not_ready, timeout_s, f"{topic} created with every partition led",
                     transient=CLUSTER_SETTLING)
    states = cluster.state([topic]).topic(topic)
    return {s.partition: s.leader for s in states}


def key_coordinated_by(cluster: Cluster, topic: str, create: Callable[[], None], broker: int,
                       prefix: str, what: str) -> str:
    """The first key ``<prefix>-<n>`` (a group id, a transactional.id: ``what``) whose
    coordinator, the leader of its ``topic`` partition, is ``broker`` now. A broker that
    was stopped earlier in the session may lead no partition of the topic any more (its
    leaderships moved and Kafka gives them back only after
    ``leader.imbalance.check.interval.seconds``); a preferred-leader election gives them
    back first."""
    leaders = coordinator_topic_leaders(cluster, topic, create)
    if broker not in leaders.values():
        # The harness's own set-up, before the scenario records anything: its events stay
        # in a log of their own, and the election (done when it returns) is closed at once.
        election, setup_log = PreferredLeaderElection(topic), EventLog()
        election.inject(cluster, setup_log)
        election.heal(cluster, setup_log)
        leaders = coordinator_topic_leaders(cluster, topic, create)
    for n in range(10_000):
        key = f"{prefix}-{n}"
        if leaders[coordinator_partition(key, len(leaders))] == broker:
            return key
    raise AssertionError(f"no {what} {prefix}-N is coordinated by broker {broker}: leaders {leaders}")


def _ask_for_a_group_coordinator(cluster: Cluster) -> None:
    """A FindCoordinator request for a group, which creates ``__consumer_offsets``.

    Asked by a short-lived consumer (its committed offsets), never by the cluster's
    long-lived AdminClient: librdkafka's coordinator-targeted Admin calls
    (DescribeConsumerGroups and the like) can abort the whole process when a coordinator
    connection drops (librdkafka pull request 5397, a use-after-free), which this suite's
    faults do by design. See docs/SCENARIOS.md, "Client bugs the suite meets".
    """
    consumer = Consumer({"bootstrap.servers": cluster.observer_bootstrap(), "group.id": PROBE_GROUP,
                         "client.id": f"kafka-chaos-probe-{cluster.run_id}", "log_level": 3})
    try:
        with contextlib.suppress(KafkaException):
            consumer.committed([TopicPartition(GROUP_METADATA_TOPIC, 0)], timeout=10)
    finally:
        consumer.close()


def offsets_leaders(cluster: Cluster, timeout_s: float = 60.0) -> dict[int, int]:
    """``__consumer_offsets`` partition -> leader, creating the topic first if no group
    has asked for a coordinator yet."""
    return coordinator_topic_leaders(cluster, GROUP_METADATA_TOPIC,
                                     lambda: _ask_for_a_group_coordinator(cluster), timeout_s)


def group_coordinated_by(cluster: Cluster, broker: int, prefix: str) -> str:
    """The first group id ``<prefix>-<n>`` whose coordinator is ``broker`` now."""
    return key_coordinated_by(cluster, GROUP_METADATA_TOPIC, lambda: _ask_for_a_group_coordinator(cluster),
                              broker, prefix, "group id")
