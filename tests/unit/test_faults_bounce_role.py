"""A hard bounce waits for the role to leave the node it stopped. Right after the stop the
role is still on that node, which is no longer running: the wait must see it there (it
once looked only at running holders, found none, and failed with an IndexError)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from faults import nodes
from faults.process import Bounce
from faults.targets import Target
from topologies.loader import load_topology


class _MovingLeader(Target):
    """The leader of a partition: kafka-2 for the first ``stays`` looks, then kafka-0."""

    kind: ClassVar[str] = "leader_of"
    moves: ClassVar[bool] = True

    def __init__(self, stays: int) -> None:
        self.looks, self.stays = 0, stays

    def resolve(self, cluster: Any) -> tuple[str, ...]:
        self.looks += 1
        return ("kafka-2",) if self.looks <= self.stays else ("kafka-0",)

    def describe(self) -> str:
        return "leader of t-0"

    def check(self, topology: Any) -> None:
        pass

    def check_exists(self, cluster: Any) -> None:
        pass

    def to_spec(self) -> dict[str, Any]:
        return {"leader_of": ["t", 0]}


class _KilledNode:
    topology = load_topology()

    def stopped_nodes(self) -> frozenset[str]:
        return frozenset()

    def node_status(self, node: str) -> str:
        return "exited" if node == "kafka-2" else "running"


def test_the_wait_sees_the_role_still_on_the_stopped_node_then_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodes, "session_timeout_s", lambda cluster: 1.0)
    target = _MovingLeader(stays=2)
    Bounce(target, times=1)._wait_role_moved(_KilledNode(), "kafka-2")  # type: ignore[arg-type]
    assert target.looks == 3  # twice still on kafka-2, then on kafka-0


def test_a_role_that_never_moves_is_a_timeout_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodes, "session_timeout_s", lambda cluster: -29.0)  # a 1 s wait
    with pytest.raises(Exception, match="still on kafka-2"):
        Bounce(_MovingLeader(stays=10_000), times=1)._wait_role_moved(_KilledNode(), "kafka-2")  # type: ignore[arg-type]
