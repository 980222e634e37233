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
events' monotonic times show when each action really started. A delayed inject does not
move its heal: a time-only entry is healed ``start_s + duration_s`` after the schedule
started, however late the inject ran.

Triggers: a clock alone makes a schedule guess how long the cluster needs between two
faults (a rolling restart must not stop broker 2 before broker 1's replicas are back in
sync). An entry may therefore also wait for another entry or for the cluster:

* ``after = N`` (the 1-based number of an *earlier* entry): ``start_s`` counts from the
  moment entry N was healed instead of from the schedule's start (``start_s`` may then
  be left out: 0). The entry never injects before that heal; if entry N is never healed
  (its condition never held, or its heal failed) the entry is not injected and the run
  records an error.
* ``when = <condition>`` (:mod:`faults.conditions`): once its start has come, the entry
  injects at the first look at the live cluster state at which the condition holds;
  ``when_timeout_s`` bounds the wait (default 120 s, or 900 s for a condition naming
  a migration's phase, which may begin many minutes in). A condition that never holds leaves
  the entry out and records an error naming the condition and what the state was at
  the last look, so the scenario fails rather than pass without its fault. Conditions
  that compare (``controller_changed``, ``leader_changed``) compare with the first state
  read once the wait began.

A triggered entry is healed ``duration_s`` after it became due (the moment its
condition held, or entry N's heal plus ``start_s``). A rolling restart, in a scenario
file::

    [[schedule]]
    start_s = 5
    duration_s = 10
    fault = "controlled_shutdown"
    target = { broker = 0 }

    [[schedule]]
    after = 1
    when = "isr_full"
    duration_s = 10
    fault = "controlled_shutdown"
    target = { broker = 1 }

    [[schedule]]
    after = 2
    when = "isr_full"
    duration_s = 10
    fault = "controlled_shutdown"
    target = { broker = 2 }

The runner reads the state through the ``observe`` callable given to
:meth:`Schedule.start` (a scenario passes its sampler's latest snapshot), or else from
the cluster, at most once a tick (:data:`TICK_S`), and never judges a condition on a
state read before its last inject or heal ended: that state may show what the action
just changed. The length of a triggered schedule
is not known in advance: :attr:`Schedule.length_s` is the time-only part and
:attr:`Schedule.longest_s` the latest planned end if every wait runs to its timeout.
"""

from __future__ import annotations

import json
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faults.base import Fault
from faults.conditions import DEFAULT_WAIT_S, Condition, Observe, parse_condition, topics_to_read
from faults.errors import FaultError, FaultSpecError, ScheduleError
from faults.events import EventLog, FaultEvent
from faults.registry import build_fault
from faults.spec import as_mapping, non_negative, positive, typed
from harness.errors import describe_error
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl
    from harness.cluster.state import ClusterState

SCHEDULE_VERSION = 1
_TIMING_KEYS = ("start_s", "duration_s")
_TRIGGER_KEYS = ("after", "when", "when_timeout_s")
ENTRY_KEYS = _TIMING_KEYS + _TRIGGER_KEYS
"""Every key of an entry that is not part of its fault spec."""
DEFAULT_WHEN_TIMEOUT_S = DEFAULT_WAIT_S


def entry_words(entry: Mapping[str, Any]) -> str:
    """A schedule entry (the scenario-file form) in a few words: its kind, what it names,
    when and how long ("kill {"broker": 1} at 3 s for 8 s"); for consoles and reports."""
    named = entry.get("target", entry.get("links"))
    what = "" if named is None else f" {json.dumps(named, sort_keys=True)}"
    start, duration = entry.get("start_s", "?"), entry.get("duration_s", 0)
    shown = [f"{float(v):g}" if isinstance(v, int | float) else str(v) for v in (start, duration)]
    return f"{entry.get('fault', '?')}{what} at {shown[0]} s for {shown[1]} s"
TICK_S = 0.05
"""How often a waiting schedule looks again (and, without ``observe``, reads the state)."""
_NOTHING_OBSERVED = "no state observed: ZooKeeper unreadable, or not read since the last action"


@dataclass(frozen=True)
class ScheduleEntry:
    """One fault: injected ``start_s`` after the schedule starts (or after entry ``after``
    was healed, once ``when`` holds), healed ``duration_s`` later."""

    start_s: float
    fault: Mapping[str, Any]
    duration_s: float = 0.0
    after: int | None = None
    when: Condition | None = None
    when_timeout_s: float = DEFAULT_WHEN_TIMEOUT_S

    @property
    def triggered(self) -> bool:
        """True when the entry waits for another entry or a condition, not the clock alone."""
        return self.after is not None or self.when is not None

    def build(self) -> Fault:
        return build_fault(self.fault)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"start_s": self.start_s, "duration_s": self.duration_s}
        if self.after is not None:
            data["after"] = self.after
        if self.when is not None:
            # The timeout is written even when it is the default, so a replay waits as long.
            data["when"] = self.when.to_spec()
            data["when_timeout_s"] = self.when_timeout_s
        return {**data, **self.fault}

    @classmethod
    def from_dict(cls, data: object) -> ScheduleEntry:
        mapping = as_mapping(data, "a schedule entry")
        after = None
        if "after" in mapping:
            after = typed(mapping["after"], int, "after")
            if after < 1:
                raise FaultSpecError(f"'after' must be the number of an earlier entry (from 1), got {after}")
        if "start_s" not in mapping and after is None:
            raise FaultError("a schedule entry needs 'start_s' (or 'after', from whose heal it counts)")
        start = non_negative(typed(mapping.get("start_s", 0.0), float, "start_s"), "start_s")
        duration = non_negative(typed(mapping.get("duration_s", 0.0), float, "duration_s"), "duration_s")
        when = parse_condition(mapping["when"]) if "when" in mapping else None
        if when is None and "when_timeout_s" in mapping:
            raise FaultSpecError("'when_timeout_s' bounds the wait for 'when', and this entry has no 'when'")
        default = when.default_wait_s if when is not None else DEFAULT_WHEN_TIMEOUT_S
        timeout = positive(typed(mapping.get("when_timeout_s", default), float, "when_timeout_s"),
                           "when_timeout_s")
        spec = {k: v for k, v in mapping.items() if k not in ENTRY_KEYS}
        entry = cls(start, spec, duration, after, when, timeout)
        entry.build()  # refuses unknown faults and malformed parameters now
        return entry


def _check_after(index: int, entry: ScheduleEntry) -> None:
    """Refuse an ``after`` that is not an earlier entry: pointing at itself would wait
    forever, and pointing forward would make the order of the file lie."""
    if entry.after is None or entry.after < index:
        return
    if index == 1:
        raise FaultSpecError(f"'after' = {entry.after}: the first entry has no earlier entry to follow")
    which = "this entry itself" if entry.after == index else "a later entry"
    raise FaultSpecError(f"'after' = {entry.after} names {which}; it must name an earlier entry "
                         f"(1 to {index - 1})")


@dataclass
class Schedule:
    """Validated entries, plus the events of the run a loaded file recorded (if any)."""

    entries: list[ScheduleEntry]
    recorded: list[FaultEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Schedules built in code get the same refusal as files (the runner relies on it).
        for index, entry in enumerate(self.entries, start=1):
            try:
                _check_after(index, entry)
            except FaultError as err:
                raise ScheduleError(f"schedule: entry {index}: {err}") from err

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
                entry = ScheduleEntry.from_dict(raw)
                _check_after(index, entry)
            except FaultError as err:
                raise ScheduleError(f"{source}: entry {index}: {err}") from err
            entries.append(entry)
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
        """Every entry's targets and condition exist in ``topology``; ScheduleError naming
        the first that does not."""
        self._check_each(lambda fault: fault.check(topology), lambda when: when.check(topology))

    def check_exists(self, cluster: ClusterControl) -> list[Fault]:
        """:meth:`check` against the live cluster (topics too); the faults, ready to run."""
        return self._check_each(lambda fault: fault.check_exists(cluster),
                                lambda when: when.check_exists(cluster))

    def _check_each(self, check_fault: Callable[[Fault], None],
                    check_when: Callable[[Condition], None]) -> list[Fault]:
        """Build every entry's fault and run both checks on it and its condition; the
        first failure becomes a ScheduleError naming the entry."""
        faults = []
        for index, entry in enumerate(self.entries, start=1):
            fault = entry.build()
            where = f"schedule entry {index} ({fault.describe()})"
            try:
                check_fault(fault)
            except FaultError as err:
                raise ScheduleError(f"{where}: {err}") from err
            if entry.when is not None:
                try:
                    check_when(entry.when)
                except FaultError as err:
                    raise ScheduleError(f"{where}: 'when' ({entry.when.describe()}): {err}") from err
            faults.append(fault)
        return faults

    def start(self, cluster: ClusterControl, log: EventLog, observe: Observe | None = None) -> ScheduleRun:
        """Validate everything, then run in a background thread; use as a context manager.

        ``observe(since)`` returns the latest cluster state read at or after the monotonic
        time ``since`` for the entries' conditions (a scenario passes its sampler's
        ``latest``, so the schedule adds no ZooKeeper reads); without it the conditions
        read the cluster themselves.
        """
        run = ScheduleRun(self, self.check_exists(cluster), cluster, log, observe)
        run.start()
        return run

    @property
    def triggered(self) -> bool:
        """True when some entry waits for another entry or a condition: the length is unknown."""
        return any(entry.triggered for entry in self.entries)

    @property
    def length_s(self) -> float:
        """When the last time-only entry is planned to be healed (triggered entries left out)."""
        return max((e.start_s + e.duration_s for e in self.entries if not e.triggered), default=0.0)

    @property
    def longest_s(self) -> float:
        """The latest planned heal if every condition is met only at its timeout; the time
        the actions themselves take (a slow heal before an ``after``) comes on top."""
        ends: list[float] = []
        for entry in self.entries:
            begins = 0.0 if entry.after is None else ends[entry.after - 1]
            waits = entry.when_timeout_s if entry.when is not None else 0.0
            ends.append(begins + entry.start_s + waits + entry.duration_s)
        return max(ends, default=0.0)


@dataclass(frozen=True)
class _Action:
    at_s: float
    heal: bool
    index: int

    def key(self, duration_s: float) -> tuple[float, int, int, int]:
        # At equal times heals run first, except a zero-length fault's own heal.
        heal_first = 0 if self.heal and duration_s > 0 else 1
        return (self.at_s, heal_first, self.index, int(self.heal))


@dataclass
class _Progress:
    """Where one entry stands; times are seconds since the schedule started.

    ``due_s`` is when the inject became due (its start, entry ``after``'s heal plus its
    start, or the look at which its condition held); the heal is due ``duration_s`` after
    it, whenever the inject really ran.
    """

    due_s: float | None = None
    wait_from_s: float | None = None
    baseline: ClusterState | None = None
    injected: bool = False
    healed_s: float | None = None
    done: bool = False
    skipped: bool = False


class ScheduleRun:
    """One execution of a schedule: a thread, its faults, and the errors it met."""

    def __init__(self, schedule: Schedule, faults: Sequence[Fault], cluster: ClusterControl, log: EventLog,
                 observe: Observe | None = None) -> None:
        self.schedule = schedule
        self.faults = list(faults)
        self.cluster = cluster
        self.log = log
        self.errors: list[str] = []
        # (entry from 1, "inject" | "heal") -> (wall, monotonic) when that action began:
        # where a scenario's checks anchor their windows.
        self.moments: dict[tuple[int, str], tuple[float, float]] = {}
        self._observe = observe
        self._topics = topics_to_read([e.when for e in schedule.entries if e.when is not None])
        self._read_at: float | None = None
        self._acted_mono = 0.0  # when the last action ended: states read before it are stale
        self._state: ClusterState | None = None
        self._unreadable = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-schedule", daemon=True)
        self.started_mono: float | None = None

    def start(self) -> None:
        _RUNNING.add(self.cluster.run_id, self)
        self.started_mono = time.monotonic()
        self._thread.start()

    def _elapsed(self) -> float:
        assert self.started_mono is not None
        return time.monotonic() - self.started_mono

    def _run(self) -> None:
        """One loop for every kind of entry: run the due action that comes first (the same
        order as a sorted timeline, so time-only schedules run exactly as they always did),
        else look at the state for waiting conditions, else sleep until the next due time
        or the next tick."""
        progress = [_Progress() for _ in self.schedule.entries]
        for entry, step in zip(self.schedule.entries, progress, strict=True):
            if entry.after is None and entry.when is None:
                step.due_s = entry.start_s
            elif entry.after is None:
                step.wait_from_s = entry.start_s
        while not self._stop.is_set():
            now = self._elapsed()
            self._release(progress)
            action = self._next_due(progress, now)
            if action is not None:
                self._perform(action, progress[action.index])
                continue
            if self._look(progress, now):
                continue
            if all(p.done for p in progress):
                return
            self._stop.wait(self._pause(progress, now))

    def _describe(self, index: int) -> str:
        return f"entry {index + 1} ({self.faults[index].describe()})"

    def _skip(self, index: int, progress: _Progress, why: str) -> None:
        progress.done = progress.skipped = True
        self.errors.append(f"{self._describe(index)}: not injected: {why}")

    def _release(self, progress: list[_Progress]) -> None:
        """Start the clock (or the wait) of ``after`` entries whose entry has been healed;
        give up on those whose entry never will be. Earlier entries come first, so a
        chain of skips settles in one pass."""
        for index, (entry, step) in enumerate(zip(self.schedule.entries, progress, strict=True)):
            if entry.after is None or step.done or step.due_s is not None or step.wait_from_s is not None:
                continue
            before = progress[entry.after - 1]
            if before.healed_s is not None:
                begins = before.healed_s + entry.start_s
                if entry.when is None:
                    step.due_s = begins
                else:
                    step.wait_from_s = begins
            elif before.done:
                what = "was never injected" if before.skipped else "was not healed"
                self._skip(index, step, f"{self._describe(entry.after - 1)} {what}")

    def _next_due(self, progress: list[_Progress], now: float) -> _Action | None:
        due = []
        for index, (entry, step) in enumerate(zip(self.schedule.entries, progress, strict=True)):
            if step.done or step.due_s is None:
                continue
            if step.injected:
                if step.due_s + entry.duration_s <= now:
                    due.append(_Action(step.due_s + entry.duration_s, True, index))
            elif step.due_s <= now:
                due.append(_Action(step.due_s, False, index))
        entries = self.schedule.entries
        return min(due, key=lambda a: a.key(entries[a.index].duration_s), default=None)

    def _perform(self, action: _Action, progress: _Progress) -> None:
        fault = self.faults[action.index]
        failed = False
        what = "heal" if action.heal else "inject"
        self.moments[(action.index + 1, what)] = (time.time(), time.monotonic())
        try:
            if action.heal:
                fault.heal(self.cluster, self.log)
            else:
                fault.inject(self.cluster, self.log)
        except Exception as err:  # recorded in the log; the schedule goes on
            failed = True
            self.errors.append(f"{self._describe(action.index)}: {describe_error(err)}")
        self._acted_mono, self._read_at = time.monotonic(), None
        if not action.heal:
            progress.injected = True
            return
        progress.done = True
        if not failed:
            progress.healed_s = self._elapsed()

    def _look(self, progress: list[_Progress], now: float) -> bool:
        """Evaluate the conditions of the entries waiting now; True when one held (its
        inject is then due). One per look: the inject changes the cluster, so the next
        waiting entry is judged on a state read after it."""
        waiting = [(index, entry.when, entry.when_timeout_s, step.wait_from_s, step)
                   for index, (entry, step) in enumerate(zip(self.schedule.entries, progress, strict=True))
                   if entry.when is not None and not step.done and step.due_s is None
                   and step.wait_from_s is not None and step.wait_from_s <= now]
        if not waiting:
            return False
        observed = self._read(now)
        for *_, step in waiting:
            if step.baseline is None:  # the first state read since the wait began
                step.baseline = observed
        for index, condition, timeout_s, wait_from_s, step in waiting:
            held, why = condition.evaluate(observed, step.baseline)
            if held:
                step.due_s = now
                return True
            if now >= wait_from_s + timeout_s:
                if observed is None and self._unreadable:
                    why = f"the cluster state could not be read ({self._unreadable})"
                self._skip(index, step, f"'when' {condition.describe()} did not hold within "
                                         f"{timeout_s:g} s; at the last look: {why}")
        return False

    def _read(self, now: float) -> ClusterState | None:
        """The latest state, read at most once a tick and never from before the last
        action ended (an inject changes the cluster: judging the next condition on a state
        from before it would trigger on what no longer holds); None when it cannot be read."""
        if self._read_at is not None and now - self._read_at < TICK_S:
            return self._state
        self._read_at = now
        try:
            if self._observe is not None:
                self._state = self._observe(self._acted_mono)
            else:
                self._state = self.cluster.state(self._topics)
            self._unreadable = "" if self._state is not None else _NOTHING_OBSERVED
        except Exception as err:  # ZooKeeper without quorum, a reconnect: look again next tick
            self._state, self._unreadable = None, describe_error(err)
        return self._state

    def _pause(self, progress: list[_Progress], now: float) -> float:
        """Until the next known due time, at most a tick (conditions are looked at every tick)."""
        upcoming = [TICK_S]
        for entry, step in zip(self.schedule.entries, progress, strict=True):
            if step.done:
                continue
            if step.due_s is not None:
                at = step.due_s + entry.duration_s if step.injected else step.due_s
                upcoming.append(at - now)
            elif step.wait_from_s is not None and step.wait_from_s > now:
                upcoming.append(step.wait_from_s - now)
        return max(min(upcoming), 0.0)

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
                    self.errors.append(f"healing {fault.describe()}: {describe_error(err)}")
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


def running_schedules(cluster: ClusterControl) -> list[ScheduleRun]:
    return _RUNNING.of(cluster.run_id)
