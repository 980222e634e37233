"""The shape every fault shares: inject, heal, and an event for each.

Following Jepsen's nemesis decomposition, a fault is a small object that knows how to
start one kind of damage and how to undo it, and nothing about workloads or checkers.
:class:`Fault` is a template: subclasses say how to resolve their targets, apply and
restore; the base class records every inject and heal in the event log (with the
resolved targets and the outcome), refuses a second inject of a live fault, and makes
heal idempotent. Every injected fault is registered per cluster until healed, so
:func:`faults.heal.heal_all` can undo everything after a test that failed half-way.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from faults.errors import FaultError
from faults.events import EventLog, now, outcome_error, outcome_ok
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl


class Fault(ABC):
    """One kind of damage, aimed at roles, with an idempotent undo."""

    def __init__(self) -> None:
        self._resolved: tuple[str, ...] | None = None
        self._log: EventLog | None = None
        self._lock = threading.Lock()

    # -- what subclasses provide ---------------------------------------------------------
    @abstractmethod
    def describe(self) -> str:
        """The fault and its *roles* (not resolved nodes): equal across replays."""

    @abstractmethod
    def to_spec(self) -> dict[str, Any]:
        """The dict :func:`faults.registry.build_fault` turns back into this fault."""

    def check(self, topology: Topology) -> None:
        """Refuse targets the topology cannot have; runs before anything is injected."""
        return None

    def check_exists(self, cluster: ClusterControl) -> None:
        """:meth:`check` plus what only the live cluster knows (topics, partitions)."""
        self.check(cluster.topology)

    @abstractmethod
    def _resolve(self, cluster: ClusterControl) -> tuple[str, ...]:
        """The concrete nodes, links or partitions this fault hits now."""

    @abstractmethod
    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        """Do the damage; return a short detail for the event's outcome."""

    @abstractmethod
    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        """Undo the damage (must tolerate partial application); return a detail."""

    def _noted(self, detail: str) -> str:
        """The inject's detail with what resolution left out, if it says anything."""
        return detail

    @property
    def registry_kind(self) -> str:
        """The name :data:`faults.registry.FAULTS` knows this kind by; what a test that
        claims to strike a kind is held to (:func:`struck_kinds`)."""
        return str(self.to_spec()["fault"])

    # -- the template ----------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self._resolved is not None

    @property
    def resolved(self) -> tuple[str, ...] | None:
        """What the live inject hit (None when not injected)."""
        return self._resolved

    def inject(self, cluster: ClusterControl, log: EventLog) -> tuple[str, ...]:
        """Resolve the targets now, do the damage, record the event; return the targets.

        Resolution errors (no such topic, no leader now) are raised before anything is
        touched. If applying fails half-way the fault stays registered, so heal (or
        heal_all) still undoes whatever part was applied.
        """
        with self._lock:
            if self._resolved is not None:
                raise FaultError(f"{self.describe()} is already injected; heal it first")
            started = now()
            try:
                self.check_exists(cluster)
                resolved = self._resolve(cluster)
            except Exception as err:
                log.record(self.describe(), "inject", (), outcome_error(err), started)
                raise
            self._resolved, self._log = resolved, log
            _ACTIVE.add(cluster.run_id, self)
            _STRUCK.setdefault(cluster.run_id, []).append(self.registry_kind)
            try:
                detail = self._noted(self._apply(cluster, resolved))
            except Exception as err:
                log.record(self.describe(), "inject", resolved, outcome_error(err), started)
                raise
            log.record(self.describe(), "inject", resolved, outcome_ok(detail), started)
            return resolved

    def heal(self, cluster: ClusterControl, log: EventLog | None = None, reason: str = "") -> bool:
        """Undo the damage; a no-op (returning False) when nothing is injected.

        The event goes to the log the fault was injected with, so a heal lands in the
        same history as its inject (a fault the harness injected for its own set-up,
        with a log of its own, never shows up in a scenario's history as a lone heal);
        ``log`` is for a fault injected without one. ``reason`` says why the heal came
        from somewhere other than the fault's own schedule, and leads the outcome's
        detail. A failed heal keeps the fault registered so that a later heal or
        heal_all retries it.
        """
        with self._lock:
            if self._resolved is None:
                return False
            # Not `or`: an EventLog with no event yet is falsy (it has a length).
            target_log = self._log if self._log is not None else log if log is not None else EventLog()
            resolved = self._resolved
            started = now()
            try:
                detail = self._restore(cluster, resolved)
            except Exception as err:
                target_log.record(self.describe(), "heal", resolved, outcome_error(err), started)
                raise
            self._resolved, self._log = None, None
            _ACTIVE.remove(cluster.run_id, self)
            said = "; ".join(part for part in (reason, detail) if part)
            target_log.record(self.describe(), "heal", resolved, outcome_ok(said), started)
            return True

    def __str__(self) -> str:
        return self.describe()


class _ActiveFaults:
    """Faults injected and not yet healed, per cluster run, in injection order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: dict[str, list[Fault]] = {}

    def add(self, run_id: str, fault: Fault) -> None:
        with self._lock:
            self._by_run.setdefault(run_id, []).append(fault)

    def remove(self, run_id: str, fault: Fault) -> None:
        with self._lock:
            faults = self._by_run.get(run_id, [])
            if fault in faults:
                faults.remove(fault)

    def of(self, run_id: str) -> list[Fault]:
        with self._lock:
            return list(self._by_run.get(run_id, []))


_ACTIVE = _ActiveFaults()
# Every kind injected per cluster run, in order, healed or not; appended under the fault's
# own lock, read as a copy (list appends are atomic).
_STRUCK: dict[str, list[str]] = {}


def active_faults(cluster: ClusterControl) -> list[Fault]:
    """Faults injected on ``cluster`` and not healed yet, oldest first."""
    return _ACTIVE.of(cluster.run_id)


def struck_kinds(cluster: ClusterControl) -> tuple[str, ...]:
    """The registry kind of every fault whose targets were resolved on ``cluster`` and
    whose damage was started, oldest first, healed or not. A test that claims to strike a
    kind compares the tail it added with its claim, so a fault that never struck cannot
    pass for one that did."""
    return tuple(_STRUCK.get(cluster.run_id, ()))
