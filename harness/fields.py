"""Reading the fields of a table a person wrote: each wrong value is one sentence.

Scenario files, check files and schedules are written by hand, so a value of the wrong
type must be refused before anything runs, in a sentence that names where it was written,
the key and the value (``check 3: 'for_s' must be a number of seconds, not 'ten'``),
never as a KeyError or a TypeError from deep inside a run. :class:`Fields` is the one
reader of such values; each family passes its own error class, so the CLI prints the
sentence as that family's error.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from harness.errors import ChaosError

_ABSENT: Any = object()


class Fields:
    """The values of one table (``table``), written at ``what``, refused with ``error``."""

    def __init__(self, table: Mapping[str, Any], what: str, error: type[ChaosError]) -> None:
        self.table = table
        self.what = what
        self.error = error

    def __contains__(self, key: str) -> bool:
        return key in self.table

    def refuse(self, text: str) -> ChaosError:
        """The error for ``text``, naming where the table was written."""
        return self.error(f"{self.what}: {text}")

    def refuse_unknown(self, allowed: Collection[str], kind: str) -> None:
        """Refuse keys outside ``allowed``: a typo must not be silently ignored."""
        unknown = sorted(set(self.table) - set(allowed))
        if unknown:
            raise self.refuse(f"unknown key(s) {', '.join(unknown)} for {kind}")

    def seconds(self, key: str, default: float | None = _ABSENT) -> float:
        """A finite number of seconds; ``default`` when absent (required without one)."""
        value = self.table.get(key, default)
        if value is _ABSENT:
            raise self.refuse(f"'{key}' is required (a number of seconds)")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.refuse(f"'{key}' must be a number of seconds, not {value!r}")
        return float(value)

    def number(self, key: str, default: float = _ABSENT, *, at_least: float | None = None) -> float:
        """A finite number (never a bool), not below ``at_least`` when given; ``default``
        when absent (required without one)."""
        value = self.table.get(key, default)
        if value is _ABSENT:
            raise self.refuse(f"'{key}' is required (a number)")
        bounded = "a non-negative number" if at_least == 0 else "a number" if at_least is None \
            else f"a number of at least {at_least:g}"
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or (at_least is not None and value < at_least):
            raise self.refuse(f"'{key}' must be {bounded}, not {value!r}")
        return float(value)

    def optional_seconds(self, key: str) -> float | None:
        return None if key not in self.table else self.seconds(key)

    def ints(self, key: str) -> tuple[int, ...] | None:
        """A list of integers, or None when absent."""
        value = self.table.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                  for v in value):
            raise self.refuse(f"'{key}' must be a list of integers, not {value!r}")
        return tuple(value)

    def names(self, key: str) -> tuple[str, ...] | None:
        """A list of names (strings), or None when absent."""
        value = self.table.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.refuse(f"'{key}' must be a list of names, not {value!r}")
        return tuple(value)

    def text(self, key: str, default: str | None = _ABSENT) -> str:
        value = self.table.get(key, default)
        if value is _ABSENT:
            raise self.refuse(f"'{key}' is required (a string)")
        if not isinstance(value, str):
            raise self.refuse(f"'{key}' must be a string, not {value!r}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise self.refuse(f"'{key}' is true or false, not {value!r}")
        return value

    def only_true(self, key: str) -> None:
        """A key whose one meaningful value is ``true`` (``reads_acked = true``)."""
        if self.table.get(key) is not True:
            raise self.refuse(f"'{key}' can only be true")


__all__ = ["Fields"]
