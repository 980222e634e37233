"""A configuration change at run time: a topic's settings altered, and put back on heal.

Some trade-offs only show when an operator changes a setting under load: lowering
``min.insync.replicas`` while too few replicas are in sync lets writes through again that
the durable setting refused, and with them the risk it was there to prevent. This fault
makes such a change a schedule entry like any other. It uses the admin API (an
incremental AlterConfigs), so it is the change an operator's tooling makes, and waits
until DescribeConfigs reports the new values; heal restores each key as it was before:
set back to its former topic-level value, or deleted where the topic had inherited the
broker default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from faults.base import Fault
from faults.draw import TOPIC
from faults.errors import FaultError, FaultSpecError
from faults.kinds import TIMEOUT_MEANING, FaultDoc, Param, fault_kind
from faults.spec import as_mapping, check_keys, optional, positive, required
from faults.targets import partition_state
from faults.waiting import wait_until_clear

if TYPE_CHECKING:
    from harness.cluster.control import ClusterControl

SettingValue = str | int | float | bool


def _text(value: SettingValue) -> str:
    """A setting as Kafka's config API spells it (booleans lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@fault_kind(
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
            Param("timeout_s", "float", TIMEOUT_MEANING, 20.0, 30.0),
        ),
        {"fault": "topic_config", "topic": "$topic", "settings": {"min.insync.replicas": 1}},
        30.0,
    ),
    draw=lambda d: {"topic": TOPIC, "settings": {"retention.ms": d.rng.choice([60_000, 3_600_000])}},
    not_drawn_by_default="it changes the very settings whose promises a round judges (lowering "
                         "min.insync.replicas would make loss \"expected\")",
)
class TopicConfig(Fault):
    """Set ``settings`` on ``topic``; heal puts every key back as it was."""

    kind = "topic_config"

    def __init__(self, topic: str, settings: Mapping[str, SettingValue], timeout_s: float = 30.0) -> None:
        super().__init__()
        if not settings:
            raise FaultSpecError("fault 'topic_config': settings must name at least one setting")
        self.topic = topic
        self.settings = {str(k): v for k, v in settings.items()}
        self.timeout_s = positive(timeout_s, "timeout_s")
        self._before: dict[str, str | None] = {}  # key -> former topic-level value, None = default

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> TopicConfig:
        what = "fault 'topic_config'"
        check_keys(spec, ["fault", "topic", "settings", "timeout_s"], what)
        settings = as_mapping(spec.get("settings"), f"{what}: settings")
        for key, value in settings.items():
            if not isinstance(value, str | int | float | bool):
                raise FaultSpecError(f"{what}: setting {key!r} must be a string, number or boolean")
        timeout_s = optional(spec, "timeout_s", float, 30.0, what)
        return cls(required(spec, "topic", str, what), settings, timeout_s)

    def describe(self) -> str:
        changes = ", ".join(f"{k}={_text(v)}" for k, v in sorted(self.settings.items()))
        return f"{self.kind} {self.topic} {changes}"

    def to_spec(self) -> dict[str, Any]:
        return {"fault": self.kind, "topic": self.topic, "settings": dict(self.settings),
                "timeout_s": self.timeout_s}

    def check_exists(self, cluster: ClusterControl) -> None:
        partition_state(cluster, self.topic, 0)

    def _resolve(self, cluster: ClusterControl) -> tuple[str, ...]:
        return (self.topic,)

    def _apply(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        admin = _admin(cluster)
        current = self._describe(admin)
        self._before = {key: (entry.value if _set_on_topic(entry) else None)
                        for key, entry in current.items() if key in self.settings}
        unknown = sorted(set(self.settings) - set(current))
        if unknown:
            raise FaultError(f"topic {self.topic} has no setting {', '.join(unknown)}")
        wanted = {k: _text(v) for k, v in self.settings.items()}
        self._alter(admin, [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                            for k, v in wanted.items()])
        waited = self._wait_in_force(admin, wanted)
        was = ", ".join(f"{k} was {v if v is not None else 'the broker default'}"
                        for k, v in sorted(self._before.items()))
        return f"in force after {waited:.2f} s ({was})"

    def _restore(self, cluster: ClusterControl, resolved: tuple[str, ...]) -> str:
        admin = _admin(cluster)
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) if v is not None
                   else ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                   for k, v in self._before.items()]
        if entries:
            self._alter(admin, entries)
        restored = {k: v for k, v in self._before.items() if v is not None}
        inherited = [k for k, v in self._before.items() if v is None]
        waited = self._wait_in_force(admin, restored, defaults=inherited)
        return f"restored after {waited:.2f} s"

    # -- admin calls ---------------------------------------------------------------------
    def _describe(self, admin: AdminClient) -> dict[str, ConfigEntry]:
        resource = ConfigResource(ResourceType.TOPIC, self.topic)
        # The wait on the future bounds the call (see faults.zookeeper on timeouts).
        result = admin.describe_configs([resource])[resource].result(timeout=self.timeout_s)
        return dict(result)

    def _alter(self, admin: AdminClient, entries: list[ConfigEntry]) -> None:
        resource = ConfigResource(ResourceType.TOPIC, self.topic, incremental_configs=entries)
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=self.timeout_s)

    def _wait_in_force(self, admin: AdminClient, values: Mapping[str, str],
                       defaults: list[str] | None = None) -> float:
        """Until DescribeConfigs shows ``values`` and the broker default for ``defaults``."""
        inherited = defaults or []

        def not_in_force() -> list[str]:
            current = self._describe(admin)
            wrong = [f"{k}={current[k].value}, not {v}" for k, v in values.items() if current[k].value != v]
            return wrong + [f"{k}={current[k].value} still set on the topic"
                            for k in inherited if _set_on_topic(current[k])]

        return wait_until_clear(not_in_force, self.timeout_s, f"topic {self.topic}'s settings changing")


def _set_on_topic(entry: ConfigEntry) -> bool:
    """Whether the value is the topic's own (not inherited from the broker's defaults)."""
    source = getattr(entry.source, "value", entry.source)
    return bool(source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


def _admin(cluster: ClusterControl) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.observer_bootstrap(), "log_level": 3})
