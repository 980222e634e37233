"""Events and the inject/heal template: recorded once each, idempotent heal, safe errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from faults.base import Fault, active_faults
from faults.errors import FaultError, TargetError
from faults.events import EventLog, FaultEvent
from harness.history import FAULTS_SCHEMA
from topologies import Topology, load_topology


@dataclass
class FakeCluster:
    topology: Topology = field(default_factory=lambda: load_topology("three_az"))
    run_id: str = "unit-events"


class Damage(Fault):
    def __init__(self, resolvable: bool = True) -> None:
        super().__init__()
        self.resolvable = resolvable
        self.applied = 0
        self.restored = 0

    def describe(self) -> str:
        return "damage leader of t-0"

    def to_spec(self) -> dict[str, Any]:
        return {"fault": "damage"}

    def _resolve(self, cluster: Any) -> tuple[str, ...]:
        if not self.resolvable:
            raise TargetError("t-0 has no leader now (leader -1)")
        return ("kafka-2",)

    def _apply(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        self.applied += 1
        return "done"

    def _restore(self, cluster: Any, resolved: tuple[str, ...]) -> str:
        self.restored += 1
        return ""


def test_rows_have_exactly_the_history_faults_columns() -> None:
    event = FaultEvent(1.5, 2.5, "kill leader of t-0", "inject", ("kafka-0",), "ok")
    row = event.to_row()
    assert list(row) == FAULTS_SCHEMA.names
    assert json.loads(row["targets"]) == ["kafka-0"]
    assert FaultEvent.from_row(row) == event


def test_inject_then_heal_records_two_events_and_heal_is_idempotent() -> None:
    rows: list[Any] = []
    log, cluster, fault = EventLog(sink=rows.append), FakeCluster(), Damage()
    assert fault.inject(cluster, log) == ("kafka-2",)  # type: ignore[arg-type]
    assert fault in active_faults(cluster)  # type: ignore[arg-type]
    with pytest.raises(FaultError, match="already injected"):
        fault.inject(cluster, log)  # type: ignore[arg-type]
    assert fault.heal(cluster) is True  # type: ignore[arg-type]
    assert fault.heal(cluster) is False  # type: ignore[arg-type]
    assert (fault.applied, fault.restored) == (1, 1)
    assert [(e.action, e.targets, e.outcome) for e in log] == [
        ("inject", ("kafka-2",), "ok: done"),
        ("heal", ("kafka-2",), "ok"),
    ]
    assert len(rows) == 2 and rows[0]["ts"] <= rows[1]["ts"] and rows[0]["mono"] <= rows[1]["mono"]
    assert fault not in active_faults(cluster)  # type: ignore[arg-type]


def test_a_target_that_resolves_to_nothing_injects_nothing() -> None:
    log, cluster, fault = EventLog(), FakeCluster(), Damage(resolvable=False)
    with pytest.raises(TargetError, match="no leader now"):
        fault.inject(cluster, log)  # type: ignore[arg-type]
    assert fault.applied == 0 and not fault.active
    assert [(e.action, e.targets) for e in log] == [("inject", ())]
    assert log.events[0].outcome.startswith("error: TargetError")
    assert fault.heal(cluster) is False  # type: ignore[arg-type]


def test_an_event_says_when_its_action_finished() -> None:
    """A heal that starts a node is done when the node is back: the event keeps both."""
    log = EventLog()
    event = log.record("kill kafka-0", "heal", ("kafka-0",), "ok", started=(100.0, 5.0))
    assert (event.ts, event.mono) == (100.0, 5.0)
    assert event.done_ts is not None and event.done_ts > event.ts
    assert FaultEvent.from_row(event.to_row()) == event


def test_a_heal_goes_to_the_log_its_inject_went_to_with_its_reason() -> None:
    """A fault the harness injected for its own set-up never lands in another log as a
    lone heal, and a heal from elsewhere than the schedule says why."""
    own, other, cluster, fault = EventLog(), EventLog(), FakeCluster(), Damage()
    other.record("cut zone a", "inject", ("a",), "ok")
    fault.inject(cluster, own)  # type: ignore[arg-type]
    assert fault.heal(cluster, other, reason="healed by the harness") is True  # type: ignore[arg-type]
    assert [e.fault for e in other] == ["cut zone a"]
    assert [(e.action, e.outcome) for e in own] == [("inject", "ok: done"),
                                                    ("heal", "ok: healed by the harness")]
