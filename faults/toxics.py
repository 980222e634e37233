"""Toxiproxy toxics as typed values: which toxic, which direction, which attributes.

Units follow Toxiproxy's API (checked against its documentation): latency and jitter
in milliseconds; bandwidth ``rate`` in KB/s; slow_close ``delay`` in milliseconds;
slicer ``average_size``/``size_variation`` in bytes and ``delay`` in *microseconds*;
timeout ``timeout`` in milliseconds, where 0 means data is dropped and the connection
is held open until the toxic is removed (a blackhole).

``upstream`` is data from the link's source to its destination (for a follower's fetch
link: the fetch requests), ``downstream`` the answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faults.errors import FaultSpecError
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


# Degradation kinds a spec can name, with their parameters (all integers) and defaults.
_DEGRADATIONS: dict[str, tuple[Any, dict[str, int | None]]] = {
    "latency": (latency, {"latency_ms": None, "jitter_ms": 0}),
    "bandwidth": (bandwidth, {"rate_kb_s": None}),
    "slow_close": (slow_close, {"delay_ms": None}),
    "slicer": (slicer, {"average_size": None, "size_variation": 0, "delay_us": 0}),
}
DEGRADATIONS = tuple(_DEGRADATIONS)


def toxic_from_spec(kind: str, spec: Mapping[str, Any], extra_keys: tuple[str, ...]) -> Toxic:
    """The toxic of degradation ``kind`` from a fault spec's parameters."""
    build, params = _DEGRADATIONS[kind]
    what = f"fault {kind!r}"
    check_keys(spec, [*params, "stream", *extra_keys], what)
    args = {
        name: required(spec, name, int, what) if default is None else optional(spec, name, int, default, what)
        for name, default in params.items()
    }
    toxic: Toxic = build(**args, stream=optional(spec, "stream", str, "both", what))
    return toxic


def toxic_to_params(toxic: Toxic) -> dict[str, Any]:
    """The spec parameters that :func:`toxic_from_spec` reads back into ``toxic``."""
    _, params = _DEGRADATIONS[toxic.type]
    names = {
        "latency": ["latency", "jitter"],
        "bandwidth": ["rate"],
        "slow_close": ["delay"],
        "slicer": ["average_size", "size_variation", "delay"],
    }[toxic.type]
    spec: dict[str, Any] = {
        param: toxic.attributes[attribute] for param, attribute in zip(params, names, strict=True)
    }
    if toxic.stream != "both":
        spec["stream"] = toxic.stream
    return spec
