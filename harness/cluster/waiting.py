"""The one way to wait for the cluster: poll, with a deadline and a failure that says why.

Almost everything a chaos test does ends in a wait: a quorum forming, a broker leaving
``/brokers/ids``, a replica rejoining an ISR, a setting taking effect. Every such wait
in the project goes through :func:`wait_until_clear` (or :func:`wait_until`, its form for
a plain predicate), so that each one

- polls at least once, even with a zero timeout, and never sleeps past its deadline;
- returns the seconds it waited, which tests and fault outcomes report;
- fails with :class:`WaitTimeout` naming what was awaited *and what was still wrong at
  the last look* ("kafka-2 is exited", "/brokers/ids/1 still held by session 0x..."):
  a timeout that only says "not within 30 s" sends the reader to the logs for what a
  probe already knew;
- says so on the ``kafka_chaos`` logger (:data:`PROGRESS_LOGGER`) once it has waited
  :data:`LONG_WAIT_S`, with what is still wrong, so a person watching a run sees a long
  wait as it happens (the console shows that logger live);
- treats an exception from the probe as "not yet" only when the caller names its type
  as transient. ZooKeeper reads fail while the ensemble elects a leader and Docker calls
  fail while a container restarts, so those callers pass :data:`CLUSTER_SETTLING`; a bug
  in a probe (a KeyError, a TypeError) still fails at once instead of being retried
  until the deadline and reported as a timeout.

A retry around one call (a request asked again while the cluster settles) is such a wait
too: :func:`wait_for_answer` makes the call the probe and, once the time is up, raises the
call's own last error, so a caller's handler for that error still sees it.

Not every pause is a wait. Keeping a fault in place for its duration, a consumer taking
its processing time per record, a periodic loop's tick: these let time pass whatever the
cluster does. Inside a loop they go through :func:`hold`, or, for a loop that must stop
promptly, through its stop event (``hold(tick, until=stop)``, which is ``stop.wait(tick)``).
``tests/unit/test_one_mechanism.py`` fails on a ``time.sleep`` inside a loop anywhere
else: such a loop is a second, hand-rolled poll.

The cluster layer owns this (faults, tests and scenarios sit above it and may import
it; it imports nothing of theirs). :class:`WaitTimeout` is a
:class:`~harness.errors.ClusterUnhealthy`, because at this level a wait that times out
is the cluster not reaching a state in time; ``faults.waiting`` turns it into the
faults' own ``FaultTimeout``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import docker.errors
from confluent_kafka import KafkaException
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from harness.errors import ClusterUnhealthy, describe_error

PROGRESS_LOGGER = "kafka_chaos"
"""The logger the harness's progress goes to (the console shows it live)."""
LONG_WAIT_S = 10.0
"""A wait this long is announced while it goes on."""
_progress = logging.getLogger(PROGRESS_LOGGER)

Problems = Sequence[str] | str | None
"""What a probe still finds wrong: ``None``, ``""`` or an empty sequence means nothing."""

Transient = tuple[type[BaseException], ...]

CLUSTER_SETTLING: Transient = (
    KazooException,  # ZooKeeper: connection loss, session moved, no quorum yet
    KazooTimeoutError,  # kazoo's own request timeout is not a KazooException
    docker.errors.DockerException,  # a container between states
    KafkaException,  # an admin call to a broker that is restarting
    OSError,  # sockets: four-letter words, broker metadata, the Docker API's HTTP; TimeoutError
)
"""Errors the cluster's own observation raises while nodes churn: "not yet", not a bug."""

SHOWN_PROBLEMS = 5

T = TypeVar("T")


class WaitTimeout(ClusterUnhealthy):
    """A wait ran out of time; carries what was awaited and what was wrong at the last look."""

    def __init__(
        self, what: str, timeout_s: float, last_problems: Sequence[str], last_error: BaseException | None
    ) -> None:
        self.what = what
        self.timeout_s = timeout_s
        self.last_problems = tuple(last_problems)
        self.last_error = last_error
        super().__init__(self._sentence())

    def _sentence(self) -> str:
        shown = "; ".join(self.last_problems[:SHOWN_PROBLEMS])
        hidden = len(self.last_problems) - SHOWN_PROBLEMS
        if hidden > 0:
            shown += f" (and {hidden} more)"
        text = f"gave up waiting for {self.what} after {self.timeout_s:.0f} s; last seen: {shown}"
        error = describe_error(self.last_error) if self.last_error is not None else None
        if error is not None and error not in self.last_problems:
            text += f" (last error: {error})"
        return text


def wait_until_clear(
    probe: Callable[[], Problems],
    timeout_s: float,
    what: str,
    *,
    interval_s: float = 0.2,
    transient: Transient = (),
) -> float:
    """Poll ``probe`` until it reports no problems; return the seconds waited.

    ``probe`` returns what is still wrong (see :data:`Problems`). An exception of a type
    in ``transient`` counts as one more "not yet", its text becoming the last problem;
    any other exception propagates at once. Raises :class:`WaitTimeout` with ``what`` and
    the last problems seen once ``timeout_s`` has passed.
    """
    started = time.monotonic()
    last: tuple[str, ...] = ()
    last_error: BaseException | None = None
    announced = False
    while True:
        try:
            last = _as_problems(probe())
        except transient as err:
            last_error = err
            last = (describe_error(err),)
        else:
            if not last:
                return time.monotonic() - started
        waited = time.monotonic() - started
        left = timeout_s - waited
        if left <= 0:
            raise WaitTimeout(what, timeout_s, last, last_error)
        if not announced and waited >= LONG_WAIT_S:
            announced = True
            _progress.info("still waiting for %s after %.0f s (gives up at %.0f s): %s", what, waited,
                           timeout_s, "; ".join(last[:2]) or "not yet")
        time.sleep(min(interval_s, left))


def wait_until(
    predicate: Callable[[], bool],
    timeout_s: float,
    what: str,
    *,
    interval_s: float = 0.2,
    transient: Transient = (),
) -> float:
    """:func:`wait_until_clear` for a yes/no condition; the seconds until ``predicate`` holds.

    A predicate cannot say what is wrong, so its timeout reports "still false" (and the
    last transient error, if any); write a probe when the failure should explain itself.
    """
    return wait_until_clear(
        lambda: None if predicate() else "still false",
        timeout_s,
        what,
        interval_s=interval_s,
        transient=transient,
    )


def wait_for_answer(
    call: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    transient: Transient,
    interval_s: float = 0.2,
) -> T:
    """Make ``call`` until it answers, and return its answer: a retry as a wait.

    An exception of a type in ``transient`` means "not yet", and the call is made again
    after ``interval_s``; any other propagates at once. Once ``timeout_s`` has passed, the
    last transient error is raised itself (with the :class:`WaitTimeout` that says how
    long it was tried as its cause), so a caller that handles that error type still does.
    """
    answer: list[T] = []

    def unanswered() -> Problems:
        answer[:] = [call()]
        return None

    try:
        wait_until_clear(unanswered, timeout_s, what, interval_s=interval_s, transient=transient)
    except WaitTimeout as timeout:
        if timeout.last_error is None:  # not reached: the probe either answers or raises
            raise
        raise timeout.last_error from timeout
    return answer[0]


def hold(seconds: float, until: threading.Event | None = None) -> bool:
    """Let ``seconds`` pass: a pause that waits for nothing (a fault kept in place, a
    record's processing time, a periodic loop's tick); True when ``until`` was set first.

    With ``until``, the hold ends as soon as that event is set, so a loop that holds
    between rounds stops promptly (``while not hold(tick, until=stop): ...``). A pause
    that ends when the cluster reaches a state is a wait: :func:`wait_until_clear`.
    """
    seconds = max(0.0, seconds)
    if until is not None:
        return until.wait(seconds)
    time.sleep(seconds)
    return False


def _as_problems(found: Problems) -> tuple[str, ...]:
    if found is None:
        return ()
    if isinstance(found, str):
        return (found,) if found else ()
    return tuple(found)


__all__ = ["CLUSTER_SETTLING", "Problems", "Transient", "WaitTimeout", "hold", "wait_for_answer",
           "wait_until", "wait_until_clear"]
