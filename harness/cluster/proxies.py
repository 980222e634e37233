"""Driving the run's Toxiproxy server through toxiproxy-python.

toxiproxy-python keeps the server address in class attributes of its APIConsumer, so
one process talks to one Toxiproxy server at a time; a kafka-chaos process runs one
cluster at a time, which fits. Calls the library lacks (bulk populate, the proxy list
with its toxics) go through the same APIConsumer so there is one HTTP path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toxiproxy.api import APIConsumer
from toxiproxy.server import Toxiproxy

from harness.cluster.fabric import Link


class ProxyControl:
    """Enable, disable and poison the proxies of one run's fabric."""

    def __init__(self, host: str, port: int) -> None:
        self._server = Toxiproxy()
        self._server.update_api_consumer(host, port)

    def populate(self, links: Iterable[Link]) -> None:
        body = [
            {
                "name": link.name,
                "listen": f"0.0.0.0:{link.listen_port}",
                "upstream": link.upstream,
                "enabled": True,
            }
            for link in links
        ]
        APIConsumer.post("/populate", json=body)

    def reset(self) -> None:
        """Enable every proxy and remove every toxic: the network half of healing."""
        self._server.reset()

    def set_enabled(self, link_name: str, enabled: bool) -> None:
        APIConsumer.post(f"/proxies/{link_name}", json={"enabled": enabled})

    def add_toxic(
        self, link_name: str, toxic_type: str, stream: str, attributes: dict[str, Any], name: str
    ) -> None:
        APIConsumer.post(
            f"/proxies/{link_name}/toxics",
            json={
                "name": name,
                "type": toxic_type,
                "stream": stream,
                "toxicity": 1.0,
                "attributes": attributes,
            },
        )

    def remove_toxic(self, link_name: str, toxic_name: str) -> None:
        APIConsumer.delete(f"/proxies/{link_name}/toxics/{toxic_name}")

    def state(self) -> dict[str, dict[str, Any]]:
        """Every proxy with ``enabled`` and its ``toxics``, keyed by link name."""
        return dict(APIConsumer.get("/proxies").json())

    def damaged(self) -> list[str]:
        """Links that are disabled or carry a toxic."""
        return sorted(
            name
            for name, proxy in self.state().items()
            if not proxy.get("enabled", True) or proxy.get("toxics")
        )
