"""The Kafka versions kafka-chaos supports, in one place.

Each entry is an Apache Kafka release that Maven Central serves as
``org.apache.kafka:kafka_2.13:<version>``, with the metadata modes the harness runs it in:
ZooKeeper mode up to 3.9 (the last release that has it), KRaft from 3.9, and KRaft only
from 4.0 (Kafka removed ZooKeeper mode there). Differences
between versions that matter to the harness (a setting that appeared later, a base image
with another Java) are recorded here, beside the version, so no test has to branch on a
version string.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.errors import UnsupportedVersion
from topologies.model import KRAFT, MIGRATION, ZOOKEEPER


@dataclass(frozen=True)
class KafkaRelease:
    """One supported Kafka release and what the harness must know about it."""

    version: str
    # The metadata modes the harness runs this release in.
    metadata_modes: tuple[str, ...] = (ZOOKEEPER,)
    java: int = 17
    # Broker settings this release needs beyond the topology's (e.g. a feature that
    # must be switched off explicitly in later ZooKeeper-mode releases).
    extra_broker_settings: dict[str, str] = field(default_factory=dict)
    # Whether the harness migrates its ZooKeeper-mode clusters to KRaft in place. Kafka has
    # the migration from 3.4 (KIP-866; a preview until 3.6). 3.9.1, which runs both modes, is
    # the release the harness's migration is built on; an earlier one says True once its
    # KRaft controllers run here.
    migrates: bool = False
    # Whether its dedicated controllers take advertised.listeners: from 3.9 (KIP-853, which
    # registers each controller's endpoints); 3.7 refuses to start a controller given any.
    controllers_advertise: bool = False

    @property
    def cluster_modes(self) -> tuple[str, ...]:
        """The metadata modes a cluster of this release may be in: its own, and the
        migrating one between them where it migrates."""
        return (*self.metadata_modes, *((MIGRATION,) if self.migrates else ()))

    def runs_in(self, metadata: str) -> bool:
        """Whether the harness runs this release's clusters in ``metadata`` mode from the
        start (a migration's target must run in KRaft mode)."""
        return metadata in self.metadata_modes

    @property
    def protocol_version(self) -> str:
        """Its ``inter.broker.protocol.version`` (``3.9`` for 3.9.1), which a migration pins."""
        return ".".join(self.version.split(".")[:2])


SUPPORTED: tuple[KafkaRelease, ...] = (
    KafkaRelease("2.8.2"),
    KafkaRelease("3.3.2"),
    KafkaRelease("3.5.2"),
    KafkaRelease("3.7.2", migrates=True),
    KafkaRelease("3.9.1", metadata_modes=(ZOOKEEPER, KRAFT), migrates=True, controllers_advertise=True),
    # The last 3.x release: 3.9.1 with migration fixes (KAFKA-19480: an empty /migration
    # znode no longer stops the migration), beside which M10 shows 3.9.1's hang.
    KafkaRelease("3.9.2", metadata_modes=(ZOOKEEPER, KRAFT), migrates=True, controllers_advertise=True),
    KafkaRelease("4.0.0", metadata_modes=(KRAFT,), controllers_advertise=True),
    KafkaRelease("4.4.0", metadata_modes=(KRAFT,), controllers_advertise=True),
)

DEFAULT_VERSION = "3.7.2"


def supported_versions() -> list[str]:
    """Versions in ascending order, oldest first."""
    return [release.version for release in SUPPORTED]


def runs(version: str) -> list[tuple[str, str]]:
    """Every (version, metadata mode) pair the harness runs ``version`` in."""
    return [(version, mode) for mode in release(version).metadata_modes]


def check_mode(release: KafkaRelease, metadata: str) -> None:
    """Refuse a metadata mode the release is not run in, naming the releases that are."""
    if metadata in release.cluster_modes:
        return
    able = [r.version for r in SUPPORTED if metadata in r.cluster_modes]
    raise UnsupportedVersion(f"Kafka {release.version} does not run in {metadata} mode here "
                             f"(it runs in {', '.join(release.cluster_modes)}); releases that do: "
                             + ", ".join(able))


def check_migration(release: KafkaRelease) -> None:
    """Refuse a ZooKeeper-to-KRaft migration on a release that has none, naming those that do."""
    if release.migrates:
        return
    able = [r.version for r in SUPPORTED if r.migrates]
    raise UnsupportedVersion(f"Kafka {release.version} cannot migrate from ZooKeeper to KRaft here (it runs "
                             f"in {' and '.join(release.metadata_modes)} mode); releases that can: "
                             + ", ".join(able))


def check_upgrade(source: KafkaRelease, target: str) -> KafkaRelease:
    """The release ``target`` that a cluster migrated on ``source`` may be upgraded to: a
    supported release that runs KRaft and is newer; else one sentence naming those that are."""
    able = [r for r in SUPPORTED if r.runs_in(KRAFT) and _key(r.version) > _key(source.version)]
    found = next((r for r in able if r.version == target), None)
    if found is None:
        raise UnsupportedVersion(f"a cluster migrated on Kafka {source.version} cannot be upgraded to "
                                 f"{target!r} here; releases it can: "
                                 + (", ".join(r.version for r in able) or "none"))
    return found


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def release(version: str) -> KafkaRelease:
    """Look up a supported release, or refuse with the list of supported ones."""
    for candidate in SUPPORTED:
        if candidate.version == version:
            return candidate
    raise UnsupportedVersion(
        f"Kafka {version!r} is not supported; supported versions: "
        + ", ".join(supported_versions())
    )
