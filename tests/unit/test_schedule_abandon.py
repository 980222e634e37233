"""A migration's fault schedule stops waiting once the walk has failed: a fault anchored
to a later phase would otherwise wait out its whole bound (minutes) for a phase that will
never come."""

from __future__ import annotations

import threading
import time

from harness.scenario.schedule_run import wait_unless_abandoned


class NeverFinishing:
    """A schedule run whose last action never comes."""

    def wait(self, timeout_s: float | None = None) -> bool:
        time.sleep(timeout_s or 0.0)
        return False


class Finished:
    def wait(self, timeout_s: float | None = None) -> bool:
        return True


def test_a_set_abandon_ends_the_wait_within_a_look() -> None:
    abandon = threading.Event()
    threading.Timer(0.3, abandon.set).start()
    started = time.monotonic()
    assert wait_unless_abandoned(NeverFinishing(), 60.0, abandon) is False  # type: ignore[arg-type]
    assert time.monotonic() - started < 2.5


def test_an_unset_abandon_waits_out_the_bound() -> None:
    started = time.monotonic()
    assert wait_unless_abandoned(NeverFinishing(), 1.5, threading.Event()) is False  # type: ignore[arg-type]
    assert time.monotonic() - started >= 1.5


def test_a_finished_schedule_is_finished_whether_or_not_abandoned() -> None:
    abandon = threading.Event()
    abandon.set()
    assert wait_unless_abandoned(Finished(), 60.0, abandon) is True  # type: ignore[arg-type]
    assert wait_unless_abandoned(Finished(), None, None) is True  # type: ignore[arg-type]
