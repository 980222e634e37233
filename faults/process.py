"""Process faults: kill -9, controlled shutdown, pause, restart, and bounce.

A hard kill and a controlled shutdown are the two ends of a broker's death: after
SIGKILL nothing moves until ZooKeeper expires the broker's session, while SIGTERM makes
the broker ask the controller to move its leaderships away before it exits. A pause
(SIGSTOP) is the third case, a process that is alive but silent, as in a long GC pause.
Bounce repeats restarts while chasing a role (the leader of a partition, the
controller), as Kafka's own replication system test does: a hard bounce waits for
ZooKeeper to notice the dead broker before starting it again, a clean bounce waits for
the controlled shutdown to finish.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from faults import nodes
from faults.base import Fault
from faults.draw import broker_role, process_target
from faults.kinds import FaultDoc, Param, fault_kind, target_param
from faults.spec import check_keys, non_negative, optional, positive
from faults.targets import FollowerOf, LeaderOf, Target, partition_state, target_from
from faults.waiting import wait_until_clear
from topologies.model import Topology

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl

EXIT_TIMEOUT_S = 20.0

PROCESS_HEAL = (
    "Starts every node that is down again and waits until each one serves "
    "(a broker is registered again: in /brokers/ids, or unfenced by the KRaft controllers)."
)


def clean_param(example: bool) -> Param:
    meaning = "Stop with SIGTERM (controlled shutdown) instead of SIGKILL."
    return Param("clean", "bool", meaning, example, False)


class NodeFault(Fault):
    """A fault on the processes of the nodes a target resolves to.

    A role can name a node whose process another fault has already killed or stopped:
    ZooKeeper still calls a dead broker controller or leader until its session expires.
    Signalling it again cannot work (Docker refuses to signal an exited container, and a
    stopped JVM takes SIGTERM only once resumed, which the other fault's heal does after
    this one's inject), so such a node is left to the fault that holds it: this one does
    nothing to it, now or at its heal, and its outcome says so. SIGKILL does reach a
    stopped process (``acts_on_stopped``: a kill), and a power loss acts on a dead node
    too (``acts_on_exited``): its unsynced files are lost all the same."""

    kind: ClassVar[str]
    acts_on_stopped: ClassVar[bool] = False
    acts_on_exited: ClassVar[bool] = False

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target
        self.held_elsewhere: tuple[str, ...] = ()

    def check(self, topology: Topology) -> None:
        self.target.check(topology)

    def check_exists(self, cluster: ClusterControl) -> None:
        self.target.check_exists(cluster)

    def _resolve(self, cluster: ClusterControl) -> tuple[str, ...]:
        named = nodes.process_nodes(cluster, self.target.resolve(cluster), self.kind)
        self.held_elsewhere = nodes.held_down(cluster, named, stopped=not self.acts_on_stopped,
                                              exited=not self.acts_on_exited)
        return tuple(n for n in named if n not in self.held_elsewhere)

    def _noted(self, detail: str) -> str:
        if not self.held_elsewhere:
            return detail
        held = f"{', '.join(self.held_elsewhere)} left alone: already down or stopped by another fault"
        return f"{detail}; {held}" if detail else held

    def describe(self) -> str:
        return f"{self.kind} {self.target.describe()}"

    def _params(self) -> dict[str, Any]:
        return {}

    def to_spec(self) -> dict[str, Any]:
        return {"fault": self.kind, "target": self.target.to_spec(), **self._params()}

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        """Start every node that is down, then wait until each serves again.

        All are started before any is waited for: ZooKeeper nodes serve only as a quorum,
        so after the whole ensemble went down none would serve while the others wait."""
        began = time.monotonic()
        started = [node for node in resolved if nodes.ensure_running(cluster, node)]
        back: dict[str, float] = {}
        for node in resolved:
            nodes.wait_back(cluster, node)
            back[node] = time.monotonic() - began
        return ", ".join(f"{node} back after {back[node]:.1f} s" for node in started)


@fault_kind(
    FaultDoc(
        "kill",
        "SIGKILL to every node the target resolves to; returns once the processes have exited. A killed "
        "broker tells nobody, so its partitions move only after ZooKeeper expires its session.",
        PROCESS_HEAL,
        (target_param({"leader_of": ["$topic", 0]}),),
        {"fault": "kill", "target": {"leader_of": ["$topic", 0]}},
        10.0,
    ),
    draw=lambda d: {"target": process_target(d)},
)
class Kill(NodeFault):
    """SIGKILL: the process dies at once and says nothing to anyone."""

    kind = "kill"
    acts_on_stopped = True  # SIGKILL ends a stopped process too

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Kill:
        check_keys(spec, ["fault", "target"], "fault 'kill'")
        return cls(target_from(spec, "target", "fault 'kill'"))

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for node in resolved:
            nodes.signal(cluster, node, nodes.SIGKILL)
        for node in resolved:
            nodes.wait_exited(cluster, node, EXIT_TIMEOUT_S)
        return ""


@fault_kind(
    FaultDoc(
        "controlled_shutdown",
        "SIGTERM, so a broker runs Kafka's controlled shutdown (the controller moves its leaderships to "
        "other in-sync replicas and drops it from every ISR); returns once the node has left "
        "/brokers/ids and its process has exited.",
        PROCESS_HEAL,
        (
            target_param({"broker": 1}),
            Param("timeout_s", "float", "Seconds to wait, per node, for the deregistration and then for the "
                  "exit.", 45.0, 60.0),
        ),
        {"fault": "controlled_shutdown", "target": {"broker": 1}, "timeout_s": 45.0},
        15.0,
    ),
    draw=lambda d: {"target": broker_role(d)},
)
class ControlledShutdown(NodeFault):
    """SIGTERM, returning once the broker has left ``/brokers/ids`` and its process exited.

    The JVM's shutdown hook runs Kafka's controlled shutdown: the controller moves each
    partition the broker leads to another in-sync replica and drops the broker from
    every ISR, then the broker closes its ZooKeeper session (deleting its ephemeral
    registration) and exits. ``timeline`` keeps, per node, the monotonic times of the
    signal, the deregistration and the exit, for tests that compare them with ZooKeeper.
    """

    kind = "controlled_shutdown"

    def __init__(self, target: Target, timeout_s: float = 60.0) -> None:
        super().__init__(target)
        self.timeout_s = positive(timeout_s, "controlled_shutdown timeout_s")
        self.timeline: dict[str, tuple[float, float, float]] = {}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> ControlledShutdown:
        what = "fault 'controlled_shutdown'"
        check_keys(spec, ["fault", "target", "timeout_s"], what)
        return cls(target_from(spec, "target", what), optional(spec, "timeout_s", float, 60.0, what))

    def _params(self) -> dict[str, Any]:
        return {"timeout_s": self.timeout_s}

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        details = []
        for node in resolved:
            signalled = time.monotonic()
            nodes.signal(cluster, node, nodes.SIGTERM)
            nodes.wait_deregistered(cluster, node, self.timeout_s)
            deregistered = time.monotonic()
            nodes.wait_exited(cluster, node, self.timeout_s)
            exited = time.monotonic()
            self.timeline[node] = (signalled, deregistered, exited)
            details.append(
                f"{node} deregistered after {deregistered - signalled:.2f} s, "
                f"exited after {exited - signalled:.2f} s"
            )
        return "; ".join(details)


@fault_kind(
    FaultDoc(
        "pause",
        "SIGSTOP: the process stays alive but answers nothing, like a long stop-the-world GC. Held longer "
        "than the ZooKeeper session timeout, a paused broker loses its session.",
        "SIGCONT to every paused node.",
        (target_param({"follower_of": ["$topic", 0]}),),
        {"fault": "pause", "target": {"follower_of": ["$topic", 0]}},
        8.0,
    ),
    draw=lambda d: {"target": process_target(d)},
)
class Pause(NodeFault):
    """SIGSTOP until healed (SIGCONT): alive but silent, like a long stop-the-world GC."""

    kind = "pause"

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Pause:
        check_keys(spec, ["fault", "target"], "fault 'pause'")
        return cls(target_from(spec, "target", "fault 'pause'"))

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for node in resolved:
            nodes.signal(cluster, node, nodes.SIGSTOP)
        return ""

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for node in resolved:
            nodes.ensure_running(cluster, node)
        return ""


@fault_kind(
    FaultDoc(
        "restart",
        "Stops each node (SIGKILL, or SIGTERM with a wait for deregistration and exit when `clean`), keeps "
        "it down for `downtime_s`, starts it again and waits until it serves; the whole cycle happens "
        "at inject.",
        "Starts any node still down (normally none: the inject already restarted them).",
        (
            target_param("active_controller"),
            clean_param(True),
            Param("downtime_s", "float", "Seconds to stay down before starting again.", 2.0, 0.0),
        ),
        {"fault": "restart", "target": "active_controller", "clean": True, "downtime_s": 2.0},
    ),
    draw=lambda d: {"target": process_target(d), "clean": d.rng.random() < 0.5,
                    "downtime_s": round(d.rng.uniform(0.0, 5.0), 1)},
)
class Restart(NodeFault):
    """Stop (hard or clean), stay down ``downtime_s``, start again and wait until back."""

    kind = "restart"

    def __init__(self, target: Target, clean: bool = False, downtime_s: float = 0.0) -> None:
        super().__init__(target)
        self.clean = clean
        self.downtime_s = non_negative(downtime_s, "restart downtime_s")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Restart:
        what = "fault 'restart'"
        check_keys(spec, ["fault", "target", "clean", "downtime_s"], what)
        return cls(
            target_from(spec, "target", what),
            optional(spec, "clean", bool, False, what),
            optional(spec, "downtime_s", float, 0.0, what),
        )

    def _params(self) -> dict[str, Any]:
        return {"clean": self.clean, "downtime_s": self.downtime_s}

    def describe(self) -> str:
        return f"{self.kind}[{'clean' if self.clean else 'hard'}] {self.target.describe()}"

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        for node in resolved:
            stop(cluster, node, self.clean)
        time.sleep(self.downtime_s)
        return self._restore(cluster, resolved)


@fault_kind(
    FaultDoc(
        "bounce",
        "Restarts whatever node holds the role, `times` times, resolving the role again each round. Each "
        "round stops the node and waits until the role has moved elsewhere (after a hard stop, also until "
        "ZooKeeper has seen the death) before starting it again; with a leader_of or follower_of target "
        "each round also waits until the node is back in the partition's ISR, so no round kills the last "
        "in-sync replica.",
        "Starts any node still down (normally none: every round restarts its node).",
        (
            target_param("controller"),
            Param("times", "int", "How many rounds (at least 1).", 2, 3),
            clean_param(False),
        ),
        {"fault": "bounce", "target": "controller", "times": 2},
    ),
    draw=lambda d: {"target": broker_role(d), "times": d.rng.randint(1, 3), "clean": d.rng.random() < 0.5},
)
class Bounce(NodeFault):
    """Restart whatever node holds a role, ``times`` times, re-resolving the role each round.

    Before starting a node again, a hard bounce waits until ZooKeeper has expired the
    dead broker's session and a role that can move (not a fixed broker or node) has moved
    to another broker; a clean bounce waits for the controlled shutdown. When the role is
    a partition's leader or follower, each round also waits until the restarted broker is
    back in that partition's ISR, so the next round never kills the last in-sync replica.
    ``bounced`` lists the nodes hit.
    """

    kind = "bounce"

    def __init__(self, target: Target, times: int = 3, clean: bool = False) -> None:
        super().__init__(target)
        self.times = int(positive(times, "bounce times"))
        self.clean = clean
        self.bounced: list[str] = []

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Bounce:
        what = "fault 'bounce'"
        check_keys(spec, ["fault", "target", "times", "clean"], what)
        return cls(
            target_from(spec, "target", what),
            optional(spec, "times", int, 3, what),
            optional(spec, "clean", bool, False, what),
        )

    def _params(self) -> dict[str, Any]:
        return {"times": self.times, "clean": self.clean}

    def describe(self) -> str:
        how = "clean" if self.clean else "hard"
        return f"{self.kind}[{how} x{self.times}] {self.target.describe()}"

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        self.bounced = []
        rounds = []
        for round_ in range(self.times):
            up = resolved if round_ == 0 else self._resolve(cluster)
            if not up:  # the role is held by a node another fault took down
                break
            node = up[0]
            started = time.monotonic()
            stop(cluster, node, self.clean)
            if not self.clean:
                # Kafka's replication test: the controller must have seen the death.
                nodes.wait_deregistered(cluster, node, nodes.session_timeout_s(cluster) + 10)
            self._wait_role_moved(cluster, node)
            nodes.ensure_running(cluster, node)
            nodes.wait_back(cluster, node)
            self._wait_in_sync(cluster, node)
            self.bounced.append(node)
            rounds.append(f"{node} {time.monotonic() - started:.1f} s")
        return "bounced " + ", ".join(rounds) if rounds else ""

    def _wait_role_moved(self, cluster: ClusterControl, node: str) -> None:
        if not self.target.moves:
            return  # broker 1 stays broker 1: there is nothing to move

        def still_on_node() -> str | None:
            # The role's holder as ZooKeeper names it, even a node that is not running:
            # right after the stop the role is still on the stopped node, which
            # ``_resolve`` leaves out as held down (it then returns nothing).
            holders = nodes.process_nodes(cluster, self.target.resolve(cluster), self.kind)
            return f"still on {node}" if node in holders[:1] else None

        timeout_s = nodes.session_timeout_s(cluster) + 30
        wait_until_clear(still_on_node, timeout_s, f"{self.target} moving off {node}")

    def _wait_in_sync(self, cluster: ClusterControl, node: str) -> None:
        if not isinstance(self.target, LeaderOf | FollowerOf):
            return
        broker = nodes.broker_id(cluster, node)
        topic, partition = self.target.topic, self.target.partition

        def out_of_isr() -> str | None:
            isr = partition_state(cluster, topic, partition).isr
            return None if broker in isr else f"isr {list(isr)}"

        wait_until_clear(
            out_of_isr, nodes.START_TIMEOUT_S, f"{node} rejoining the ISR of {topic}-{partition}"
        )


def stop(cluster: ClusterControl, node: str, clean: bool, timeout_s: float = 60.0) -> None:
    """Stop one node: SIGTERM and wait for deregistration and exit, or SIGKILL."""
    if clean:
        nodes.signal(cluster, node, nodes.SIGTERM)
        nodes.wait_deregistered(cluster, node, timeout_s)
        nodes.wait_exited(cluster, node, timeout_s)
    else:
        nodes.signal(cluster, node, nodes.SIGKILL)
        nodes.wait_exited(cluster, node, EXIT_TIMEOUT_S)
