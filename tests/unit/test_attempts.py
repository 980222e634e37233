"""Per-attempt produce outcomes from librdkafka's debug lines (harness/workload/attempts.py).

The lines below are in the format librdkafka's rdkafka_request.c and
rdkafka_msgset_writer.c print under the ``msg`` debug context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.workload.attempts import AttemptTracker, attempt_logging, error_name, parse_line

# As confluent-kafka hands them over: thread and broker first.
PREFIX = "[thrd:127.0.0.1:19092/0]: 127.0.0.1:19092/0: "
SENT = (PREFIX + "t1 [{p}]: Produce MessageSet with {n} message(s) (512 bytes, ApiVersion 7, MsgVersion 2, "
        "MsgId {m}, BaseSeq -1, PID{{Invalid}}, uncompressed)")
FAILED = (PREFIX + "t1 [{p}]: MessageSet with {n} message(s) (MsgId {m}, BaseSeq -1) encountered error: "
          "{e} (actions {a})")


def test_lines_parse_into_batch_events() -> None:
    sent = parse_line(SENT.format(p=2, n=3, m=41))
    assert sent is not None
    assert (sent.kind, sent.partition, sent.first_msgid, sent.count) == ("sent", 2, 41, 3)
    refused = parse_line(FAILED.format(p=0, n=2, m=7, e="Broker: Not enough in-sync replicas",
                                       a="Retry,MsgNotPersisted"))
    assert refused is not None
    assert (refused.error, refused.actions, refused.possibly_persisted) == (
        "NOT_ENOUGH_REPLICAS", ("Retry", "MsgNotPersisted"), False)
    timed_out = parse_line(FAILED.format(p=0, n=1, m=9, e="Local: Timed out",
                                         a="Retry,MsgPossiblyPersisted") + " [NOT LEADER]")
    assert timed_out is not None and timed_out.error == "_TIMED_OUT" and timed_out.possibly_persisted
    assert parse_line("t1 [0]: MessageSet with 1 message(s) (MsgId 3, BaseSeq -1) delivered") is None
    assert parse_line("Connect to ipv4#127.0.0.1:1 failed: Connection refused") is None


def test_errors_without_an_explicit_not_persisted_count_as_possibly_written() -> None:
    line = FAILED.format(p=0, n=1, m=1, e="Broker: Request timed out", a="Retry")
    event = parse_line(line)
    assert event is not None and event.possibly_persisted


def test_unknown_error_text_is_kept() -> None:
    assert error_name("Broker: Not leader for partition") == "NOT_LEADER_FOR_PARTITION"
    assert error_name("something new") == "something new"


def _observe(tracker: AttemptTracker, line: str) -> None:
    event = parse_line(line)
    assert event is not None
    tracker.observe(event)


def test_a_send_is_possibly_written_only_after_such_an_attempt_on_its_partition() -> None:
    rows: list[Mapping[str, Any]] = []
    tracker = AttemptTracker("pa", "t1", rows.append)
    early_p1, early_p0 = tracker.enqueued(1), tracker.enqueued(0)
    _observe(tracker, FAILED.format(p=1, n=2, m=0, e="Broker: Not enough in-sync replicas",
                                    a="Retry,MsgNotPersisted"))
    assert not tracker.possibly_written(1, early_p1)  # refused: nothing appended
    _observe(tracker, FAILED.format(p=1, n=1, m=0, e="Local: Timed out", a="Retry,MsgPossiblyPersisted"))
    late_p1 = tracker.enqueued(1)
    assert tracker.possibly_written(1, early_p1)  # outstanding during the timed-out attempt
    assert not tracker.possibly_written(1, late_p1)  # sent after it
    assert not tracker.possibly_written(0, early_p0)  # other partition
    assert [(r["partition"], r["messages"], r["error"], r["possibly_persisted"]) for r in rows] == [
        (1, 2, "NOT_ENOUGH_REPLICAS", False), (1, 1, "_TIMED_OUT", True)]
    assert tracker.failed_attempts == 2


def test_other_topics_and_sent_batches_are_not_failed_attempts() -> None:
    rows: list[Mapping[str, Any]] = []
    tracker = AttemptTracker("pa", "other", rows.append)
    mark = tracker.enqueued(0)
    _observe(tracker, FAILED.format(p=0, n=1, m=1, e="Local: Timed out", a="Retry"))
    _observe(tracker, SENT.format(p=0, n=1, m=1))
    assert rows == [] and not tracker.possibly_written(0, mark)


def test_logging_settings_add_the_msg_context_to_the_callers() -> None:
    tracker = AttemptTracker("pa", "t1", lambda row: None)
    settings = attempt_logging(tracker, {"debug": "broker,msg"})
    assert settings["debug"] == "broker,msg" and settings["log_level"] == 7
    assert attempt_logging(tracker, {})["debug"] == "msg"
    # The logger hands lines to the tracker the way confluent-kafka calls it.
    mark = tracker.enqueued(0)
    settings["logger"].log(10, "%s [%s] %s", "MSGSET", "rdkafka#producer-1",
                           FAILED.format(p=0, n=1, m=0, e="Local: Timed out", a="Retry,MsgPossiblyPersisted"))
    assert tracker.possibly_written(0, mark)
