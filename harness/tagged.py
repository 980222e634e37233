"""Tagged specs: the one way a table written by a person becomes one of several classes.

Scenario files and schedules describe faults, targets, conditions and checks as tables
whose *kind* picks the class: ``{fault = "kill", ...}`` names it under a tag key, while
``{leader_of = ["t", 0]}`` or ``{eventually = ..., after = ...}`` name it by the one
kind key the table holds, and some kinds are written as a bare name (``"controller"``).
Each family keeps a :class:`SpecKinds` registry, and each class registers itself under
its kind with a ``from_spec`` builder, so that

- adding a kind is one class in one module: the parser, the list of known kinds in every
  error message and the documentation tables are derived from the registry;
- an unknown or missing kind is refused the same way in every family, as one sentence
  naming where it was written and the kinds there are.

This module sits at the bottom of the import stairs with :mod:`harness.errors`: it knows
no family, only the shape of a tagged table. Each family passes its own error class.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Generic, TypeVar

from harness.errors import ChaosError

T = TypeVar("T")
Builder = Callable[[Mapping[str, Any], str], T]
"""Builds one kind from its whole table and the words naming where it was written."""
BareBuilder = Callable[[], T]


class SpecKinds(Generic[T]):
    """The kinds of one family of tagged tables, each with its builder.

    ``tag`` is the key whose value names the kind (``"fault"``); without it, a table names
    its kind by holding exactly one of the kind keys. ``aliases`` maps old spellings of a
    kind to the kind, so files written before a rename still read.
    """

    def __init__(self, family: str, error: type[ChaosError], *, tag: str | None = None,
                 aliases: Mapping[str, str] | None = None) -> None:
        self.family = family
        self.error = error
        self.tag = tag
        self.aliases = dict(aliases or {})
        self._builders: dict[str, Builder[T]] = {}
        self._keys: dict[str, frozenset[str]] = {}
        self._bare: dict[str, BareBuilder[T]] = {}

    # -- registering ----------------------------------------------------------------------

    def add(self, kind: str, builder: Builder[T], keys: Collection[str] | None = None) -> None:
        """Register ``builder`` for tables of ``kind``; a kind registers once. With ``keys``,
        a table of this kind holding any other key is refused before ``builder`` runs."""
        if kind in self._builders:
            raise ValueError(f"{self.family} kind {kind!r} is registered twice")
        self._builders[kind] = builder
        if keys is not None:
            self._keys[kind] = frozenset(keys) | {kind} | ({self.tag} if self.tag else set())

    def add_bare(self, kind: str, builder: BareBuilder[T]) -> None:
        """Register ``kind`` as one that may also be written as its bare name."""
        if kind in self._bare:
            raise ValueError(f"{self.family} kind {kind!r} is registered bare twice")
        self._bare[kind] = builder

    def kind(self, name: str) -> Callable[[type[Any]], type[Any]]:
        """Class decorator: register the class's ``from_spec(table, what)`` under ``name``,
        with its ``spec_keys`` (the keys its table may hold) when it declares them."""
        def register(cls: type[Any]) -> type[Any]:
            self.add(name, cls.from_spec, getattr(cls, "spec_keys", None))
            return cls
        return register

    # -- reading --------------------------------------------------------------------------

    def kinds(self) -> list[str]:
        """Every kind, sorted: the list error messages and documentation show."""
        return sorted(set(self._builders) | set(self._bare))

    def __contains__(self, kind: object) -> bool:
        return kind in self._builders or kind in self._bare

    def kind_of(self, table: Mapping[str, Any], what: str) -> str:
        """The kind ``table`` names (aliases resolved), or the family's error saying why none."""
        known = ", ".join(self.kinds())
        if self.tag is not None:
            name = table.get(self.tag)
            if not isinstance(name, str):
                raise self.error(f"{what} needs a {self.tag!r} name, one of: {known}")
            name = self.aliases.get(name, name)
            if name not in self._builders:
                raise self.error(f"{what}: unknown {self.family} {name!r}; known: {known}")
            return name
        named = sorted({self.aliases.get(key, key) for key in table} & set(self._builders))
        if len(named) != 1:
            found = f" (it has {', '.join(named)})" if named else ""
            raise self.error(f"{what} needs exactly one of: {known}{found}")
        return named[0]

    def parse(self, spec: object, what: str) -> T:
        """The object ``spec`` describes: a table, or a bare kind name where the family has one."""
        if isinstance(spec, str) and self._bare:
            if spec in self._bare:
                return self._bare[spec]()
            if spec in self._builders:
                raise self.error(f"{what}: {spec} needs parameters, as in {{ {spec} = ... }}")
            raise self.error(f"{what}: unknown {self.family} {spec!r}; known: {', '.join(self.kinds())}")
        if not isinstance(spec, Mapping):
            raise self.error(f"{what} must be a table, got {spec!r}")
        kind = self.kind_of(spec, what)
        table: Mapping[str, Any] = spec
        if self.tag is None:
            table = {self.aliases.get(str(key), str(key)): value for key, value in spec.items()}
        allowed = self._keys.get(kind)
        unknown = [] if allowed is None else sorted(set(table) - allowed)
        if unknown:
            raise self.error(f"{what}: unknown key(s) {', '.join(unknown)} for a '{kind}' {self.family}")
        return self._builders[kind](table, what)


__all__ = ["BareBuilder", "Builder", "SpecKinds"]
