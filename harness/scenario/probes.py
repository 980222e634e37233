"""Probes: what one broker believes, looked at during the run, for a scenario's checks.

ZooKeeper says what the controller decided; a broker cut off from the controller or
from ZooKeeper may believe something else, and that belief is what its clients act on
(S8-S11: stale leaders, two controllers, split brain). A :class:`Probe` asks one
broker for its own metadata (a Metadata request straight to it,
:func:`harness.cluster.broker_metadata.broker_view`) a given time after a schedule
action began; the answer becomes a cluster state - its live brokers, its controller,
its leaders and ISRs - so the same conditions that judge ZooKeeper's timeline judge it
(a :class:`~harness.scenario.checks.Seen` check). A broker that does not answer is
recorded with the error, which is itself checkable (``answers = false``).

In a scenario file::

    [[probes]]
    name = "b0-isolated"
    broker = 0
    at = { inject = 1 }
    after_s = 8
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.cluster.broker_metadata import BrokerView
from harness.cluster.state import ClusterState, PartitionState
from harness.cluster.waiting import Problems, WaitTimeout, wait_until_clear
from harness.errors import describe_error
from harness.fields import Fields
from harness.scenario.checks import Anchor, CheckSpecError, Lookup, ProbeResult, Produced

PROBE_KEYS = {"name", "look", "broker", "zone", "partition", "since_s", "count", "timeout_s", "at", "after_s"}
LOOKS = ("metadata", "lookup", "produce", "read")
PROBE_TOPIC_SUFFIX = "-probes"  # produce probes write beside the scenario's topic, not into it
LOOKUP_READ_S = 20.0  # how long a look-up consumer may take to read its first record
TICK_S = 0.05


@dataclass(frozen=True)
class Probe:
    """A look ``after_s`` seconds after the action ``at`` began: broker ``broker``'s own
    metadata (``look = "metadata"``), or (``look = "lookup"``) a fresh consumer in
    ``zone`` that looks up the first offset of ``partition`` written at or after
    ``since_s`` seconds before the look (ListOffsets by timestamp, which the partition's
    current leader answers) and reads from there; or (``look = "produce"``) a fresh
    acks=all producer in ``zone`` that knows only broker ``broker`` and sends ``count``
    records to ``partition`` of the scenario's side topic (``<topic>-probes``, same
    replicas) within ``timeout_s``. It starts from that broker's metadata, but once it
    has learnt the others it may ask any broker it can reach: to keep it on one broker's
    view, cut its zone's clients from the others (S8 does); or
    (``look = "read"``) a fresh consumer in ``zone`` that reads ``partition`` from its
    first offset for up to ``timeout_s``, counting the records."""

    name: str
    broker: int
    at: Anchor
    after_s: float = 0.0
    look: str = "metadata"
    zone: str = "a"
    partition: int = 0
    since_s: float = 1.0
    count: int = 20
    timeout_s: float = 15.0

    def __post_init__(self) -> None:
        if self.look not in LOOKS:
            raise CheckSpecError(f"probe {self.name}: look is one of {', '.join(LOOKS)}, not {self.look!r}")
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise CheckSpecError(f"a probe's name is letters, digits, '-' and '_', not {self.name!r}")
        if not math.isfinite(self.after_s) or self.after_s < 0:
            raise CheckSpecError(f"probe {self.name}: after_s must be a non-negative number, "
                                 f"not {self.after_s!r}")

    def describe(self) -> str:
        if self.look == "produce":
            return (f"a producer in zone {self.zone} knowing only broker {self.broker}, {self.count} sends, "
                    f"{self.after_s:g} s after {self.at.describe()}")
        if self.look == "read":
            return (f"a consumer in zone {self.zone} reading p{self.partition} from its start, "
                    f"{self.after_s:g} s after {self.at.describe()}")
        if self.look == "lookup":
            return (f"a consumer in zone {self.zone} looking up p{self.partition} from {self.since_s:g} s "
                    f"back, {self.after_s:g} s after {self.at.describe()}")
        return f"broker {self.broker}'s metadata {self.after_s:g} s after {self.at.describe()}"

    def to_spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "at": self.at.to_spec(), "after_s": self.after_s}
        if self.look == "lookup":
            return {**out, "look": self.look, "zone": self.zone, "partition": self.partition,
                    "since_s": self.since_s}
        if self.look == "read":
            return {**out, "look": self.look, "zone": self.zone, "partition": self.partition,
                    "timeout_s": self.timeout_s}
        if self.look == "produce":
            return {**out, "look": self.look, "broker": self.broker, "zone": self.zone,
                    "partition": self.partition, "count": self.count, "timeout_s": self.timeout_s}
        return {**out, "broker": self.broker}

    @classmethod
    def parse(cls, raw: Any, what: str) -> Probe:
        if not isinstance(raw, Mapping):
            raise CheckSpecError(f"{what} must be a table ([[probes]])")
        unknown = sorted(set(raw) - PROBE_KEYS)
        if unknown:
            known = ", ".join(sorted(PROBE_KEYS))
            raise CheckSpecError(f"{what}: unknown key(s) {', '.join(unknown)}; known: {known}")
        name, look = raw.get("name"), raw.get("look", "metadata")
        if not isinstance(name, str):
            raise CheckSpecError(f"{what}: 'name' must be a string")
        if "at" not in raw:
            raise CheckSpecError(f"{what}: 'at' names the moment ({{ inject = N }} or {{ heal = N }})")
        at = Anchor.parse(raw["at"], f"{what}: 'at'")
        after = _number(raw, "after_s", 0.0, what)
        if look == "read":
            zone = raw.get("zone", "a")
            if not isinstance(zone, str):
                raise CheckSpecError(f"{what}: 'zone' must be a zone name")
            return cls(name, -1, at, after, "read", zone, int(_number(raw, "partition", 0, what)),
                       timeout_s=_number(raw, "timeout_s", 15.0, what))
        if look == "lookup":
            zone = raw.get("zone", "a")
            if not isinstance(zone, str):
                raise CheckSpecError(f"{what}: 'zone' must be a zone name")
            return cls(name, -1, at, after, "lookup", zone, int(_number(raw, "partition", 0, what)),
                       _number(raw, "since_s", 1.0, what))
        broker = raw.get("broker")
        if isinstance(broker, bool) or not isinstance(broker, int):
            raise CheckSpecError(f"{what}: 'broker' must be a broker id")
        if look == "produce":
            zone = raw.get("zone", "a")
            if not isinstance(zone, str):
                raise CheckSpecError(f"{what}: 'zone' must be a zone name")
            return cls(name, broker, at, after, "produce", zone, int(_number(raw, "partition", 0, what)),
                       count=int(_number(raw, "count", 20, what)),
                       timeout_s=_number(raw, "timeout_s", 15.0, what))
        return cls(name, broker, at, after, str(look))


def _number(raw: Mapping[str, Any], key: str, default: float, what: str) -> float:
    return Fields(raw, what, CheckSpecError).number(key, default)


def view_as_state(view: BrokerView) -> ClusterState:
    """A broker's metadata as a cluster state; what it does not hold (epochs) is -1."""
    partitions = {(topic, v.partition): PartitionState(topic=topic, partition=v.partition, leader=v.leader,
                                                       leader_epoch=-1, isr=v.isr, controller_epoch=-1,
                                                       replicas=v.replicas)
                  for topic, views in view.topics.items() for v in views}
    return ClusterState(live_brokers=tuple(sorted(view.brokers)), controller=view.controller,
                        controller_epoch=None, partitions=partitions)


Moments = Callable[[], Mapping[tuple[int, str], tuple[float, float]]]
"""The schedule's actions so far: (entry, "inject" | "heal") -> (wall, monotonic) of their start."""


class ProbeTaker:
    """Takes each probe when its moment has come, beside a running schedule."""

    def __init__(self, probes: Sequence[Probe], moments: Moments,
                 look: Callable[[Probe], ProbeResult]) -> None:
        self.probes = list(probes)
        self.results: dict[str, ProbeResult] = {}
        self._moments = moments
        self._look = look
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="probes", daemon=True)

    def start(self) -> ProbeTaker:
        if self.probes:
            self._thread.start()
        return self

    def _due(self) -> list[Probe]:
        moments = dict(self._moments())
        now = time.monotonic()
        return [p for p in self.probes if p.name not in self.results
                and (p.at.entry, p.at.action) in moments
                and moments[(p.at.entry, p.at.action)][1] + p.after_s <= now]

    def _run(self) -> None:
        while not self._stop.is_set() and len(self.results) < len(self.probes):
            for probe in self._due():
                self.results[probe.name] = self._take(probe)
            self._stop.wait(TICK_S)

    def _take(self, probe: Probe) -> ProbeResult:
        try:
            return self._look(probe)
        except Exception as err:  # a broker that does not answer is a finding, not a failure
            return ProbeResult(probe.name, time.time(), None, describe_error(err))

    def finish(self, timeout_s: float) -> None:
        """Once the schedule has ended: take what is still due (waiting up to
        ``timeout_s`` for probes set after the last action), then stop. A probe whose
        moment never came stays untaken, and a check on it fails."""
        moments = dict(self._moments())
        pending = [p for p in self.probes if (p.at.entry, p.at.action) in moments]

        def untaken() -> list[str]:
            if not self._thread.is_alive():
                return []
            return [f"probe {p.name} not taken yet" for p in pending if p.name not in self.results]

        with contextlib.suppress(WaitTimeout):  # what is still untaken fails its checks
            wait_until_clear(untaken, timeout_s, "the probes due after the schedule", interval_s=TICK_S)
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)


class Looker:
    """Takes a probe on a live cluster: a broker's metadata, or a consumer's look-up."""

    def __init__(self, cluster: Any, topic: str) -> None:
        self._cluster = cluster
        self._topic = topic

    def __call__(self, probe: Probe) -> ProbeResult:
        taken = time.time()
        if probe.look == "metadata":
            view = self._cluster.broker_view(probe.broker, [self._topic])
            return ProbeResult(probe.name, taken, view_as_state(view))
        if probe.look == "produce":
            return ProbeResult(probe.name, taken, None, produced=self._produce(probe))
        if probe.look == "read":
            return ProbeResult(probe.name, taken, None, read=(probe.partition, self._read(probe)))
        return ProbeResult(probe.name, taken, None, lookup=self._lookup(probe, taken - probe.since_s))

    def _produce(self, probe: Probe) -> Produced:
        from confluent_kafka import Producer

        from harness.cluster.fabric import LinkKind, client_name
        from harness.workload.clients import PRODUCER_DEFAULTS, send_batch

        link = self._cluster.fabric.one(client_name(probe.zone), f"kafka-{probe.broker}", LinkKind.CLIENT)
        ms = int(probe.timeout_s * 1000)
        bootstrap = f"127.0.0.1:{self._cluster.host_ports[link.name]}"
        producer = Producer({**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap,
                             "client.id": f"kafka-chaos-probe-{probe.name}", "message.timeout.ms": ms,
                             "request.timeout.ms": min(ms, 5000)})
        tally = send_batch(producer, self._topic + PROBE_TOPIC_SUFFIX, probe.count,
                           prefix=f"probe-{probe.name}", partition=probe.partition,
                           timeout_s=probe.timeout_s + 5)
        if len(producer) == 0:  # closed now, so it does not retry against a removed cluster
            producer.close()
        return Produced(len(tally.acked), len(tally.failed), tuple(sorted(set(tally.failed.values()))))

    def _read(self, probe: Probe) -> int:
        """Records of the partition a fresh consumer reads from offset 0 until it reaches
        the end (the partition-EOF event) or the timeout. Not by the high watermark asked
        up front: a leader whose ISR just shrank answers that request with
        OFFSET_NOT_AVAILABLE until its high watermark has caught up, while fetches work."""
        from confluent_kafka import KafkaError, TopicPartition

        from harness.workload.clients import make_consumer

        consumer = make_consumer(self._cluster, probe.zone, {"enable.partition.eof": True})
        try:
            consumer.assign([TopicPartition(self._topic, probe.partition, 0)])
            read = 0

            def short_of_the_end() -> Problems:
                nonlocal read
                msg = consumer.poll(0.5)
                error = None if msg is None else msg.error()
                if msg is not None and error is None:
                    read += 1
                elif error is not None and error.code() == KafkaError._PARTITION_EOF:
                    return None
                return f"{read} record(s) read, the end of the partition not reached"

            with contextlib.suppress(WaitTimeout):  # the records read by then are the finding
                wait_until_clear(short_of_the_end, probe.timeout_s,
                                 f"probe {probe.name} to read partition {probe.partition} to its end",
                                 interval_s=0)
            return read
        finally:
            consumer.close()

    def _lookup(self, probe: Probe, since: float) -> Lookup:
        from confluent_kafka import TopicPartition

        from harness.workload.clients import make_consumer

        consumer = make_consumer(self._cluster, probe.zone)
        try:
            wanted = TopicPartition(self._topic, probe.partition, int(since * 1000))
            (found,) = consumer.offsets_for_times([wanted], timeout=LOOKUP_READ_S)
            consumer.assign([TopicPartition(self._topic, probe.partition, found.offset)])
            first: list[Any] = []

            def nothing_read() -> Problems:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    first.append(msg)
                    return None
                return f"no record read from offset {found.offset} yet"

            try:
                wait_until_clear(nothing_read, LOOKUP_READ_S, f"probe {probe.name}'s first record",
                                 interval_s=0)
            except WaitTimeout:  # nothing to read there: the look-up finds no record
                return Lookup(since, found.offset, None, None)
            return Lookup(since, found.offset, first[0].offset(), first[0].timestamp()[1])
        finally:
            consumer.close()
