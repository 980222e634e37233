"""What the KRaft scenarios (K1-K5) share: the durable producer and topic, and the bounds
that come from Kafka's own quorum settings.

A controller quorum elects a new leader once a follower's fetch times out
(``controller.quorum.fetch.timeout.ms``, 2 s by default) and an election round passes
(``controller.quorum.election.timeout.ms``, 1 s); a started controller replays its
metadata log first. The bounds below are those figures with a margin for a loaded
two-core machine.
"""

from __future__ import annotations

from harness.history import Rule
from harness.scenario.runner import TopicSpec

QUORUM_FETCH_TIMEOUT_S, QUORUM_ELECTION_TIMEOUT_S = 2.0, 1.0  # Kafka's defaults
NEW_QUORUM_LEADER_WITHIN_S = 5 * (QUORUM_FETCH_TIMEOUT_S + QUORUM_ELECTION_TIMEOUT_S)
# A controller's JVM start, its metadata log's replay and an election, on a busy machine.
QUORUM_BACK_WITHIN_S = 60.0
RATE_PER_S = 150

DURABLE_PRODUCER = {"acks": "all", "enable.idempotence": False, "retries": 2147483647}
DURABLE_TOPIC = TopicSpec(partitions=3, replication_factor=3,
                          config={"min.insync.replicas": 2, "unclean.leader.election.enable": False})
# Retries without idempotence may write twice; nothing acknowledged may go.
NOTHING_LOST: dict[str, Rule] = {"lost": 0, "truncated": 0, "aborted_read": 0, "unexpected": 0,
                                 "duplicate": "any", "reordered": "any", "unseen": 0}
