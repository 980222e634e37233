"""Checks over the metadata's history: how many controller elections and leader
elections the faults caused, and how soon after the last heal every ISR was full again.

The figures come from the run's cluster-state sampler (the ``cluster_state`` rows, as
:meth:`~harness.cluster.sampler.StateSampler.rows` hands them over or as read back from
Parquet: the same dicts) and, for the ISR, from a poll of the metadata after the heal,
since the sampler has stopped by the time the bound may run out. Each measure is a pure
function, unit-tested on made-up rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.scenario.checks.base import Check, CountRange, partition_listing
from harness.scenario.checks.evidence import CheckSpecError, Evidence, IsrAfterHeal
from harness.scenario.checks.tables import CHECKS, count_range, fields, label_of

# ------------------------------------------------------------------------------ measures


@dataclass(frozen=True)
class ControllerElections:
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


def controller_elections(rows: Iterable[Mapping[str, Any]]) -> ControllerElections:
    """Counted by controller epoch, not by changes seen: an election the sampler missed
    between two reads (or while the metadata was unreadable) still raised the epoch, and
    a moment with no controller between two controllers is not a change."""
    epochs: list[int] = []
    seen: list[str] = []
    for row in _readable(rows):
        if row["controller_epoch"] is not None:
            epochs.append(int(row["controller_epoch"]))
        controller = row["controller"]
        if controller is not None and (not seen or seen[-1] != str(controller)):
            seen.append(str(controller))
    if not epochs:
        return ControllerElections(0, None, None, tuple(seen))
    return ControllerElections(max(epochs) - epochs[0], epochs[0], max(epochs), tuple(seen))


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


def isr_full_after(healed_at: float, since: Mapping[int, float | None],
                   polled_full_at: float | None, waiting: Sequence[str] = ()) -> IsrAfterHeal:
    """Seconds from ``healed_at`` until the last partition's ISR was full.

    ``since`` comes from the sampler's samples (precise to its interval); a partition they
    do not show full is taken as full at ``polled_full_at``, when a poll of the metadata
    saw every ISR full, if one did. A partition full before the heal counts 0 s.
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


def _unsampled(evidence: Evidence) -> str | None:
    if evidence.cluster_rows is None:
        return "the cluster's metadata was not sampled"
    return None


# -------------------------------------------------------------------------------- checks


@CHECKS.kind("controller_changes")
@dataclass(frozen=True)
class ControllerChanges(Check):
    """The controller epoch rose by a number in ``count`` over the run."""

    count: CountRange
    label: str | None = None
    kind: ClassVar[str] = "controller_changes"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> ControllerChanges:
        return cls(count_range(raw["controller_changes"], what, "controller_changes"),
                   label_of(fields(raw, what)))

    def describe(self) -> str:
        return f"controller changes {self.count.describe()}"

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        missing = _unsampled(evidence)
        if missing is not None:
            return False, missing
        found = controller_elections(evidence.cluster_rows or ())
        if found.first_epoch is None:
            return False, "the sampler never read a controller epoch"
        seen = " -> ".join(found.controllers) or "none"
        return self.count.holds(found.count), (
            f"{found.count} (controller epoch {found.first_epoch} -> {found.last_epoch}; "
            f"controllers seen {seen}); bound {self.count.describe()}")

    def spec(self) -> dict[str, Any]:
        return {"controller_changes": self.count.to_dict()}


@CHECKS.kind("leader_epoch_changes")
@dataclass(frozen=True)
class LeaderEpochChanges(Check):
    """Leader elections on the scenario's topic: the rise of the leader epoch summed over
    its partitions lies in ``count``, or, with ``partitions``, that of each one named."""

    count: CountRange
    partitions: tuple[int, ...] | None = None
    label: str | None = None
    kind: ClassVar[str] = "leader_epoch_changes"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"partitions", "name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> LeaderEpochChanges:
        table = fields(raw, what)
        return cls(count_range(raw["leader_epoch_changes"], what, "leader_epoch_changes"),
                   table.ints("partitions"), label_of(table))

    def __post_init__(self) -> None:
        if self.partitions is not None and not self.partitions:
            raise CheckSpecError("leader_epoch_changes: 'partitions' names at least one partition")

    def describe(self) -> str:
        where = "the topic" if self.partitions is None else partition_listing(self.partitions)
        return f"leader-epoch changes on {where} {self.count.describe()}"

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        missing = _unsampled(evidence)
        if missing is not None:
            return False, missing
        epochs = leader_epoch_changes(evidence.cluster_rows or (), evidence.topic)
        bound = f"bound {self.count.describe()}"
        if self.partitions is None:
            total = sum(epochs.values())
            listing = ", ".join(f"{p}: +{n}" for p, n in sorted(epochs.items())) or "no partition seen"
            return bool(epochs) and self.count.holds(total), f"{total} ({listing}); {bound}"
        unseen = [p for p in self.partitions if p not in epochs]
        if unseen:
            return False, f"the sampler never saw partition {unseen[0]}'s leader"
        if len(self.partitions) == 1:
            [partition] = self.partitions
            return self.count.holds(epochs[partition]), f"{epochs[partition]}; {bound}"
        listing = ", ".join(f"p{p}: {epochs[p]}" for p in self.partitions)
        return all(self.count.holds(epochs[p]) for p in self.partitions), f"{listing}; {bound}"

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"leader_epoch_changes": self.count.to_dict()}
        if self.partitions is not None:
            out["partitions"] = list(self.partitions)
        return out


@CHECKS.kind("isr_full_after_heal_s")
@dataclass(frozen=True)
class IsrFullAfterHeal(Check):
    """Every ISR of the scenario's topic was full within ``within_s`` of the last heal.

    The runner polls the metadata after the heal for as long as this bound allows, so a
    scenario with this check waits for its ISRs before the history closes."""

    within_s: float
    label: str | None = None
    kind: ClassVar[str] = "isr_full_after_heal_s"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"name"})

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any], what: str) -> IsrFullAfterHeal:
        table = fields(raw, what)
        return cls(table.seconds("isr_full_after_heal_s"), label_of(table))

    def __post_init__(self) -> None:
        if not math.isfinite(self.within_s) or self.within_s < 0:
            raise CheckSpecError(f"isr_full_after_heal_s must be a non-negative number of seconds, "
                                 f"not {self.within_s!r}")

    def describe(self) -> str:
        return f"every ISR full within {self.within_s:g} s of the last heal"

    def judge(self, evidence: Evidence) -> tuple[bool, str]:
        isr = evidence.isr_after_heal
        bound = f"bound {self.within_s:g} s"
        if isr is None:
            return False, "the ISR after the heal was not measured"
        if isr.seconds is None:
            return False, f"not full within the observation: {'; '.join(isr.waiting)}; {bound}"
        return isr.seconds <= self.within_s, (
            f"full {isr.seconds:.2f} s after the last heal (partition {isr.last} last); {bound}")

    def spec(self) -> dict[str, Any]:
        return {"isr_full_after_heal_s": self.within_s}


def isr_bound_s(checks: Iterable[Check]) -> float | None:
    """How long after the last heal the runner must watch the ISRs: the longest
    :class:`IsrFullAfterHeal` bound among ``checks``, None without one."""
    return max((c.within_s for c in checks if isinstance(c, IsrFullAfterHeal)), default=None)
