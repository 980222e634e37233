"""Toxiproxy toxics as typed values: which toxic, which direction, which attributes.

Units follow Toxiproxy's API (checked against its documentation): latency and jitter
in milliseconds; bandwidth ``rate`` in KB/s; slow_close ``delay`` in milliseconds;
slicer ``average_size``/``size_variation`` in bytes and ``delay`` in *microseconds*;
timeout ``timeout`` in milliseconds, where 0 means data is dropped and the connection
is held open until the toxic is removed (a blackhole).

``upstream`` is data from the link's source to its destination (for a follower's fetch
link: the fetch requests), ``downstream`` the answers.

Each degradation a fault spec can name (latency, bandwidth, slow close, slicer) is one
record of :data:`DEGRADATIONS`: its toxic, parameters, documentation and drawer; adding
one is adding a record (and its toxic's builder) here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faults.draw import Draw, link_selection
from faults.draw import stream as draw_stream
from faults.errors import FaultSpecError
from faults.kinds import REQUIRED, FaultDoc, Param, links_param
from faults.spec import check_keys, non_negative, optional, positive, required

STREAMS = ("upstream", "downstream", "both")


@dataclass(frozen=True)
class Toxic:
    """One toxic type with its attributes, applied on one or both streams of a link."""

    type: str
    attributes: Mapping[str, int] = field(default_factory=dict)
    stream: str = "both"

    def __post_init__(self) -> None:
        if self.stream not in STREAMS:
            raise FaultSpecError(f"toxic stream must be one of {', '.join(STREAMS)}, got {self.stream!r}")

    @property
    def streams(self) -> tuple[str, ...]:
        return ("upstream", "downstream") if self.stream == "both" else (self.stream,)

    def describe(self) -> str:
        attributes = ",".join(f"{k}={v}" for k, v in self.attributes.items())
        stream = "" if self.stream == "both" else f" {self.stream}"
        return f"{self.type}({attributes}){stream}"


def latency(latency_ms: int, jitter_ms: int = 0, stream: str = "both") -> Toxic:
    non_negative(latency_ms, "latency latency_ms")
    non_negative(jitter_ms, "latency jitter_ms")
    return Toxic("latency", {"latency": int(latency_ms), "jitter": int(jitter_ms)}, stream)


def bandwidth(rate_kb_s: int, stream: str = "both") -> Toxic:
    non_negative(rate_kb_s, "bandwidth rate_kb_s")
    return Toxic("bandwidth", {"rate": int(rate_kb_s)}, stream)


def slow_close(delay_ms: int, stream: str = "both") -> Toxic:
    non_negative(delay_ms, "slow_close delay_ms")
    return Toxic("slow_close", {"delay": int(delay_ms)}, stream)


def slicer(average_size: int, size_variation: int = 0, delay_us: int = 0, stream: str = "both") -> Toxic:
    positive(average_size, "slicer average_size")
    non_negative(size_variation, "slicer size_variation")
    non_negative(delay_us, "slicer delay_us")
    if size_variation >= average_size:
        raise FaultSpecError("slicer size_variation must be smaller than average_size")
    return Toxic(
        "slicer",
        {"average_size": int(average_size), "size_variation": int(size_variation), "delay": int(delay_us)},
        stream,
    )


def blackhole() -> Toxic:
    """Timeout 0 both ways: nothing passes, nothing is closed, until removed."""
    return Toxic("timeout", {"timeout": 0}, "both")


# -- the degradations a spec can name ---------------------------------------------------------

@dataclass(frozen=True)
class ToxicParam:
    """One parameter of a degradation's spec: the toxic attribute it sets, its default
    (None: the spec must give it), what it means and an example value."""

    name: str
    attribute: str
    default: int | None
    meaning: str
    example: int


STREAM_PARAM = Param(
    "stream", "string",
    "Which direction of each link is degraded: `upstream`, `downstream` or `both`; see [Streams](#streams).",
    "downstream", "both",
)


@dataclass(frozen=True)
class Degradation:
    """A degradation kind's entry: its toxic, its parameters (all integers), what it does, the
    links its example acts on, and how the explorer draws its parameters (after the links,
    from the round's random source). Each is a kind of :class:`faults.network.Degrade`."""

    kind: str
    toxic: Callable[..., Toxic]
    params: tuple[ToxicParam, ...]
    summary: str
    example_links: Mapping[str, Any]
    draw: Callable[[random.Random], dict[str, Any]]
    example_duration_s: float = 20.0

    def doc(self) -> FaultDoc:
        params = tuple(Param(p.name, "int", p.meaning, p.example,
                             REQUIRED if p.default is None else p.default) for p in self.params)
        example = {"fault": self.kind, "links": self.example_links, **{p.name: p.example for p in params}}
        return FaultDoc(self.kind, self.summary, "Removes the toxic from every link it was added to.",
                        (links_param(self.example_links), *params, STREAM_PARAM), example,
                        self.example_duration_s)

    def drawn(self, d: Draw) -> dict[str, Any]:
        """The spec's parameters: the links first, then the toxic's."""
        return {"links": link_selection(d), **self.draw(d.rng)}


def _latency_drawn(rng: random.Random) -> dict[str, Any]:
    latency = rng.randint(50, 500)
    return {"latency_ms": latency, "jitter_ms": rng.randint(0, latency // 2), "stream": draw_stream(rng)}


def _slicer_drawn(rng: random.Random) -> dict[str, Any]:
    size = rng.randint(64, 1024)
    return {"average_size": size, "size_variation": rng.randint(0, size // 2),
            "delay_us": rng.randint(0, 1000), "stream": draw_stream(rng)}


DEGRADATIONS: dict[str, Degradation] = {d.kind: d for d in (
    Degradation(
        "latency", latency,
        (ToxicParam("latency_ms", "latency", None, "Delay added to the data, in milliseconds.", 200),
         ToxicParam("jitter_ms", "jitter", 0,
                    "Random variation of the delay, either way, in milliseconds.", 50)),
        "Delays the data crossing the selected links (a Toxiproxy `latency` toxic).",
        {"isolate": {"zone": "a"}},
        _latency_drawn,
    ),
    Degradation(
        "bandwidth", bandwidth,
        (ToxicParam("rate_kb_s", "rate", None, "Throughput allowed, in kilobytes per second.", 64),),
        "Limits the throughput of the selected links (a Toxiproxy `bandwidth` toxic).",
        {"from": {"zone_clients": "b"}, "to": {"broker": 0}},
        lambda rng: {"rate_kb_s": rng.choice([16, 64, 256, 1024]), "stream": draw_stream(rng)},
    ),
    Degradation(
        "slow_close", slow_close,
        (ToxicParam("delay_ms", "delay", None,
                    "Delay before a connection is closed, in milliseconds.", 500),),
        "Delays the closing of connections on the selected links (a Toxiproxy `slow_close` toxic).",
        {"isolate": {"zone_clients": "c"}},
        lambda rng: {"delay_ms": rng.randint(100, 2000), "stream": draw_stream(rng)},
    ),
    Degradation(
        "slicer", slicer,
        (ToxicParam("average_size", "average_size", None, "Average piece size, in bytes.", 64),
         ToxicParam("size_variation", "size_variation", 0,
                    "Random variation of the piece size, in bytes; smaller than average_size.", 16),
         ToxicParam("delay_us", "delay", 0, "Pause between pieces, in microseconds.", 10)),
        "Cuts the data into small pieces, optionally with a pause between them (a Toxiproxy `slicer` "
        "toxic): peers must cope with requests arriving in many short reads.",
        {"from": {"broker": 1}, "to": {"broker": 0}, "both_ways": True},
        _slicer_drawn,
    ),
)}
"""Every degradation kind a spec can name, each one kind of fault."""


def toxic_from_spec(kind: str, spec: Mapping[str, Any], extra_keys: tuple[str, ...]) -> Toxic:
    """The toxic of degradation ``kind`` from a fault spec's parameters."""
    degradation = DEGRADATIONS[kind]
    what = f"fault {kind!r}"
    check_keys(spec, [*(p.name for p in degradation.params), "stream", *extra_keys], what)
    args = {
        p.name: required(spec, p.name, int, what) if p.default is None
        else optional(spec, p.name, int, p.default, what)
        for p in degradation.params
    }
    toxic: Toxic = degradation.toxic(**args, stream=optional(spec, "stream", str, "both", what))
    return toxic


def toxic_to_params(toxic: Toxic) -> dict[str, Any]:
    """The spec parameters that :func:`toxic_from_spec` reads back into ``toxic``."""
    spec: dict[str, Any] = {p.name: toxic.attributes[p.attribute] for p in DEGRADATIONS[toxic.type].params}
    if toxic.stream != "both":
        spec["stream"] = toxic.stream
    return spec
