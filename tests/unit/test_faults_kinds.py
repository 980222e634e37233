"""A fault kind is one entry, on its class: the registry, the reference page's records and
the explorer's drawers and exclusions are all derived from the entries (faults/kinds.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from faults import registry
from faults.draw import TOPIC
from faults.kinds import ENTRIES, FAULT_KINDS, FaultDoc, FaultKind
from faults.network import Cut, Degrade
from faults.toxics import DEGRADATIONS
from harness.explore import generator
from topologies import load_topology
from topologies.model import migration_topology


def test_every_table_is_derived_from_the_entries_in_one_order() -> None:
    assert set(registry.KINDS) == set(ENTRIES) == set(FAULT_KINDS.kinds())
    assert list(registry.FAULTS) == list(registry.FAULT_DOCS) == list(registry.KINDS)
    assert all(entry.kind == kind == entry.doc.kind for kind, entry in registry.KINDS.items())
    assert registry.fault_kinds() == FAULT_KINDS.kinds() == sorted(ENTRIES)


def test_the_page_order_is_the_modules_order_then_the_order_of_declaration() -> None:
    modules = [m.__name__ for m in registry.FAULT_MODULES]
    places = [modules.index(entry.module) for entry in registry.KINDS.values()]
    assert places == sorted(places)
    kinds = list(registry.KINDS)
    assert kinds.index("cut") + 1 == kinds.index("isolate"), "stacked: the nearest decorator first"
    assert kinds[kinds.index("isolate") + 1:][:len(DEGRADATIONS)] == list(DEGRADATIONS)


def test_a_kind_declared_outside_the_listed_modules_comes_last() -> None:
    kill = registry.KINDS["kill"]
    stray = FaultKind(FaultDoc("stray", "s", "h", (), {"fault": "stray"}), kill.build, kill.draw, "tests.x")
    ordered = registry._in_page_order({"stray": stray, **ENTRIES})
    assert list(ordered)[-1] == "stray" and list(ordered)[:-1] == list(registry.KINDS)


def test_one_class_is_several_kinds() -> None:
    assert registry.KINDS["cut"].build == Cut.from_spec
    assert registry.KINDS["isolate"].build == Cut.isolate_from_spec
    assert all(registry.KINDS[kind].build == Degrade.from_spec for kind in DEGRADATIONS)
    assert isinstance(registry.build_fault(registry.FAULT_DOCS["slicer"].example), Degrade)


def test_a_degradations_doc_is_read_from_its_record() -> None:
    for kind, degradation in DEGRADATIONS.items():
        doc = registry.FAULT_DOCS[kind]
        ints = {p.name: p.default for p in doc.params if p.type == "int"}
        assert ints == {p.name: "required" if p.default is None else p.default for p in degradation.params}
        assert doc.example["links"] == degradation.example_links


def test_the_explorers_tables_are_what_the_entries_say() -> None:
    entries = registry.KINDS
    assert set(generator.EXCLUDED_BY_DEFAULT) == {k for k, e in entries.items() if e.not_drawn_by_default}
    assert set(generator.EXCLUDED_DURING_MIGRATION) == {k for k, e in entries.items()
                                                        if e.not_during_migration}
    anchored = {k: e.migration_phases for k, e in entries.items() if e.migration_phases}
    assert anchored == generator.PHASES_OF_KIND
    assert {kind: entry.draw for kind, entry in entries.items()} == generator._DRAWERS
    # what the kinds of today say, each for its reason (kept on its entry)
    assert {"power_loss", "fill_disk", "topic_config"} <= set(generator.EXCLUDED_BY_DEFAULT)
    assert {"reassign", "delete_controller"} <= set(generator.EXCLUDED_DURING_MIGRATION)
    assert generator.PHASES_OF_KIND["expire_session"] == ("enter_migration", "copy", "dual_write")


@dataclass(frozen=True)
class _Space:
    brokers: tuple[int, ...]
    zones: tuple[str, ...]
    zookeepers: tuple[str, ...]
    controllers: tuple[int, ...]
    phases: tuple[str, ...]
    partitions: int = 6
    replication_factor: int = 3

    @property
    def quorum_leader(self) -> str:
        return "quorum_leader" if self.phases else "active_controller"


@dataclass(frozen=True)
class _Draw:
    space: _Space
    rng: random.Random

    def partition(self) -> int:
        return self.rng.randrange(self.space.partitions)


def _space_of(name: str, phases: tuple[str, ...] = ()) -> tuple[Any, _Space]:
    topology = load_topology(name)
    if phases:
        topology = migration_topology(load_topology("three_az"), load_topology("three_az", metadata="kraft"))
    space = _Space(tuple(b.broker_id for b in topology.brokers), tuple(topology.zones),
                   tuple(z.name for z in topology.zookeepers),
                   tuple(c.node_id for c in topology.dedicated_controllers), phases)
    return topology, space


def _drawn_where() -> list[tuple[str, tuple[str, ...], str]]:
    """Each (topology, migration phases, kind) where the explorer draws the kind."""
    spaces: list[tuple[str, tuple[str, ...]]] = [("three_az", ()), ("three_az_kraft", ()),
                                                 ("three_az", ("copy",))]
    return [(name, phases, kind) for name, phases in spaces for kind in sorted(ENTRIES)
            if kind in registry.kinds_for(_space_of(name, phases)[0])
            and not (phases and registry.KINDS[kind].not_during_migration)]


@pytest.mark.parametrize(("name", "phases", "kind"), _drawn_where())
def test_every_kinds_drawer_writes_a_spec_its_builder_takes(name: str, phases: tuple[str, ...],
                                                            kind: str) -> None:
    topology, space = _space_of(name, phases)
    entry = registry.KINDS[kind]
    rng = random.Random(kind)
    for _ in range(40):
        params = entry.draw(_Draw(space, rng))
        assert "fault" not in params
        spec = {"fault": kind, **params}
        fault = registry.build_fault(_on_topic(spec))
        if kind != "fill_disk":  # a topology of its own (broker disks)
            fault.check(topology)


def _on_topic(value: Any) -> Any:
    if value == TOPIC:
        return "orders"
    if isinstance(value, dict):
        return {k: _on_topic(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_on_topic(v) for v in value]
    return value
