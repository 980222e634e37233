"""Polling until the cluster shows an effect, with a deadline and a clear failure.

Faults return only once their effect is visible in ZooKeeper or Docker (a broker
deregistered, a new controller elected), because a schedule that injects the next
fault before the previous one took hold tests nothing in particular. ZooKeeper reads
can fail while the ensemble settles; a poll that raises counts as "not yet".
"""

from __future__ import annotations

import time
from collections.abc import Callable

from faults.errors import FaultTimeout


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.1) -> float:
    """Poll ``predicate`` until true and return the seconds waited, or raise FaultTimeout."""
    started = time.monotonic()
    last_error: Exception | None = None
    while True:
        try:
            if predicate():
                return time.monotonic() - started
        except Exception as err:  # kazoo and docker raise many kinds while nodes churn
            last_error = err
        if time.monotonic() - started > timeout_s:
            because = f" (last error: {last_error})" if last_error else ""
            raise FaultTimeout(f"{what} did not happen within {timeout_s:.0f} s{because}")
        time.sleep(interval_s)
