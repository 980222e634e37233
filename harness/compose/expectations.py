"""Bounds a scenario puts on what clients and ZooKeeper saw, beyond anomaly kinds.

The reconciliation verdict says whether data was lost or duplicated; a scenario often
also has to say how the run *behaved*: how many sends may end failed or in doubt, how
long a partition may go without an acknowledgement, how many controller and leader
elections the fault may cause, and how soon after healing every ISR must be full again.
A :class:`Bounds` declares those (scenario files under ``[bounds]``, Python scenarios as
``ScenarioSpec.bounds``); :func:`evaluate` turns what a run measured into one named
check per bound, whose detail gives the measured figure beside the bound, so a reviewer
reads both and a violated bound fails the scenario.

Everything here is pure: the inputs are rows of the history's sends and cluster_state
tables (the latter as :meth:`~harness.cluster.sampler.StateSampler.rows` hands them over,
or read back from Parquet: the same dicts) and replica sets from a cluster-state
snapshot. :class:`~harness.compose.scenario.ScenarioRun` gathers them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import history as hist
from harness.errors import ChaosError

BOUND_KEYS = ("max_failed", "max_in_doubt", "max_unavailable_s", "unavailable_s",
              "controller_changes", "leader_epoch_changes", "isr_full_after_heal_s")
_RANGE_KEYS = ("min", "max")


class BoundsError(ChaosError, ValueError):
    """A bound that cannot be checked as written; the message names the key."""


# ------------------------------------------------------------------------------- bounds


@dataclass(frozen=True)
class CountRange:
    """An allowed count: at least ``at_least`` and at most ``at_most`` (either may be open)."""

    at_least: int | None = None
    at_most: int | None = None

    def __post_init__(self) -> None:
        for name in ("at_least", "at_most"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise BoundsError(f"a count bound must be a non-negative integer, not {value!r}")
        if self.at_least is None and self.at_most is None:
            raise BoundsError("a count range needs 'min', 'max' or both")
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise BoundsError(f"min {self.at_least} is above max {self.at_most}")

    def holds(self, count: int) -> bool:
        return ((self.at_least is None or count >= self.at_least)
                and (self.at_most is None or count <= self.at_most))

    def describe(self) -> str:
        if self.at_least == self.at_most:
            return f"exactly {self.at_least}"
        if self.at_least is None:
            return f"at most {self.at_most}"
        if self.at_most is None:
            return f"at least {self.at_least}"
        return f"between {self.at_least} and {self.at_most}"

    def to_dict(self) -> dict[str, int]:
        """The TOML shape: ``{ min = 1, max = 2 }`` with open ends left out."""
        out = {"min": self.at_least, "max": self.at_most}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class Bounds:
    """What a scenario accepts beyond anomaly kinds; every field left None is unchecked.

    Partitions are the scenario topic's partition numbers. ``unavailable_s`` overrides
    ``max_unavailable_s`` for the partitions it names (a partition the fault takes down on
    purpose may have a longer bound than the rest). Leader-epoch changes are bounded either
    over the whole topic or per partition, not both, because a scenario file has one key
    for them.
    """

    max_failed: int | None = None
    max_in_doubt: int | None = None
    max_unavailable_s: float | None = None
    unavailable_s: Mapping[int, float] = field(default_factory=dict)
    controller_changes: CountRange | None = None
    leader_epoch_changes: CountRange | None = None
    leader_epoch_changes_by_partition: Mapping[int, CountRange] = field(default_factory=dict)
    isr_full_after_heal_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_failed", "max_in_doubt"):
            _count(getattr(self, name), name)
        for name in ("max_unavailable_s", "isr_full_after_heal_s"):
            _seconds(getattr(self, name), name)
        for partition, seconds in self.unavailable_s.items():
            _partition(partition, "unavailable_s")
            _seconds(seconds, f"unavailable_s partition {partition}")
        for partition in self.leader_epoch_changes_by_partition:
            _partition(partition, "leader_epoch_changes")
        if self.leader_epoch_changes is not None and self.leader_epoch_changes_by_partition:
            raise BoundsError("leader_epoch_changes: bound the whole topic or each partition, not both")

    @property
    def empty(self) -> bool:
        return self == Bounds()

    def partitions(self) -> set[int]:
        """Every partition a bound names, to check against the topic before anything runs."""
        return set(self.unavailable_s) | set(self.leader_epoch_changes_by_partition)

    @property
    def measures_gaps(self) -> bool:
        return self.max_unavailable_s is not None or bool(self.unavailable_s)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bounds:
        """From a scenario file's ``[bounds]`` table; every problem is one BoundsError."""
        if not isinstance(data, Mapping):
            raise BoundsError("[bounds] must be a table")
        unknown = sorted(set(data) - set(BOUND_KEYS))
        if unknown:
            raise BoundsError(f"[bounds] unknown key(s) {', '.join(unknown)}; known: {', '.join(BOUND_KEYS)}")
        try:
            leader_total, leader_each = _leader_epoch_bound(data.get("leader_epoch_changes"))
            return cls(
                max_failed=data.get("max_failed"),
                max_in_doubt=data.get("max_in_doubt"),
                max_unavailable_s=data.get("max_unavailable_s"),
                unavailable_s=_per_partition(data.get("unavailable_s", {}), "unavailable_s"),
                controller_changes=_range(data.get("controller_changes"), "controller_changes"),
                leader_epoch_changes=leader_total,
                leader_epoch_changes_by_partition=leader_each,
                isr_full_after_heal_s=data.get("isr_full_after_heal_s"),
            )
        except BoundsError as err:
            text = str(err)
            raise BoundsError(text if text.startswith("[bounds]") else f"[bounds] {text}") from err

    def to_dict(self) -> dict[str, Any]:
        """The scenario-file shape, for the scenario's saved configuration."""
        out: dict[str, Any] = {
            "max_failed": self.max_failed,
            "max_in_doubt": self.max_in_doubt,
            "max_unavailable_s": self.max_unavailable_s,
            "unavailable_s": {str(p): s for p, s in sorted(self.unavailable_s.items())} or None,
            "controller_changes": (None if self.controller_changes is None
                                   else self.controller_changes.to_dict()),
            "leader_epoch_changes": (
                self.leader_epoch_changes.to_dict() if self.leader_epoch_changes is not None
                else {str(p): r.to_dict() for p, r in sorted(self.leader_epoch_changes_by_partition.items())}
                or None),
            "isr_full_after_heal_s": self.isr_full_after_heal_s,
        }
        return {k: v for k, v in out.items() if v is not None}


def _count(value: Any, what: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise BoundsError(f"{what} must be a non-negative integer, not {value!r}")


def _seconds(value: Any, what: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise BoundsError(f"{what} must be a non-negative number of seconds, not {value!r}")


def _partition(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BoundsError(f"{what}: partition {value!r} is not a partition number")


def _partition_key(key: Any, what: str) -> int:
    """TOML keys are strings: ``"1" = 5`` names partition 1."""
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return key
    if isinstance(key, str) and key.isdigit():
        return int(key)
    raise BoundsError(f"{what}: key {key!r} is not a partition number (write \"0\", \"1\", ...)")


def _per_partition(raw: Any, what: str) -> dict[int, float]:
    """``{ "1" = 5 }``: seconds per partition."""
    if not isinstance(raw, Mapping):
        raise BoundsError(f"{what} must be a table of partition = seconds, e.g. {{ \"1\" = 5 }}")
    out = {}
    for key, value in raw.items():
        partition = _partition_key(key, what)
        _seconds(value, f"{what} partition {partition}")
        out[partition] = value
    return out


def _range(raw: Any, what: str) -> CountRange | None:
    """``n`` (exactly n) or ``{ min = a, max = b }`` with either end optional."""
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        _count(raw, what)
        return CountRange(raw, raw)
    if not isinstance(raw, Mapping):
        raise BoundsError(f"{what} must be an integer or a table {{ min = .., max = .. }}, not {raw!r}")
    unknown = sorted(set(raw) - set(_RANGE_KEYS))
    if unknown:
        raise BoundsError(f"{what}: unknown key(s) {', '.join(map(str, unknown))}; use min and max")
    _count(raw.get("min"), f"{what} min")
    _count(raw.get("max"), f"{what} max")
    try:
        return CountRange(raw.get("min"), raw.get("max"))
    except BoundsError as err:
        raise BoundsError(f"{what}: {err}") from err


def _leader_epoch_bound(raw: Any) -> tuple[CountRange | None, dict[int, CountRange]]:
    """A total range (``{ min = 1 }`` or an integer), or ranges per partition
    (``{ "0" = { min = 1 }, "2" = 0 }``)."""
    what = "leader_epoch_changes"
    if raw is None or not isinstance(raw, Mapping) or set(raw) <= set(_RANGE_KEYS):
        return _range(raw, what), {}
    if any(k in _RANGE_KEYS for k in raw):
        raise BoundsError(f"{what}: either {{ min, max }} for the whole topic or partition numbers as "
                          "keys, not both")
    ranges: dict[int, CountRange] = {}
    for key, value in raw.items():
        partition = _partition_key(key, what)
        found = _range(value, f"{what} partition {partition}")
        assert found is not None  # a present value is a range or raised
        ranges[partition] = found
    return None, ranges


# ------------------------------------------------------------------------------ measures


def send_outcomes(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Sends per outcome (acked, failed, unknown), every outcome present."""
    counts = dict.fromkeys(hist.OUTCOMES, 0)
    for row in rows:
        counts[str(row["outcome"])] = counts.get(str(row["outcome"]), 0) + 1
    return counts


@dataclass(frozen=True)
class ControllerChanges:
    """Controller elections during a run: increases of the controller epoch from the
    first observation (not itself a change), and the controllers seen in order."""

    count: int
    first_epoch: int | None
    last_epoch: int | None
    controllers: tuple[str, ...]


def _readable(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows of readable snapshots, in sample order: a cluster_state table read back
    from Parquet in any order, or the sampler's rows, give the same figures."""
    return sorted((r for r in rows if r["readable"]), key=lambda r: (r["ts"], r["sample"]))


def controller_changes(rows: Iterable[Mapping[str, Any]]) -> ControllerChanges:
    """From cluster_state rows (harness/cluster/sampler.py). Counted by controller epoch,
    not by changes seen: an election the sampler missed between two reads (or during a
    stretch ZooKeeper was unreadable) still raised the epoch, and a moment with no
    /controller znode between two controllers is not a change."""
    epochs: list[int] = []
    seen: list[str] = []
    for row in _readable(rows):
        if row["controller_epoch"] is not None:
            epochs.append(int(row["controller_epoch"]))
        controller = row["controller"]
        if controller is not None and (not seen or seen[-1] != str(controller)):
            seen.append(str(controller))
    if not epochs:
        return ControllerChanges(0, None, None, tuple(seen))
    return ControllerChanges(max(epochs) - epochs[0], epochs[0], max(epochs), tuple(seen))


def _partition_rows(rows: Iterable[Mapping[str, Any]], topic: str) -> list[Mapping[str, Any]]:
    return [r for r in _readable(rows) if r["topic"] == topic and r["partition"] is not None]


def leader_epoch_changes(rows: Iterable[Mapping[str, Any]], topic: str) -> dict[int, int]:
    """Per partition of ``topic`` the sampler saw, how far its leader epoch rose from the
    first observation: every election (a leader going offline included) raises it once."""
    first: dict[int, int] = {}
    highest: dict[int, int] = {}
    for row in _partition_rows(rows, topic):
        partition, epoch = int(row["partition"]), int(row["leader_epoch"])
        first.setdefault(partition, epoch)
        highest[partition] = max(epoch, highest.get(partition, epoch))
    return {p: highest[p] - first[p] for p in sorted(first)}


def isr_full_since(rows: Iterable[Mapping[str, Any]], topic: str,
                   replicas: Mapping[int, Sequence[int]]) -> dict[int, float | None]:
    """Per partition, when its ISR last became equal to its replica set and stayed so to
    the last sample; None when it was not full then (or never seen)."""
    since: dict[int, float | None] = dict.fromkeys(replicas)
    for row in _partition_rows(rows, topic):
        partition = int(row["partition"])
        if partition not in replicas:
            continue
        if set(row["isr"] or ()) != set(replicas[partition]):
            since[partition] = None
        elif since[partition] is None:
            since[partition] = float(row["ts"])
    return since


@dataclass(frozen=True)
class IsrAfterHeal:
    """How long after the last heal every ISR was full; ``seconds`` None: not within the
    observation (``waiting`` says which partitions were still short, and of what)."""

    seconds: float | None
    last: int | None  # the partition that became full last
    waiting: tuple[str, ...] = ()


def isr_full_after(healed_at: float, since: Mapping[int, float | None],
                   polled_full_at: float | None, waiting: Sequence[str] = ()) -> IsrAfterHeal:
    """Seconds from ``healed_at`` until the last partition's ISR was full.

    ``since`` comes from the sampler's samples (precise to its interval); a partition they
    do not show full is taken as full at ``polled_full_at``, when a poll of ZooKeeper saw
    every ISR full, if one did. A partition full before the heal counts 0 s.
    """
    if not since:
        return IsrAfterHeal(None, None, tuple(waiting) or ("no partition state was read",))
    full_at: dict[int, float] = {}
    for partition, ts in since.items():
        at = ts if ts is not None else polled_full_at
        if at is None:
            return IsrAfterHeal(None, None, tuple(waiting) or (f"partition {partition}",))
        full_at[partition] = max(0.0, at - healed_at)
    last = max(full_at, key=lambda p: (full_at[p], -p))
    return IsrAfterHeal(full_at[last], last)


def isr_shortfalls(partitions: Mapping[int, tuple[Sequence[int], Sequence[int]]]) -> list[str]:
    """``partition -> (isr, replicas)``: one phrase per partition whose ISR is not full."""
    return [f"partition {p} isr {sorted(isr)} of replicas {sorted(reps)}"
            for p, (isr, reps) in sorted(partitions.items()) if set(isr) != set(reps)]


# -------------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class BoundCheck:
    """One bound judged: a name a reviewer reads, the outcome, the figure and the bound."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Measured:
    """What a run measured for its bounds. A field is None when it was not measured, and
    a bound on it then fails: an unmeasured bound must not pass."""

    sends: Mapping[str, int] | None = None
    window: tuple[float, float] | None = None  # where gaps are measured (wall clock)
    window_from: str = "the first fault inject"
    gaps: Mapping[int, float] | None = None
    controller: ControllerChanges | None = None
    leader_epochs: Mapping[int, int] | None = None
    isr: IsrAfterHeal | None = None
    problems: Mapping[str, str] = field(default_factory=dict)  # bound key -> why not measured


def _s(seconds: float) -> str:
    return f"{seconds:g} s"


def _unmeasured(measured: Measured, key: str, what: str) -> str:
    return measured.problems.get(key) or f"{what} was not measured"


def evaluate(bounds: Bounds, measured: Measured) -> list[BoundCheck]:
    """One check per bound, in the order of :data:`BOUND_KEYS`."""
    checks: list[BoundCheck] = []
    checks += _send_checks(bounds, measured)
    checks += _gap_checks(bounds, measured)
    if bounds.controller_changes is not None:
        checks.append(_controller_check(bounds.controller_changes, measured))
    checks += _leader_checks(bounds, measured)
    if bounds.isr_full_after_heal_s is not None:
        checks.append(_isr_check(bounds.isr_full_after_heal_s, measured))
    return checks


def _send_checks(bounds: Bounds, measured: Measured) -> list[BoundCheck]:
    checks = []
    for bound, outcome, words in ((bounds.max_failed, hist.OUTCOME_FAILED, "failed"),
                                  (bounds.max_in_doubt, hist.OUTCOME_UNKNOWN, "in doubt")):
        if bound is None:
            continue
        name = f"at most {bound} sends {words}"
        if measured.sends is None:
            checks.append(BoundCheck(name, False, _unmeasured(measured, "sends", "the sends table")))
            continue
        count, total = measured.sends.get(outcome, 0), sum(measured.sends.values())
        detail = f"{count} of {total} sends ended {words}; bound {bound}"
        checks.append(BoundCheck(name, count <= bound, detail))
    return checks


def _gap_checks(bounds: Bounds, measured: Measured) -> list[BoundCheck]:
    if not bounds.measures_gaps:
        return []
    names = []
    if bounds.max_unavailable_s is not None:
        names.append(f"no partition without an acknowledgement for more than {_s(bounds.max_unavailable_s)}")
    names += [f"partition {p} without an acknowledgement for at most {_s(s)}"
              for p, s in sorted(bounds.unavailable_s.items())]
    if measured.gaps is None or measured.window is None:
        why = _unmeasured(measured, "gaps", "the longest gap between acknowledgements")
        return [BoundCheck(name, False, why) for name in names]
    start, end = measured.window
    where = f"from {measured.window_from} to the end of the workload ({end - start:.1f} s)"
    checks = []
    if bounds.max_unavailable_s is not None:
        limit = bounds.max_unavailable_s
        gaps = {p: g for p, g in measured.gaps.items() if p not in bounds.unavailable_s}
        if gaps:
            worst = max(gaps, key=lambda p: (gaps[p], -p))
            listing = ", ".join(f"{p}: {g:.2f} s" for p, g in sorted(gaps.items()))
            detail = (f"longest {gaps[worst]:.2f} s on partition {worst} {where}; per partition {listing}; "
                      f"bound {_s(limit)}")
            checks.append(BoundCheck(names[0], gaps[worst] <= limit, detail))
        else:
            checks.append(BoundCheck(names[0], False, "no partition without its own bound had any send"))
    for p, limit in sorted(bounds.unavailable_s.items()):
        name = f"partition {p} without an acknowledgement for at most {_s(limit)}"
        if p not in measured.gaps:
            checks.append(BoundCheck(name, False, f"no send went to partition {p}: nothing to measure"))
            continue
        gap = measured.gaps[p]
        checks.append(BoundCheck(name, gap <= limit, f"longest {gap:.2f} s {where}; bound {_s(limit)}"))
    return checks


def _controller_check(bound: CountRange, measured: Measured) -> BoundCheck:
    name = f"controller changes {bound.describe()}"
    found = measured.controller
    if found is None:
        return BoundCheck(name, False, _unmeasured(measured, "controller_changes", "the controller"))
    if found.first_epoch is None:
        return BoundCheck(name, False, "the sampler never read a controller epoch from ZooKeeper")
    seen = " -> ".join(found.controllers) or "none"
    detail = (f"{found.count} (controller epoch {found.first_epoch} -> {found.last_epoch}; "
              f"controllers seen {seen}); bound {bound.describe()}")
    return BoundCheck(name, bound.holds(found.count), detail)


def _leader_checks(bounds: Bounds, measured: Measured) -> list[BoundCheck]:
    wanted: list[tuple[str, CountRange, int | None]] = []
    if bounds.leader_epoch_changes is not None:
        wanted.append((f"leader-epoch changes on the topic {bounds.leader_epoch_changes.describe()}",
                       bounds.leader_epoch_changes, None))
    wanted += [(f"leader-epoch changes on partition {p} {r.describe()}", r, p)
               for p, r in sorted(bounds.leader_epoch_changes_by_partition.items())]
    checks = []
    for name, bound, partition in wanted:
        epochs = measured.leader_epochs
        if epochs is None:
            why = _unmeasured(measured, "leader_epoch_changes", "the leader epoch")
            checks.append(BoundCheck(name, False, why))
        elif partition is None:
            total = sum(epochs.values())
            listing = ", ".join(f"{p}: +{n}" for p, n in sorted(epochs.items())) or "no partition seen"
            checks.append(BoundCheck(name, bool(epochs) and bound.holds(total),
                                     f"{total} ({listing}); bound {bound.describe()}"))
        elif partition not in epochs:
            checks.append(BoundCheck(name, False, f"the sampler never saw partition {partition}'s leader"))
        else:
            checks.append(BoundCheck(name, bound.holds(epochs[partition]),
                                     f"{epochs[partition]}; bound {bound.describe()}"))
    return checks


def _isr_check(limit: float, measured: Measured) -> BoundCheck:
    name = f"every ISR full within {_s(limit)} of the last heal"
    isr = measured.isr
    if isr is None:
        why = _unmeasured(measured, "isr_full_after_heal_s", "the ISR after the heal")
        return BoundCheck(name, False, why)
    if isr.seconds is None:
        return BoundCheck(name, False, f"not full within the observation: {'; '.join(isr.waiting)}; "
                                       f"bound {_s(limit)}")
    return BoundCheck(name, isr.seconds <= limit,
                      f"full {isr.seconds:.2f} s after the last heal (partition {isr.last} last); "
                      f"bound {_s(limit)}")


# ------------------------------------------------------------------------ broker settings


def broker_setting_differences(declared: Mapping[str, str],
                               reported: Mapping[int, Mapping[str, str | None]]) -> list[str]:
    """Where a broker's own configuration differs from the settings a scenario declared.

    Kafka ignores a setting it does not know, so a misspelt name would otherwise run the
    scenario on a cluster without it; ``reported`` is broker id -> name -> value as the
    broker describes it (values as config files spell them, see ``format_value``).
    """
    differences = []
    for broker, config in sorted(reported.items()):
        for key, value in declared.items():
            if key not in config:
                differences.append(f"broker {broker} does not know {key}")
            elif config[key] != value:
                differences.append(f"broker {broker} has {key}={config[key]}, not {value}")
    return differences
