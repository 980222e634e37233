"""TopicAdmin.create_topic when the long-lived AdminClient answers nothing.

In one CI run, after a scenario in which every broker lost power, the harness's
AdminClient left three tests' CreateTopics unanswered (30 s each, no broker logged the
request) while new clients worked. These tests stand in for librdkafka's AdminClient and
for the cluster around it; the waits after the request (ZooKeeper, the leaders) are the
cluster's and are answered at once here.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.cluster import topics
from harness.cluster.state import PartitionState
from harness.cluster.topics import TopicAdmin, TopicNotCreated
from topologies import load_topology

TOPOLOGY = load_topology()


def _done(error: KafkaError | None = None) -> Future[None]:
    future: Future[None] = Future()
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(KafkaException(error))
    return future


@dataclass
class Clients:
    """Every AdminClient built, and what each one's CreateTopics answers, in order:
    "silent" (a future that never completes), "created" or "exists"."""

    answers: list[str]
    built: list[FakeAdmin] = field(default_factory=list)

    def __call__(self, conf: dict[str, Any]) -> FakeAdmin:
        client = FakeAdmin(self.answers[len(self.built)])
        self.built.append(client)
        return client


@dataclass
class FakeAdmin:
    answer: str
    requests: int = 0

    def create_topics(self, new: list[Any], operation_timeout: float) -> dict[str, Future[None]]:
        self.requests += 1
        (topic,) = new
        future: Future[None] = {
            "silent": Future(),
            "created": _done(),
            "exists": _done(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS)),
        }[self.answer]
        return {topic.topic: future}


class Observation:
    """The cluster as the admin reads it: every partition led, with a full ISR."""

    def topic_state(self, name: str) -> list[PartitionState]:
        return [PartitionState(name, p, 0, 0, (0, 1, 2), 1, (0, 1, 2)) for p in range(2)]

    def observer_bootstrap(self) -> str:
        return "127.0.0.1:1"


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> TopicAdmin:
    monkeypatch.setattr(TopicAdmin, "_wait_leaders_serve", lambda self, name, timeout_s: None)
    return TopicAdmin(TOPOLOGY, "run-1", Observation())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "second",
    ["created", "exists"],  # "exists": the unanswered request created it after all
)
def test_a_client_that_answers_nothing_is_replaced_and_the_topic_created(
    admin: TopicAdmin, monkeypatch: pytest.MonkeyPatch, second: str
) -> None:
    clients = Clients(["silent", second])
    monkeypatch.setattr(topics, "AdminClient", clients)
    admin.create_topic("t", partitions=2, replication_factor=3, timeout_s=0.2)
    assert [c.requests for c in clients.built] == [1, 1]
    assert admin.client is clients.built[1]  # the fresh client is kept for the next topic


def test_a_topic_that_exists_before_any_request_is_still_an_error(
    admin: TopicAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(topics, "AdminClient", Clients(["exists"]))
    with pytest.raises(KafkaException) as err:
        admin.create_topic("t", partitions=2, replication_factor=3, timeout_s=0.2)
    assert err.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_no_answer_from_a_fresh_client_either_fails_with_what_was_tried(
    admin: TopicAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients = Clients(["silent", "silent"])
    monkeypatch.setattr(topics, "AdminClient", clients)
    with pytest.raises(TopicNotCreated, match=r"topic t: CreateTopics unanswered for 0\.2 s"):
        admin.create_topic("t", partitions=2, replication_factor=3, timeout_s=0.2)
    assert [c.requests for c in clients.built] == [1, 1]
