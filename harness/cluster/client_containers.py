"""Containers that run a client of the cluster: Kafka's Java client, one per producer or
consumer.

A client in zone x must reach the cluster exactly as librdkafka in the harness process
does: through zone x's proxies, at the 127.0.0.1 ports Toxiproxy publishes, which is what
the brokers advertise to zone x. So a client container shares the host's network stack
(``network_mode=host``): it publishes nothing, needs no privilege, and reaches only those
loopback ports, and a fault on a zone's client links strikes both clients alike. It
carries the run's labels, so the run's cleanup removes it with the cluster's own.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence

import docker
from docker.models.containers import Container

from harness.cluster.images import ensure_base, ensure_java_client
from harness.cluster.resources import RunIdentity

Progress = Callable[[str], None]


class ClientContainers:
    """Starts the run's client containers, building each client release's image once."""

    def __init__(self, engine: Callable[[], docker.DockerClient], identity: RunIdentity,
                 cluster_version: str, progress: Progress) -> None:
        self._engine = engine
        self.identity = identity
        self.cluster_version = cluster_version
        self.progress = progress
        self._images: dict[str, str] = {}

    def java_image(self, version: str | None) -> str:
        """The Java client image of ``version`` (None: the cluster's release), built if missing."""
        version = version or self.cluster_version
        if version not in self._images:
            client = self._engine()
            self._images[version] = ensure_java_client(client, version, ensure_base(client, self.progress),
                                                       self.progress)
        return self._images[version]

    def start_java(self, version: str | None, name: str, arguments: Sequence[str]) -> Container:
        """A started container of the Java client ``version`` running the driver with
        ``arguments``, named after the run and the client ``name``."""
        image = self.java_image(version)
        # A client of each name runs once per scenario; the suffix keeps a container a
        # failed scenario left behind (removed with the run) from blocking the next one.
        unique = f"client-{name}-{secrets.token_hex(3)}"
        container = self._engine().containers.run(
            image, list(arguments), name=self.identity.resource_name(unique),
            labels=self.identity.labels("client"), network_mode="host", init=True, detach=True)
        return container
