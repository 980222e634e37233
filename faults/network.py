"""Network faults through the Toxiproxy fabric: cuts, partitions and degradations.

Two ways to cut, because applications react to them very differently:

* ``refuse`` disables the link's proxy. Toxiproxy closes the link's connections and
  stops listening, so new connections are refused at once: the sender learns
  immediately that the peer is unreachable (a crashed host, a closed port).
* ``blackhole`` adds a Toxiproxy ``timeout`` toxic with timeout 0 on both streams:
  connections stay open but nothing passes, so the sender only learns by timing out -
  what a real network partition looks like. The toxic drops what it swallows, so a
  connection that lived through the blackhole would resume with bytes missing; healing
  therefore removes the toxics and then closes the link's connections (a brief disable
  and enable), and peers reconnect cleanly, as they would after a partition long
  enough for TCP to give up.

Partitions are built from link selections (:mod:`faults.targets`): one directed link,
both directions between two nodes, every link of a node, every link crossing a zone's
border. Degradations (latency with jitter, bandwidth, slow close, slicer) apply a toxic
to each selected link; per zone, select ``Isolation(Zone(z))``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from toxiproxy.exceptions import NotFound

from faults.base import Fault
from faults.draw import cut_mode as draw_cut_mode
from faults.draw import isolation_target, link_selection
from faults.errors import FaultSpecError
from faults.kinds import FaultDoc, FaultKind, Param, enter, fault_kind, links_param, target_param
from faults.spec import check_keys, optional
from faults.targets import (
    Controller,
    Isolation,
    Links,
    LinkTarget,
    Node,
    Target,
    Zone,
    ZoneOf,
    parse_links,
    target_from,
)
from faults.toxics import DEGRADATIONS, Toxic, blackhole, toxic_from_spec, toxic_to_params
from harness.cluster.fabric import LinkKind
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl


class CutMode(StrEnum):
    REFUSE = "refuse"
    BLACKHOLE = "blackhole"


def cut_mode(value: str) -> CutMode:
    try:
        return CutMode(value)
    except ValueError:
        modes = ", ".join(m.value for m in CutMode)
        raise FaultSpecError(f"unknown cut mode {value!r}; modes are {modes}") from None


MODE_PARAM = Param(
    "mode", "string",
    "How the links are cut: `refuse` (connections refused at once) or `blackhole` (open, silent); "
    "see [Cut modes](#cut-modes).",
    "blackhole", "refuse",
)


class LinkFault(Fault):
    """A fault on every link a :class:`LinkTarget` selects when it is injected."""

    def __init__(self, links: LinkTarget) -> None:
        super().__init__()
        self.links = links
        # Toxic names unique to this fault, so healing removes exactly its own toxics.
        self._toxic_prefix = f"kc-{uuid.uuid4().hex[:8]}"

    def check(self, topology: Topology) -> None:
        self.links.check(topology)

    def check_exists(self, cluster: ClusterControl) -> None:
        self.links.check_exists(cluster)

    def _resolve(self, cluster: ClusterControl) -> tuple[str, ...]:
        return self.links.resolve(cluster)

    def _add_toxic(self, cluster: ClusterControl, link: str, toxic: Toxic) -> None:
        for stream in toxic.streams:
            name = f"{self._toxic_prefix}-{toxic.type}-{stream}"
            cluster.proxies.add_toxic(link, toxic.type, stream, dict(toxic.attributes), name)

    def _remove_toxic(self, cluster: ClusterControl, link: str, toxic: Toxic) -> None:
        for stream in toxic.streams:
            # Never added (a half-applied inject) or already removed: heal is idempotent.
            with contextlib.suppress(NotFound):
                cluster.proxies.remove_toxic(link, f"{self._toxic_prefix}-{toxic.type}-{stream}")


# Stacked: the decorator nearest the class registers first, so `cut` comes before `isolate`.
@fault_kind(
    FaultDoc(
        "isolate",
        "Shorthand for a `cut` of every link with exactly one end in the target: a node, or a zone with "
        "its clients, cut off from everything else.",
        "As `cut`.",
        (
            target_param({"zone": "c"},
                         "The node, zone or role to cut off, resolved when the fault strikes."),
            MODE_PARAM,
        ),
        {"fault": "isolate", "target": {"zone": "c"}},
        15.0,
        ("Saved and reported as the equivalent `cut` with `links = { isolate = ... }`.",),
    ),
    draw=lambda d: {"target": isolation_target(d), "mode": draw_cut_mode(d)},
    builder="isolate_from_spec",
)
@fault_kind(
    FaultDoc(
        "cut",
        "Cuts every selected link: each is a directed Toxiproxy proxy, so one direction can be cut "
        "without the other.",
        "Enables the links again; after a blackhole it first removes the toxics and closes the links' "
        "connections, so peers reconnect instead of resuming a stream with bytes missing.",
        (
            links_param({"from": {"follower_of": ["$topic", 0]}, "to": {"leader_of": ["$topic", 0]},
                         "kind": "replication"}),
            MODE_PARAM,
        ),
        {"fault": "cut", "links": {"from": {"follower_of": ["$topic", 0]}, "to": {"leader_of": ["$topic", 0]},
                                   "kind": "replication"}, "mode": "blackhole"},
        10.0,
        ("A follower's fetch link is the `replication` link from the follower to the leader.",),
    ),
    draw=lambda d: {"links": link_selection(d), "mode": draw_cut_mode(d)},
)
class Cut(LinkFault):
    """Cut the selected links, refusing connections or blackholing them."""

    kind = "cut"

    def __init__(self, links: LinkTarget, mode: CutMode | str = CutMode.REFUSE) -> None:
        super().__init__(links)
        self.mode = cut_mode(str(mode))

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Cut:
        what = "fault 'cut'"
        check_keys(spec, ["fault", "links", "mode"], what)
        if "links" not in spec:
            raise FaultSpecError(f"{what} needs 'links'")
        return cls(parse_links(spec["links"]), optional(spec, "mode", str, "refuse", what))

    @classmethod
    def isolate_from_spec(cls, spec: Mapping[str, Any]) -> Cut:
        what = "fault 'isolate'"
        check_keys(spec, ["fault", "target", "mode"], what)
        return cls(Isolation(target_from(spec, "target", what)), optional(spec, "mode", str, "refuse", what))

    def describe(self) -> str:
        return f"cut[{self.mode}] {self.links.describe()}"

    @property
    def registry_kind(self) -> str:
        """``isolate`` when the links are a target's whole border, else ``cut``."""
        return "isolate" if isinstance(self.links, Isolation) else self.kind

    def to_spec(self) -> dict[str, Any]:
        return {"fault": self.kind, "links": self.links.to_spec(), "mode": str(self.mode)}

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for link in resolved:
            if self.mode is CutMode.REFUSE:
                cluster.proxies.set_enabled(link, False)
            else:
                self._add_toxic(cluster, link, blackhole())
        return f"{len(resolved)} link(s)"

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for link in resolved:
            if self.mode is CutMode.BLACKHOLE:
                self._remove_toxic(cluster, link, blackhole())
                # Close connections that lost bytes to the blackhole (see module docstring).
                cluster.proxies.set_enabled(link, False)
            cluster.proxies.set_enabled(link, True)
        return ""


class Degrade(LinkFault):
    """Apply a toxic (latency, bandwidth, slow close, slicer) to the selected links."""

    def __init__(self, links: LinkTarget, toxic: Toxic) -> None:
        super().__init__(links)
        self.toxic = toxic
        self.kind = toxic.type

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Degrade:
        kind = str(spec["fault"])
        if "links" not in spec:
            raise FaultSpecError(f"fault {kind!r} needs 'links'")
        toxic = toxic_from_spec(kind, spec, ("fault", "links"))
        return cls(parse_links(spec["links"]), toxic)

    def describe(self) -> str:
        return f"{self.toxic.describe()} {self.links.describe()}"

    def to_spec(self) -> dict[str, Any]:
        return {"fault": self.toxic.type, "links": self.links.to_spec(), **toxic_to_params(self.toxic)}

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for link in resolved:
            self._add_toxic(cluster, link, self.toxic)
        return f"{len(resolved)} link(s)"

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for link in resolved:
            self._remove_toxic(cluster, link, self.toxic)
        return ""


# One kind per degradation of faults.toxics, each documented and drawn by its own record there.
for _degradation in DEGRADATIONS.values():
    enter(FaultKind(_degradation.doc(), Degrade.from_spec, _degradation.drawn, Degrade.__module__))


# -- the partitions the scenarios name -------------------------------------------------
def cut_link(
    source: Target, destination: Target, mode: CutMode | str = CutMode.REFUSE, kind: LinkKind | None = None
) -> Cut:
    """One direction only: ``source``'s connections to ``destination``."""
    return Cut(Links(source, destination, kind), mode)


def cut_between(a: Target, b: Target, mode: CutMode | str = CutMode.REFUSE) -> Cut:
    return Cut(Links(a, b, both_ways=True), mode)


def isolate(target: Target, mode: CutMode | str = CutMode.REFUSE) -> Cut:
    return Cut(Isolation(target), mode)


def isolate_node(name: str, mode: CutMode | str = CutMode.REFUSE) -> Cut:
    return isolate(Node(name), mode)


def isolate_zone(zone: str, mode: CutMode | str = CutMode.REFUSE) -> Cut:
    """Every link crossing the zone's border, its clients' links included."""
    return isolate(Zone(zone), mode)


def isolate_controller(with_zone: bool = False, mode: CutMode | str = CutMode.REFUSE) -> Cut:
    """The controller broker alone, or its whole zone, chosen when injected."""
    return isolate(ZoneOf(Controller()) if with_zone else Controller(), mode)
