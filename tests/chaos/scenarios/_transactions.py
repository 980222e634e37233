"""Choosing a transactional.id whose transaction coordinator sits on a chosen broker.

A transactional producer's coordinator is the leader of one ``__transaction_state``
partition, fixed by the transactional.id's hash by the rule that places consumer groups
(:func:`faults.targets.coordinator_partition`). T1 kills that broker, and measures the
coordinator's loss only if the broker is neither the controller nor a replica of the
topic's data, so it picks the id for the broker, as G1 picks its group id.

``__transaction_state`` exists only once a transactional producer has called
``init_transactions``: its FindCoordinator request makes a broker create the topic. Until
then no id has a coordinator to choose, so a short-lived producer with a transactional.id
of its own calls it first.
"""

from __future__ import annotations

import contextlib

from confluent_kafka import KafkaException, Producer

from faults.targets import TRANSACTION_STATE_TOPIC
from harness.cluster.lifecycle import Cluster
from tests.chaos.scenarios._groups import key_coordinated_by

PROBE_TRANSACTIONAL_ID = "kafka-chaos-probe-tx"
# One call's wait: while the topic is being created librdkafka retries FindCoordinator
# (COORDINATOR_NOT_AVAILABLE) inside init_transactions; a call that times out is one more
# "not yet" for the caller's wait, which calls again.
PROBE_INIT_TIMEOUT_S = 10.0


def _initialise_a_probe_producer(cluster: Cluster) -> None:
    """Call ``init_transactions`` with a throwaway transactional.id, through the
    harness's observer links (never cut by a fault), and close the producer: only the
    topic it makes the broker create is wanted. Its id stays registered and idle, which
    touches no other id's coordinator."""
    producer = Producer({"bootstrap.servers": cluster.observer_bootstrap(),
                         "transactional.id": PROBE_TRANSACTIONAL_ID, "client.id": "kafka-chaos-probe",
                         "log_level": 3})
    try:
        with contextlib.suppress(KafkaException):
            producer.init_transactions(PROBE_INIT_TIMEOUT_S)
    finally:
        producer.close()


def transactional_id_coordinated_by(cluster: Cluster, broker: int, prefix: str) -> str:
    """The first transactional.id ``<prefix>-<n>`` whose transaction coordinator is
    ``broker`` now."""
    return key_coordinated_by(cluster, TRANSACTION_STATE_TOPIC, lambda: _initialise_a_probe_producer(cluster),
                              broker, prefix, "transactional.id")
