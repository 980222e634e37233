"""Fault kinds by name, and building a fault from its spec dict.

Schedules and scenario files describe faults as data, for example
``{"fault": "kill", "target": {"leader_of": ["orders", 0]}}`` or
``{"fault": "latency", "links": {"isolate": {"zone": "a"}}, "latency_ms": 200}``.
Each kind is declared once, on its class (:func:`faults.kinds.fault_kind`: its
documentation, its drawer, its builder); this module gathers the declaring modules and
derives the tables from their entries: the builders (:data:`FAULTS`), the documentation
records docs/FAULTS.md is rendered from (:data:`FAULT_DOCS`), every kind's whole entry
(:data:`KINDS`, which the explorer draws from). An unknown name is refused with the list
of known ones, and every fault's ``to_spec`` is read back here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from faults import config, disk, network, power, process, zookeeper
from faults.base import Fault
from faults.errors import FaultSpecError, TargetError
from faults.kinds import ENTRIES, FAULT_KINDS, REQUIRED, FaultDoc, FaultKind, Param
from topologies.model import Topology

Builder = Callable[[Mapping[str, Any]], Fault]

FAULT_MODULES = (process, power, disk, network, zookeeper, config)
"""The modules that declare fault kinds, in the order docs/FAULTS.md shows them (within a
module, the order its kinds are declared in). A kind in a new module needs it named here."""


def _in_page_order(entries: Mapping[str, FaultKind]) -> dict[str, FaultKind]:
    names = [module.__name__ for module in FAULT_MODULES]

    def place(entry: FaultKind) -> int:  # a module not named here (a test's own kind) comes last
        return names.index(entry.module) if entry.module in names else len(names)

    ordered = sorted(entries.values(), key=place)  # stable: within a module, as declared
    return {entry.kind: entry for entry in ordered}


KINDS: dict[str, FaultKind] = _in_page_order(ENTRIES)
"""Every kind's entry, in the reference page's order."""

FAULTS: dict[str, Builder] = {kind: entry.build for kind, entry in KINDS.items()}
"""Every kind's builder, in the reference page's order."""

FAULT_DOCS: dict[str, FaultDoc] = {kind: entry.doc for kind, entry in KINDS.items()}
"""Every kind's documentation; the unit tests hold it to the builders."""


def fault_kinds() -> list[str]:
    return sorted(FAULTS)


def build_fault(spec: object) -> Fault:
    """The fault a spec describes; FaultSpecError (one sentence) when it describes none."""
    return FAULT_KINDS.parse(spec, "a fault")


def kinds_for(topology: Topology) -> tuple[str, ...]:
    """The fault kinds ``topology`` can take: each kind's documented example checked
    against it, so a kind of one metadata mode's own machinery (a ZooKeeper session's
    expiry) is left out of the other's, by the kind's own refusal."""
    runnable = []
    for kind in fault_kinds():
        try:
            build_fault(FAULT_DOCS[kind].example).check(topology)
        except (FaultSpecError, TargetError):
            continue
        runnable.append(kind)
    return tuple(runnable)


__all__ = ["FAULTS", "FAULT_DOCS", "FAULT_MODULES", "KINDS", "REQUIRED", "Builder", "FaultDoc", "FaultKind",
           "Param", "build_fault", "fault_kinds", "kinds_for"]
