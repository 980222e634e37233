"""The Java client's event lines into history rows: one test per event kind, and the
lines that cannot be read (malformed, unknown, cut short), which keep earlier rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import history as hist
from harness.workload.java_events import (
    EVENT_NAMES,
    ClientOutputError,
    EventReader,
    EventSource,
    Row,
)

PRODUCER = EventSource("pa", "a", "producer")
MEMBER = EventSource("ca", "b", "consumer", group="g1", isolation="read_committed")
READER = EventSource("cr", "c", "consumer", isolation="read_uncommitted")


def line(name: str, ts_ms: float = 1_700_000_000_000.0, **fields: Any) -> str:
    return json.dumps({"name": name, "timestamp": ts_ms, **fields}) + "\n"


def started(retries: int = 2147483647) -> str:
    return line("startup_complete", config={"acks": "all", "retries": str(retries)})


def rows(source: EventSource, *lines: str) -> list[Row]:
    reader = EventReader(source)
    out = list(reader.feed("".join(lines)))
    reader.close()
    return out


def test_every_event_kind_has_a_test_below() -> None:
    assert EVENT_NAMES == {
        "producer": ("startup_complete", "producer_send_success", "producer_send_error", "shutdown_complete"),
        "consumer": ("startup_complete", "record_data", "partitions_assigned", "partitions_revoked",
                     "partitions_lost", "offsets_committed", "shutdown_complete"),
    }


# --------------------------------------------------------------------------- producer


def test_startup_complete_keeps_the_effective_configuration_and_writes_no_row() -> None:
    reader = EventReader(PRODUCER)
    assert list(reader.feed(started(retries=0))) == []
    assert reader.config == {"acks": "all", "retries": "0"} and reader.started


def test_send_success_is_an_acked_send_with_both_times_and_its_offset() -> None:
    [(table, row)] = rows(PRODUCER, started(), line(
        "producer_send_success", 1_700_000_000_250.0, message_id="pa-7", seq=7, topic="t", partition=2,
        offset=41, send_ts=1_700_000_000_200.0))
    assert table == "sends"
    assert row == {"message_id": "pa-7", "producer_id": "pa", "seq": 7, "topic": "t", "partition": 2,
                   "key": None, "zone": "a", "send_ts": 1_700_000_000.2, "ack_ts": 1_700_000_000.25,
                   "outcome": hist.OUTCOME_ACKED, "offset": 41, "error": None, "transaction_id": None}


def test_acknowledgements_and_outcomes_are_followed() -> None:
    reader = EventReader(PRODUCER)
    sent = [started()] + [line("producer_send_success", message_id=f"pa-{s}", seq=s, topic="t",
                               partition=s % 2, offset=10 + s, send_ts=1.0) for s in range(5)]
    list(reader.feed("".join(sent)))
    assert reader.last_acked == {0: 14, 1: 13}
    assert reader.outcomes[hist.OUTCOME_ACKED] == 5


@pytest.mark.parametrize(("retries", "exception", "sent", "outcome"), [
    (0, "NotEnoughReplicasException", True, hist.OUTCOME_FAILED),  # one attempt, refused
    (5, "NotEnoughReplicasException", True, hist.OUTCOME_UNKNOWN),  # an earlier attempt may have landed
    (0, "TimeoutException", True, hist.OUTCOME_UNKNOWN),  # in doubt whatever the retries
    (5, "TimeoutException", False, hist.OUTCOME_FAILED),  # send() threw: it never left the client
])
def test_send_error_is_failed_only_when_certainly_not_written(retries: int, exception: str, sent: bool,
                                                              outcome: str) -> None:
    [(table, row)] = rows(PRODUCER, started(retries), line(
        "producer_send_error", message_id="pa-3", seq=3, topic="t", partition=0, send_ts=5.0,
        exception=exception, message="the broker said no", sent=sent))
    assert table == "sends"
    assert row["outcome"] == outcome
    assert row["offset"] is None and row["ack_ts"] is None
    assert row["error"] == f"{exception}: the broker said no"


def test_a_send_error_before_the_configuration_is_refused() -> None:
    with pytest.raises(ClientOutputError, match="before startup_complete"):
        rows(PRODUCER, line("producer_send_error", message_id="pa-3", seq=3, topic="t", partition=0,
                            send_ts=5.0, exception="TimeoutException", sent=True))


def test_a_message_id_that_is_not_the_producers_own_is_refused() -> None:
    with pytest.raises(ClientOutputError, match=r"line 2: message_id 'pb-7' is not pa-7"):
        rows(PRODUCER, started(), line("producer_send_success", message_id="pb-7", seq=7, topic="t",
                                       partition=0, offset=1, send_ts=1.0))


def test_shutdown_complete_ends_the_stream() -> None:
    reader = EventReader(PRODUCER)
    assert list(reader.feed(started() + line("shutdown_complete"))) == []
    assert reader.shut_down
    with pytest.raises(ClientOutputError, match="after shutdown_complete"):
        list(reader.feed(line("producer_send_success", message_id="pa-0", seq=0, topic="t", partition=0,
                              offset=0, send_ts=1.0)))


# --------------------------------------------------------------------------- consumer


def test_record_data_of_a_reader_is_a_poll_without_a_group() -> None:
    [(table, row)] = rows(READER, line("record_data", 2_000.0, topic="t", partition=1, offset=9,
                                       value="pa-3"))
    assert table == "polls"
    assert row == {"consumer_id": "cr", "zone": "c", "topic": "t", "partition": 1, "offset": 9,
                   "message_id": "pa-3", "poll_ts": 2.0, "group": None, "assignment": None,
                   "poll_seq": 0, "isolation": "read_uncommitted"}


def test_record_data_numbers_reads_in_order_and_a_value_that_is_not_text_is_null() -> None:
    reader = EventReader(READER)
    out = list(reader.feed(line("record_data", topic="t", partition=0, offset=4, value="pa-1")
                           + line("record_data", topic="t", partition=0, offset=5, value=None)))
    assert [r["poll_seq"] for _, r in out] == [0, 1]
    assert out[1][1]["message_id"] is None
    assert reader.next_offsets == {0: 6}


def test_partitions_assigned_numbers_the_assignment_and_keeps_resume_offsets() -> None:
    out = rows(MEMBER, line("partitions_assigned", 3_000.0, partitions=[
        {"topic": "t", "partition": 0, "resume_offset": 12}, {"topic": "t", "partition": 1}]),
        line("record_data", topic="t", partition=0, offset=12, value="pa-0"))
    assert out[0] == ("rebalances", {"group": "g1", "consumer_id": "ca", "ts": 3.0, "event": "assigned",
                                     "assignment": 0, "topic": "t", "partition": 0, "resume_offset": 12})
    assert out[1][1]["resume_offset"] is None  # nothing committed: from the log start
    assert out[2][0] == "polls" and out[2][1]["assignment"] == 0 and out[2][1]["group"] == "g1"


@pytest.mark.parametrize(("name", "event"), [("partitions_revoked", hist.REBALANCE_REVOKED),
                                             ("partitions_lost", hist.REBALANCE_LOST)])
def test_revoked_and_lost_are_told_apart_and_keep_the_assignment_number(name: str, event: str) -> None:
    out = rows(MEMBER, line("partitions_assigned", partitions=[{"topic": "t", "partition": 0}]),
               line("partitions_assigned", partitions=[{"topic": "t", "partition": 1}]),
               line(name, partitions=[{"topic": "t", "partition": 1, "resume_offset": 99}]))
    assert out[-1][1]["event"] == event
    assert out[-1][1]["assignment"] == 1
    assert out[-1][1]["resume_offset"] is None  # only an assignment resumes


def test_a_rebalance_outside_a_group_is_refused() -> None:
    with pytest.raises(ClientOutputError, match="outside any group"):
        rows(READER, line("partitions_assigned", partitions=[{"topic": "t", "partition": 0}]))


def test_offsets_committed_is_one_row_per_partition_with_its_own_outcome() -> None:
    out = rows(MEMBER, line("partitions_assigned", partitions=[{"topic": "t", "partition": 0}]),
               line("offsets_committed", 4_000.0, mode="sync", partitions=[
                   {"topic": "t", "partition": 0, "offset": 20},
                   {"topic": "t", "partition": 1, "offset": 7, "error": "RebalanceInProgressException"}]))
    commits = [r for t, r in out if t == "commits"]
    assert commits[0] == {"group": "g1", "consumer_id": "ca", "assignment": 0, "topic": "t", "partition": 0,
                          "offset": 20, "ts": 4.0, "mode": "sync", "outcome": hist.COMMIT_COMMITTED,
                          "error": None}
    assert commits[1]["outcome"] == hist.COMMIT_FAILED
    assert commits[1]["error"] == "RebalanceInProgressException"


def test_a_commit_error_for_the_whole_commit_fails_every_partition() -> None:
    out = rows(MEMBER, line("offsets_committed", mode="async", error="CommitFailedException",
                            partitions=[{"topic": "t", "partition": 0, "offset": 3}]))
    assert out[0][1]["outcome"] == hist.COMMIT_FAILED and out[0][1]["error"] == "CommitFailedException"


def test_a_commit_mode_outside_the_vocabulary_is_refused() -> None:
    with pytest.raises(ClientOutputError, match="commit mode 'txn'"):
        rows(MEMBER, line("offsets_committed", mode="txn", partitions=[]))


# ------------------------------------------------------------------ lines not read on


def test_lines_that_are_not_objects_are_skipped_and_counted() -> None:
    reader = EventReader(READER)
    out = list(reader.feed("SLF4J: No providers were found.\n\n" + line(
        "record_data", topic="t", partition=0, offset=0, value="pa-0") + "[1, 2]\n"))
    assert len(out) == 1 and reader.skipped == 2


def test_a_malformed_line_is_one_error_naming_the_client_and_line_after_earlier_rows() -> None:
    reader = EventReader(READER)
    got: list[Row] = []
    good = line("record_data", topic="t", partition=0, offset=0, value="pa-0")
    with pytest.raises(ClientOutputError) as raised:
        second = good.replace("offset\": 0", "offset\": 1")
        for row in reader.feed(good + second + '{"name": "record_data", \n'):
            got.append(row)
    assert str(raised.value).startswith("consumer cr, line 3: not a JSON object")
    assert len(got) == 2  # both rows before the bad line were handed out


def test_a_line_cut_short_at_the_end_is_an_error_and_keeps_the_rows_before() -> None:
    reader = EventReader(PRODUCER)
    whole = started() + line("producer_send_success", message_id="pa-0", seq=0, topic="t", partition=0,
                             offset=0, send_ts=1.0)
    # the stream arrives in pieces: the last line's newline never comes
    got = list(reader.feed(whole[:50])) + list(reader.feed(whole[50:] + '{"name": "producer_send_su'))
    assert [t for t, _ in got] == ["sends"]
    with pytest.raises(ClientOutputError, match=r"producer pa, line 3: the last line was cut short"):
        reader.close()


@pytest.mark.parametrize(("fields", "complaint"), [
    ({"name": "record_data", "topic": "t", "partition": "0", "offset": 1, "timestamp": 1},
     "field 'partition' must be int, not '0'"),
    ({"name": "record_data", "topic": "t", "partition": True, "offset": 1, "timestamp": 1},
     "field 'partition' must be int, not True"),
    ({"name": "record_data", "topic": "t", "partition": 0, "timestamp": 1},
     "field 'offset' must be int, not None"),
    ({"name": "record_data", "topic": "t", "partition": 0, "offset": 1, "timestamp": -5},
     "field 'timestamp' must be a time in milliseconds"),
    ({"name": "records_consumed", "count": 3}, "unknown consumer event 'records_consumed'"),
    ({"timestamp": 1}, "field 'name' must be str, not None"),
])
def test_fields_missing_or_of_the_wrong_type_are_one_sentence(fields: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ClientOutputError, match="consumer cr, line 1: " + complaint.replace("(", r"\(")):
        rows(READER, json.dumps(fields) + "\n")
