"""The Java client releases a run's scenario files ask for, made ready before any container.

A Java producer or consumer runs kafka-clients of its ``client_version`` (the cluster's
release when unset). Maven Central is asked for each release, and the driver compiled
against it, before the first cluster starts: a release it does not serve is one line
naming the file, the client and the version, and nothing is left running.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from harness.cluster.images import java_client_libs
from harness.errors import ImageBuildError
from harness.scenario.file_format import ScenarioFile, ScenarioFileError
from harness.workload.client_settings import JAVA


def java_clients(scenario: ScenarioFile, cluster_version: str) -> dict[str, str]:
    """``who`` (``producer pa``) -> the Java client release it runs, for every Java client."""
    spec = scenario.spec
    clients = [(f"producer {p.name}", p.client, p.client_version) for p in spec.producers]
    clients += [(f"consumer {c.name}", c.client, c.client_version) for c in spec.consumers]
    return {who: version or cluster_version for who, client, version in clients if client == JAVA}


def prepare_java_clients(scenarios: Iterable[ScenarioFile], cluster_version: str,
                         progress: Callable[[str], None]) -> None:
    """Resolve (and compile the driver for) every Java client release the files name."""
    ready: set[str] = set()
    for scenario in scenarios:
        for who, version in java_clients(scenario, cluster_version).items():
            if version in ready:
                continue
            try:
                java_client_libs(version, progress)
            except ImageBuildError as err:
                raise ScenarioFileError(f"{scenario.path}: {who}: client_version {version!r}: {err}") from err
            ready.add(version)

