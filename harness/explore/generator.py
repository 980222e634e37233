"""Random fault schedules, drawn from the whole fault library and reproducible by seed.

A round's schedule is a list of entries in the scenario-file form
(``{"start_s": .., "duration_s": .., "fault": "kill", "target": "controller"}``), so a
round can be saved, replayed and shrunk as data, and the smallest failing one written out
as a scenario file. Targets are roles (``controller``, ``leader_of``, a zone) resolved by
the fault library when each fault strikes: the same schedule means the same thing on any
cluster of the same shape.

Everything random comes from one ``random.Random(seed)`` and the draws happen in a fixed
order, so a seed names a schedule on every machine and Python version that keeps
``random``'s documented reproducibility. Each drawn entry is built once through the fault
registry, so a drawer that writes a spec the library would refuse fails here, not in a
round against a cluster.

What is drawn for each kind, and whether it is drawn at all by default or during a
migration, is the kind's own entry (:class:`faults.kinds.FaultKind`, declared on its class
with the target drawers of :mod:`faults.draw`); the tables here are derived from them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faults.draw import TOPIC, Drawer
from faults.registry import KINDS, build_fault, fault_kinds, kinds_for
from harness.cluster.migration.plan import Phase
from topologies.model import Topology

# Left out of the default draw (--faults names them to draw them): the kinds whose entry
# says why (``not_drawn_by_default``: a kind that changes the very settings a round judges,
# a trade of the configuration rather than a breach of its promises, a kind needing a
# topology of its own).
EXCLUDED_BY_DEFAULT = tuple(kind for kind, entry in KINDS.items() if entry.not_drawn_by_default)

# During a migration a fault is anchored to a phase the KRaft controllers run in (the
# walk's own provision starts them), and strikes as that phase begins. Left out there:
# the kinds whose entry says why (``not_during_migration``); a kind whose entry names
# ``migration_phases`` is anchored to those alone.
MIGRATION_PHASES: tuple[str, ...] = (Phase.ENTER_MIGRATION, Phase.COPY, Phase.DUAL_WRITE, Phase.BROKER_ROLL,
                                     Phase.FINALIZE)
EXCLUDED_DURING_MIGRATION = tuple(kind for kind, entry in KINDS.items() if entry.not_during_migration)
PHASES_OF_KIND: dict[str, tuple[str, ...]] = {
    kind: entry.migration_phases for kind, entry in KINDS.items() if entry.migration_phases
}

# The share of partition roles (leader_of, follower_of, a replication link) that name the
# round's focus partition rather than any partition. Some losses need several faults on one
# partition's replicas: an unclean election loses acknowledged records only once both
# followers are out of the ISR and then the leader is gone. Drawn independently over six
# partitions, three roles meet on one partition about once in 36 tries; with most roles
# aimed at one partition the explorer draws such rounds often, and still draws the others.
FOCUS_SHARE = 0.75

Entry = dict[str, Any]

# An ISR squeeze: the kinds that can take a follower out of the ISR and those that can
# take a leader down. A round whose dealt kinds can play those roles, with room for
# three faults at once, is a squeeze this often. A follower is taken out by stopping it
# or cutting it off from every node (pause, kill, isolate): the controller then drops it
# once its ZooKeeper session expires. A replication cut is not one of them: it leaves the
# shrink to the leader's AlterPartition request to the controller, which the cut blocks
# too when the follower it cuts off is the controller (an exploration's squeeze did that:
# the ISR stayed whole, so acks=all writes waited instead of resting on the leader alone).
FOLLOWER_OUT = ("pause", "kill", "isolate")
LEADER_DOWN = ("kill", "isolate", "pause")
SQUEEZE_SHARE = 0.5
# Past Kafka's own bounds, the time an ISR change takes to reach ZooKeeper on a busy
# machine (the leader's AlterPartition, the controller's write). 2 s was seen too short:
# two squeezes' leaders went down 9.5 s after the second follower, still in the ISR.
LEAVE_ISR_MARGIN_S = 5.0
# Kafka's own defaults, for a topology that does not set them.
_LAG_MS, _SESSION_MS = 30_000, 18_000


def leave_isr_s(topology: Topology) -> float:
    """How long after a follower stops fetching it has surely left the ISR: its leader
    drops it once it lags replica.lag.time.max.ms, checking every half of that, and the
    controller drops a dead one when its session expires (ZooKeeper's, or the KRaft
    controllers' broker session); plus
    LEAVE_ISR_MARGIN_S. Kafka's settings, read from the topology, never a guess (12.5 s on
    three_az)."""
    settings = topology.broker_settings
    lag = float(settings.get("replica.lag.time.max.ms", _LAG_MS))
    session = float(settings.get("zookeeper.session.timeout.ms",
                                 topology.controller_settings.get("broker.session.timeout.ms", _SESSION_MS)))
    return round(max(1.5 * lag, session) / 1000 + LEAVE_ISR_MARGIN_S, 1)


@dataclass(frozen=True)
class Space:
    """What schedules are drawn from: the cluster's shape and the explorer's limits.

    ``max_concurrent`` bounds how many faults are in force at any moment; ``faults`` is
    the range of entries a round gets; each starts in ``[0, stretch_s)`` and lasts a
    duration in ``duration_s``, but for an ISR squeeze's three (see ``_squeeze``), timed
    by ``leave_isr_s``."""

    brokers: tuple[int, ...]
    zones: tuple[str, ...]
    zookeepers: tuple[str, ...]
    partitions: int
    replication_factor: int = 3
    kinds: tuple[str, ...] = ()  # () means every kind but EXCLUDED_BY_DEFAULT
    max_concurrent: int = 2
    faults: tuple[int, int] = (1, 4)
    stretch_s: float = 60.0
    duration_s: tuple[float, float] = (2.0, 20.0)
    # How long after a follower is taken out it has surely left the ISR (see leave_isr_s).
    leave_isr_s: float = 12.5
    # The KRaft controllers that are nodes of their own, by id (none in ZooKeeper mode or
    # a combined layout, where the active controller is a broker).
    controllers: tuple[int, ...] = ()
    # The kinds the cluster can take (faults.registry.kinds_for); () means every kind.
    runnable: tuple[str, ...] = ()
    # The migration phases faults are anchored to (MIGRATION_PHASES), in walk order; ()
    # when the round walks no migration and faults are timed from the round's start.
    phases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(fault_kinds()))
        if unknown:
            raise ValueError(f"unknown fault kind(s) {', '.join(unknown)}; known: {', '.join(fault_kinds())}")
        refused = sorted(set(self.kinds) - set(self.runnable or fault_kinds()))
        if refused:
            raise ValueError(f"fault kind(s) {', '.join(refused)} cannot run on this cluster (another "
                             f"metadata mode's own); it takes: {', '.join(self.runnable)}")
        if self.max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        unknown_phases = sorted(set(self.phases) - set(MIGRATION_PHASES))
        if unknown_phases:
            raise ValueError(f"no migration phase(s) {', '.join(unknown_phases)} to anchor faults to; "
                             f"phases: {', '.join(MIGRATION_PHASES)}")
        excluded = sorted(set(self.kinds) & set(EXCLUDED_DURING_MIGRATION)) if self.phases else []
        if excluded:
            raise ValueError(f"fault kind(s) {', '.join(excluded)} are not drawn during a migration "
                             "(they act through ZooKeeper's admin paths)")
        low, high = self.faults
        if not 1 <= low <= high:
            raise ValueError(f"faults per round must be a range of at least 1, not {self.faults}")
        if not 0 < self.duration_s[0] <= self.duration_s[1]:
            raise ValueError(f"duration_s must be a positive range, not {self.duration_s}")
        if self.stretch_s <= 0:
            raise ValueError("stretch_s must be positive")
        if not self.brokers or not self.zones or self.partitions < 1:
            raise ValueError("a space needs brokers, zones and at least one partition")
        if not 1 <= self.replication_factor <= len(self.brokers):
            raise ValueError(f"replication factor {self.replication_factor} needs as many brokers")

    @classmethod
    def of(cls, topology: Topology, partitions: int, replication_factor: int = 3, **limits: Any) -> Space:
        """The space of ``topology``'s cluster; ``phases=MIGRATION_PHASES`` in
        ``limits`` anchors faults to a migration's phases (a migrating topology)."""
        limits.setdefault("leave_isr_s", leave_isr_s(topology))
        return cls(tuple(b.broker_id for b in topology.brokers), tuple(topology.zones),
                   tuple(z.name for z in topology.zookeepers), partitions, replication_factor,
                   controllers=tuple(c.node_id for c in topology.dedicated_controllers),
                   runnable=kinds_for(topology), **limits)

    @property
    def drawn_kinds(self) -> tuple[str, ...]:
        every = self.runnable or tuple(fault_kinds())
        left_out = EXCLUDED_BY_DEFAULT + (EXCLUDED_DURING_MIGRATION if self.phases else ())
        return self.kinds or tuple(k for k in every if k not in left_out)

    @property
    def quorum_leader(self) -> str:
        """The role naming the controllers' leader: ``active_controller`` on a KRaft
        cluster; ``quorum_leader`` in a migration, where ``/controller`` names a
        ZooKeeper-mode broker until the copy."""
        return "quorum_leader" if self.phases else "active_controller"


@dataclass(frozen=True)
class Draw:
    """What a drawer draws with (:class:`faults.draw.Draw`): the space, the round's random
    source, and the round's focus partition (see FOCUS_SHARE)."""

    space: Space
    rng: random.Random
    focus: int

    def partition(self) -> int:
        """A partition for a role target: mostly the focus, sometimes any."""
        if self.rng.random() < FOCUS_SHARE:
            return self.focus
        return self.rng.randrange(self.space.partitions)


def planned_entries(space: Space, seed: int) -> int:
    """How many entries the round with ``seed`` draws (some may not fit in its stretch)."""
    rng = random.Random(seed)
    rng.randrange(space.partitions)  # the focus partition, drawn first
    return rng.randint(*space.faults)


class KindsInTurn:
    """The kinds of an exploration's entries dealt like cards, across rounds: each pass
    over ``space.drawn_kinds`` is a fresh shuffle (from the exploration's seed and the
    pass's number), and entry ``i`` of a round is card ``dealt + i``, ``dealt`` being the
    entries planned by the rounds before. So every kind is exercised within the first
    ``len(space.drawn_kinds)`` entries (six rounds or so), while the kinds a round holds
    together still vary; drawn freely, a kind went missing from a 30-minute exploration
    (about a dozen rounds) more often than not."""

    def __init__(self, space: Space, seed: int) -> None:
        self.kinds = space.drawn_kinds
        self.seed = seed
        self.dealt = 0

    def card(self, position: int) -> str:
        """The kind at ``position`` of the deal."""
        deal, index = divmod(position, len(self.kinds))
        return random.Random(self.seed * 1_000_003 + deal).sample(self.kinds, len(self.kinds))[index]

    def kinds_of(self, entries: int) -> list[str]:
        """The kinds of the next round's ``entries`` entries; they count as dealt."""
        turn = [self.card(self.dealt + i) for i in range(entries)]
        self.dealt += entries
        return turn


def draw_schedule(space: Space, seed: int, kinds: Sequence[str] | None = None) -> list[Entry]:
    """A round's schedule for ``seed``: entries sorted by start, never more than
    ``space.max_concurrent`` in force at once; entry ``i`` of kind ``kinds[i]`` when given
    (see KindsInTurn), else of a kind drawn at random."""
    unknown = sorted(set(kinds or ()) - set(space.drawn_kinds))
    if unknown:
        raise ValueError(f"kind(s) {', '.join(unknown)} not among the kinds drawn: "
                         f"{', '.join(space.drawn_kinds)}")
    rng = random.Random(seed)
    draw = Draw(space, rng, rng.randrange(space.partitions))
    wanted = rng.randint(*space.faults)
    chosen = [rng.choice(space.drawn_kinds) for _ in range(wanted)]
    if kinds is not None:
        chosen[: len(kinds)] = kinds[:wanted]
    if space.phases:
        return _anchored(draw, chosen)
    entries = _squeeze(draw, chosen) if rng.random() < SQUEEZE_SHARE else []
    squeezed = len(entries)
    for kind in chosen[squeezed:]:
        duration = round(rng.uniform(*space.duration_s), 1)
        start = _free_start(entries, duration, space, rng)
        if start is None:
            continue  # the stretch is full at this concurrency: a shorter round
        entry: Entry = {"start_s": start, "duration_s": duration, "fault": kind, **_DRAWERS[kind](draw)}
        build_fault({k: v for k, v in entry.items() if k not in ("start_s", "duration_s")})
        entries.append(entry)
    return sorted(entries, key=lambda e: (e["start_s"], e["fault"]))


def _squeeze(d: Draw, chosen: list[str]) -> list[Entry]:
    """An ISR squeeze on the focus partition, when three of ``chosen`` can play its roles
    and three faults may be in force at once: a follower taken out, then (once it has
    left the ISR) the other in-sync follower, then the leader taken down while both are
    out; the followers come back while the leader is still down. Whatever the kinds, this
    is where an unclean election loses acknowledged records and where a safe
    configuration must refuse writes instead. Those three kinds move to the front of
    ``chosen`` (so the caller draws the rest after them); [] when no squeeze fits."""
    space = d.space
    outs = [i for i, kind in enumerate(chosen) if kind in FOLLOWER_OUT][:2]
    downs = [i for i, kind in enumerate(chosen) if kind in LEADER_DOWN and i not in outs][:1]
    gap = space.leave_isr_s
    if len(outs) < 2 or not downs or space.max_concurrent < 3 or space.replication_factor < 3 \
            or space.stretch_s < 4 * gap:
        return []
    picked = [*outs, *downs]
    chosen[:] = [chosen[i] for i in picked] + [k for i, k in enumerate(chosen) if i not in picked]
    start = round(d.rng.uniform(0.0, space.stretch_s - 4 * gap), 1)
    follower = {"follower_of": [TOPIC, d.focus]}
    leader = {"leader_of": [TOPIC, d.focus]}
    timing = [(start, 2 * gap + 2), (start + gap, gap + 2), (start + 2 * gap, 2 * gap)]
    entries: list[Entry] = []
    for kind, role, (at, lasting) in zip(chosen[:3], (follower, follower, leader), timing, strict=True):
        entry: Entry = {"start_s": round(at, 1), "duration_s": round(lasting, 1), "fault": kind}
        if kind == "cut":
            entry["links"] = {"from": role, "to": leader, "kind": "replication", "both_ways": True}
        else:
            entry["target"] = role
        if kind in ("cut", "isolate"):
            entry["mode"] = d.rng.choice(["refuse", "blackhole"])
        build_fault({k: v for k, v in entry.items() if k not in ("start_s", "duration_s")})
        entries.append(entry)
    return entries


def _anchored(d: Draw, chosen: list[str]) -> list[Entry]:
    """A migration round's entries: each of ``chosen`` anchored to a phase of its own
    (``when = { migration_phase = .. }``, waited for from the round's start), so two
    entries never strike as the same phase begins; a kind with no phase left for it is
    dropped (a shorter round). Sorted by phase, in walk order."""
    space, rng = d.space, d.rng
    free = list(space.phases)
    entries: list[Entry] = []
    for kind in chosen:
        allowed = [p for p in free if p in PHASES_OF_KIND.get(kind, space.phases)]
        if not allowed:
            continue
        phase = rng.choice(allowed)
        free.remove(phase)
        entry: Entry = {"start_s": 0.0, "duration_s": round(rng.uniform(*space.duration_s), 1), "fault": kind,
                        **_DRAWERS[kind](d), "when": {"migration_phase": phase}}
        build_fault({k: v for k, v in entry.items() if k not in ("start_s", "duration_s", "when")})
        entries.append(entry)
    return sorted(entries, key=lambda e: space.phases.index(e["when"]["migration_phase"]))


def in_force(entries: Sequence[Mapping[str, Any]], start: float, end: float) -> int:
    """The most entries in force at any moment of [start, end]."""
    points = [start] + [float(e["start_s"]) for e in entries if start <= float(e["start_s"]) <= end]
    return max(sum(float(e["start_s"]) <= t <= float(e["start_s"]) + float(e["duration_s"]) for e in entries)
               for t in points)


def _free_start(entries: list[Entry], duration: float, space: Space, rng: random.Random) -> float | None:
    for _ in range(50):
        # Rounding may reach the stretch's end, which a start must stay before; only that
        # edge is moved, so every other seed draws what it always drew.
        start = min(round(rng.uniform(0.0, space.stretch_s), 1), round(space.stretch_s - 0.1, 1))
        if in_force(entries, start, start + duration) < space.max_concurrent:
            return start
    return None


# -- one drawer per fault kind: the parameters beside "fault", from the kind's entry -----------

_DRAWERS: dict[str, Drawer] = {kind: entry.draw for kind, entry in KINDS.items()}
