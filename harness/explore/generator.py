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
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faults.registry import build_fault, fault_kinds
from faults.toxics import DEGRADATIONS
from topologies.model import Topology

TOPIC = "$topic"  # the round's topic, replaced by its real name when the round runs

# Left out of the default draw: topic_config changes the very settings whose promises a
# round judges (lowering min.insync.replicas would make loss "expected"), and power_loss
# of two replicas at once loses acknowledged records under Kafka's default flush settings,
# a trade of the configuration rather than a breach of what it promises; fill_disk needs a
# topology with broker disks. --faults names them to draw them.
EXCLUDED_BY_DEFAULT = ("topic_config", "power_loss", "fill_disk")

Entry = dict[str, Any]


@dataclass(frozen=True)
class Space:
    """What schedules are drawn from: the cluster's shape and the explorer's limits.

    ``max_concurrent`` bounds how many faults are in force at any moment; ``faults`` is
    the range of entries a round gets; each starts in ``[0, stretch_s)`` and lasts a
    duration in ``duration_s``."""

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

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(fault_kinds()))
        if unknown:
            raise ValueError(f"unknown fault kind(s) {', '.join(unknown)}; known: {', '.join(fault_kinds())}")
        if self.max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
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
        return cls(tuple(b.broker_id for b in topology.brokers), tuple(topology.zones),
                   tuple(z.name for z in topology.zookeepers), partitions, replication_factor, **limits)

    @property
    def drawn_kinds(self) -> tuple[str, ...]:
        return self.kinds or tuple(k for k in fault_kinds() if k not in EXCLUDED_BY_DEFAULT)


def draw_schedule(space: Space, seed: int) -> list[Entry]:
    """A round's schedule for ``seed``: entries sorted by start, never more than
    ``space.max_concurrent`` in force at once."""
    rng = random.Random(seed)
    wanted = rng.randint(*space.faults)
    entries: list[Entry] = []
    for _ in range(wanted):
        kind = rng.choice(space.drawn_kinds)
        duration = round(rng.uniform(*space.duration_s), 1)
        start = _free_start(entries, duration, space, rng)
        if start is None:
            continue  # the stretch is full at this concurrency: a shorter round
        entry: Entry = {"start_s": start, "duration_s": duration, "fault": kind, **_DRAWERS[kind](space, rng)}
        build_fault({k: v for k, v in entry.items() if k not in ("start_s", "duration_s")})
        entries.append(entry)
    return sorted(entries, key=lambda e: (e["start_s"], e["fault"]))


def in_force(entries: Sequence[Mapping[str, Any]], start: float, end: float) -> int:
    """The most entries in force at any moment of [start, end]."""
    points = [start] + [float(e["start_s"]) for e in entries if start <= float(e["start_s"]) <= end]
    return max(sum(float(e["start_s"]) <= t <= float(e["start_s"]) + float(e["duration_s"]) for e in entries)
               for t in points)


def _free_start(entries: list[Entry], duration: float, space: Space, rng: random.Random) -> float | None:
    for _ in range(50):
        start = round(rng.uniform(0.0, space.stretch_s), 1)
        if in_force(entries, start, start + duration) < space.max_concurrent:
            return start
    return None


# -- targets ---------------------------------------------------------------------------------

def _broker_role(space: Space, rng: random.Random) -> Any:
    """A broker by a role resolved when the fault strikes, or by id."""
    partition = rng.randrange(space.partitions)
    return rng.choice([
        "controller",
        {"leader_of": [TOPIC, partition]},
        {"follower_of": [TOPIC, partition]},
        {"broker": rng.choice(space.brokers)},
    ])


def _node(space: Space, rng: random.Random) -> Any:
    """A broker role or a ZooKeeper node: what a process fault can hit."""
    if space.zookeepers and rng.random() < 0.25:
        return rng.choice(["zookeeper_leader", {"node": rng.choice(space.zookeepers)}])
    return _broker_role(space, rng)


def _isolated(space: Space, rng: random.Random) -> Any:
    """What an isolation cuts off: a node or a whole zone."""
    if rng.random() < 0.3:
        return rng.choice([{"zone": rng.choice(space.zones)}, {"zone_of": "controller"}])
    return _node(space, rng)


def _links(space: Space, rng: random.Random) -> dict[str, Any]:
    """A link selection: an isolation, replication between two brokers, a broker's
    ZooKeeper session, or a zone's clients to a broker."""
    shape = rng.choice(["isolate", "replication", "zk-session", "client"])
    if shape == "isolate":
        return {"isolate": _isolated(space, rng)}
    if shape == "replication":  # one partition's follower and leader: never the same broker
        partition = rng.randrange(space.partitions)
        return {"from": {"follower_of": [TOPIC, partition]}, "to": {"leader_of": [TOPIC, partition]},
                "kind": "replication", "both_ways": rng.random() < 0.5}
    if shape == "zk-session" and space.zookeepers:
        return {"from": _broker_role(space, rng), "to": {"node": rng.choice(space.zookeepers)},
                "kind": "zk-session"}
    return {"from": {"zone_clients": rng.choice(space.zones)}, "to": _broker_role(space, rng),
            "kind": "client"}


# -- one drawer per fault kind: the parameters beside "fault" -----------------------------------

Drawer = Callable[[Space, random.Random], dict[str, Any]]


def _stream(rng: random.Random) -> str:
    return rng.choice(["both", "upstream", "downstream"])


def _degradation(kind: str) -> Drawer:
    def draw(space: Space, rng: random.Random) -> dict[str, Any]:
        links = _links(space, rng)
        if kind == "latency":
            latency = rng.randint(50, 500)
            return {"links": links, "latency_ms": latency, "jitter_ms": rng.randint(0, latency // 2),
                    "stream": _stream(rng)}
        if kind == "bandwidth":
            return {"links": links, "rate_kb_s": rng.choice([16, 64, 256, 1024]), "stream": _stream(rng)}
        if kind == "slow_close":
            return {"links": links, "delay_ms": rng.randint(100, 2000), "stream": _stream(rng)}
        if kind == "slicer":
            size = rng.randint(64, 1024)
            return {"links": links, "average_size": size, "size_variation": rng.randint(0, size // 2),
                    "delay_us": rng.randint(0, 1000), "stream": _stream(rng)}
        raise ValueError(f"no drawer for the degradation {kind!r}")  # a new toxic needs one
    return draw


_DRAWERS: dict[str, Drawer] = {
    "kill": lambda s, r: {"target": _node(s, r)},
    "power_loss": lambda s, r: {"target": _isolated(s, r)},
    "fill_disk": lambda s, r: {"target": _broker_role(s, r)},
    "pause": lambda s, r: {"target": _node(s, r)},
    "restart": lambda s, r: {"target": _node(s, r), "clean": r.random() < 0.5,
                             "downtime_s": round(r.uniform(0.0, 5.0), 1)},
    "bounce": lambda s, r: {"target": _broker_role(s, r), "times": r.randint(1, 3),
                            "clean": r.random() < 0.5},
    "controlled_shutdown": lambda s, r: {"target": _broker_role(s, r)},
    "cut": lambda s, r: {"links": _links(s, r), "mode": r.choice(["refuse", "blackhole"])},
    "isolate": lambda s, r: {"target": _isolated(s, r), "mode": r.choice(["refuse", "blackhole"])},
    **{kind: _degradation(kind) for kind in DEGRADATIONS},
    "expire_session": lambda s, r: {"target": _broker_role(s, r)},
    "delete_controller": lambda s, r: {},
    "preferred_election": lambda s, r: {"topic": TOPIC},
    "reassign": lambda s, r: {"topic": TOPIC, "partition": r.randrange(s.partitions),
                              "replicas": r.sample(list(s.brokers), s.replication_factor)},
    "topic_config": lambda s, r: {"topic": TOPIC,
                                  "settings": {"retention.ms": r.choice([60_000, 3_600_000])}},
}
