"""delete_controller drawn while /controller is empty waits for the election under way
and takes the claim it makes. An exploration drew it right after a ZooKeeper leader's
pause had expired the controller's session: it failed at once ("there is no controller
now") and the round could not be judged as drawn."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from faults.errors import FaultTimeout
from faults.zookeeper import DeleteController
from topologies.loader import load_topology


@dataclass
class _State:
    controller: int | None


class _ElectingCluster:
    """/controller empty for the first ``empty`` looks, then held by broker 1."""

    topology = load_topology()

    def __init__(self, empty: int) -> None:
        self.looks, self.empty = 0, empty

    def state(self, topics: list[str]) -> _State:
        self.looks += 1
        return _State(None if self.looks <= self.empty else 1)


def test_an_election_under_way_is_awaited_and_its_controller_taken() -> None:
    cluster = _ElectingCluster(empty=3)
    assert DeleteController(timeout_s=5)._resolve(cluster) == ("kafka-1",)  # type: ignore[arg-type]
    assert cluster.looks == 4  # three looks at an empty /controller, then the new claim


def test_no_controller_within_the_timeout_is_a_timeout_naming_the_wait() -> None:
    with pytest.raises(FaultTimeout, match="a controller to take the claim of"):
        DeleteController(timeout_s=0.5)._resolve(_ElectingCluster(empty=10**9))  # type: ignore[arg-type]
