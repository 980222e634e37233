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
  naming where it was written and the kinds there are (a family may word that sentence
  its own way, :data:`WORDS`, and still never lists its kinds by hand).

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

WORDS: Mapping[str, str] = {
    "needs_tag": "{what} needs a {tag!r} name, one of: {known}",
    "unknown": "{what}: unknown {family} {name!r}; known: {known}",
    "not_one": "{what} needs exactly one of: {known}{found}",
    "needs_parameters": "{what}: {name} needs parameters, as in {{ {name} = ... }}",
    "not_a_table": "{what} must be a table, got {spec!r}",
    "unknown_keys": "{what}: unknown key(s) {keys} for a '{kind}' {family}",
}
"""The sentence of each refusal, as a :meth:`str.format` template; a family may word its
own (``words``). The fields: ``what`` (where the table was written), ``family``, ``tag``,
``known`` (the kinds, listed), ``spec`` (the value refused), ``name`` (the kind named),
``found`` (the kinds a table names at once), ``kind`` and ``keys`` (the unknown keys)."""


class SpecKinds(Generic[T]):
    """The kinds of one family of tagged tables, each with its builder.

    ``tag`` is the key whose value names the kind (``"fault"``); without it, a table names
    its kind by holding exactly one of the kind keys, and with ``one_key`` it holds that key
    alone (``{ leader_of = ["t", 0] }``). ``aliases`` maps old spellings of a kind to the
    kind, so files written before a rename still read. ``ordered`` lists the kinds in the
    order they registered (the order their documentation shows) rather than sorted;
    ``words`` rewords some of the refusals (see :data:`WORDS`).
    """

    def __init__(self, family: str, error: type[ChaosError], *, tag: str | None = None,
                 aliases: Mapping[str, str] | None = None, one_key: bool = False, ordered: bool = False,
                 words: Mapping[str, str] | None = None) -> None:
        unknown_words = sorted(set(words or {}) - set(WORDS))
        if unknown_words:
            raise ValueError(f"no refusal {', '.join(unknown_words)} to word; they are {', '.join(WORDS)}")
        if one_key and tag is not None:
            raise ValueError("a table names its kind by a tag or by its one key, not both")
        self.family = family
        self.error = error
        self.tag = tag
        self.aliases = dict(aliases or {})
        self.one_key = one_key
        self.ordered = ordered
        self.words = {**WORDS, **(words or {})}
        self._builders: dict[str, Builder[T]] = {}
        self._keys: dict[str, frozenset[str]] = {}
        self._bare: dict[str, BareBuilder[T]] = {}
        self._order: list[str] = []

    # -- registering ----------------------------------------------------------------------

    def add(self, kind: str, builder: Builder[T], keys: Collection[str] | None = None) -> None:
        """Register ``builder`` for tables of ``kind``; a kind registers once. With ``keys``,
        a table of this kind holding any other key is refused before ``builder`` runs."""
        if kind in self._builders:
            raise ValueError(f"{self.family} kind {kind!r} is registered twice")
        self._builders[kind] = builder
        self._ordered(kind)
        if keys is not None:
            self._keys[kind] = frozenset(keys) | {kind} | ({self.tag} if self.tag else set())

    def add_bare(self, kind: str, builder: BareBuilder[T]) -> None:
        """Register ``kind`` as one that may also be written as its bare name."""
        if kind in self._bare:
            raise ValueError(f"{self.family} kind {kind!r} is registered bare twice")
        self._bare[kind] = builder
        self._ordered(kind)

    def _ordered(self, kind: str) -> None:
        if kind not in self._order:
            self._order.append(kind)

    def kind(self, name: str) -> Callable[[type[Any]], type[Any]]:
        """Class decorator: register the class's ``from_spec(table, what)`` under ``name``,
        with its ``spec_keys`` (the keys its table may hold) when it declares them."""
        def register(cls: type[Any]) -> type[Any]:
            self.add(name, cls.from_spec, getattr(cls, "spec_keys", None))
            return cls
        return register

    # -- reading --------------------------------------------------------------------------

    def kinds(self) -> list[str]:
        """Every kind, sorted (or as registered, when ``ordered``): the list error messages
        and documentation show."""
        return list(self._order) if self.ordered else sorted(self._order)

    def __contains__(self, kind: object) -> bool:
        return kind in self._builders or kind in self._bare

    def kind_of(self, table: Mapping[str, Any], what: str) -> str:
        """The kind ``table`` names (aliases resolved), or the family's error saying why none."""
        if self.tag is not None:
            name = table.get(self.tag)
            if not isinstance(name, str):
                raise self._refusal("needs_tag", what, spec=table)
            name = self.aliases.get(name, name)
            if name not in self._builders:
                raise self._refusal("unknown", what, name=name, spec=table)
            return name
        named = sorted({self.aliases.get(key, key) for key in table} & set(self._builders))
        found = f" (it has {', '.join(named)})" if len(named) > 1 else ""
        if self.one_key and len(table) == 1 and not named:
            (key,) = table
            raise self._refusal("unknown", what, name=self.aliases.get(key, key), spec=table)
        if len(named) != 1 or (self.one_key and len(table) != 1):
            raise self._refusal("not_one", what, found=found, spec=table)
        return named[0]

    def _refusal(self, case: str, what: str, **facts: Any) -> ChaosError:
        """The family's error for ``case``, worded by its template (see :data:`WORDS`)."""
        facts = {"name": "", "found": "", "spec": None, "kind": "", "keys": "", **facts}
        return self.error(self.words[case].format(what=what, family=self.family, tag=self.tag,
                                                  known=", ".join(self.kinds()), **facts))

    def parse(self, spec: object, what: str) -> T:
        """The object ``spec`` describes: a table, or a bare kind name where the family has one."""
        if isinstance(spec, str) and self._bare:
            if spec in self._bare:
                return self._bare[spec]()
            if spec in self._builders:
                raise self._refusal("needs_parameters", what, name=spec, spec=spec)
            raise self._refusal("unknown", what, name=spec, spec=spec)
        if not isinstance(spec, Mapping):
            raise self._refusal("not_a_table", what, spec=spec)
        kind = self.kind_of(spec, what)
        table: Mapping[str, Any] = spec
        if self.tag is None:
            table = {self.aliases.get(str(key), str(key)): value for key, value in spec.items()}
        allowed = self._keys.get(kind)
        unknown = [] if allowed is None else sorted(set(table) - allowed)
        if unknown:
            raise self._refusal("unknown_keys", what, kind=kind, keys=", ".join(unknown), spec=spec)
        return self._builders[kind](table, what)


__all__ = ["WORDS", "BareBuilder", "Builder", "SpecKinds"]
