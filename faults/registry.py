"""Fault kinds by name, and building a fault from its spec dict.

Schedules and scenario files describe faults as data, for example
``{"fault": "kill", "target": {"leader_of": ["orders", 0]}}`` or
``{"fault": "latency", "links": {"isolate": {"zone": "a"}}, "latency_ms": 200}``.
This is the one place that maps a name to a fault class, so an unknown name is refused
with the list of known ones, and every fault's ``to_spec`` is read back here. It also
holds what each kind means (:data:`FAULT_DOCS`), from which docs/FAULTS.md is rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from faults.base import Fault
from faults.config import TopicConfig
from faults.disk import FillDisk
from faults.errors import FaultSpecError, TargetError
from faults.network import Cut, Degrade
from faults.power import PowerLoss
from faults.process import Bounce, ControlledShutdown, Kill, Pause, Restart
from faults.spec import as_mapping
from faults.toxics import _DEGRADATIONS, DEGRADATIONS
from faults.zookeeper import DeleteController, ExpireSession, PreferredLeaderElection, Reassign
from topologies.model import Topology

Builder = Callable[[Mapping[str, Any]], Fault]

FAULTS: dict[str, Builder] = {
    "kill": Kill.from_spec,
    "controlled_shutdown": ControlledShutdown.from_spec,
    "pause": Pause.from_spec,
    "restart": Restart.from_spec,
    "bounce": Bounce.from_spec,
    "power_loss": PowerLoss.from_spec,
    "fill_disk": FillDisk.from_spec,
    "cut": Cut.from_spec,
    "isolate": Cut.isolate_from_spec,
    **{kind: Degrade.from_spec for kind in DEGRADATIONS},
    "expire_session": ExpireSession.from_spec,
    "delete_controller": DeleteController.from_spec,
    "preferred_election": PreferredLeaderElection.from_spec,
    "reassign": Reassign.from_spec,
    "topic_config": TopicConfig.from_spec,
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


# -- documentation records ---------------------------------------------------------------
# docs/FAULTS.md is rendered from these records by faults.reference, and the unit tests
# hold them against the builders above (every kind documented, every documented
# parameter accepted, every accepted parameter documented, defaults as the code has
# them). They live here, beside the table of builders, so that adding a kind without
# describing it fails a test instead of leaving the page silently behind.

REQUIRED: Final = "required"
"""The default of a parameter that a spec must give."""


@dataclass(frozen=True)
class Param:
    """One key of a fault spec: its type as written in TOML, default, meaning, an example."""

    name: str
    type: str
    meaning: str
    example: Any
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class FaultDoc:
    """What one fault kind does, how healing undoes it, what it takes, and an example.

    ``example`` is a complete spec (``"fault"`` included) as a scenario file would hold
    it; ``"$topic"`` stands for the scenario's topic. ``example_duration_s`` is the
    schedule entry's ``duration_s`` the example is shown with.
    """

    kind: str
    summary: str
    heals: str
    params: tuple[Param, ...]
    example: Mapping[str, Any]
    example_duration_s: float = 0.0
    notes: tuple[str, ...] = field(default=())

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


_TARGET_MEANING = "The role whose nodes are hit, resolved when the fault strikes."


def _target(example: Any, meaning: str = _TARGET_MEANING) -> Param:
    return Param("target", "target", meaning, example)


def _links(example: Any) -> Param:
    return Param("links", "link selection", "The links to act on, chosen when the fault strikes.", example)


def _clean(example: bool) -> Param:
    meaning = "Stop with SIGTERM (controlled shutdown) instead of SIGKILL."
    return Param("clean", "bool", meaning, example, False)


_TIMEOUT_MEANING = "Seconds to wait for the metadata to show the effect before the inject fails."
_PROCESS_HEAL = (
    "Starts every node that is down again and waits until each one serves "
    "(a broker is registered again: in /brokers/ids, or unfenced by the KRaft controllers)."
)
_METADATA_HEAL = (
    "Nothing to undo: the cluster is left healthy in its new state; heal records the end of the window."
)
_MODE = Param(
    "mode", "string",
    "How the links are cut: `refuse` (connections refused at once) or `blackhole` (open, silent); "
    "see [Cut modes](#cut-modes).",
    "blackhole", "refuse",
)
_STREAM = Param(
    "stream", "string",
    "Which direction of each link is degraded: `upstream`, `downstream` or `both`; see [Streams](#streams).",
    "downstream", "both",
)

_FIXED_DOCS: tuple[FaultDoc, ...] = (
    FaultDoc(
        "kill",
        "SIGKILL to every node the target resolves to; returns once the processes have exited. A killed "
        "broker tells nobody, so its partitions move only after ZooKeeper expires its session.",
        _PROCESS_HEAL,
        (_target({"leader_of": ["$topic", 0]}),),
        {"fault": "kill", "target": {"leader_of": ["$topic", 0]}},
        10.0,
    ),
    FaultDoc(
        "power_loss",
        "The nodes the target resolves to lose power together: SIGKILL to all of them at once, then, while "
        "they are down, every file of each node's data directory cut back to what its JVM had made "
        "durable (its sync journal: the sizes at its last fsync/fdatasync), and every file never synced "
        "removed. The worst case a power cut allows; see docs/design/power-loss.md for the model and its "
        "assumptions.",
        "Starts every node that is down again (the power is back) and waits until each one serves: a "
        "broker recovers its log as after any unclean shutdown.",
        (_target({"zone_of": {"leader_of": ["$topic", 0]}}),),
        {"fault": "power_loss", "target": {"zone_of": {"leader_of": ["$topic", 0]}}},
        5.0,
        notes=("Not in kafka-chaos explore's default draw: a correlated power loss loses acknowledged "
               "records on any configuration that does not fsync (Kafka's default), which is the trade "
               "to show, not an invariant to break; name it in --faults to draw it.",),
    ),
    FaultDoc(
        "fill_disk",
        "Fills the disk of every broker the target resolves to (the topology's `broker_disk_mb`: each "
        "broker's log directory is a disk of that size) with one file, so its next append fails with "
        "\"No space left on device\"; Kafka then takes the log directory offline and, with no other, "
        "shuts the broker down.",
        "Removes the file and starts every node that is down again, as an operator would (Kafka does not "
        "bring an offline log directory back by itself); waits until each one serves.",
        (_target({"leader_of": ["$topic", 0]}),),
        {"fault": "fill_disk", "target": {"leader_of": ["$topic", 0]}},
        10.0,
        notes=("Refused before anything runs on a topology without `broker_disk_mb` or with a ZooKeeper "
               "target. Not in kafka-chaos explore's default draw; name it in --faults to draw it.",),
    ),
    FaultDoc(
        "controlled_shutdown",
        "SIGTERM, so a broker runs Kafka's controlled shutdown (the controller moves its leaderships to "
        "other in-sync replicas and drops it from every ISR); returns once the node has left "
        "/brokers/ids and its process has exited.",
        _PROCESS_HEAL,
        (
            _target({"broker": 1}),
            Param("timeout_s", "float", "Seconds to wait, per node, for the deregistration and then for the "
                  "exit.", 45.0, 60.0),
        ),
        {"fault": "controlled_shutdown", "target": {"broker": 1}, "timeout_s": 45.0},
        15.0,
    ),
    FaultDoc(
        "pause",
        "SIGSTOP: the process stays alive but answers nothing, like a long stop-the-world GC. Held longer "
        "than the ZooKeeper session timeout, a paused broker loses its session.",
        "SIGCONT to every paused node.",
        (_target({"follower_of": ["$topic", 0]}),),
        {"fault": "pause", "target": {"follower_of": ["$topic", 0]}},
        8.0,
    ),
    FaultDoc(
        "restart",
        "Stops each node (SIGKILL, or SIGTERM with a wait for deregistration and exit when `clean`), keeps "
        "it down for `downtime_s`, starts it again and waits until it serves; the whole cycle happens "
        "at inject.",
        "Starts any node still down (normally none: the inject already restarted them).",
        (
            _target("active_controller"),
            _clean(True),
            Param("downtime_s", "float", "Seconds to stay down before starting again.", 2.0, 0.0),
        ),
        {"fault": "restart", "target": "active_controller", "clean": True, "downtime_s": 2.0},
    ),
    FaultDoc(
        "bounce",
        "Restarts whatever node holds the role, `times` times, resolving the role again each round. Each "
        "round stops the node and waits until the role has moved elsewhere (after a hard stop, also until "
        "ZooKeeper has seen the death) before starting it again; with a leader_of or follower_of target "
        "each round also waits until the node is back in the partition's ISR, so no round kills the last "
        "in-sync replica.",
        "Starts any node still down (normally none: every round restarts its node).",
        (
            _target("controller"),
            Param("times", "int", "How many rounds (at least 1).", 2, 3),
            _clean(False),
        ),
        {"fault": "bounce", "target": "controller", "times": 2},
    ),
    FaultDoc(
        "cut",
        "Cuts every selected link: each is a directed Toxiproxy proxy, so one direction can be cut "
        "without the other.",
        "Enables the links again; after a blackhole it first removes the toxics and closes the links' "
        "connections, so peers reconnect instead of resuming a stream with bytes missing.",
        (
            _links({"from": {"follower_of": ["$topic", 0]}, "to": {"leader_of": ["$topic", 0]},
                    "kind": "replication"}),
            _MODE,
        ),
        {"fault": "cut", "links": {"from": {"follower_of": ["$topic", 0]}, "to": {"leader_of": ["$topic", 0]},
                                   "kind": "replication"}, "mode": "blackhole"},
        10.0,
        ("A follower's fetch link is the `replication` link from the follower to the leader.",),
    ),
    FaultDoc(
        "isolate",
        "Shorthand for a `cut` of every link with exactly one end in the target: a node, or a zone with "
        "its clients, cut off from everything else.",
        "As `cut`.",
        (
            _target({"zone": "c"}, "The node, zone or role to cut off, resolved when the fault strikes."),
            _MODE,
        ),
        {"fault": "isolate", "target": {"zone": "c"}},
        15.0,
        ("Saved and reported as the equivalent `cut` with `links = { isolate = ... }`.",),
    ),
    FaultDoc(
        "expire_session",
        "Closes each target broker's ZooKeeper session, as a long pause or a partition from ZooKeeper "
        "would; returns once the old session's /brokers/ids entry is gone. The controller treats the "
        "broker as dead until it registers again, which it does by itself.",
        "Waits until each broker has registered again with a new session.",
        (
            _target({"broker": 2}, "The broker(s) whose session is closed; a target naming no broker fails."),
            Param("timeout_s", "float", "Seconds to wait for the old registration to vanish; healing waits "
                  "this plus the session timeout for the new one.", 20.0, 30.0),
        ),
        {"fault": "expire_session", "target": {"broker": 2}},
        5.0,
    ),
    FaultDoc(
        "delete_controller",
        "Deletes /controller, so every broker races to become controller; returns once a controller holds "
        "it with a higher /controller_epoch.",
        _METADATA_HEAL,
        (Param("timeout_s", "float", _TIMEOUT_MEANING, 20.0, 30.0),),
        {"fault": "delete_controller"},
    ),
    FaultDoc(
        "preferred_election",
        "Asks the controller (ElectLeaders admin API) to hand leadership back to each partition's "
        "preferred replica; returns once every chosen partition whose preferred replica is in sync is "
        "led by it.",
        _METADATA_HEAL,
        (
            Param("topic", "string", "The topic whose partitions are elected.", "$topic"),
            Param("partitions", "list of int", "The partitions to elect; all of the topic's when absent.",
                  [0], None),
            Param("timeout_s", "float", _TIMEOUT_MEANING, 20.0, 30.0),
        ),
        {"fault": "preferred_election", "topic": "$topic", "partitions": [0]},
    ),
    FaultDoc(
        "reassign",
        "Moves one partition's replicas to the given brokers: in ZooKeeper mode by writing "
        "/admin/reassign_partitions (which its controllers execute), in KRaft with the "
        "AlterPartitionReassignments admin API; returns once no move is pending, the assignment is the new "
        "list and every new replica is in the ISR. Fails if another reassignment is in progress.",
        _METADATA_HEAL,
        (
            Param("topic", "string", "The partition's topic.", "$topic"),
            Param("partition", "int", "The partition to move.", 0),
            Param("replicas", "list of int", "The new replica list (distinct broker ids; the first is "
                  "preferred leader).", [2, 1]),
            Param("timeout_s", "float", _TIMEOUT_MEANING, 90.0, 60.0),
        ),
        {"fault": "reassign", "topic": "$topic", "partition": 0, "replicas": [2, 1]},
    ),
    FaultDoc(
        "topic_config",
        "Changes settings of a topic at run time with the admin API (incremental AlterConfigs), as an "
        "operator would; returns once DescribeConfigs reports the new values.",
        "Puts every changed key back as it was before the inject: its former topic-level value, or "
        "deleted where the topic inherited the broker default; returns once DescribeConfigs shows it.",
        (
            Param("topic", "string", "The topic whose settings change.", "$topic"),
            Param("settings", "table of setting = value", "Topic settings and their new values, e.g. "
                  "min.insync.replicas.", {"min.insync.replicas": 1}),
            Param("timeout_s", "float", _TIMEOUT_MEANING, 20.0, 30.0),
        ),
        {"fault": "topic_config", "topic": "$topic", "settings": {"min.insync.replicas": 1}},
        30.0,
    ),
)

# Per degradation kind: what it does, and per parameter its meaning and an example value.
# Names and defaults come from faults.toxics' own table, so only the words live here.
_DEGRADATION_TEXT: dict[str, tuple[str, dict[str, tuple[str, int]]]] = {
    "latency": (
        "Delays the data crossing the selected links (a Toxiproxy `latency` toxic).",
        {"latency_ms": ("Delay added to the data, in milliseconds.", 200),
         "jitter_ms": ("Random variation of the delay, either way, in milliseconds.", 50)},
    ),
    "bandwidth": (
        "Limits the throughput of the selected links (a Toxiproxy `bandwidth` toxic).",
        {"rate_kb_s": ("Throughput allowed, in kilobytes per second.", 64)},
    ),
    "slow_close": (
        "Delays the closing of connections on the selected links (a Toxiproxy `slow_close` toxic).",
        {"delay_ms": ("Delay before a connection is closed, in milliseconds.", 500)},
    ),
    "slicer": (
        "Cuts the data into small pieces, optionally with a pause between them (a Toxiproxy `slicer` "
        "toxic): peers must cope with requests arriving in many short reads.",
        {"average_size": ("Average piece size, in bytes.", 64),
         "size_variation": ("Random variation of the piece size, in bytes; smaller than average_size.", 16),
         "delay_us": ("Pause between pieces, in microseconds.", 10)},
    ),
}

_DEGRADATION_EXAMPLE_LINKS: dict[str, Any] = {
    "latency": {"isolate": {"zone": "a"}},
    "bandwidth": {"from": {"zone_clients": "b"}, "to": {"broker": 0}},
    "slow_close": {"isolate": {"zone_clients": "c"}},
    "slicer": {"from": {"broker": 1}, "to": {"broker": 0}, "both_ways": True},
}


def _degradation_doc(kind: str) -> FaultDoc:
    """The doc of a degradation: parameter names and defaults read from faults.toxics."""
    summary, texts = _DEGRADATION_TEXT[kind]
    _, defaults = _DEGRADATIONS[kind]
    params = tuple(
        Param(name, "int", texts.get(name, ("", 0))[0], texts.get(name, ("", 0))[1],
              REQUIRED if default is None else default)
        for name, default in defaults.items()
    )
    links = _DEGRADATION_EXAMPLE_LINKS.get(kind, {"isolate": {"zone": "a"}})
    example = {"fault": kind, "links": links, **{p.name: p.example for p in params}}
    return FaultDoc(kind, summary, "Removes the toxic from every link it was added to.",
                    (_links(links), *params, _STREAM), example, 20.0)


FAULT_DOCS: dict[str, FaultDoc] = {
    **{doc.kind: doc for doc in _FIXED_DOCS},
    **{kind: _degradation_doc(kind) for kind in DEGRADATIONS if kind in _DEGRADATION_TEXT},
}
"""Every documented fault kind; the unit tests require the same keys as :data:`FAULTS`."""


def kinds_for(topology: Topology) -> tuple[str, ...]:
    """The fault kinds ``topology`` can take: each kind's documented example checked
    against it, so a kind of one metadata mode's own machinery (a ZooKeeper session's
    expiry) is left out of the other's, by the kind's own refusal."""
    runnable = []
    for kind in fault_kinds():
        try:
            build_fault(FAULT_DOCS[kind].example).check(topology)
        except (FaultSpecError, TargetError):
            continue
        runnable.append(kind)
    return tuple(runnable)
