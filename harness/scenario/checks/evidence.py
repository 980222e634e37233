"""What a scenario's checks read: the moments the schedule's entries ran (:class:`Anchor`,
:class:`Moment`), the run's cluster-state timeline, sends and probes
(:class:`Evidence`), and what each check found (:class:`CheckResult`). Plain data, so
every check is unit-tested on made-up timelines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.cluster.state import ClusterState
from harness.errors import ChaosError

ACTIONS = ("inject", "heal")


class CheckSpecError(ChaosError, ValueError):
    """A check that cannot be evaluated as written; the message names the check."""


@dataclass(frozen=True, order=True)
class Anchor:
    """A moment of the schedule: entry ``entry``'s inject or heal (entries from 1)."""

    entry: int
    action: str = "inject"

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise CheckSpecError(f"an anchor is {{ inject = N }} or {{ heal = N }}, not {self.action!r}")
        if isinstance(self.entry, bool) or not isinstance(self.entry, int) or self.entry < 1:
            raise CheckSpecError(f"an anchor names a schedule entry from 1, not {self.entry!r}")

    def describe(self) -> str:
        return f"entry {self.entry}'s {self.action}"

    def to_spec(self) -> dict[str, int]:
        return {self.action: self.entry}

    @classmethod
    def parse(cls, raw: Any, what: str) -> Anchor:
        if not isinstance(raw, Mapping) or len(raw) != 1:
            raise CheckSpecError(f"{what} must be {{ inject = N }} or {{ heal = N }}, not {raw!r}")
        ((action, entry),) = raw.items()
        return cls(entry, action)


def inject(entry: int) -> Anchor:
    return Anchor(entry, "inject")


def heal(entry: int) -> Anchor:
    return Anchor(entry, "heal")


@dataclass(frozen=True)
class Moment:
    """When a schedule action ran: its start on both clocks (wall for the history's
    sends, monotonic for the cluster-state timeline)."""

    ts: float
    mono: float


@dataclass(frozen=True)
class Observed:
    """One distinct cluster state: first seen at ``mono``, last confirmed at ``until``."""

    mono: float
    until: float
    state: ClusterState


@dataclass(frozen=True)
class Lookup:
    """A fresh consumer's look-up: the first offset written at or after ``since`` (wall
    clock), and the first record it then read (offset and timestamp in ms), if any."""

    since: float
    offset: int
    first_read: int | None
    first_ts_ms: int | None

    @property
    def resumed(self) -> bool:
        """Read from exactly the offset looked up, a record written no earlier than asked."""
        return (self.offset >= 0 and self.first_read == self.offset and self.first_ts_ms is not None
                and self.first_ts_ms >= int(self.since * 1000))


@dataclass(frozen=True)
class Produced:
    """What a probe's producer got: sends acknowledged, sends failed, the errors seen."""

    acked: int
    failed: int
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeResult:
    """What a probe found: the broker's view as a cluster state, a consumer's look-up,
    or why the broker or client did not answer."""

    probe: str
    ts: float
    state: ClusterState | None
    error: str | None = None
    lookup: Lookup | None = None
    produced: Produced | None = None
    read: tuple[int, int] | None = None  # a read probe: (partition, records read from its start)

    def to_dict(self) -> dict[str, Any]:
        state = self.state
        return {"probe": self.probe, "ts": self.ts, "error": self.error,
                "lookup": None if self.lookup is None else vars(self.lookup),
                "produced": None if self.produced is None else vars(self.produced),
                "read": None if self.read is None else {"partition": self.read[0], "records": self.read[1]},
                "view": None if state is None else {
                    "brokers": list(state.live_brokers), "controller": state.controller,
                    "partitions": {f"{t}-{p}": {"leader": s.leader, "isr": list(s.isr)}
                                   for (t, p), s in sorted(state.partitions.items())}}}


@dataclass(frozen=True)
class IsrAfterHeal:
    """How long after the last heal every ISR was full; ``seconds`` None: not within the
    observation (``waiting`` says which partitions were still short, and of what)."""

    seconds: float | None
    last: int | None  # the partition that became full last
    waiting: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """What a finished run recorded, as the checks read it."""

    timeline: Sequence[Observed]
    moments: Mapping[Anchor, Moment]
    sends: Sequence[Mapping[str, Any]]  # rows of the history's sends table
    end: Moment  # when the workload stopped: open windows end there
    polls: Sequence[Mapping[str, Any]] = ()  # rows of the history's polls table
    attempts: Sequence[Mapping[str, Any]] = ()  # rows of the history's attempts table
    probes: Mapping[str, ProbeResult] = field(default_factory=dict)  # by probe name
    commits: Sequence[Mapping[str, Any]] = ()  # rows of the history's commits table
    transactions: Sequence[Mapping[str, Any]] = ()  # rows of the history's transactions table
    final_log: Sequence[Mapping[str, Any]] = ()  # rows of the history's final_log table
    final_offsets: Sequence[Mapping[str, Any]] = ()  # rows of the history's final_offsets table
    topic: str = ""  # the scenario's topic, whose partitions the metadata checks read
    # The sampler's cluster_state rows; None when the metadata was not sampled.
    cluster_rows: Sequence[Mapping[str, Any]] | None = None
    isr_after_heal: IsrAfterHeal | None = None  # None: no check asked for the ISR after the heal
    # Producers whose client reports no failed attempt (Kafka's Java client): an attempts
    # check on them cannot be judged, so it fails saying so rather than count nothing.
    attempts_unreported: frozenset[str] = frozenset()

    def moment(self, anchor: Anchor) -> Moment | None:
        return self.moments.get(anchor)

    def window(self, start: Anchor | None, until: Anchor | None) -> tuple[Moment, Moment] | str:
        """The moments ``start`` and ``until`` (the run's start and end when None), or why not."""
        first = min(self.moments.values(), key=lambda m: m.mono, default=None) if start is None \
            else self.moment(start)
        if first is None:
            return "no schedule action ran" if start is None else f"{start.describe()} never ran"
        last = self.end if until is None else self.moment(until)
        if last is None:
            assert until is not None
            return f"{until.describe()} never ran"
        if last.mono < first.mono:
            return "the window ends before it starts"
        return first, last

    def states(self, start: float, end: float) -> list[Observed]:
        """Every state in force at some moment of [start, end] (monotonic)."""
        return [o for o in self.timeline if o.mono <= end and o.until >= start]

    def baseline(self, before: float) -> ClusterState | None:
        """The last state first seen before ``before``: what a comparing condition compares with."""
        earlier = [o for o in self.timeline if o.mono < before]
        return earlier[-1].state if earlier else None


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str
