"""How the explorer draws a fault's parameters: the words every kind's drawer is written in.

Each fault kind's entry (:mod:`faults.kinds`) carries a drawer: given a :class:`Draw` (the
space schedules are drawn from, the round's random source, its focus partition) it
returns the spec's parameters beside ``"fault"``. The drawers aim at roles, never at
resolved nodes, and they are written with the target drawers here (:func:`node`,
:func:`broker_role`, :func:`isolated`, :func:`links`), so that every kind hits the same
roles the same way. :mod:`harness.explore.generator` supplies the draw; this module is
pure (no cluster, no I/O).

Everything random comes from ``d.rng``, in a fixed order: a drawer must draw the same
values in the same order for a seed to keep naming one schedule.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

TOPIC = "$topic"
"""The round's topic, replaced by its real name when the round runs."""


class DrawSpace(Protocol):
    """What a drawer may know of the cluster: its shape, never its state."""

    @property
    def brokers(self) -> tuple[int, ...]: ...

    @property
    def zones(self) -> tuple[str, ...]: ...

    @property
    def zookeepers(self) -> tuple[str, ...]: ...

    @property
    def partitions(self) -> int: ...

    @property
    def replication_factor(self) -> int: ...

    @property
    def controllers(self) -> tuple[int, ...]:
        """The KRaft controllers that are nodes of their own, by id (none in ZooKeeper mode)."""
        ...

    @property
    def phases(self) -> tuple[str, ...]:
        """The migration phases faults are anchored to; () when no migration is walked."""
        ...

    @property
    def quorum_leader(self) -> str:
        """The role naming the controllers' leader (``active_controller`` or ``quorum_leader``)."""
        ...


class Draw(Protocol):
    """One draw: the space, the round's random source, and a partition for a role target."""

    @property
    def space(self) -> DrawSpace: ...

    @property
    def rng(self) -> random.Random: ...

    def partition(self) -> int:
        """A partition for a role target: mostly the round's focus, sometimes any."""
        ...


Drawer = Callable[[Draw], dict[str, Any]]
"""A kind's drawer: the parameters of its spec beside ``"fault"``."""


# -- targets ---------------------------------------------------------------------------------

def broker_role(d: Draw) -> Any:
    """A broker by a role resolved when the fault strikes, or by id; the active
    controller is one only where it is a broker (not a dedicated KRaft controller)."""
    partition = d.partition()
    return d.rng.choice([
        *(() if d.space.controllers else ("controller",)),
        {"leader_of": [TOPIC, partition]},
        {"follower_of": [TOPIC, partition]},
        {"broker": d.rng.choice(d.space.brokers)},
    ])


def quorum_node(d: Draw) -> Any:
    """A node of a dedicated KRaft quorum: its leader, one by id, or a majority."""
    return d.rng.choice([d.space.quorum_leader, {"controller": d.rng.choice(d.space.controllers)},
                         "controller_majority"])


def process_target(d: Draw) -> Any:
    """A broker role or a metadata quorum node: what a process fault can hit."""
    if d.space.zookeepers and d.rng.random() < 0.25:
        return d.rng.choice(["zookeeper_leader", {"node": d.rng.choice(d.space.zookeepers)}])
    if d.space.controllers and d.rng.random() < 0.25:
        return quorum_node(d)
    return broker_role(d)


def isolation_target(d: Draw) -> Any:
    """What an isolation cuts off: a node or a whole zone."""
    if d.rng.random() < 0.3:
        controller = d.space.quorum_leader if d.space.controllers else "controller"
        return d.rng.choice([{"zone": d.rng.choice(d.space.zones)}, {"zone_of": controller}])
    return process_target(d)


def link_selection(d: Draw) -> dict[str, Any]:
    """A link selection: an isolation, replication between two brokers, a broker's link
    to the metadata (its ZooKeeper session, or its heartbeats to a KRaft controller), a
    zone's clients to a broker, or (KRaft) one controller's Raft link to another."""
    rng = d.rng
    shape = rng.choice(["isolate", "replication", "zk-session", "client",
                        *(("quorum",) if d.space.controllers else ()),
                        *(("controller-links",) if d.space.phases else ())])
    if shape == "isolate":
        return {"isolate": isolation_target(d)}
    if shape == "replication":  # one partition's follower and leader: never the same broker
        partition = d.partition()
        return {"from": {"follower_of": [TOPIC, partition]}, "to": {"leader_of": [TOPIC, partition]},
                "kind": "replication", "both_ways": rng.random() < 0.5}
    if shape == "zk-session" and d.space.zookeepers:
        return {"from": broker_role(d), "to": {"node": rng.choice(d.space.zookeepers)},
                "kind": "zk-session"}
    if shape == "zk-session" and d.space.controllers:  # the KRaft counterpart: heartbeats
        return {"from": broker_role(d), "to": rng.choice([{"controller": rng.choice(d.space.controllers)},
                                                         "all_controllers"]), "kind": "kraft-broker"}
    if shape == "controller-links":  # a controller's own links in a migration: ZooKeeper, or a broker
        controller = {"controller": rng.choice(d.space.controllers)}
        if rng.random() < 0.5:
            return {"from": rng.choice([controller, "all_controllers"]),
                    "to": rng.choice([{"node": rng.choice(d.space.zookeepers)}, "all_zookeepers"]),
                    "kind": "zk-session"}
        return {"from": controller, "to": broker_role(d), "kind": "controller-rpc"}
    if shape == "quorum":
        source, destination = rng.sample(d.space.controllers, 2)
        return {"from": {"controller": source}, "to": {"controller": destination}, "kind": "kraft-quorum",
                "both_ways": rng.random() < 0.5}
    return {"from": {"zone_clients": rng.choice(d.space.zones)}, "to": broker_role(d),
            "kind": "client"}


def cut_mode(d: Draw) -> str:
    """How links are cut: refused, or blackholed."""
    return d.rng.choice(["refuse", "blackhole"])


def stream(rng: random.Random) -> str:
    """Which direction of a link a degradation acts on."""
    return rng.choice(["both", "upstream", "downstream"])


__all__ = ["TOPIC", "Draw", "DrawSpace", "Drawer", "broker_role", "cut_mode", "isolation_target",
           "link_selection", "process_target", "quorum_node", "stream"]
