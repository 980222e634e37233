"""A fault schedule: declared faults at declared times, beside the workload, replayable.

A scenario states its faults as data - a list of entries ``(start_s, fault spec,
duration_s)`` - so the same run can be repeated: the schedule is validated as a whole
before its first fault (a typo in entry 5 must not leave entries 1-4 injected), runs in
a background thread while the test drives producers and consumers, and is saved with
the run, including every inject and heal that happened. Loading that file and running
it again injects the same faults on the same *roles* in the same order; which broker a
role resolves to is decided again by the live cluster, as it was the first time.

Timing: actions run in one thread in time order (at equal times, heals of earlier
faults before new injects). A slow action (a controlled shutdown) delays the ones after
it rather than overlapping them, so the order never depends on thread scheduling; the
events' monotonic times show when each action really started.
"""

from __future__ import annotations

import json
import threading
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faults.base import Fault
from faults.errors import FaultError, ScheduleError
from faults.events import EventLog, FaultEvent
from faults.registry import build_fault
from faults.spec import as_mapping, non_negative, typed
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster

SCHEDULE_VERSION = 1
_TIMING_KEYS = ("start_s", "duration_s")


@dataclass(frozen=True)
class ScheduleEntry:
    """One fault: injected ``start_s`` after the schedule starts, healed ``duration_s`` later."""

    start_s: float
    fault: Mapping[str, Any]
    duration_s: float = 0.0

    def build(self) -> Fault:
        return build_fault(self.fault)

    def to_dict(self) -> dict[str, Any]:
        return {"start_s": self.start_s, "duration_s": self.duration_s, **self.fault}

    @classmethod
    def from_dict(cls, data: object) -> ScheduleEntry:
        mapping = as_mapping(data, "a schedule entry")
        if "start_s" not in mapping:
            raise FaultError("a schedule entry needs 'start_s'")
        start = non_negative(typed(mapping["start_s"], float, "start_s"), "start_s")
        duration = non_negative(typed(mapping.get("duration_s", 0.0), float, "duration_s"), "duration_s")
        spec = {k: v for k, v in mapping.items() if k not in _TIMING_KEYS}
        entry = cls(start, spec, duration)
        entry.build()  # refuses unknown faults and malformed parameters now
        return entry


@dataclass
class Schedule:
    """Validated entries, plus the events of the run a loaded file recorded (if any)."""

    entries: list[ScheduleEntry]
    recorded: list[FaultEvent] = field(default_factory=list)

    # -- building and files ------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: object, source: str = "schedule") -> Schedule:
        try:
            mapping = as_mapping(data, source)
            version = mapping.get("version", SCHEDULE_VERSION)
            if version != SCHEDULE_VERSION:
                raise FaultError(f"schedule version {version!r} is not {SCHEDULE_VERSION}")
            raw_entries = typed(mapping.get("entries"), list, f"{source}: 'entries'")
        except FaultError as err:
            raise ScheduleError(f"{source}: {err}") from err
        entries = []
        for index, raw in enumerate(raw_entries, start=1):
            try:
                entries.append(ScheduleEntry.from_dict(raw))
            except FaultError as err:
                raise ScheduleError(f"{source}: entry {index}: {err}") from err
        try:
            recorded = [FaultEvent.from_row(row) for row in mapping.get("recorded", [])]
        except (KeyError, TypeError, ValueError) as err:
            raise ScheduleError(f"{source}: the recorded events are malformed: {err}") from err
        return cls(entries, recorded)

    @classmethod
    def load(cls, path: str | Path) -> Schedule:
        """Read a schedule from JSON (``.json``) or TOML (``.toml``)."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as err:
            raise ScheduleError(f"cannot read schedule {path}: {err.strerror}") from err
        try:
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except json.JSONDecodeError as err:
            raise ScheduleError(f"{path} is not valid JSON: {err}") from err
        except tomllib.TOMLDecodeError as err:
            raise ScheduleError(f"{path} is not valid TOML: {err}") from err
        return cls.from_dict(data, str(path))

    def to_dict(self, log: EventLog | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": SCHEDULE_VERSION,
            "entries": [entry.to_dict() for entry in self.entries],
        }
        if log is not None:
            data["recorded"] = log.to_rows()
        return data

    def save(self, path: str | Path, log: EventLog | None = None) -> Path:
        """Write the schedule (and, given the run's log, what happened) as JSON."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(log), indent=2) + "\n")
        return path

    # -- validation and running --------------------------------------------------------
    def check(self, topology: Topology) -> None:
        """Every entry's targets exist in ``topology``; ScheduleError naming the first that does not."""
        for index, entry in enumerate(self.entries, start=1):
            fault = entry.build()
            try:
                fault.check(topology)
            except FaultError as err:
                raise ScheduleError(f"schedule entry {index} ({fault.describe()}): {err}") from err

    def check_exists(self, cluster: Cluster) -> list[Fault]:
        """:meth:`check` against the live cluster (topics too); the faults, ready to run."""
        faults = []
        for index, entry in enumerate(self.entries, start=1):
            fault = entry.build()
            try:
                fault.check_exists(cluster)
            except FaultError as err:
                raise ScheduleError(f"schedule entry {index} ({fault.describe()}): {err}") from err
            faults.append(fault)
        return faults

    def start(self, cluster: Cluster, log: EventLog) -> ScheduleRun:
        """Validate everything, then run in a background thread; use as a context manager."""
        run = ScheduleRun(self, self.check_exists(cluster), cluster, log)
        run.start()
        return run

    @property
    def length_s(self) -> float:
        return max((e.start_s + e.duration_s for e in self.entries), default=0.0)


@dataclass(frozen=True)
class _Action:
    at_s: float
    heal: bool
    index: int

    def key(self, duration_s: float) -> tuple[float, int, int, int]:
        # At equal times heals run first, except a zero-length fault's own heal.
        heal_first = 0 if self.heal and duration_s > 0 else 1
        return (self.at_s, heal_first, self.index, int(self.heal))


class ScheduleRun:
    """One execution of a schedule: a thread, its faults, and the errors it met."""

    def __init__(self, schedule: Schedule, faults: Sequence[Fault], cluster: Cluster, log: EventLog) -> None:
        self.schedule = schedule
        self.faults = list(faults)
        self.cluster = cluster
        self.log = log
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-schedule", daemon=True)
        self.started_mono: float | None = None

    def _actions(self) -> list[_Action]:
        actions = []
        for index, entry in enumerate(self.schedule.entries):
            actions.append(_Action(entry.start_s, False, index))
            actions.append(_Action(entry.start_s + entry.duration_s, True, index))
        return sorted(actions, key=lambda a: a.key(self.schedule.entries[a.index].duration_s))

    def start(self) -> None:
        _RUNNING.add(self.cluster.run_id, self)
        self.started_mono = time.monotonic()
        self._thread.start()

    def _run(self) -> None:
        assert self.started_mono is not None
        for action in self._actions():
            delay = self.started_mono + action.at_s - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            if self._stop.is_set():
                return
            fault = self.faults[action.index]
            try:
                if action.heal:
                    fault.heal(self.cluster, self.log)
                else:
                    fault.inject(self.cluster, self.log)
            except Exception as err:  # recorded in the log; the schedule goes on
                self.errors.append(f"entry {action.index + 1} ({fault.describe()}): {err}")

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the last action; True when the schedule finished."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def stop(self, join_timeout_s: float = 60.0) -> None:
        """Stop injecting and heal every fault of this run that is still active.

        The join is bounded: an action blocked on a ZooKeeper without quorum must not
        keep the heal from happening (the thread is a daemon and dies with the process).
        """
        self._stop.set()
        self._thread.join(join_timeout_s)
        try:
            for fault in reversed(self.faults):
                try:
                    fault.heal(self.cluster, self.log)
                except Exception as err:
                    self.errors.append(f"healing {fault.describe()}: {err}")
        finally:
            _RUNNING.remove(self.cluster.run_id, self)

    def __enter__(self) -> ScheduleRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _RunningSchedules:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: dict[str, list[ScheduleRun]] = {}

    def add(self, run_id: str, run: ScheduleRun) -> None:
        with self._lock:
            self._by_run.setdefault(run_id, []).append(run)

    def remove(self, run_id: str, run: ScheduleRun) -> None:
        with self._lock:
            runs = self._by_run.get(run_id, [])
            if run in runs:
                runs.remove(run)

    def of(self, run_id: str) -> list[ScheduleRun]:
        with self._lock:
            return list(self._by_run.get(run_id, []))


_RUNNING = _RunningSchedules()


def running_schedules(cluster: Cluster) -> list[ScheduleRun]:
    return _RUNNING.of(cluster.run_id)
