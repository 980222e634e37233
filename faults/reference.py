"""docs/FAULTS.md, rendered from the fault registry so the page cannot drift from the code.

The page lists every fault kind, target form, link selector, cut mode, toxic stream and
schedule key. The words come from the documentation records: each fault kind's own
(:class:`~faults.kinds.FaultDoc`, declared on its class and gathered in
:data:`faults.registry.FAULT_DOCS`) and the tables below; the *lists* come from the
code's own tables (the registry's builders, ``TARGET_KINDS``, ``LinkKind``, ``CutMode``,
``STREAMS``, the schedule's timing keys) and from asking each parser which keys it
accepts. When the two disagree - a parameter documented but not taken, or taken but not
documented - :func:`problems` says so, rendering refuses, and the unit tests fail,
instead of the page quietly going stale.

    python3 -m faults.reference > docs/FAULTS.md           # regenerate
    python3 -m faults.reference --check docs/FAULTS.md     # exit 1 when stale
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faults.errors import FaultSpecError, TargetError
from faults.network import CutMode
from faults.registry import FAULT_DOCS, FAULTS, FaultDoc, build_fault, kinds_for
from faults.schedule import ENTRY_KEYS
from faults.targets import TARGET_KINDS, parse_links, parse_target
from faults.toxics import STREAMS
from harness.cluster.fabric import LinkKind
from topologies import Topology, load_topology

TOPIC = "$topic"
"""How the examples name the scenario's topic (a scenario file replaces it at run time)."""


class UndocumentedError(ValueError):
    """The code has something the documentation records do not describe, or the reverse."""


@dataclass(frozen=True)
class TargetDoc:
    """One target form: what it resolves to, and example specs as a schedule writes them."""

    kind: str
    resolves_to: str
    examples: tuple[Any, ...]


TARGET_DOCS: dict[str, TargetDoc] = {
    doc.kind: doc
    for doc in (
        TargetDoc("broker", "The broker with this id, wherever it runs.", ({"broker": 1},)),
        TargetDoc("node", "A node by name: a broker (`kafka-<id>`), a ZooKeeper node (`zk-<zone>`) or a "
                  "dedicated KRaft controller (`kraft-<zone>`).", ({"node": "zk-b"}, {"node": "kraft-b"})),
        TargetDoc("zone", "Every node of the zone and the zone's clients (`client-<zone>`): what a zone "
                  "outage takes down.", ({"zone": "a"},)),
        TargetDoc("zone_clients", "Only the zone's clients (`client-<zone>`); no node.",
                  ({"zone_clients": "c"},)),
        TargetDoc("leader_of", "The broker that leads the partition at the moment the fault strikes; fails "
                  "if the partition has no leader then.", ({"leader_of": [TOPIC, 0]},)),
        TargetDoc("follower_of", "An in-sync follower of the partition, counted in replica order (not ISR "
                  "order, which churns); the optional third item picks the rank-th one (default 0).",
                  ({"follower_of": [TOPIC, 0]}, {"follower_of": [TOPIC, 0, 1]})),
        TargetDoc("zone_of", "The whole zone (nodes and clients) of whatever node the inner target "
                  "resolves to then.", ({"zone_of": "controller"}, {"zone_of": {"leader_of": [TOPIC, 0]}})),
        TargetDoc("coordinator_of", "The broker coordinating the consumer group at the moment the "
                  "fault strikes: the leader of the group's `__consumer_offsets` partition (Java hash of "
                  "the group id modulo the topic's partition count, as Kafka places it); fails if no "
                  "group has asked for a coordinator yet.", ({"coordinator_of": "orders-readers"},)),
        TargetDoc("txn_coordinator_of", "The broker coordinating the transactional.id's transactions at "
                  "the moment the fault strikes: the leader of its `__transaction_state` partition "
                  "(placed as `coordinator_of` places a group); fails if no transactional producer has "
                  "called `init_transactions` yet, which is what creates that topic.",
                  ({"txn_coordinator_of": "orders-writer"},)),
        TargetDoc("controller", "The bare word: the active controller at that moment, as "
                  "`active_controller`. With an id: that KRaft controller (quorum voter), whatever its role.",
                  ("controller", {"controller": 101})),
        TargetDoc("active_controller", "The active controller at that moment: the broker that holds "
                  "/controller in ZooKeeper mode, the quorum's leader in KRaft; fails if there is none then.",
                  ("active_controller",)),
        TargetDoc("controller_majority", "A majority of the KRaft quorum's voters (n // 2 + 1 of n), the "
                  "active controller first, then the others in id order: down or cut off, the rest can "
                  "neither elect a leader nor commit a metadata change.", ("controller_majority",)),
        TargetDoc("zookeeper_leader", "The ZooKeeper node that leads the ensemble at that moment (its "
                  "`srvr` answer says leader); fails if the ensemble has no quorum.", ("zookeeper_leader",)),
        TargetDoc("quorum_leader", "The KRaft controller that leads the quorum at that moment, by the "
                  "quorum's own account: on a KRaft cluster the active controller; on a migrating one the "
                  "controller that leads the migration, also before it claims /controller (until the copy, "
                  "`active_controller` there is a broker); fails if no controller leads then.",
                  ("quorum_leader",)),
        TargetDoc("all_brokers", "Every broker of the topology at once (what a power cut of the whole "
                  "cluster takes down).", ("all_brokers",)),
        TargetDoc("all_zookeepers", "Every ZooKeeper node of the topology at once (the whole ensemble "
                  "losing power together).", ("all_zookeepers",)),
        TargetDoc("all_controllers", "Every KRaft controller of the topology at once (the quorum losing "
                  "power together).", ("all_controllers",)),
    )
}

LINK_KEY_DOCS: dict[str, str] = {
    "from": "Target: the links' source endpoints.",
    "to": "Target: the links' destination endpoints.",
    "kind": "Only links of this kind (see [Link kinds](#link-kinds)); every kind when absent.",
    "both_ways": "Also the reverse direction (destination to source); default false.",
}
ISOLATE_KEY_DOCS: dict[str, str] = {
    "isolate": "Target: every link with exactly one end among its endpoints, in both directions.",
}

LINK_KIND_DOCS: dict[str, str] = {
    LinkKind.REPLICATION.value: "Broker to broker: follower fetches and the controller's requests.",
    LinkKind.ZK_SESSION.value: "Broker to a ZooKeeper node's client port (the broker's session).",
    LinkKind.ZK_QUORUM.value: "ZooKeeper follower to leader (the quorum's traffic).",
    LinkKind.ZK_ELECTION.value: "ZooKeeper node to node for leader election.",
    LinkKind.KRAFT_QUORUM.value: "KRaft controller to controller: the Raft quorum's fetches and votes "
                                 "(between brokers that are controllers too, labelled `:controller`).",
    LinkKind.KRAFT_BROKER.value: "Broker to a KRaft controller: registration, heartbeats and metadata "
                                 "fetches.",
    LinkKind.CONTROLLER_RPC.value: "While a cluster migrates to KRaft: a KRaft controller to a broker still "
                                   "in ZooKeeper mode (the controller's UpdateMetadata, LeaderAndIsr and "
                                   "StopReplica). The controllers reach ZooKeeper over `zk-session` links "
                                   "of their own then.",
    LinkKind.CLIENT.value: "A zone's producers and consumers to a broker.",
}

CUT_MODE_DOCS: dict[str, str] = {
    CutMode.REFUSE.value: "The link's proxy is disabled: open connections are closed and new ones refused, "
    "so the sender learns at once that the peer is unreachable (a crashed host, a closed port).",
    CutMode.BLACKHOLE.value: "Connections stay open and nothing passes either way, so the sender only "
    "learns by timing out: what a real network partition looks like.",
}

STREAM_DOCS: dict[str, str] = {
    "upstream": "Data from the link's source to its destination (for a fetch link: the fetch requests).",
    "downstream": "The answers, from destination back to source.",
    "both": "Both directions.",
}

SCHEDULE_KEY_DOCS: dict[str, tuple[str, str, str]] = {
    "start_s": ("float", "required (0 with `after`)", "Seconds after the schedule starts (or after entry "
                "`after` was healed) at which the fault is injected."),
    "duration_s": ("float", "0", "Seconds the fault lasts: it is healed at start_s + duration_s "
                   "(0 heals it right after the inject)."),
    "after": ("int", "none", "Number of an earlier entry; start_s then counts from the moment that entry "
              "was healed. If that entry is never healed, this one is not injected and the schedule "
              "fails."),
    "when": ("condition", "none", "Once the start has come, inject at the first look at which this holds "
             "on the cluster state (ZooKeeper's or the KRaft quorum's): `\"isr_full\"`, "
             "`\"controller_changed\"`, "
             "`{ leaves_isr = { broker, topic, partition } }` (or `joins_isr`), "
             "`{ leader_changed = { topic, partition } }`, `{ new_leader_from_isr = { topic, partition } }`, "
             "`{ offline = { topic, partition } }`, `{ leader_is = { broker, topic, partition } }`, "
             "`{ isr_is = { brokers, topic, partition } }`, `{ broker_gone = B }` (or "
             "`broker_registered`, `controller_is`), `{ quorum_serving = \"zk-a\" }` "
             "(a ZooKeeper node or a KRaft voter; `zk_serving` is its older spelling), "
             "`{ migration_phase = \"dual_write\" }` (a ZooKeeper-to-KRaft migration's phase: `provision`, "
             "`enter_migration`, `copy`, `dual_write`, `broker_roll`, `finalize` or `rollback`; only on a "
             "migrating cluster), and the combinations "
             "`{ not = <condition> }`, `{ all = [<condition>, ...] }` (every one holds in the same state) "
             "and `{ any = [<condition>, ...] }` (at least one does). Each condition is judged on one "
             "state as ZooKeeper shows it: `isr_is` holds when the ISR is exactly that set of brokers, "
             "in any order (a subset or superset does not hold); `leaves_isr` holds whenever the broker "
             "is out of that ISR, also when it was out already as the wait began (it compares with "
             "nothing earlier; `leader_changed`, `controller_changed` and `new_leader_from_isr` are the "
             "ones that compare with the state at the start of the wait). A scenario's checks take the "
             "same conditions."),
    "when_timeout_s": ("float", "120 (900 with `migration_phase`)", "Longest wait for `when`; if it never "
                       "holds the entry is not "
                       "injected and the schedule fails, naming the condition and the state at the "
                       "last look."),
}

_PROBE_KEY = "zz_reference_probe"


# -- what the code accepts ----------------------------------------------------------------
def _refused_keys(parse: Callable[[Mapping[str, Any]], object], spec: Mapping[str, Any]) -> set[str]:
    """The keys ``parse`` accepts besides those of ``spec``, read from its refusal of a probe key.

    Every parser refuses unknown keys with "... does not take 'x'; it takes: a, b" (see
    :func:`faults.spec.check_keys`), which is the only list of accepted keys some of them
    have; asking is how the page stays honest without a second, hand-kept list.
    """
    try:
        parse({**spec, _PROBE_KEY: 0})
    except FaultSpecError as err:
        match = re.search(rf"does not take '{_PROBE_KEY}'; it takes: (.*)$", str(err))
        if match:
            return {key for key in match.group(1).split(", ") if key != "nothing"}
        raise UndocumentedError(f"probing {dict(spec)!r} failed before the key check: {err}") from err
    raise UndocumentedError(f"{dict(spec)!r} accepted an unknown key; its keys cannot be probed")


def accepted_keys(spec: Mapping[str, Any]) -> set[str]:
    """The keys the fault kind of ``spec`` accepts (``fault`` included)."""
    return _refused_keys(build_fault, spec)


def accepted_link_keys(isolation: bool) -> set[str]:
    """The keys of either link-selection form, as :func:`parse_links` accepts them."""
    spec: dict[str, Any] = {"from": "controller", "to": "controller"}
    if isolation:
        spec = {"isolate": "controller"}
    return _refused_keys(parse_links, spec)


def problems() -> list[str]:
    """Every disagreement between the documentation records and the code, one line each."""
    found: list[str] = []

    def compare(what: str, code: Sequence[str] | set[str], docs: Mapping[str, Any] | set[str]) -> None:
        missing, extra = sorted(set(code) - set(docs)), sorted(set(docs) - set(code))
        if missing:
            found.append(f"{what} without documentation: {', '.join(missing)}")
        if extra:
            found.append(f"{what} documented but unknown to the code: {', '.join(extra)}")

    compare("fault kinds", list(FAULTS), FAULT_DOCS)
    for kind, doc in FAULT_DOCS.items():
        if kind not in FAULTS:
            continue
        try:
            accepted = accepted_keys(doc.example)
        except (UndocumentedError, FaultSpecError) as err:
            found.append(f"fault {kind!r}: its example does not build: {err}")
            continue
        compare(f"fault {kind!r} parameters", accepted - {"fault"}, {p.name for p in doc.params})
        found += [f"fault {kind!r} parameter {p.name!r} has no meaning" for p in doc.params if not p.meaning]
    compare("target kinds", TARGET_KINDS, TARGET_DOCS)
    compare("link selection keys", accepted_link_keys(False), LINK_KEY_DOCS)
    compare("isolation keys", accepted_link_keys(True), ISOLATE_KEY_DOCS)
    compare("link kinds", [k.value for k in LinkKind if k is not LinkKind.OBSERVER], LINK_KIND_DOCS)
    compare("cut modes", [m.value for m in CutMode], CUT_MODE_DOCS)
    compare("toxic streams", STREAMS, STREAM_DOCS)
    compare("schedule entry keys", ENTRY_KEYS, SCHEDULE_KEY_DOCS)
    return found


# -- TOML -----------------------------------------------------------------------------------
def toml_value(value: Any) -> str:
    """``value`` as an inline TOML value (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _seconds(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def example_toml(doc: FaultDoc, start_s: float = 5.0) -> str:
    """The doc's example as a scenario file's ``[[schedule]]`` entry."""
    lines = ["[[schedule]]", f"start_s = {_seconds(start_s)}",
             f"duration_s = {_seconds(doc.example_duration_s)}"]
    lines += [f"{_toml_key(k)} = {toml_value(v)}" for k, v in doc.example.items()]
    return "\n".join(lines)


# -- the page -------------------------------------------------------------------------------
def _default(param_default: Any) -> str:
    if param_default == "required":
        return "required"
    if param_default is None:
        return "all"
    return f"`{toml_value(param_default)}`"


def _type(name: str) -> str:
    links = {"target": "[target](#targets)", "link selection": "[link selection](#link-selections)"}
    return links.get(name, name)


def _aims(doc: FaultDoc) -> str:
    names = {p.name for p in doc.params}
    if "target" in names:
        return "target"
    if "links" in names:
        return "links"
    if "topic" in names:
        return "topic"
    return "the cluster"


MODE_TOPOLOGIES = {"ZooKeeper": "three_az", "KRaft": "three_az_kraft"}
"""The topology each metadata mode's support is checked on, for the page's mode columns."""


def _modes(check: Callable[[Topology], None]) -> str:
    """The modes in which ``check`` accepts its spec: the code's own refusal decides."""
    accepted = []
    for mode, name in MODE_TOPOLOGIES.items():
        try:
            check(load_topology(name))
        except (FaultSpecError, TargetError):
            continue
        accepted.append(mode)
    return ", ".join(accepted) or "neither"


def _fault_modes(doc: FaultDoc) -> str:
    return ", ".join(mode for mode, name in MODE_TOPOLOGIES.items()
                     if doc.kind in kinds_for(load_topology(name))) or "neither"


def _target_modes(doc: TargetDoc) -> str:
    """The modes in which one of the form's examples is accepted (``{ node = "zk-b" }`` in
    ZooKeeper mode, ``{ node = "kraft-b" }`` in KRaft)."""
    def any_accepted(topology: Topology) -> None:
        refusals = []
        for example in doc.examples:
            try:
                parse_target(_on_topic(example)).check(topology)
                return
            except TargetError as err:
                refusals.append(err)
        raise refusals[0]

    return _modes(any_accepted)


def _on_topic(spec: Mapping[str, Any]) -> Any:
    return json.loads(json.dumps(spec).replace(TOPIC, "orders"))


def render_markdown() -> str:
    """The whole of docs/FAULTS.md; UndocumentedError when the records and the code disagree."""
    found = problems()
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UndocumentedError(f"{found[0]}{more}; describe it in the kind's entry (its FaultDoc) or "
                                "faults/reference.py")
    out: list[str] = [
        "# Fault reference",
        "",
        "<!-- Generated by `python3 -m faults.reference > docs/FAULTS.md` from each fault kind's entry",
        "     (its FaultDoc, on its class in faults/) and faults/reference.py; edit those, not this page.",
        "     A unit test fails when it is stale. -->",
        "",
        "A fault is written as data: a table whose `fault` key names the kind and whose other keys are",
        "its parameters. In a scenario file (see [SCENARIOS.md](SCENARIOS.md#scenario-files)) each",
        "`[[schedule]]` entry is one fault plus its timing; a schedule file (JSON, or TOML by suffix)",
        "holds the same entries under `entries`, with `version = 1`. Unknown kinds, unknown keys and",
        "mistyped values are refused with one sentence naming the field, and a schedule is checked",
        "as a whole, against the topology and the live cluster, before its first fault strikes.",
        f"In scenario files `\"{TOPIC}\"` stands for the scenario's topic, whose name is only known when",
        "the run creates it; schedule files name topics outright.",
        "",
        "Targets are roles (the leader of a partition, the controller), resolved to nodes only when",
        "the fault strikes; the event log records what they resolved to.",
        "",
        "## Schedule entries",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for key in ENTRY_KEYS:
        kind, default, meaning = SCHEDULE_KEY_DOCS[key]
        out.append(f"| `{key}` | {kind} | {default} | {meaning} |")
    out += [
        "| every other key | | | The fault spec: `fault` and that kind's parameters, below. |",
        "",
        "Entries run in one background thread in time order; at equal times heals of earlier faults",
        "come before new injects. A slow action (a controlled shutdown, a reassignment) delays the",
        "ones after it rather than overlapping them. A fault whose inject or heal fails is recorded in",
        "the event log and the schedule goes on; every fault still active when the schedule stops is",
        "healed.",
        "",
        "An entry can wait for the cluster instead of a guessed time: `after = N` counts its `start_s`",
        "from the heal of entry N, and `when` injects it at the first moment its condition holds on",
        "cluster state. A rolling restart is three `controlled_shutdown` entries, the second and",
        "third with `after` naming the one before and `when = \"isr_full\"`, so each broker goes only",
        "once every replica is back in sync.",
        "",
        "## Fault kinds",
        "",
        "The modes column says where each kind runs: a ZooKeeper-mode cluster, a KRaft one, or both.",
        "A kind that acts on ZooKeeper itself is refused on a KRaft topology before anything starts,",
        "and its refusal names what to do there instead.",
        "",
        "| kind | aimed at | modes | what it does |",
        "|---|---|---|---|",
    ]
    docs = [FAULT_DOCS[kind] for kind in FAULTS]
    for doc in docs:
        first = doc.summary.split(". ")[0].rstrip(".")
        out.append(f"| [`{doc.kind}`](#{doc.kind}) | {_aims(doc)} | {_fault_modes(doc)} | {first}. |")
    for doc in docs:
        out += ["", f"### {doc.kind}", "", doc.summary, "", f"Heal: {doc.heals}", ""]
        out += ["| parameter | type | default | meaning |", "|---|---|---|---|"]
        out += [f"| `{p.name}` | {_type(p.type)} | {_default(p.default)} | {p.meaning} |" for p in doc.params]
        for note in doc.notes:
            out += ["", note]
        out += ["", "```toml", example_toml(doc), "```"]
    out += [
        "",
        "## Targets",
        "",
        "A target is either a bare word or a table with exactly one key.",
        "",
        "| form | example | modes | resolves to |",
        "|---|---|---|---|",
    ]
    for kind in TARGET_KINDS:
        target_doc = TARGET_DOCS[kind]
        examples = "<br>".join(f"`{toml_value(e)}`" for e in target_doc.examples)
        out.append(f"| `{kind}` | {examples} | {_target_modes(target_doc)} | {target_doc.resolves_to} |")
    out += [
        "",
        "Targets resolve to endpoints: node names and, for zones, the zone's clients. Process faults",
        "(`kill`, `controlled_shutdown`, `pause`, `restart`, `bounce`) keep only the nodes and fail when",
        "none is left; `expire_session` keeps only brokers. Network faults cut the links touching the",
        "endpoints. Targets naming a broker, node or zone the topology lacks are refused before the",
        "schedule starts, and topics and partitions are checked against the live cluster.",
        "",
        "## Link selections",
        "",
        "Network faults (`cut` and the degradations) take `links`, in one of two forms. Every link is",
        "directed and passes through its own proxy; the harness's observer links are never selected.",
        "",
        "Between endpoints: links from any endpoint of `from` to any endpoint of `to`.",
        "",
        "| key | meaning |",
        "|---|---|",
    ]
    out += [f"| `{key}` | {LINK_KEY_DOCS[key]} |" for key in LINK_KEY_DOCS]
    out += ["", "Isolation: every link crossing the border of a target.", ""]
    out += ["| key | meaning |", "|---|---|"]
    out += [f"| `{key}` | {ISOLATE_KEY_DOCS[key]} |" for key in ISOLATE_KEY_DOCS]
    out += [
        "",
        "```toml",
        "links = { from = { broker = 1 }, to = { broker = 0 }, kind = \"replication\", both_ways = true }",
        "links = { isolate = { zone = \"a\" } }",
        "```",
        "",
        "### Link kinds",
        "",
        "| kind | carries |",
        "|---|---|",
    ]
    out += [f"| `{k.value}` | {LINK_KIND_DOCS[k.value]} |" for k in LinkKind if k is not LinkKind.OBSERVER]
    out += ["", "## Cut modes", "", "| mode | effect |", "|---|---|"]
    out += [f"| `{m.value}` | {CUT_MODE_DOCS[m.value]} |" for m in CutMode]
    out += ["", "## Streams", "", "Degradations act on one direction of each link or on both.", "",
            "| stream | data |", "|---|---|"]
    out += [f"| `{s}` | {STREAM_DOCS[s]} |" for s in STREAMS]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the page, or with ``--check FILE`` exit 1 (one line on stderr) when FILE is stale."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        page = render_markdown()
    except UndocumentedError as err:
        print(f"faults.reference: {err}", file=sys.stderr)
        return 1
    if not args:
        sys.stdout.write(page)
        return 0
    if len(args) == 2 and args[0] == "--check":
        path = Path(args[1])
        if not path.is_file() or path.read_text() != page:
            fix = f"python3 -m faults.reference > {path}"
            print(f"{path} is stale; regenerate it with: {fix}", file=sys.stderr)
            return 1
        return 0
    print("usage: python3 -m faults.reference [--check FILE]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
