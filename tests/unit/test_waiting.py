"""The one polling loop (:mod:`harness.cluster.waiting`) and its fault-level adapter, on a fake clock.

Every wait of the harness, the faults and the tests goes through this loop, so its
contract is pinned here without Docker: what it returns, when it gives up, what the
failure says, and which exceptions count as "not yet".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from faults.errors import FaultError, FaultTimeout, TargetError
from faults.waiting import wait_until as fault_wait_until
from harness.cluster import waiting
from harness.cluster.waiting import CLUSTER_SETTLING, WaitTimeout, wait_until, wait_until_clear
from harness.errors import ClusterUnhealthy


class FakeClock:
    """``time`` for the waiting module: sleeping advances the clock, nothing really waits."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(waiting, "time", fake)
    return fake


def answers(*results: object) -> Callable[[], Any]:
    """A probe that returns (or raises) each of ``results`` in turn, then the last forever."""
    sequence: Iterator[object] = iter(results)
    last: list[object] = []

    def probe() -> Any:
        value = next(sequence, last[0] if last else None)
        last[:] = [value]
        if isinstance(value, BaseException):
            raise value
        return value

    return probe


def test_success_returns_the_seconds_waited(clock: FakeClock) -> None:
    probe = answers(["zk-a not serving"], ["zk-a not serving"], [])
    waited = wait_until_clear(probe, 10, "a quorum", interval_s=0.5)
    assert waited == pytest.approx(1.0)
    assert clock.sleeps == [0.5, 0.5]


def test_a_probe_already_clear_is_polled_once_and_waits_nothing(clock: FakeClock) -> None:
    assert wait_until_clear(lambda: None, 10, "nothing") == 0.0
    assert wait_until_clear(lambda: "", 10, "nothing") == 0.0
    assert wait_until(lambda: True, 0, "nothing, even with no time at all") == 0.0
    assert clock.sleeps == []


def test_timeout_names_the_wait_and_the_last_problem_seen(clock: FakeClock) -> None:
    seen = iter(f"kafka-1 isr [0, 2] at look {n}" for n in range(1000))
    with pytest.raises(WaitTimeout) as caught:
        wait_until_clear(lambda: next(seen), 3, "kafka-1 rejoining the ISR", interval_s=1)
    err = caught.value
    assert err.what == "kafka-1 rejoining the ISR"
    assert err.last_problems == ("kafka-1 isr [0, 2] at look 3",)
    assert str(err) == ("gave up waiting for kafka-1 rejoining the ISR after 3 s; "
                        "last seen: kafka-1 isr [0, 2] at look 3")
    assert isinstance(err, ClusterUnhealthy), "at the cluster layer a wait that times out is ill health"


def test_never_sleeps_past_the_deadline(clock: FakeClock) -> None:
    with pytest.raises(WaitTimeout):
        wait_until_clear(lambda: "not yet", 1.0, "something slow", interval_s=30)
    assert clock.sleeps == [1.0]


def test_many_problems_are_cut_to_the_first_five(clock: FakeClock) -> None:
    problems = [f"topic-{n} isr short" for n in range(8)]
    with pytest.raises(WaitTimeout, match=r"topic-4 isr short \(and 3 more\)$") as caught:
        wait_until_clear(lambda: problems, 0, "full ISRs")
    assert "topic-5" not in str(caught.value)
    assert caught.value.last_problems == tuple(problems)


def test_a_transient_exception_is_not_yet_and_the_wait_goes_on(clock: FakeClock) -> None:
    probe = answers(ConnectionError("ZooKeeper has no quorum"), ConnectionError("still electing"), True)
    waited = wait_until(probe, 10, "a quorum", interval_s=1, transient=(ConnectionError,))
    assert waited == pytest.approx(2.0)


def test_a_timeout_after_transient_errors_says_what_was_raised_last(clock: FakeClock) -> None:
    with pytest.raises(WaitTimeout) as caught:
        wait_until_clear(answers(OSError("connection refused")), 2, "the API", interval_s=1,
                         transient=(OSError,))
    assert caught.value.last_problems == ("OSError: connection refused",)
    assert str(caught.value).endswith("last seen: OSError: connection refused")
    assert isinstance(caught.value.last_error, OSError)


def test_a_predicate_timeout_reports_still_false_and_an_earlier_transient_error(clock: FakeClock) -> None:
    probe = answers(TimeoutError("read timed out"), False)
    with pytest.raises(WaitTimeout) as caught:
        wait_until(probe, 2, "the controller moving", interval_s=1, transient=CLUSTER_SETTLING)
    assert str(caught.value) == ("gave up waiting for the controller moving after 2 s; "
                                 "last seen: still false (last error: TimeoutError: read timed out)")


def test_an_exception_not_named_transient_propagates_at_once(clock: FakeClock) -> None:
    looks = []

    def buggy() -> bool:
        looks.append(1)
        raise KeyError("partition 7")

    with pytest.raises(KeyError):
        wait_until(buggy, 10, "anything")
    with pytest.raises(KeyError):
        wait_until(buggy, 10, "anything", transient=CLUSTER_SETTLING)
    assert len(looks) == 2 and clock.sleeps == [], "a bug is not retried until the deadline"


def test_faults_wait_raises_fault_timeout_caused_by_the_cluster_level_timeout(clock: FakeClock) -> None:
    with pytest.raises(FaultTimeout, match="gave up waiting for kafka-2 exiting after 5 s") as caught:
        fault_wait_until(lambda: False, 5, "kafka-2 exiting")
    assert isinstance(caught.value, FaultError)
    assert isinstance(caught.value.__cause__, WaitTimeout)


def test_faults_wait_treats_a_role_without_holder_as_not_yet(clock: FakeClock) -> None:
    probe = answers(TargetError("test-0 has no leader now (leader -1)"), True)
    assert fault_wait_until(probe, 5, "a new leader") == pytest.approx(0.1)
    with pytest.raises(ValueError):
        fault_wait_until(answers(ValueError("a bug")), 5, "anything")


def test_a_retry_returns_the_first_answer_and_raises_the_calls_own_error_at_the_deadline(
        clock: FakeClock) -> None:
    assert waiting.wait_for_answer(answers(OSError("refused"), OSError("refused"), "leader 2"), 5,
                                   "the quorum", transient=(OSError,), interval_s=1) == "leader 2"
    assert clock.sleeps == [1, 1]
    with pytest.raises(OSError, match="still refused") as caught:
        waiting.wait_for_answer(answers(OSError("still refused")), 3, "the quorum", transient=(OSError,))
    assert isinstance(caught.value.__cause__, WaitTimeout), "the wait that gave up is kept as the cause"
    with pytest.raises(KeyError):
        waiting.wait_for_answer(answers(KeyError("a bug")), 3, "anything", transient=(OSError,))


def test_a_hold_lets_time_pass_or_ends_when_its_event_is_set(clock: FakeClock) -> None:
    import threading

    assert waiting.hold(2.5) is False and clock.sleeps == [2.5]
    assert waiting.hold(-1) is False and clock.sleeps == [2.5, 0.0]
    stop = threading.Event()
    stop.set()
    assert waiting.hold(60, until=stop) is True, "a set event ends the hold at once"
    assert clock.sleeps == [2.5, 0.0], "an event's hold does not sleep"
