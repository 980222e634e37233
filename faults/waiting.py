"""Waiting for a fault's effect: the cluster layer's wait, failing as a :class:`FaultTimeout`.

Faults return only once their effect is visible in ZooKeeper or Docker (a broker
deregistered, a new controller elected), because a schedule that injects the next
fault before the previous one took hold tests nothing in particular. The polling itself
is :mod:`harness.cluster.waiting`'s, the one loop in the project; this adapter adds what
is particular to faults:

- a timeout is a :class:`FaultTimeout` (a ``FaultError``), so a fault that did not take
  hold is reported like every other fault failure, with the cluster-level
  :class:`~harness.cluster.waiting.WaitTimeout` (and its last problem) as its cause;
- by default, what the cluster raises while nodes churn (:data:`FAULT_SETTLING`: ZooKeeper
  settling, a container between states, a role with no holder mid-election) counts as
  "not yet".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from faults.errors import FaultTimeout, TargetError
from harness.cluster import waiting
from harness.cluster.waiting import CLUSTER_SETTLING, Problems, Transient, WaitTimeout

FAULT_SETTLING: Transient = (*CLUSTER_SETTLING, TargetError)
"""The cluster settling, plus a target that resolves to nothing for a moment (no leader
during an election, no controller between two)."""


def wait_until_clear(
    probe: Callable[[], Problems],
    timeout_s: float,
    what: str,
    *,
    interval_s: float = 0.1,
    transient: Transient = FAULT_SETTLING,
) -> float:
    """:func:`harness.cluster.waiting.wait_until_clear`, raising FaultTimeout; seconds waited."""
    with _as_fault_timeout():
        return waiting.wait_until_clear(probe, timeout_s, what, interval_s=interval_s, transient=transient)


def wait_until(
    predicate: Callable[[], bool],
    timeout_s: float,
    what: str,
    interval_s: float = 0.1,
    *,
    transient: Transient = FAULT_SETTLING,
) -> float:
    """Poll ``predicate`` until true and return the seconds waited, or raise FaultTimeout."""
    with _as_fault_timeout():
        return waiting.wait_until(predicate, timeout_s, what, interval_s=interval_s, transient=transient)


@contextlib.contextmanager
def _as_fault_timeout() -> Iterator[None]:
    try:
        yield
    except WaitTimeout as err:
        raise FaultTimeout(str(err)) from err
