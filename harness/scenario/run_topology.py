"""Which topology a scenario runs on, decided in one place for ``run``, ``shrink``,
``check`` and the pytest plugin.

A run names a topology (a built-in name or a file) and a Kafka release; its clusters are
made from that topology in the run's metadata mode. A scenario that walks a migration
runs instead on a migrating cluster of its own: the ZooKeeper-mode topology with its
KRaft variant's dedicated controllers beside it, on a release that migrates. Checking a
file on any other topology would refuse what the run accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.cluster.versions import check_migration, check_upgrade, release
from topologies import load_topology
from topologies.model import KRAFT, SettingValue, Topology, migration_topology

if TYPE_CHECKING:
    from harness.scenario.file_format import ScenarioFile


@dataclass(frozen=True)
class RunTopology:
    """A run's topology: ``name`` as the run was given it, ``base`` loaded in the run's
    metadata mode, and the run's Kafka release."""

    name: str
    base: Topology
    kafka_version: str

    @property
    def release_settings(self) -> Mapping[str, str]:
        """The broker settings the run's release needs beyond the topology's."""
        return release(self.kafka_version).extra_broker_settings

    def migrating(self, settings: Mapping[str, SettingValue] | None = None) -> Topology:
        """The cluster a migration runs on: the base topology (ZooKeeper mode) with its
        KRaft variant's dedicated controllers beside it, both with ``settings`` over their
        broker settings; TopologyError in one line when the base is not in ZooKeeper mode."""
        target = load_topology(self.name, metadata=KRAFT)
        return migration_topology(self.base.with_broker_settings(settings or {}),
                                  target.with_broker_settings(settings or {}))

    def for_scenario(self, scenario: ScenarioFile) -> Topology:
        """The topology ``scenario`` runs on: the base one, or for a file with a
        ``[migration]`` table the migrating one, refused in one line (UnsupportedVersion)
        on a release that cannot migrate or be upgraded to the file's ``upgrade_to``."""
        migration = scenario.spec.migration
        if not migration:
            return self.base
        check_migration(release(self.kafka_version))
        if migration.upgrade_to:
            check_upgrade(release(self.kafka_version), migration.upgrade_to)
        return self.migrating(scenario.broker_settings)


__all__ = ["RunTopology"]
