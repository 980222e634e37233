"""Client settings as a scenario names them, and as each client library names them.

A scenario names its clients' settings once, in librdkafka's words (the names every
scenario used before the Java client came), and runs them on either client. For
librdkafka the names are its own and pass through untouched, as they always have; for the
Java client each name is looked up in :data:`JAVA_NAMES`, which gives the Java client's
own name (``message.timeout.ms`` is its ``delivery.timeout.ms``); :data:`JAVA_LACKS`
names those it has none of. A
setting the Java client lacks, or one this table does not know, is refused in one
sentence before any container starts: the Java client would otherwise log a warning and
ignore it, and the run would test something other than what the scenario says.

The harness's defaults are per client, in each client's own names, and chosen so that a
scenario means the same on both: short timeouts so a fault shows in seconds, and
``isolation.level=read_committed`` for the Java consumer too (librdkafka's default, not
the Java client's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import ChaosError

LIBRDKAFKA = "librdkafka"
JAVA = "java"
CLIENTS = (LIBRDKAFKA, JAVA)
PRODUCER = "producer"
CONSUMER = "consumer"


# The keys a [[producers]] or [[consumers]] table chooses its client with.
CLIENT_KEYS = ("client", "client_version")
# A Kafka release as Maven Central names it (3.9.1, 4.0.0); whether it serves that
# release is asked of Maven before the run (harness/workload/java_image.py).
_RELEASE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


class UnknownSetting(ChaosError, ValueError):
    """A setting the chosen client does not have (or a client or release that is none);
    the text is one sentence."""


@dataclass(frozen=True)
class ClientChoice:
    """A client library and, for the Java client, its release (None: the cluster's), as
    ``--client`` and ``matrix --clients`` spell it: ``librdkafka``, ``java``, ``java:4.0.0``."""

    client: str = LIBRDKAFKA
    version: str | None = None

    @classmethod
    def parse(cls, text: str) -> ClientChoice:
        name, _, version = text.strip().partition(":")
        check_client(name, version or None, PRODUCER, {}, f"client {text.strip()!r}")
        return cls(name, version or None)

    @property
    def label(self) -> str:
        return self.client if self.version is None else f"{self.client} {self.version}"

    @property
    def spelled(self) -> str:
        """As ``--client`` takes it."""
        return self.client if self.version is None else f"{self.client}:{self.version}"


# Scenario name -> the Java client's name. Names not listed are refused: those in
# JAVA_LACKS with what comes nearest on the Java client, the rest as not mapped.
_SHARED = ("client.id", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "metadata.max.age.ms",
           "request.timeout.ms", "retry.backoff.ms", "socket.connection.setup.timeout.ms",
           "connections.max.idle.ms", "client.rack")
_PRODUCER_SHARED = ("acks", "enable.idempotence", "linger.ms", "retries", "batch.size",
                    "max.in.flight.requests.per.connection", "compression.type", "transactional.id",
                    "transaction.timeout.ms", "delivery.timeout.ms")
_CONSUMER_SHARED = ("group.id", "group.instance.id", "auto.offset.reset", "enable.auto.commit",
                    "auto.commit.interval.ms", "session.timeout.ms", "heartbeat.interval.ms",
                    "max.poll.interval.ms", "isolation.level", "fetch.min.bytes", "fetch.max.bytes",
                    "max.partition.fetch.bytes", "group.protocol", "check.crcs")

JAVA_NAMES: Mapping[str, Mapping[str, str]] = {
    PRODUCER: {**{n: n for n in (*_SHARED, *_PRODUCER_SHARED)},
               "message.timeout.ms": "delivery.timeout.ms", "queue.buffering.max.ms": "linger.ms",
               "message.send.max.retries": "retries"},
    CONSUMER: {**{n: n for n in (*_SHARED, *_CONSUMER_SHARED)},
               "fetch.wait.max.ms": "fetch.max.wait.ms"},
}
# What comes nearest on the Java client, for the settings it lacks.
JAVA_LACKS: Mapping[str, str] = {
    "socket.timeout.ms": "request.timeout.ms bounds a request instead",
    "topic.metadata.refresh.interval.ms": "metadata.max.age.ms is its only refresh interval",
    "enable.partition.eof": "the Java consumer has no end-of-partition event",
    "partitioner": "its partitioner is a class (partitioner.class), not a name",
    "queue.buffering.max.messages": "buffer.memory bounds its queue in bytes",
    "log_level": "the driver logs through its own logger",
    "debug": "the driver logs through its own logger",
    "partition.assignment.strategy": "its strategies are class names, which this table does not map",
}

JAVA_DEFAULTS: Mapping[str, Mapping[str, str]] = {
    PRODUCER: {"acks": "all", "enable.idempotence": "false", "linger.ms": "5",
               "delivery.timeout.ms": "15000", "request.timeout.ms": "5000", "metadata.max.age.ms": "5000",
               "reconnect.backoff.max.ms": "1000"},
    CONSUMER: {"auto.offset.reset": "earliest", "enable.auto.commit": "false",
               "session.timeout.ms": "10000", "request.timeout.ms": "5000", "metadata.max.age.ms": "5000",
               "reconnect.backoff.max.ms": "1000", "isolation.level": "read_committed"},
}


def java_value(value: Any) -> str:
    """A setting's value as the Java client reads it from properties: booleans in lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def own_settings(client: str, role: str, settings: Mapping[str, Any], who: str) -> dict[str, Any]:
    """``settings`` (scenario names) in ``client``'s own names and values; ``who`` names
    the client for the error (``producer pa``). Refuses a setting the client lacks."""
    if client not in CLIENTS:
        raise UnknownSetting(f"{who}: unknown client {client!r}; clients: {', '.join(CLIENTS)}")
    if client == LIBRDKAFKA:
        return dict(settings)
    names = JAVA_NAMES[role]
    own: dict[str, str] = {}
    for key, value in settings.items():
        if key in JAVA_LACKS:
            raise UnknownSetting(f"{who}: the Java client has no setting {key!r} ({JAVA_LACKS[key]})")
        if key not in names:
            raise UnknownSetting(f"{who}: setting {key!r} is not mapped to the Java {role}; mapped: "
                                 f"{', '.join(sorted(names))}")
        mapped = names[key]
        if mapped in own and own[mapped] != java_value(value):
            raise UnknownSetting(f"{who}: {key!r} and another setting both set the Java client's "
                                 f"{mapped!r}, to different values")
        own[mapped] = java_value(value)
    return own


def java_config(role: str, settings: Mapping[str, Any], who: str) -> dict[str, str]:
    """The Java client's configuration for ``settings``: the defaults, then the scenario's,
    checked as the Java producer checks them at start (so a bad mix fails before any
    container): its delivery timeout must cover linger plus one request."""
    config = {**JAVA_DEFAULTS[role], **own_settings(JAVA, role, settings, who)}
    if role == PRODUCER:
        delivery, linger, request = (_milliseconds(config, k, who) for k in (
            "delivery.timeout.ms", "linger.ms", "request.timeout.ms"))
        if delivery < linger + request:
            raise UnknownSetting(f"{who}: the Java producer's delivery.timeout.ms (message.timeout.ms) "
                                 f"{delivery} must be at least linger.ms + request.timeout.ms "
                                 f"({linger + request})")
    return config


def _milliseconds(config: Mapping[str, str], key: str, who: str) -> int:
    try:
        return int(config[key])
    except ValueError:
        raise UnknownSetting(f"{who}: {key} must be a whole number of milliseconds, "
                             f"not {config[key]!r}") from None


def check_client(client: str, version: str | None, role: str, settings: Mapping[str, Any], who: str) -> None:
    """Refuse, in one sentence, an unknown client, a version for librdkafka or one that is
    no release, and settings the client lacks."""
    if client not in CLIENTS:
        raise UnknownSetting(f"{who}: unknown client {client!r}; clients: {', '.join(CLIENTS)}")
    if version is not None and client != JAVA:
        raise UnknownSetting(f"{who}: client_version {version!r} names a Java client release, "
                             f"and the client is {client}")
    if version is not None and not _RELEASE.fullmatch(version):
        raise UnknownSetting(f"{who}: client_version must be a Kafka release such as 4.0.0, not {version!r}")
    if client == JAVA:
        java_config(role, settings, who)


def client_keys(client: str, version: str | None) -> dict[str, str]:
    """The keys that spell a client's choice in a scenario file; none for the default."""
    out = {} if client == LIBRDKAFKA else {"client": client}
    return out if version is None else {**out, "client_version": version}


def read_client_keys(data: Mapping[str, Any], who: str) -> dict[str, Any]:
    """``client`` and ``client_version`` of a scenario file's client table, as strings."""
    out: dict[str, Any] = {}
    for key in CLIENT_KEYS:
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise UnknownSetting(f"{who}: {key} must be a string, not {value!r}")
        out[key] = value
    return out


DEFAULT_CLIENT = ClientChoice()
