"""Typed readers for the JSON files a run leaves, shared by the report's loaders.

Each reader returns the value as the type it names or raises :class:`Malformed` naming the
field; the loaders catch that per file and turn it into one problem on the page, so a
template never has to guess whether a field is a number, a string or absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Malformed(ValueError):
    """A field of the wrong type or missing; caught per file and turned into a problem."""


def as_obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Malformed(f"{what} is not an object")
    return value


def as_list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise Malformed(f"{what} is not a list")
    return value


def as_num(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"{what} is not a number: {value!r}")
    return float(value)


def as_opt_num(value: object, what: str) -> float | None:
    return None if value is None else as_num(value, what)


def as_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Malformed(f"{what} is not an integer: {value!r}")
    return value


def as_opt_int(value: object, what: str) -> int | None:
    return None if value is None else as_int(value, what)


def as_bool(value: object, what: str) -> bool:
    # Strictly a JSON boolean: "false" or 0 read as a pass would be the worst misreading.
    if not isinstance(value, bool):
        raise Malformed(f"{what} is not true/false: {value!r}")
    return value


def as_opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def as_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise Malformed(f"{what} is not a string: {value!r}")
    return value


def as_one_of(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise Malformed(f"{what} is {value!r}, not one of {', '.join(allowed)}")
    return str(value)
