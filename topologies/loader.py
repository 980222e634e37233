"""Loading a topology declaration from TOML, with parameters applied on top.

The declaration names the zones and either counts (``brokers_per_zone``,
``zookeeper_nodes``) or explicit node lists (``[[brokers]]``, ``[[zookeepers]]``). With
``metadata = "kraft"`` it keeps its metadata in a KRaft controller quorum instead:
``controllers = "dedicated"`` (``controllers_per_zone`` nodes of their own per zone, one by
default) or ``"combined"`` (every broker a controller too). A declaration may start from
another (``extends = "three_az"``): its own keys replace the other's, and its settings
tables add to the other's, so a variant names only what differs; a KRaft variant of a
ZooKeeper declaration leaves its ZooKeeper nodes and ``zookeeper.*`` settings behind.
Parameters passed to :func:`load_topology` override the file's values, so a six-broker
or five-ZooKeeper cluster is the same declaration with other numbers.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from topologies.errors import TopologyError, problem_line
from topologies.model import (
    COMBINED,
    CONTROLLER_ID_BASE,
    CONTROLLER_LAYOUTS,
    DEDICATED,
    KRAFT,
    METADATA_MODES,
    ZOOKEEPER,
    BrokerNode,
    ControllerNode,
    SettingValue,
    Topology,
    ZooKeeperNode,
    controller_names,
    place_round_robin,
    zookeeper_names,
)

BUILTIN_DIR = Path(__file__).resolve().parent
KNOWN_KEYS = {
    "name", "description", "zones", "brokers_per_zone", "zookeeper_nodes", "brokers",
    "zookeepers", "broker_settings", "topic_defaults", "zookeeper_settings",
    "broker_heap_mb", "zookeeper_heap_mb", "broker_disk_mb", "metadata", "controllers",
    "controllers_per_zone", "controller_heap_mb", "controller_settings",
}
SETTINGS_TABLES = ("broker_settings", "topic_defaults", "zookeeper_settings", "controller_settings")
# What only a ZooKeeper-mode declaration says, left behind by a KRaft variant of one.
ZOOKEEPER_KEYS = ("zookeeper_nodes", "zookeepers", "zookeeper_settings", "zookeeper_heap_mb")
ZOOKEEPER_SESSION = "zookeeper.session.timeout.ms"
BROKER_SESSION, BROKER_HEARTBEAT = "broker.session.timeout.ms", "broker.heartbeat.interval.ms"
KRAFT_KEYS = ("controllers", "controllers_per_zone", "controller_heap_mb", "controller_settings")


def builtin_topologies() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def _read(name_or_path: str | Path, seen: tuple[Path, ...] = ()) -> tuple[str, dict[str, Any]]:
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = BUILTIN_DIR / f"{name_or_path}.toml"
    if not path.exists():
        raise TopologyError(
            f"no topology {str(name_or_path)!r}; built-in ones: {', '.join(builtin_topologies())}"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise TopologyError(f"topology file {path} does not parse: {err}") from err
    if not data:
        raise TopologyError(f"{path}: the file declares nothing; a topology needs at least 'zones' "
                            "or 'extends'")
    return path.stem, _extended(data, path, (*seen, path.resolve()))


def _extended(data: dict[str, Any], path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    """``data`` over the declaration it extends (a built-in name, or a path beside it)."""
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    if not isinstance(base_name, str):
        raise TopologyError(f"{path}: {problem_line('extends', base_name, 'must name a topology')}")
    base_path = path.parent / base_name if base_name.endswith(".toml") else BUILTIN_DIR / f"{base_name}.toml"
    if not base_path.exists():
        where = f"no file {base_name} beside it" if base_name.endswith(".toml") else "no such topology"
        why = f"{where}; built-in ones: {', '.join(builtin_topologies())}, or a .toml file beside this one"
        raise TopologyError(f"{path}: {problem_line('extends', base_name, why)}")
    if base_path.resolve() in seen:
        raise TopologyError(f"topology file {path} extends {base_name!r}, which extends it back")
    _, base = _read(base_path, seen)
    return _over(base, data)


def _over(base: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """Declaration ``data`` laid over ``base``: its keys replace the base's, its settings
    tables are merged into the base's, and a KRaft variant of a ZooKeeper declaration
    leaves the ZooKeeper parts behind."""
    merged = {**base, **data}
    for table in SETTINGS_TABLES:
        if table in base and table in data:
            merged[table] = {**base[table], **data[table]}
    for own in ("name", "description"):  # a variant is never named after what it extends
        if own not in data:
            merged.pop(own, None)
    if "brokers" in data:
        merged.pop("brokers_per_zone", None)
    if "zookeepers" in data:
        merged.pop("zookeeper_nodes", None)
    if data.get("metadata") == KRAFT and base.get("metadata", ZOOKEEPER) == ZOOKEEPER:
        for key in ZOOKEEPER_KEYS:
            if key not in data:
                merged.pop(key, None)
        base_settings = base.get("broker_settings", {})
        merged["broker_settings"] = {k: v for k, v in merged.get("broker_settings", {}).items()
                                     if not (k.startswith("zookeeper.") and k in base_settings
                                             and k not in data.get("broker_settings", {}))}
        _session_from_zookeeper(merged, base_settings)
    return merged


def _session_from_zookeeper(merged: dict[str, Any], zookeeper_settings: dict[str, Any]) -> None:
    """A broker's ZooKeeper session becomes its KRaft broker session: a broker that stops
    heartbeating is fenced after as long as a ZooKeeper-mode broker's session took to
    expire, so a fault's timing carries over. It heartbeats six times per session (Kafka's
    own 2 s in 9 s is 4.5), unless the declaration says otherwise."""
    session = zookeeper_settings.get(ZOOKEEPER_SESSION)
    if not isinstance(session, int) or isinstance(session, bool):
        return
    controller_settings = merged.setdefault("controller_settings", {})
    controller_settings.setdefault(BROKER_SESSION, session)
    heartbeat = max(1, int(controller_settings[BROKER_SESSION]) // 6)
    merged["broker_settings"].setdefault(BROKER_HEARTBEAT, heartbeat)


def _in_mode(stem: str, data: dict[str, Any], metadata: str) -> tuple[str, dict[str, Any]]:
    """The declaration in another metadata mode: a ZooKeeper one's KRaft variant, as
    ``extends = "<it>"`` with ``metadata = "kraft"`` would make it, named ``<it>_kraft``.
    A KRaft declaration has no ZooKeeper variant: it says nothing of the ensemble."""
    if metadata not in METADATA_MODES:
        raise TopologyError(problem_line("metadata", metadata, f"must be one of {', '.join(METADATA_MODES)}"))
    if metadata != KRAFT:
        raise TopologyError(f"topology {stem!r} is a KRaft topology and has no ZooKeeper variant; "
                            "name a ZooKeeper topology (e.g. three_az) for metadata = \"zookeeper\"")
    variant = _over(data, {"metadata": KRAFT})
    variant.pop("name", None)
    variant.pop("description", None)
    return f"{stem}_kraft", variant


def _settings(raw: Any, what: str) -> dict[str, SettingValue]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TopologyError(problem_line(what, raw, 'must be a table of "setting" = value'))
    for name, value in raw.items():
        if not isinstance(value, str | int | float | bool):
            why = "must be a string, number or true/false"
            raise TopologyError(problem_line(f"{what}.{name}", value, why))
    return dict(raw)


def _positive_int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TopologyError(problem_line(what, value, "must be a whole number of at least 1"))
    return value


def _nodes(raw: Any, key: str, needs_id: bool) -> list[dict[str, Any]]:
    """``[[brokers]]`` / ``[[zookeepers]]``: tables with a ``zone`` (and a broker ``id``)."""
    if not isinstance(raw, list) or not all(isinstance(n, dict) for n in raw):
        raise TopologyError(problem_line(key, raw, f"must be a list of tables ([[{key}]])"))
    for i, node in enumerate(raw, start=1):
        if not isinstance(node.get("zone"), str):
            why = "every entry needs a zone name"
            raise TopologyError(problem_line(f"{key}[{i}].zone", node.get("zone"), why))
        if needs_id:
            _whole_id(node.get("id"), f"{key}[{i}].id")
        elif "name" in node and not isinstance(node["name"], str):
            raise TopologyError(problem_line(f"{key}[{i}].name", node["name"], "must be a node name"))
    return raw


def _whole_id(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TopologyError(problem_line(what, value, "must be a whole number, 0 or more"))
    return value


def build_topology(data: dict[str, Any], default_name: str = "custom") -> Topology:
    """Turn a parsed declaration into a validated :class:`Topology`."""
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        known = ", ".join(sorted(KNOWN_KEYS | {"extends"}))
        why = f"no such topology key; known: {known}"
        raise TopologyError(problem_line(unknown[0], data[unknown[0]], why))
    zones_raw = data.get("zones")
    if not isinstance(zones_raw, list) or not all(isinstance(z, str) for z in zones_raw):
        raise TopologyError(problem_line("zones", zones_raw, "must be a list of zone names"))
    zones = tuple(zones_raw)
    if not zones:
        raise TopologyError(f"topology {data.get('name', default_name)!r} declares no zones")
    if "brokers" in data:
        declared = _nodes(data["brokers"], "brokers", True)
        brokers = tuple(BrokerNode(broker_id=int(b["id"]), zone=str(b["zone"])) for b in declared)
    else:
        per_zone = _positive_int(data.get("brokers_per_zone", 1), "brokers_per_zone")
        placement = place_round_robin(zones, per_zone * len(zones)) if zones else []
        brokers = tuple(BrokerNode(broker_id=i, zone=z) for i, z in enumerate(placement))
    metadata = _one_of(data.get("metadata", ZOOKEEPER), "metadata", METADATA_MODES)
    layout = _one_of(data.get("controllers", DEDICATED), "controllers", CONTROLLER_LAYOUTS)
    if metadata == KRAFT:
        zookeepers: tuple[ZooKeeperNode, ...] = ()
        controllers = _controllers(data, zones, brokers, layout)
        stray = [k for k in ZOOKEEPER_KEYS if k in data]
        if stray:
            why = 'has no meaning with metadata = "kraft"'
            raise TopologyError(problem_line(stray[0], data[stray[0]], why))
    else:
        zookeepers = _zookeepers(data, zones)
        controllers = ()
        stray = [k for k in KRAFT_KEYS if k in data]
        if stray:
            why = 'needs metadata = "kraft" (a ZooKeeper-mode cluster has no KRaft controllers)'
            raise TopologyError(problem_line(stray[0], data[stray[0]], why))
    return Topology(
        name=str(data.get("name", default_name)),
        zones=zones,
        brokers=brokers,
        zookeepers=zookeepers,
        broker_settings=_settings(data.get("broker_settings"), "broker_settings"),
        topic_defaults=_settings(data.get("topic_defaults"), "topic_defaults"),
        zookeeper_settings=_settings(data.get("zookeeper_settings"), "zookeeper_settings"),
        broker_heap_mb=_positive_int(data.get("broker_heap_mb", 384), "broker_heap_mb"),
        zookeeper_heap_mb=_positive_int(data.get("zookeeper_heap_mb", 128), "zookeeper_heap_mb"),
        broker_disk_mb=None if "broker_disk_mb" not in data
        else _positive_int(data["broker_disk_mb"], "broker_disk_mb"),
        metadata=metadata,
        controller_layout=layout,
        controllers=controllers,
        controller_settings=_settings(data.get("controller_settings"), "controller_settings"),
        controller_heap_mb=_positive_int(data.get("controller_heap_mb", 256), "controller_heap_mb"),
    )


def _one_of(value: Any, key: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise TopologyError(problem_line(key, value, f"must be one of {', '.join(choices)}"))
    return str(value)


def _zookeepers(data: dict[str, Any], zones: tuple[str, ...]) -> tuple[ZooKeeperNode, ...]:
    if "zookeepers" in data:
        zk_placement = [str(z["zone"]) for z in _nodes(data["zookeepers"], "zookeepers", False)]
        zk_names = [str(z.get("name", "")) for z in data["zookeepers"]]
        if not all(zk_names):
            zk_names = zookeeper_names(zones, zk_placement)
    else:
        count = _positive_int(data.get("zookeeper_nodes", len(zones)), "zookeeper_nodes")
        zk_placement = place_round_robin(zones, count) if zones else []
        zk_names = zookeeper_names(zones, zk_placement)
    return tuple(
        ZooKeeperNode(sid=i + 1, zone=zone, name=name)
        for i, (zone, name) in enumerate(zip(zk_placement, zk_names, strict=True))
    )


def _controllers(data: dict[str, Any], zones: tuple[str, ...], brokers: tuple[BrokerNode, ...],
                 layout: str) -> tuple[ControllerNode, ...]:
    """The quorum's voters: ``controllers_per_zone`` nodes of their own per zone, ids from
    CONTROLLER_ID_BASE, or in a combined layout every broker."""
    if layout == COMBINED:
        if "controllers_per_zone" in data:
            why = 'has no meaning with controllers = "combined" (every broker is a controller)'
            raise TopologyError(problem_line("controllers_per_zone", data["controllers_per_zone"], why))
        return tuple(ControllerNode(b.broker_id, b.zone, b.name) for b in brokers)
    per_zone = _positive_int(data.get("controllers_per_zone", 1), "controllers_per_zone")
    placement = place_round_robin(zones, per_zone * len(zones))
    return tuple(ControllerNode(CONTROLLER_ID_BASE + i, zone, name)
                 for i, (zone, name) in enumerate(zip(placement, controller_names(zones, placement),
                                                      strict=True)))


def load_topology(
    name_or_path: str | Path = "three_az",
    *,
    brokers_per_zone: int | None = None,
    zookeeper_nodes: int | None = None,
    broker_settings: dict[str, SettingValue] | None = None,
    topic_defaults: dict[str, SettingValue] | None = None,
    metadata: str | None = None,
) -> Topology:
    """Load a built-in topology by name (or a TOML file by path) and apply parameters;
    ``metadata`` asks for the declaration in that metadata mode (a ZooKeeper topology's
    KRaft variant when it says "kraft"). Every problem is one TopologyError naming the
    file, the key and the value."""
    stem, data = _read(name_or_path)
    if metadata is not None and metadata != data.get("metadata", ZOOKEEPER):
        stem, data = _in_mode(stem, data, metadata)
    if brokers_per_zone is not None:
        data.pop("brokers", None)
        data["brokers_per_zone"] = brokers_per_zone
    if zookeeper_nodes is not None:
        data.pop("zookeepers", None)
        data["zookeeper_nodes"] = zookeeper_nodes
    if broker_settings:
        data["broker_settings"] = {**data.get("broker_settings", {}), **broker_settings}
    if topic_defaults:
        data["topic_defaults"] = {**data.get("topic_defaults", {}), **topic_defaults}
    try:
        return build_topology(data, default_name=stem)
    except TopologyError as err:
        path = Path(name_or_path)
        if path.suffix != ".toml":
            raise  # a built-in one: its name is in the sentence
        raise TopologyError(f"{path}: {err}") from err
