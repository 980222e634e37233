"""Reading fault and target descriptions: plain dicts from code, JSON or TOML.

Schedules are written by people, so every malformed field must be reported as one
sentence that names the field and says what was expected, instead of a KeyError deep
inside an injector. These helpers are the only place that reads raw spec dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from faults.errors import FaultSpecError

T = TypeVar("T")


def as_mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise FaultSpecError(f"{what} must be a table/object, got {value!r}")
    return value


def check_keys(spec: Mapping[str, Any], allowed: Iterable[str], what: str) -> None:
    """Refuse parameters a fault does not take: a typo must not be silently ignored."""
    known = set(allowed)
    unknown = sorted(set(spec) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "nothing"
        raise FaultSpecError(f"{what} does not take {', '.join(map(repr, unknown))}; it takes: {takes}")


def required(spec: Mapping[str, Any], key: str, kind: type[T], what: str) -> T:
    if key not in spec:
        raise FaultSpecError(f"{what} needs {key!r}")
    return typed(spec[key], kind, f"{what}: {key!r}")


def optional(spec: Mapping[str, Any], key: str, kind: type[T], default: T, what: str) -> T:
    if key not in spec:
        return default
    return typed(spec[key], kind, f"{what}: {key!r}")


def typed(value: object, kind: type[T], what: str) -> T:
    """``value`` as ``kind``; ints are accepted where floats are wanted, bools never as ints."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # type: ignore[return-value]
    if isinstance(value, bool) and kind is not bool:
        raise FaultSpecError(f"{what} must be {kind.__name__}, got {value!r}")
    if not isinstance(value, kind):
        raise FaultSpecError(f"{what} must be {kind.__name__}, got {value!r}")
    return value


def non_negative(value: float, what: str) -> float:
    if value < 0:
        raise FaultSpecError(f"{what} must not be negative, got {value}")
    return value


def positive(value: float, what: str) -> float:
    if value <= 0:
        raise FaultSpecError(f"{what} must be positive, got {value}")
    return value
