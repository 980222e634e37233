"""The cluster's ZooKeeper observer rides out a dropped connection; the sampler's does not.

No ZooKeeper here: the observer is built without connecting and handed operations that
fail the way kazoo's requests fail when the connection drops.
"""

from __future__ import annotations

import time

import kazoo.retry
import pytest
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError

from harness.cluster.zkstate import ZkObserver
from harness.errors import describe_error


def _observer(grace_s: float) -> ZkObserver:
    observer = ZkObserver.__new__(ZkObserver)
    observer._grace_s = grace_s
    return observer


class Flaky:
    """Fails with each of ``errors`` in turn, then answers ``value``."""

    def __init__(self, errors: list[Exception], value: str = "answer") -> None:
        self.errors, self.value, self.calls = list(errors), value, 0

    def __call__(self, path: str) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return f"{self.value} for {path}"


def test_a_dropped_connection_is_retried_within_the_grace() -> None:
    operation = Flaky([ConnectionLoss(), SessionExpiredError(), ConnectionLoss()])
    assert _observer(5.0).call(operation, "/controller") == "answer for /controller"
    assert operation.calls == 4


def test_without_a_grace_the_first_failure_is_raised() -> None:
    operation = Flaky([ConnectionLoss()])
    with pytest.raises(ConnectionLoss):
        _observer(0.0).call(operation, "/controller")
    assert operation.calls == 1


def test_a_connection_that_stays_down_fails_after_the_grace_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # kazoo's jitter at its largest, the case in which a long sleep cut the grace shortest
    monkeypatch.setattr(kazoo.retry.random, "uniform", lambda low, high: high)
    operation = Flaky([ConnectionLoss()] * 1000)
    started = time.monotonic()
    with pytest.raises(ConnectionLoss, match="ZooKeeper did not answer within 1 s"):
        _observer(1.0).call(operation, "/controller")
    assert 0.8 <= time.monotonic() - started < 3.0  # nearly all the grace: kazoo stops a sleep early
    assert operation.calls > 1


def test_answers_from_zookeeper_are_not_retried() -> None:
    operation = Flaky([NoNodeError()])
    with pytest.raises(NoNodeError):
        _observer(5.0).call(operation, "/controller")
    assert operation.calls == 1


@pytest.mark.parametrize(
    ("error", "text"),
    [(ConnectionLoss(), "ConnectionLoss"), (RuntimeError("boom"), "RuntimeError: boom"),
     (TimeoutError("  "), "TimeoutError")],
)
def test_an_error_is_described_by_its_type_and_its_text_when_it_has_one(error: Exception, text: str) -> None:
    assert describe_error(error) == text
