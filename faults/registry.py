"""Fault kinds by name, and building a fault from its spec dict.

Schedules and scenario files describe faults as data, for example
``{"fault": "kill", "target": {"leader_of": ["orders", 0]}}`` or
``{"fault": "latency", "links": {"isolate": {"zone": "a"}}, "latency_ms": 200}``.
This is the one place that maps a name to a fault class, so an unknown name is refused
with the list of known ones, and every fault's ``to_spec`` is read back here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from faults.base import Fault
from faults.errors import FaultSpecError
from faults.network import Cut, Degrade
from faults.process import Bounce, ControlledShutdown, Kill, Pause, Restart
from faults.spec import as_mapping
from faults.toxics import DEGRADATIONS
from faults.zookeeper import DeleteController, ExpireSession, PreferredLeaderElection, Reassign

Builder = Callable[[Mapping[str, Any]], Fault]

FAULTS: dict[str, Builder] = {
    "kill": Kill.from_spec,
    "controlled_shutdown": ControlledShutdown.from_spec,
    "pause": Pause.from_spec,
    "restart": Restart.from_spec,
    "bounce": Bounce.from_spec,
    "cut": Cut.from_spec,
    "isolate": Cut.isolate_from_spec,
    **{kind: Degrade.from_spec for kind in DEGRADATIONS},
    "expire_session": ExpireSession.from_spec,
    "delete_controller": DeleteController.from_spec,
    "preferred_election": PreferredLeaderElection.from_spec,
    "reassign": Reassign.from_spec,
}


def fault_kinds() -> list[str]:
    return sorted(FAULTS)


def build_fault(spec: object) -> Fault:
    """The fault a spec describes; FaultSpecError (one sentence) when it describes none."""
    mapping = as_mapping(spec, "a fault")
    name = mapping.get("fault")
    if not isinstance(name, str):
        raise FaultSpecError(f"a fault needs a 'fault' name, one of: {', '.join(fault_kinds())}")
    if name not in FAULTS:
        raise FaultSpecError(f"unknown fault {name!r}; known faults: {', '.join(fault_kinds())}")
    return FAULTS[name](mapping)
