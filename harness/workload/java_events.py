"""The Java client's event lines, turned into the same history rows librdkafka's writes.

The Java driver (docker/java-client) prints one JSON object per line on stdout, in the
vocabulary of Kafka's VerifiableProducer and VerifiableConsumer (``name`` and
``timestamp`` in milliseconds) with the fields the history needs added; docs/HISTORY.md
lists every event and field. This module is the one reader of those lines: it is pure (no
process, no clock), so every event kind has a unit test.

A line that is not a JSON object (the JVM's own notices, a log line) is skipped and
counted. A line that begins as an object but does not parse, an event of unknown name, a
field missing or of the wrong type, and a last line cut short when the client died are
each one :class:`ClientOutputError` naming the client and the line. Rows are handed out
one by one as each line is read, so every row before the bad line is already recorded
when the error is raised: the history keeps what the client said up to that point.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness import history as hist
from harness.errors import ChaosError

Row = tuple[str, dict[str, Any]]

# The Java exceptions after which a record is certainly not on the log, when the producer
# made one attempt (retries = 0): the broker refused the write before appending it.
# With retries on, an earlier attempt of the same batch may have timed out after it was
# appended, and the Java client reports per-attempt errors only in its log, so the send
# is in doubt (docs/HISTORY.md).
REFUSALS = frozenset({
    "NotEnoughReplicasException",
    "RecordTooLargeException",
    "InvalidRequiredAcksException",
    "TopicAuthorizationException",
    "UnknownTopicOrPartitionException",
    "NotLeaderOrFollowerException",
    "NotLeaderForPartitionException",
    "LeaderNotAvailableException",
})


class ClientOutputError(ChaosError):
    """A client's event stream that cannot be read on: malformed, unknown or cut short."""


@dataclass(frozen=True)
class EventSource:
    """The client whose lines are read: its name (the producer or consumer id), zone,
    role (``producer`` or ``consumer``), and for a consumer its group (None: it assigns
    itself every partition) and isolation level."""

    name: str
    zone: str
    role: str
    group: str | None = None
    isolation: str | None = None


@dataclass
class _Event:
    """One parsed line: its fields, read with errors that name the line."""

    fields: Mapping[str, Any]
    where: str

    def refuse(self, text: str) -> ClientOutputError:
        return ClientOutputError(f"{self.where}: {text}")

    def get(self, key: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
        value = self.fields.get(key)
        if value is None and optional:
            return None
        if value is None or (isinstance(value, bool) and bool not in _kinds(kind)) \
                or not isinstance(value, kind):
            wanted = " or ".join(k.__name__ for k in _kinds(kind))
            raise self.refuse(f"field '{key}' must be {wanted}, not {value!r}")
        return value

    def integer(self, key: str, *, optional: bool = False) -> int | None:
        value = self.get(key, int, optional=optional)
        return None if value is None else int(value)

    def seconds(self, key: str) -> float:
        """A time the driver printed in milliseconds since the epoch, in seconds."""
        value = self.get(key, (int, float))
        if not math.isfinite(value) or value < 0:
            raise self.refuse(f"field '{key}' must be a time in milliseconds, not {value!r}")
        return float(value) / 1000.0

    def partitions(self) -> list[Mapping[str, Any]]:
        listed = self.get("partitions", list)
        if not all(isinstance(p, dict) for p in listed):
            raise self.refuse(f"field 'partitions' must list objects, not {listed!r}")
        return listed


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


@dataclass
class EventReader:
    """Reads one client's stdout, chunk by chunk, into history rows.

    ``config`` is the client's effective configuration as its ``startup_complete`` event
    printed it; ``retries`` (from it) decides whether a refused send is failed or in doubt.
    ``last_acked`` and ``next_offsets`` follow the acknowledgements and reads, for the
    workload's catch-up; ``outcomes`` counts sends by outcome."""

    source: EventSource
    line_number: int = 0
    skipped: int = 0
    config: dict[str, str] | None = None
    started: bool = False
    shut_down: bool = False
    assignment: int = -1
    poll_seq: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: {o: 0 for o in hist.OUTCOMES})
    last_acked: dict[int, int] = field(default_factory=dict)
    next_offsets: dict[int, int] = field(default_factory=dict)
    _pending: str = ""

    def feed(self, chunk: str) -> Iterator[Row]:
        """The rows of every whole line in ``chunk`` (with what earlier chunks left open),
        one by one; a bad line raises once the rows before it were handed out."""
        text = self._pending + chunk
        *lines, self._pending = text.split("\n")
        for line in lines:
            yield from self.line(line)

    def close(self) -> None:
        """The stream ended: a last line without its newline was cut short."""
        rest, self._pending = self._pending, ""
        if rest.strip():
            self.line_number += 1
            raise ClientOutputError(f"{self._where()}: the last line was cut short "
                                    f"({len(rest)} characters, no newline): {_excerpt(rest)}")

    def line(self, line: str) -> Iterator[Row]:
        """The rows of one line of output (without its newline)."""
        self.line_number += 1
        text = line.strip()
        if not text.startswith("{"):
            if text:
                self.skipped += 1  # the JVM's notices and log lines are not events
            return
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as err:
            raise ClientOutputError(f"{self._where()}: not a JSON object ({err.msg} at character "
                                    f"{err.pos}): {_excerpt(text)}") from None
        if not isinstance(parsed, dict):
            raise ClientOutputError(f"{self._where()}: not a JSON object: {_excerpt(text)}")
        event = _Event(parsed, self._where())
        name = event.get("name", str)
        handler = _HANDLERS.get((self.source.role, name))
        if handler is None:
            known = sorted(n for role, n in _HANDLERS if role == self.source.role)
            raise event.refuse(f"unknown {self.source.role} event {name!r} (known: {', '.join(known)})")
        if self.shut_down:
            raise event.refuse(f"event {name!r} after shutdown_complete")
        yield from handler(self, event)

    def _where(self) -> str:
        return f"{self.source.role} {self.source.name}, line {self.line_number}"

    # ----------------------------------------------------------------------- both roles

    def _startup(self, event: _Event) -> Iterator[Row]:
        config = event.get("config", dict)
        self.config = {str(k): str(v) for k, v in config.items()}
        self.started = True
        return iter(())

    def _shutdown(self, event: _Event) -> Iterator[Row]:
        self.shut_down = True
        return iter(())

    # -------------------------------------------------------------------------- producer

    def _send(self, event: _Event, acked: bool) -> Iterator[Row]:
        seq = event.integer("seq")
        message_id = event.get("message_id", str)
        if message_id != f"{self.source.name}-{seq}":
            raise event.refuse(f"message_id {message_id!r} is not {self.source.name}-{seq}")
        partition = event.integer("partition")
        assert seq is not None and partition is not None
        offset = event.integer("offset") if acked else None
        error = None if acked else self._send_error(event)
        outcome = hist.OUTCOME_ACKED if acked else self._classify(event)
        self.outcomes[outcome] += 1
        if offset is not None:
            self.last_acked[partition] = max(offset, self.last_acked.get(partition, -1))
        yield "sends", {
            "message_id": message_id, "producer_id": self.source.name, "seq": seq,
            "topic": event.get("topic", str), "partition": partition, "key": None,
            "zone": self.source.zone, "send_ts": event.seconds("send_ts"),
            "ack_ts": event.seconds("timestamp") if acked else None, "outcome": outcome,
            "offset": offset, "error": error, "transaction_id": None,
        }

    @staticmethod
    def _send_error(event: _Event) -> str:
        exception = event.get("exception", str)
        message = event.get("message", str, optional=True)
        return exception if not message else f"{exception}: {message}"

    def _classify(self, event: _Event) -> str:
        """failed (certainly not on the log) or unknown (in doubt), module doc: a send that
        never left the client (``sent`` false: send() itself threw) or one attempt refused."""
        if event.get("sent", bool) is False:
            return hist.OUTCOME_FAILED
        if self.config is None:
            raise event.refuse("a send's outcome before startup_complete printed the configuration")
        one_attempt = self.config.get("retries", "1").strip() == "0"
        if one_attempt and event.get("exception", str) in REFUSALS:
            return hist.OUTCOME_FAILED
        return hist.OUTCOME_UNKNOWN

    # -------------------------------------------------------------------------- consumer

    def _record(self, event: _Event) -> Iterator[Row]:
        partition, offset = event.integer("partition"), event.integer("offset")
        assert partition is not None and offset is not None
        grouped = self.source.group is not None
        row = {
            "consumer_id": self.source.name, "zone": self.source.zone, "topic": event.get("topic", str),
            "partition": partition, "offset": offset,
            "message_id": event.get("value", str, optional=True), "poll_ts": event.seconds("timestamp"),
            "group": self.source.group, "assignment": max(self.assignment, 0) if grouped else None,
            "poll_seq": self.poll_seq, "isolation": self.source.isolation,
        }
        self.poll_seq += 1
        self.next_offsets[partition] = max(offset + 1, self.next_offsets.get(partition, 0))
        yield "polls", row

    def _rebalance(self, event: _Event, kind: str) -> Iterator[Row]:
        if self.source.group is None:
            raise event.refuse("a rebalance from a consumer outside any group")
        if kind == hist.REBALANCE_ASSIGNED:
            self.assignment += 1
        ts = event.seconds("timestamp")
        for entry in event.partitions():
            part = _Event(entry, event.where)
            yield "rebalances", {
                "group": self.source.group, "consumer_id": self.source.name, "ts": ts, "event": kind,
                "assignment": max(self.assignment, 0), "topic": part.get("topic", str),
                "partition": part.integer("partition"),
                "resume_offset": (part.integer("resume_offset", optional=True)
                                  if kind == hist.REBALANCE_ASSIGNED else None),
            }

    def _commit(self, event: _Event) -> Iterator[Row]:
        if self.source.group is None:
            raise event.refuse("a commit from a consumer outside any group")
        mode = event.get("mode", str)
        if mode not in ("auto", "sync", "async"):
            raise event.refuse(f"commit mode {mode!r} is not auto, sync or async")
        whole = event.get("error", str, optional=True)
        ts = event.seconds("timestamp")
        for entry in event.partitions():
            part = _Event(entry, event.where)
            error = part.get("error", str, optional=True) or whole
            yield "commits", {
                "group": self.source.group, "consumer_id": self.source.name,
                "assignment": max(self.assignment, 0), "topic": part.get("topic", str),
                "partition": part.integer("partition"), "offset": part.integer("offset"), "ts": ts,
                "mode": mode, "outcome": hist.COMMIT_FAILED if error else hist.COMMIT_COMMITTED,
                "error": error,
            }


def _excerpt(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


_Handler = Callable[[EventReader, _Event], Iterator[Row]]
_HANDLERS: dict[tuple[str, str], _Handler] = {
    ("producer", "startup_complete"): EventReader._startup,
    ("producer", "producer_send_success"): lambda r, e: r._send(e, acked=True),
    ("producer", "producer_send_error"): lambda r, e: r._send(e, acked=False),
    ("producer", "shutdown_complete"): EventReader._shutdown,
    ("consumer", "startup_complete"): EventReader._startup,
    ("consumer", "record_data"): EventReader._record,
    ("consumer", "partitions_assigned"): lambda r, e: r._rebalance(e, hist.REBALANCE_ASSIGNED),
    ("consumer", "partitions_revoked"): lambda r, e: r._rebalance(e, hist.REBALANCE_REVOKED),
    ("consumer", "partitions_lost"): lambda r, e: r._rebalance(e, hist.REBALANCE_LOST),
    ("consumer", "offsets_committed"): EventReader._commit,
    ("consumer", "shutdown_complete"): EventReader._shutdown,
}
EVENT_NAMES: Mapping[str, tuple[str, ...]] = {
    role: tuple(name for r, name in _HANDLERS if r == role) for role in ("producer", "consumer")}
