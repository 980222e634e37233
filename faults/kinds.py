"""A fault kind's entry: what it does and takes, how the explorer draws it, how it is built.

A kind is declared once, on its class in its own module::

    @fault_kind(FaultDoc("kill", "SIGKILL to ...", heals, params, example, 10.0),
                draw=lambda d: {"target": process_target(d)})
    class Kill(NodeFault):
        @classmethod
        def from_spec(cls, spec): ...

and everything else is derived from the entries (:mod:`faults.registry`): the parser of
fault specs and the list of kinds in its errors (:data:`FAULT_KINDS`, a
:class:`~harness.tagged.SpecKinds`), docs/FAULTS.md (:mod:`faults.reference`), the
explorer's drawers and the kinds it leaves out of a default draw or a migration
(:mod:`harness.explore.generator`). A class that is several kinds (``cut`` and
``isolate``, the degradations) carries one entry per kind.

The documentation records (:class:`FaultDoc`, :class:`Param`) are held to the builders by
the unit tests: every documented parameter accepted, every accepted one documented,
defaults as the code has them, every example building.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from faults.base import Fault
from faults.draw import Drawer
from faults.errors import FaultSpecError
from harness.tagged import SpecKinds

REQUIRED: Final = "required"
"""The default of a parameter that a spec must give."""


@dataclass(frozen=True)
class Param:
    """One key of a fault spec: its type as written in TOML, default, meaning, an example."""

    name: str
    type: str
    meaning: str
    example: Any
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class FaultDoc:
    """What one fault kind does, how healing undoes it, what it takes, and an example.

    ``example`` is a complete spec (``"fault"`` included) as a scenario file would hold
    it; ``"$topic"`` stands for the scenario's topic. ``example_duration_s`` is the
    schedule entry's ``duration_s`` the example is shown with.
    """

    kind: str
    summary: str
    heals: str
    params: tuple[Param, ...]
    example: Mapping[str, Any]
    example_duration_s: float = 0.0
    notes: tuple[str, ...] = field(default=())

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


Build = Callable[[Mapping[str, Any]], Fault]
"""Builds a fault from its whole spec (``"fault"`` included)."""


@dataclass(frozen=True)
class FaultKind:
    """A fault kind's whole entry.

    ``not_drawn_by_default`` says why the explorer leaves the kind out of a default draw
    (``--faults`` names it to draw it); ``not_during_migration`` why a migration round
    never draws it; ``migration_phases``, when not empty, the only migration phases it is
    anchored to. ``module`` is where it was declared, which orders the reference page.
    """

    doc: FaultDoc
    build: Build
    draw: Drawer
    module: str
    not_drawn_by_default: str = ""
    not_during_migration: str = ""
    migration_phases: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.doc.kind


FAULT_KINDS: SpecKinds[Fault] = SpecKinds(
    "fault", FaultSpecError, tag="fault",
    words={"unknown": "unknown fault {name!r}; known faults: {known}",
           "not_a_table": "{what} must be a table/object, got {spec!r}"},
)
"""Every fault kind, by the name its spec's ``fault`` key gives."""

ENTRIES: dict[str, FaultKind] = {}
"""Every kind's entry, in the order the kinds registered (the registry orders them by module)."""


def enter(entry: FaultKind) -> None:
    """Register one kind: its builder with :data:`FAULT_KINDS`, its entry in :data:`ENTRIES`."""
    build = entry.build
    FAULT_KINDS.add(entry.kind, lambda spec, what: build(spec))
    ENTRIES[entry.kind] = entry


F = TypeVar("F", bound=type[Fault])


def fault_kind(doc: FaultDoc, draw: Drawer, *, builder: str = "from_spec", not_drawn_by_default: str = "",
               not_during_migration: str = "", migration_phases: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Class decorator: the class is the fault kind ``doc.kind``, built by its classmethod
    ``builder`` (``from_spec(spec)`` unless named), drawn by ``draw``. Stacked, one class is
    several kinds; the decorator nearest the class registers first."""
    def register(cls: F) -> F:
        enter(FaultKind(doc, getattr(cls, builder), draw, cls.__module__, not_drawn_by_default,
                        not_during_migration, migration_phases))
        return cls
    return register


# -- words several kinds' documentation share ------------------------------------------------

TARGET_MEANING = "The role whose nodes are hit, resolved when the fault strikes."
TIMEOUT_MEANING = "Seconds to wait for the metadata to show the effect before the inject fails."
METADATA_HEAL = (
    "Nothing to undo: the cluster is left healthy in its new state; heal records the end of the window."
)


def target_param(example: Any, meaning: str = TARGET_MEANING) -> Param:
    return Param("target", "target", meaning, example)


def links_param(example: Any) -> Param:
    return Param("links", "link selection", "The links to act on, chosen when the fault strikes.", example)


__all__ = ["ENTRIES", "FAULT_KINDS", "METADATA_HEAL", "REQUIRED", "TARGET_MEANING", "TIMEOUT_MEANING",
           "Build", "FaultDoc", "FaultKind", "Param", "enter", "fault_kind", "links_param", "target_param"]
