"""The anomaly rules a safety configuration implies, each with the reason a reviewer reads.

A round's workload runs under one configuration (producer, topic and broker settings);
what Kafka promises under it decides which anomaly counts must be 0. Anything Kafka does
not promise under that configuration is left ``any``: shown, never a violation. The
reasons name the settings, so a report says *why* a count had to be 0.

Kafka's promises used here (Kafka's documentation, "Replication" and the producer and
topic configuration references):
- An acknowledged write with ``acks=all`` is on every in-sync replica, and at least
  ``min.insync.replicas`` of them; with unclean leader election off, only an in-sync
  replica can become leader. With ``min.insync.replicas`` >= 2 no single broker's loss
  can take an acknowledged write with it: nothing acknowledged is lost or truncated.
- An idempotent producer writes each message once and in order per partition, whatever
  it retries.
- Whatever the settings, a consumer reads only what producers sent, and a send the
  producer was told had definitively failed (no attempt of it can have been appended)
  is never read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.history import ANOMALY_KINDS, Rule
from harness.history.kinds import kind
from harness.workload.clients import PRODUCER_DEFAULTS

# The message kinds a configuration promises something about; every other kind is "any".
LOST = kind("lost").name
TRUNCATED = kind("truncated").name
UNEXPECTED = kind("unexpected").name
ABORTED_READ = kind("aborted_read").name
DUPLICATE = kind("duplicate").name
REORDERED = kind("reordered").name
KAFKA_MIN_INSYNC_DEFAULT = 1
KAFKA_UNCLEAN_DEFAULT = False


@dataclass(frozen=True)
class Invariant:
    kind: str
    rule: Rule
    reason: str


def _flag(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"


def _acks_all(value: Any) -> bool:
    return str(value).strip().lower() in ("all", "-1")


def _setting(key: str, topic: Mapping[str, Any], brokers: Mapping[str, Any], default: Any) -> Any:
    """A topic setting as Kafka resolves it: the topic's own, else the broker's, else Kafka's."""
    return topic.get(key, brokers.get(key, default))


def implied(producer: Mapping[str, Any], topic: Mapping[str, Any], brokers: Mapping[str, Any],
            replication_factor: int) -> list[Invariant]:
    """Every anomaly kind with the rule the configuration implies, in ANOMALY_KINDS order.

    ``producer`` is the scenario's producer settings (over the harness's defaults);
    ``topic`` and ``brokers`` the topic's and brokers' settings as configured."""
    settings = {**PRODUCER_DEFAULTS, **producer}
    min_isr = int(_setting("min.insync.replicas", topic, brokers, KAFKA_MIN_INSYNC_DEFAULT))
    unclean = _flag(_setting("unclean.leader.election.enable", topic, brokers, KAFKA_UNCLEAN_DEFAULT))
    acks_all = _acks_all(settings.get("acks"))
    idempotent = _flag(settings.get("enable.idempotence"))
    one_in_flight = int(settings.get("max.in.flight.requests.per.connection", 1_000_000)) == 1

    durable = acks_all and min_isr >= 2 and replication_factor >= min_isr and not unclean
    why_not = [w for w, bad in (("acks is not all", not acks_all),
                                (f"min.insync.replicas={min_isr}", min_isr < 2),
                                ("unclean leader election is on", unclean),
                                (f"replication factor {replication_factor} < min.insync.replicas",
                                 replication_factor < min_isr)) if bad]
    durability = (f"acks=all, min.insync.replicas={min_isr}, unclean leader election off: an "
                  "acknowledged write survives any single broker's loss")
    rules: dict[str, Invariant] = {
        name: Invariant(name, "any", "not promised under this configuration") for name in ANOMALY_KINDS}
    for name in (LOST, TRUNCATED):
        rules[name] = (Invariant(name, 0, durability) if durable
                       else Invariant(name, "any", "not promised: " + ", ".join(why_not)))
    rules[UNEXPECTED] = Invariant(UNEXPECTED, 0, "a consumer reads only what producers sent")
    rules[ABORTED_READ] = Invariant(ABORTED_READ, 0,
                                    "a send that definitively failed was never appended, so is never read")
    if idempotent:
        reason = "enable.idempotence=true: each message written once, in order, per partition"
        rules[DUPLICATE] = Invariant(DUPLICATE, 0, reason)
        rules[REORDERED] = Invariant(REORDERED, 0, reason)
    else:
        rules[DUPLICATE] = Invariant(DUPLICATE, "any", "not promised: idempotence is off, so a retry may "
                                                       "write a message twice")
        rules[REORDERED] = (Invariant(REORDERED, 0, "max.in.flight.requests.per.connection=1: one batch "
                                                    "at a time per partition")
                            if one_in_flight else
                            Invariant(REORDERED, "any", "not promised: idempotence is off with several "
                                                        "requests in flight"))
    return [rules[name] for name in ANOMALY_KINDS]


def expectations(invariants: list[Invariant]) -> dict[str, Rule]:
    """The rules as a scenario's ``expectations``."""
    return {inv.kind: inv.rule for inv in invariants}
