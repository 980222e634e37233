"""When a cluster counts as healthy, and which nodes stand in the way when it is not.

Why a part of its own: the health rules decide when a test may start, when healing is
done and which nodes recovery restarts, so they deserve tests of their own; kept apart
from the containers and the clients they read through, they run over stand-ins (a node
that exited, a broker missing from ``/brokers/ids``, a short ISR) without Docker.
:meth:`~harness.cluster.lifecycle.Cluster.health` hands them the nodes' statuses and the
cluster itself as the observation; :mod:`harness.cluster.lifecycle` re-exports
:class:`HealthReport`, which callers have always imported from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from harness.cluster.broker_metadata import BrokerView
from harness.cluster.state import ClusterState
from topologies.model import Topology


@dataclass
class HealthReport:
    """Why a cluster is not fully healthy (empty ``problems`` means healthy).

    ``blocking`` names the nodes a problem points at (a stopped container, a broker
    missing from the live brokers, a replica missing from an ISR, a metadata quorum node
    out of the quorum), so that recovery can restart exactly those before it gives up on the
    cluster. A problem that points at no node (no controller, a damaged link) leaves it
    empty.
    """

    problems: list[str] = field(default_factory=list)
    blocking: set[str] = field(default_factory=set)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def add(self, problem: str, *nodes: str) -> None:
        self.problems.append(problem)
        self.blocking.update(nodes)


class LinkDamage(Protocol):
    """The proxies, as far as health asks: which links are cut or carry a toxic."""

    def damaged(self) -> list[str]: ...


class HealthObservation(Protocol):
    """What the health rules read of a running cluster (a Cluster, or a stand-in)."""

    @property
    def proxies(self) -> LinkDamage: ...

    @property
    def quorum_nodes(self) -> tuple[str, ...]: ...

    def quorum_problems(self) -> list[tuple[str, str | None]]:
        """What keeps the metadata quorum from serving: (problem, the node it points at)."""
        ...

    def state(self, topics: list[str] | None = None) -> ClusterState: ...

    def broker_view(self, broker_id: int, topics: list[str] | None = None) -> BrokerView: ...


def assess_health(
    topology: Topology, statuses: Mapping[str, str], observation: HealthObservation
) -> HealthReport:
    """Every node running, every proxy clean, quorum, all brokers, full ISRs.

    ``statuses`` is Docker's status of every started node. The checks go from the
    ground up and stop at the first layer with a problem (a stopped node, then links and
    quorum), because what sits above it cannot be judged yet.
    """
    report = HealthReport()
    for name, status in statuses.items():
        if status != "running":
            report.add(f"{name} is {status}", name)
    if report.problems:
        return report
    damaged = observation.proxies.damaged()
    if damaged:
        report.add(f"damaged links: {', '.join(damaged)}")
    for problem, node in observation.quorum_problems():
        report.add(problem, *([] if node is None else [node]))
    if report.problems:
        return report
    try:
        state = observation.state()
    except Exception as err:  # kazoo raises many kinds while the ensemble settles
        report.add(f"the cluster's metadata unreadable: {err}", *observation.quorum_nodes)
        return report
    expected = tuple(sorted(b.broker_id for b in topology.brokers))
    if state.live_brokers != expected:
        missing = sorted(set(expected) - set(state.live_brokers))
        report.add(f"live brokers {state.live_brokers}, expected {expected}",
                   *(f"kafka-{b}" for b in missing))
    if state.controller is None:
        report.add("no controller")
    for partition in state.partitions.values():
        if not partition.online or not partition.isr_full:
            # An offline partition waits on any of its replicas; a short ISR on the
            # replicas that are not in it.
            stuck = partition.replicas if not partition.online else tuple(
                r for r in partition.replicas if r not in partition.isr)
            report.add(
                f"{partition.topic}-{partition.partition} leader {partition.leader} "
                f"isr {list(partition.isr)} replicas {list(partition.replicas)}",
                *(f"kafka-{b}" for b in stuck),
            )
    if not report.problems:
        for broker in topology.brokers:
            try:
                view = observation.broker_view(broker.broker_id, topics=[])
            except OSError as err:
                report.add(f"{broker.name} does not answer metadata: {err}", broker.name)
                continue
            if view.brokers != expected:
                report.add(f"{broker.name} knows brokers {view.brokers}", broker.name)
    return report


__all__ = ["HealthObservation", "HealthReport", "LinkDamage", "assess_health"]
