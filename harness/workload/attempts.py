"""Every produce attempt, not only the last: read from librdkafka's own debug log.

A delivery report carries a send's *final* error. That hides what a fault really did to
the producer: the not-leader errors a leader move caused and which retries then cured,
the NOT_ENOUGH_REPLICAS answers to a partition whose ISR fell below min.insync.replicas
while retries kept going until ``message.timeout.ms``. It also hides the one fact that
decides whether a send that did not end acknowledged is *certainly* not on the log: no
earlier attempt of it may have been appended. A retry after a request timeout can be
refused with NOT_ENOUGH_REPLICAS although the first attempt was written; calling that
send "failed" would make the checker report a false aborted read.

librdkafka logs each per-batch error under the ``msg`` debug context, with the batch's
partition, size, error and the actions it took, including whether it holds the batch's
messages as possibly persisted (see ``rd_kafka_handle_Produce_error`` in librdkafka's
``rdkafka_request.c``). A producer configured by :func:`attempt_logging` sends those lines
to :class:`AttemptTracker`, which writes one row per failed attempt to the history's
``attempts`` table and tells the producer which of its sends an attempt may have written.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

# librdkafka's action names (rd_kafka_actions_descs); only an explicit "not persisted"
# clears a batch: any other error may have left it on the leader's log.
NOT_PERSISTED = "MsgNotPersisted"

# Lines come prefixed with the thread and broker ("[thrd:...]: broker: "); a topic name
# is made of [A-Za-z0-9._-] only, so the pattern finds where the batch part starts.
_TOPIC = r"(?P<topic>[A-Za-z0-9._-]+) \[(?P<partition>-?\d+)\]: "
_PRODUCE = re.compile(
    _TOPIC + r"Produce MessageSet with (?P<count>\d+) message\(s\) "
    r"\(.*MsgId (?P<msgid>\d+),")
_ERROR = re.compile(
    _TOPIC + r"MessageSet with (?P<count>\d+) message\(s\) "
    r"\(MsgId (?P<msgid>\d+), BaseSeq -?\d+\) encountered error: (?P<error>.*) "
    r"\(actions (?P<actions>[^)]*)\)(?: \[NOT LEADER\])?$")


@dataclass(frozen=True)
class BatchEvent:
    """One line of librdkafka's log about one batch: it was sent, or it failed."""

    kind: str  # "sent" | "error"
    topic: str
    partition: int
    first_msgid: int
    count: int
    error: str | None = None  # the error's name, e.g. NOT_ENOUGH_REPLICAS
    actions: tuple[str, ...] = ()

    @property
    def possibly_persisted(self) -> bool:
        return self.kind == "error" and NOT_PERSISTED not in self.actions


def _error_names() -> dict[str, str]:
    """librdkafka's error strings (what the log prints) -> error names (what we record)."""
    names: dict[str, str] = {}
    for attribute in dir(KafkaError):
        code = getattr(KafkaError, attribute)
        if isinstance(code, int) and not attribute.startswith("__"):
            error = KafkaError(code)
            names.setdefault(error.str(), error.name())
    return names


_NAMES: dict[str, str] = {}


def error_name(text: str) -> str:
    """The name of the error librdkafka printed as ``text``, or the text if unknown."""
    if not _NAMES:
        _NAMES.update(_error_names())
    return _NAMES.get(text, text)


def parse_line(line: str) -> BatchEvent | None:
    """The batch event in one debug line, or None for every other line."""
    if match := _ERROR.search(line):
        actions = tuple(a for a in match["actions"].split(",") if a)
        return BatchEvent("error", match["topic"], int(match["partition"]), int(match["msgid"]),
                          int(match["count"]), error_name(match["error"]), actions)
    if match := _PRODUCE.search(line):
        return BatchEvent("sent", match["topic"], int(match["partition"]), int(match["msgid"]),
                          int(match["count"]))
    return None


class AttemptTracker:
    """What one producer's failed attempts were, and which sends they may have written.

    A non-idempotent producer's log lines do not say which messages a batch held (the
    batch's message id is only filled in for idempotent producers), so a message counts
    as possibly written when any attempt on its partition that may have appended ended
    between its ``produce()`` and its delivery report. That over-approximates, never
    under: the attempt that carried the message is one of those. librdkafka hands log
    lines and delivery reports to the same ``poll()``/``flush()`` caller in the order
    they happened, so the window is exact. Single-threaded by design, like that caller.
    """

    def __init__(self, producer_id: str, topic: str, sink: Callable[[Mapping[str, Any]], None]) -> None:
        self.producer_id, self.topic, self._sink = producer_id, topic, sink
        self._maybe_written: dict[int, int] = {}  # partition -> attempts that may have appended
        self.failed_attempts = 0

    def enqueued(self, partition: int) -> int:
        """Call at ``produce()``; hand the returned mark to :meth:`possibly_written`."""
        return self._maybe_written.get(partition, 0)

    def possibly_written(self, partition: int, mark: int) -> bool:
        """Whether an attempt on ``partition`` that may have appended ended since ``mark``."""
        return self._maybe_written.get(partition, 0) > mark

    def observe(self, event: BatchEvent) -> None:
        if event.topic != self.topic or event.kind != "error":
            return
        if event.possibly_persisted:
            self._maybe_written[event.partition] = self._maybe_written.get(event.partition, 0) + 1
        self.failed_attempts += 1
        self._sink({
            "producer_id": self.producer_id, "topic": self.topic, "partition": event.partition,
            "ts": time.time(), "messages": event.count, "error": event.error,
            "actions": ",".join(event.actions), "possibly_persisted": event.possibly_persisted,
        })


class _TrackerHandler(logging.Handler):
    def __init__(self, tracker: AttemptTracker) -> None:
        super().__init__(logging.DEBUG)
        self._tracker = tracker

    def emit(self, record: logging.LogRecord) -> None:
        # confluent-kafka logs as ("%s [%s] %s", facility, client name, text).
        args = record.args
        text = args[2] if isinstance(args, tuple) and len(args) == 3 else record.getMessage()
        event = parse_line(str(text))
        if event is not None:
            self._tracker.observe(event)


def _debug_contexts(settings: Mapping[str, Any]) -> str:
    contexts = {c for c in str(settings.get("debug", "")).split(",") if c}
    return ",".join(sorted(contexts | {"msg"}))


def attempt_logging_shown(settings: Mapping[str, Any]) -> dict[str, Any]:
    """What :func:`attempt_logging` sets, as a report shows it (the logger by name)."""
    return {"debug": _debug_contexts(settings), "log_level": 7, "logger": "kafka-chaos attempt tracker"}


def attempt_logging(tracker: AttemptTracker, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Producer settings that route librdkafka's ``msg`` debug lines to ``tracker``.

    Only the ``msg`` context is added to whatever ``debug`` the settings already ask
    for; every other line is dropped, which also keeps connection errors during faults
    off the terminal.
    """
    logger = logging.Logger(f"kafka-chaos.attempts.{tracker.producer_id}", logging.DEBUG)
    logger.addHandler(_TrackerHandler(tracker))
    return {"debug": _debug_contexts(settings), "log_level": 7, "logger": logger}
