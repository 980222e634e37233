"""The reference checker (tests/reference_checker.py) against docs/HISTORY.md and the generator.

Two kinds of evidence, both without Spark:

* hand-written histories, one per edge case of the rules, each with the numbers worked out
  from the doc by hand (``CASES``, and ``TXN_CASES`` for schema 6's transactions; the Spark
  tests judge the very same histories);
* many generated histories with every anomaly kind and edge case planted: the reference
  finds exactly the planted counts, per partition, and its findings are about the
  planted messages; with transactions, the generated transactional data is also what a
  sound run records wherever no plant says otherwise.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.history import (
    PIPELINE_KINDS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SCHEMAS,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_KINDS,
    TXN_UNKNOWN,
    HistoryWriter,
)
from tests.reference_checker import CHECKED_KINDS, Verdict, check
from tests.synthetic.core import EDGE_CASES, PLANTABLE_KINDS, TXN_EDGES, SynthHistory, SynthSpec, generate
from tests.unit._synth import generated

# The kinds and edge cases before schema 6's transactions: what the older generated tests
# plant, drawn in the same order as before, so that they keep testing the same histories.
BASE_KINDS = tuple(k for k in PLANTABLE_KINDS if k not in TXN_KINDS and k not in PIPELINE_KINDS)
BASE_EDGES = tuple(e for e in EDGE_CASES if e not in TXN_EDGES)

# --------------------------------------------------------------------- writing small stories


@dataclass
class Story:
    """A tiny history in one topic, written the way a run records it: ``send`` a message,
    ``log`` what the final log holds where, ``poll`` what a consumer read where. Producer
    names carry the topic, so stories written side by side into one history (the Spark
    tests do that) never share a message."""

    w: HistoryWriter
    topic: str

    def mid(self, producer: str, seq: int) -> str:
        return f"{self.topic}.{producer}-{seq}"

    def send(
        self,
        producer: str,
        seq: int,
        partition: int = 0,
        outcome: str = "acked",
        offset: int | None = None,
        ts: float = 1.0,
        txn: str | None = None,
        source: tuple[str, int, int, str | None] | None = None,  # (group, partition, offset, id read)
    ) -> str:
        mid = self.mid(producer, seq)
        origin = {}
        if source is not None:
            group, src_partition, src_offset, src_id = source
            origin = {"source_group": group, "source_topic": self.topic, "source_partition": src_partition,
                      "source_offset": src_offset, "source_message_id": src_id}  # fmt: skip
        self.w.append(
            "sends",
            {
                **origin,
                "message_id": mid,
                "producer_id": f"{self.topic}.{producer}",
                "seq": seq,
                "topic": self.topic,
                "partition": partition,
                "send_ts": ts,
                "ack_ts": ts + 0.1 if outcome == "acked" else None,
                "outcome": outcome,
                "offset": offset if outcome == "acked" else None,
                "transaction_id": None if txn is None else f"{self.topic}.{txn}",
            },
        )
        return mid

    def log(self, partition: int, offset: int, mid: str | None, read_committed: bool | None = None) -> None:
        record = {"topic": self.topic, "partition": partition, "offset": offset, "message_id": mid,
                  "read_committed": read_committed}  # fmt: skip
        self.w.append("final_log", record)

    def poll(
        self,
        partition: int,
        offset: int,
        mid: str | None,
        consumer: str = "c",
        ts: float = 2.0,
        isolation: str | None = None,
        member: tuple[str, int, int] | None = None,  # (group, assignment, poll_seq)
    ) -> None:
        group, assignment, seq = member if member is not None else (None, None, None)
        self.w.append(
            "polls",
            {"consumer_id": consumer, "topic": self.topic, "partition": partition, "offset": offset,
             "message_id": mid, "poll_ts": ts, "isolation": isolation, "group": group,
             "assignment": assignment, "poll_seq": seq},
        )

    def transaction(self, name: str, producer: str, outcome: str, asked: float | None = 3.0) -> None:
        """A transactions row: begun at 0.5, its end asked for at ``asked``, returned 0.1 later."""
        self.w.append(
            "transactions",
            {"transaction_id": f"{self.topic}.{name}", "producer_id": f"{self.topic}.{producer}",
             "transactional_id": f"{self.topic}.{producer}.tx", "begin_ts": 0.5, "end_requested_ts": asked,
             "end_ts": None if asked is None else asked + 0.1, "outcome": outcome},
        )

    def commit(self, partition: int, offset: int, ts: float, group: str = "g", consumer: str = "m") -> None:
        self.w.append(
            "commits",
            {"group": group, "consumer_id": consumer, "assignment": 0, "topic": self.topic,
             "partition": partition, "offset": offset, "ts": ts, "mode": "sync", "outcome": "committed"},
        )

    def final_offset(self, group: str, partition: int, offset: int | None) -> None:
        self.w.append("final_offsets", {"group": group, "topic": self.topic, "partition": partition,
                                        "offset": offset, "ts": 9.0})  # fmt: skip

    def output(self, producer: str, seq: int, offset: int, source: tuple[str, int, str | None],
               txn: str | None = None, logged: bool | None = True) -> str:  # fmt: skip
        """A pipeline output in partition 1 of the input record a member of ``source``'s
        group read in partition 0 at ``source``'s offset, with the id it read there. It is
        acknowledged at ``offset``; ``logged``: held there by the final log and read (None:
        not on the log; False: on it, but not given to the read_committed drain)."""
        group, src_offset, src_id = source
        mid = self.send(producer, seq, 1, offset=offset, txn=txn, source=(group, 0, src_offset, src_id))
        if logged is True:
            self.logged_and_read(1, offset, mid)
        elif logged is False:
            self.log(1, offset, mid, read_committed=False)
        return mid

    def logged_and_read(self, partition: int, offset: int, mid: str | None) -> None:
        self.log(partition, offset, mid)
        self.poll(partition, offset, mid)

    def clean(self, producer: str, seq: int, partition: int, offset: int) -> str:
        """A message acknowledged at ``offset``, held there by the final log and read there."""
        mid = self.send(producer, seq, partition, offset=offset)
        self.logged_and_read(partition, offset, mid)
        return mid


# An expected example: (kind, partition listed under, message id, partition and offset
# where it happened, what the final log holds there).
Expected = tuple[str, int, str | None, int, int | None, str | None]


@dataclass(frozen=True)
class Case:
    """One edge case: how to write it, and its findings worked out from the doc by hand:
    counts per (kind, partition listed under) and every example."""

    name: str
    write: Callable[[Story], None]
    counts: dict[tuple[str, int], int]
    examples: list[Expected]


def _several_never_sent_at_one_offset(s: Story) -> None:
    s.clean("p", 0, 0, 0)
    ghost = f"{s.topic}.ghost-7"
    s.logged_and_read(0, 1, ghost)
    s.poll(0, 1, ghost, consumer="d")  # re-read by another consumer
    s.poll(0, 1, f"{s.topic}.other-1")  # another never-sent id read at the same offset
    s.poll(0, 1, None)  # and an undecodable one


def _two_sent_read_at_one_offset(s: Story) -> None:
    for seq in range(3):
        s.clean("p", seq, 0, seq)
    s.poll(0, 2, s.mid("p", 0))  # offset 2 holds p-2: both reads there are truncated
    s.poll(0, 2, s.mid("p", 1))


def _one_message_read_at_several_offsets(s: Story) -> None:
    s.clean("p", 0, 0, 0)
    s.clean("p", 1, 0, 1)
    for consumer in ("c", "d"):  # read at offset 1 (held by p-1) twice: one position
        s.poll(0, 1, s.mid("p", 0), consumer=consumer)
    s.poll(0, 9, s.mid("p", 0))  # beyond the log's end


def _reorders_per_partition_by_first_copy(s: Story) -> None:
    p0 = s.send("p", 0, 0, offset=0)
    p1 = s.send("p", 1, 1, offset=1)
    p2 = s.send("p", 2, 0, offset=1)
    p3 = s.send("p", 3, 1, offset=0)
    # partition 0 holds p-1's other copy (after p-2) and a late second copy of p-0
    for offset, mid in enumerate((p0, p2, p1, p0)):
        s.logged_and_read(0, offset, mid)
    for offset, mid in enumerate((p3, p1)):
        s.logged_and_read(1, offset, mid)


def _never_sent_takes_no_part_in_order(s: Story) -> None:
    s.logged_and_read(0, 0, s.mid("p", 5))  # p never sent seq 5
    s.clean("p", 0, 0, 1)
    s.clean("p", 1, 0, 2)


def _undecodable_records(s: Story) -> None:
    s.clean("p", 0, 0, 0)
    s.logged_and_read(0, 1, None)
    s.poll(0, 1, None, consumer="d")
    s.poll(0, 0, None)  # undecodable where the log holds p-0: unexpected, p-0 untouched


def _offset_gap(s: Story) -> None:
    for seq in (0, 1, 3):
        s.clean("p", seq, 0, seq)
    s.send("p", 2, 0, offset=2)  # its record is gone: offset 2 is a gap inside 0..3
    s.poll(0, 2, s.mid("p", 2))
    s.send("p", 4, 0, offset=7)  # acknowledged beyond the log's end: lost, not truncated


def _home_copy(s: Story) -> None:
    s.clean("q", 0, 0, 0)
    homeless = s.send("u", 0, -1, outcome="unknown")  # partition unknown; on the log twice
    s.logged_and_read(1, 0, homeless)
    s.logged_and_read(0, 1, homeless)  # partition 0 < 1: this is its first copy
    ghost = f"{s.topic}.g-x"  # never sent, names no seq
    s.logged_and_read(1, 1, ghost)
    s.logged_and_read(0, 2, ghost)
    failed = s.send("f", 0, 1, outcome="failed")  # aimed at partition 1, on the log in 0
    s.logged_and_read(0, 3, failed)
    unplaced = s.send("v", 0, -1, outcome="unknown")  # partition unknown, not on the log
    s.poll(1, 0, unplaced)  # only read, where the log holds u-0: home is that partition


def _read_elsewhere(s: Story) -> None:
    s.clean("p", 0, 0, 0)
    s.clean("q", 0, 1, 0)
    s.poll(1, 0, s.mid("p", 0))  # p-0 read in partition 1, where the log holds q-0
    s.clean("r", 0, 0, 1)
    s.send("p", 1, 0, offset=1)  # acknowledged at 1 (held by r-0); on the log in partition 1
    s.logged_and_read(1, 1, s.mid("p", 1))


def _acknowledged_elsewhere(s: Story) -> None:
    s.clean("p", 0, 0, 0)
    s.clean("p", 1, 0, 1)
    s.send("p", 2, 0, offset=0)  # acknowledged where the log holds p-0; p-2 is at 2
    s.logged_and_read(0, 2, s.mid("p", 2))


CASES = [
    Case(
        "several never-sent messages read at one offset count once",
        _several_never_sent_at_one_offset,
        {("unexpected", 0): 1},
        [("unexpected", 0, "ghost-7", 0, 1, "ghost-7")],
    ),
    Case(
        "two sent messages read at one offset that holds a third count once each",
        _two_sent_read_at_one_offset,
        {("truncated", 0): 2},
        [("truncated", 0, "p-0", 0, 2, "p-2"), ("truncated", 0, "p-1", 0, 2, "p-2")],
    ),
    Case(
        "a truncated message read at several positions counts once per position",
        _one_message_read_at_several_offsets,
        {("truncated", 0): 2},
        [("truncated", 0, "p-0", 0, 1, "p-1")],
    ),
    Case(
        "reorders are judged by first copy in every partition holding the producer",
        _reorders_per_partition_by_first_copy,
        {("duplicate", 0): 1, ("duplicate", 1): 1, ("reordered", 0): 1, ("reordered", 1): 1},
        [
            ("duplicate", 0, "p-0", 0, 3, "p-0"),
            ("duplicate", 1, "p-1", 1, 1, "p-1"),  # last copy; its first is in partition 0
            ("reordered", 0, "p-2", 0, 1, "p-2"),  # below p-1's copy at 2
            ("reordered", 1, "p-3", 1, 0, "p-3"),  # below p-1 at 1: judged where p-1 is not first
        ],
    ),
    Case(
        "never-sent records take no part in a producer's order",
        _never_sent_takes_no_part_in_order,
        {("unexpected", 0): 1},
        [("unexpected", 0, "p-5", 0, 0, "p-5")],
    ),
    Case(
        "undecodable records are unexpected once per position and truncate nothing",
        _undecodable_records,
        {("unexpected", 0): 2},
        [("unexpected", 0, None, 0, 0, "p-0"), ("unexpected", 0, None, 0, 1, None)],
    ),
    Case(
        "an offset gap inside the log: lost, and truncated by acknowledgement and by read",
        _offset_gap,
        {("lost", 0): 2, ("truncated", 0): 2},
        [
            ("lost", 0, "p-2", 0, 2, None),
            ("lost", 0, "p-4", 0, 7, None),
            ("truncated", 0, "p-2", 0, 2, None),
        ],
    ),
    Case(
        "a message's home: its send's partition, else its first copy's",
        _home_copy,
        {
            ("duplicate", 0): 2,
            ("unexpected", 0): 1,
            ("unexpected", 1): 1,
            ("aborted_read", 1): 1,
            ("truncated", 1): 1,
        },
        [
            ("duplicate", 0, "u-0", 1, 0, "u-0"),  # listed at its first copy's partition
            ("duplicate", 0, "g-x", 1, 1, "g-x"),
            ("unexpected", 0, "g-x", 0, 2, "g-x"),
            ("unexpected", 1, "g-x", 1, 1, "g-x"),
            ("aborted_read", 1, "f-0", 0, 3, "f-0"),  # aimed at 1, found in 0
            ("truncated", 1, "v-0", 1, 0, "u-0"),  # home: the first position it was read at
        ],
    ),
    Case(
        "examples report where a read happened, not the home partition",
        _read_elsewhere,
        {("truncated", 0): 2},
        [
            ("truncated", 0, "p-0", 1, 0, "q-0"),  # listed at home, where it was read
            ("truncated", 0, "p-1", 0, 1, "r-0"),  # home is the send's, not its copy's
        ],
    ),
    Case(
        "an acknowledged offset the log gives to another message is truncated, not lost",
        _acknowledged_elsewhere,
        {("truncated", 0): 1},
        [("truncated", 0, "p-2", 0, 0, "p-0")],
    ),
]


# ------------------------------------------------------------------- transaction stories


def _judged_outcomes(s: Story) -> None:
    """Sends of an aborted transaction, of a transaction with no row and of an unknown one
    are judged unknown: none is lost, unseen, aborted_read, truncated by its acknowledged
    offset, or an acknowledged offset a member skips; records the read_committed drain
    was not given hold nothing for commit_beyond_read, an unknown transaction's given
    record does."""
    s.transaction("A", "p", TXN_ABORTED)
    s.send("p", 0, 0, offset=0, txn="A")
    s.log(0, 0, s.mid("p", 0), read_committed=False)  # never polled
    s.send("p", 1, 0, offset=1, txn="A")  # its record is gone from the log
    s.send("p", 2, 0, outcome="failed", txn="A")
    s.log(0, 2, s.mid("p", 2), read_committed=False)  # offset 3: the abort marker
    s.send("q", 0, 0, offset=4, txn="nowhere")  # no transactions row; not on the log
    for seq, offset in ((0, 5), (1, 8)):
        s.send("r", seq, 0, offset=offset)
        s.log(0, offset, s.mid("r", seq), read_committed=True)
        s.poll(0, offset, s.mid("r", seq), consumer="m", ts=2.0 + seq, member=("g", 0, seq))
    s.transaction("U", "u", TXN_UNKNOWN)
    s.send("u", 0, 0, offset=6, txn="U")
    s.log(0, 6, s.mid("u", 0), read_committed=True)  # never polled; offset 7: its marker
    s.commit(0, 5, ts=1.5)  # over 0..4 before any read: nothing there held a record
    s.commit(0, 8, ts=2.5)  # read 5; 6 holds u-0, given to the read_committed drain
    s.commit(0, 9, ts=3.5)


def _aborted_reads(s: Story) -> None:
    s.transaction("A", "p", TXN_ABORTED)
    for seq in range(5):
        s.send("p", seq, 0, offset=seq, txn="A")
    s.log(0, 0, s.mid("p", 0), read_committed=False)
    s.poll(0, 0, s.mid("p", 0), isolation=READ_UNCOMMITTED)  # what the level allows: counts
    s.log(0, 1, s.mid("p", 1), read_committed=True)  # the read_committed drain got it
    for ts in (2.0, 2.5):
        s.poll(0, 1, s.mid("p", 1), consumer="rc", ts=ts, isolation=READ_COMMITTED)
    s.log(0, 2, s.mid("p", 2), read_committed=False)  # read by nobody
    s.log(0, 3, s.mid("p", 3), read_committed=True)
    s.poll(1, 0, s.mid("p", 3))  # read elsewhere first: the example is there (and truncated)
    s.log(0, 4, s.mid("p", 4), read_committed=None)  # no read_committed drain: not "given"
    s.clean("s", 0, 1, 0)


def _uncommitted_reads(s: Story) -> None:
    s.transaction("A", "p", TXN_COMMITTED, asked=3.0)
    for seq in (0, 1):
        s.send("p", seq, 0, offset=seq, txn="A")
        s.log(0, seq, s.mid("p", seq), read_committed=True)
    p0, p1 = s.mid("p", 0), s.mid("p", 1)
    s.poll(0, 0, p0, consumer="rc", ts=2.5, isolation=READ_COMMITTED)
    s.poll(1, 0, p0, consumer="rc", ts=1.5, isolation=READ_COMMITTED)  # earliest: the example
    s.poll(0, 0, p0, consumer="rc", ts=4.0, isolation=READ_COMMITTED)
    s.poll(0, 1, p1, consumer="ru", ts=1.0, isolation=READ_UNCOMMITTED)  # allowed at that level
    s.poll(0, 1, p1, consumer="c", ts=1.2)  # no isolation recorded: read_uncommitted
    s.poll(0, 1, p1, consumer="rc", ts=3.0, isolation=READ_COMMITTED)  # when it was asked: fine
    s.clean("s", 0, 1, 0)
    s.transaction("C", "r", TXN_ABORTED)  # an aborted one read early is txn_aborted_read
    s.send("r", 0, 0, offset=3, txn="C")
    s.log(0, 3, s.mid("r", 0), read_committed=False)
    s.poll(0, 3, s.mid("r", 0), consumer="rc", ts=1.0, isolation=READ_COMMITTED)


def _lost_and_partial(s: Story) -> None:
    s.transaction("A", "p", TXN_COMMITTED)
    for seq, drained in enumerate((True, False, False)):  # 1 of 3 readable: partial
        s.send("p", seq, 0, offset=seq, txn="A")
        s.log(0, seq, s.mid("p", seq), read_committed=drained)
        s.poll(0, seq, s.mid("p", seq))
    s.transaction("B", "q", TXN_COMMITTED)  # none readable: lost, where its first message is
    s.send("q", 0, 1, offset=0, txn="B")
    s.log(1, 0, s.mid("q", 0), read_committed=False)
    s.poll(1, 0, s.mid("q", 0))
    s.send("q", 1, 0, offset=6, txn="B")  # acknowledged past the log's end: lost as well
    s.transaction("C", "x", TXN_COMMITTED)  # no message: nothing to lose
    s.transaction("D", "r", TXN_COMMITTED)
    s.send("r", 0, 1, offset=1, txn="D")
    s.log(1, 1, s.mid("r", 0), read_committed=None)  # no such drain: counts as given
    s.poll(1, 1, s.mid("r", 0))
    s.transaction("E", "v", TXN_COMMITTED)  # one copy not given, another given: readable
    s.send("v", 0, 1, offset=2, txn="E")
    s.log(1, 2, s.mid("v", 0), read_committed=False)
    s.log(1, 3, s.mid("v", 0), read_committed=True)
    s.poll(1, 2, s.mid("v", 0))


def _doubled_rows(s: Story) -> None:
    """A transaction on two rows is judged as if its outcome were unknown, and so are its
    sends: whatever either row says, nothing counts."""
    s.transaction("D", "p", TXN_COMMITTED)
    s.transaction("D", "p", TXN_COMMITTED)  # the same row twice: lost, were it committed
    s.send("p", 0, 0, offset=0, txn="D")
    s.log(0, 0, s.mid("p", 0), read_committed=False)
    s.poll(0, 0, s.mid("p", 0))
    s.send("p", 1, 0, offset=1, txn="D")  # inside the log's range, not on it: lost, truncated
    s.transaction("E", "q", TXN_COMMITTED)
    s.transaction("E", "q", TXN_ABORTED)  # two outcomes: an early read or an aborted read
    s.send("q", 0, 0, offset=2, txn="E")
    s.log(0, 2, s.mid("q", 0), read_committed=True)
    s.poll(0, 2, s.mid("q", 0), consumer="rc", ts=1.0, isolation=READ_COMMITTED)


TXN_CASES = [
    Case(
        "sends of transactions not committed are judged unknown by every kind",
        _judged_outcomes,
        {("commit_beyond_read", 0): 1},
        [("commit_beyond_read", 0, None, 0, 8, "r-1")],
    ),
    Case(
        "an aborted transaction's message a reader was given counts once",
        _aborted_reads,
        {("txn_aborted_read", 0): 3, ("truncated", 0): 1},
        [
            ("txn_aborted_read", 0, "p-0", 0, 0, "p-0"),
            ("txn_aborted_read", 0, "p-1", 0, 1, "p-1"),
            ("txn_aborted_read", 0, "p-3", 1, 0, "s-0"),  # polls before the final log
            ("truncated", 0, "p-3", 1, 0, "s-0"),
        ],
    ),
    Case(
        "a committed transaction's message read at read_committed before its commit was asked",
        _uncommitted_reads,
        {("txn_uncommitted_read", 0): 1, ("truncated", 0): 1, ("txn_aborted_read", 0): 1},
        [
            ("txn_uncommitted_read", 0, "p-0", 1, 0, "s-0"),
            ("truncated", 0, "p-0", 1, 0, "s-0"),
            ("txn_aborted_read", 0, "r-0", 0, 3, "r-0"),
        ],
    ),
    Case(
        "committed transactions the read_committed drain got none or some of",
        _lost_and_partial,
        {("txn_partial", 0): 1, ("txn_lost", 1): 1, ("lost", 0): 1, ("duplicate", 1): 1},
        [
            ("txn_partial", 0, "p-1", 0, 1, "p-1"),  # its first message not given
            ("txn_lost", 1, "q-0", 1, 0, "q-0"),  # its first message, at its offset
            ("lost", 0, "q-1", 0, 6, None),
            ("duplicate", 1, "v-0", 1, 3, "v-0"),
        ],
    ),
    Case("a transaction on several rows is judged unknown", _doubled_rows, {}, []),
]


# ---------------------------------------------------------------------- pipeline stories


def _pipeline_duplicates(s: Story) -> None:
    """Input records in partition 0, outputs in partition 1. Three visible outputs of one
    source (one of an unknown transaction: visible, so it counts), an output copied twice
    beside a second output of an aborted transaction (which the read_committed drain was
    given all the same: txn_aborted_read's finding, not a visible output), and one output
    each of two groups."""
    inputs = [s.clean("in", seq, 0, seq) for seq in range(3)]
    s.output("a", 0, 0, ("g", 0, inputs[0]))
    s.output("b", 0, 1, ("g", 0, inputs[0]))  # the second visible output, by producer id
    s.transaction("U", "c", TXN_UNKNOWN)
    s.output("c", 0, 7, ("g", 0, inputs[0]), txn="U", logged=None)
    s.log(1, 7, s.mid("c", 0), read_committed=True)  # given to the drain, never polled
    a1 = s.output("a", 1, 2, ("g", 1, inputs[1]))
    s.log(1, 3, a1)  # a second copy: duplicate, not pipeline_duplicate
    s.transaction("X", "x", TXN_ABORTED)
    s.output("x", 0, 4, ("g", 1, inputs[1]), txn="X", logged=None)
    s.log(1, 4, s.mid("x", 0), read_committed=True)  # aborted, yet given: not visible all the same
    s.output("a", 2, 5, ("g", 2, inputs[2]))
    s.output("h", 0, 6, ("h", 2, inputs[2]))  # another group reading the same input


def _pipeline_lost(s: Story) -> None:
    """Group g's final offset 6 covers offsets 0-5 of partition 0; another group's
    covers more, but it made no output, so it is no pipeline group."""
    inputs = [s.clean("in", seq, 0, seq) for seq in range(4)]
    s.transaction("R", "r", TXN_ABORTED)  # an aborted input at offset 4: not readable
    s.send("r", 0, 0, offset=4, txn="R")
    s.log(0, 4, s.mid("r", 0), read_committed=False)
    inputs += [s.clean("in", 5, 0, 5), s.clean("in", 6, 0, 6)]
    s.final_offset("g", 0, 6)
    s.final_offset("plain", 0, 7)
    s.output("a", 0, 0, ("g", 0, inputs[0]))  # visible
    s.output("a", 1, 9, ("g", 1, inputs[1]), logged=None)  # promised, missing: lost
    # offset 2: no output at all
    s.transaction("X", "x", TXN_ABORTED)
    s.output("x", 0, 1, ("g", 3, inputs[3]), txn="X", logged=False)  # aborted: neither
    s.transaction("Y", "y", TXN_UNKNOWN)
    s.output("y", 0, 2, ("g", 5, inputs[4]), txn="Y")  # unknown yet visible: covers it
    # offset 6: not covered


def _pipeline_lost_without_outputs(s: Story) -> None:
    """Group g made outputs of partition 0's records only, yet committed offset 2 in
    partition 2 as well: the two records below it there are lost. A partition a pipeline
    group committed in is its source even when no output names it."""
    in0 = s.clean("in", 0, 0, 0)
    for seq in (1, 2, 3):
        s.clean("in", seq, 2, seq - 1)  # offset 2, at the final offset: not covered
    s.final_offset("g", 0, 1)
    s.final_offset("g", 2, 2)
    s.output("a", 0, 0, ("g", 0, in0))


def _pipeline_orphans(s: Story) -> None:
    """Outputs whose source position holds nothing, an aborted record, another record,
    or the record read there; and two outputs that are not visible."""
    in0 = s.clean("in", 0, 0, 0)
    s.transaction("R", "r", TXN_ABORTED)
    r0 = s.send("r", 0, 0, offset=1, txn="R")
    s.log(0, 1, r0, read_committed=False)
    in2 = s.clean("in", 2, 0, 2)
    s.output("a", 0, 0, ("g", 5, s.mid("in", 5)))  # past the log's end: nothing there
    s.output("a", 1, 1, ("g", 1, r0))  # an aborted input, read as read_uncommitted allows
    s.output("a", 2, 2, ("g", 2, in0))  # the log holds in-2 there
    s.output("a", 3, 3, ("g", 0, in0))  # as read: fine
    s.transaction("X", "x", TXN_ABORTED)
    s.output("x", 0, 4, ("g", 7, None), txn="X", logged=False)  # aborted: not visible
    s.output("b", 0, 9, ("g", 2, in2), logged=None)  # not on the log: lost, not an orphan


PIPELINE_CASES = [
    Case(
        "a source's visible outputs beyond the first are pipeline duplicates",
        _pipeline_duplicates,
        {("pipeline_duplicate", 0): 2, ("duplicate", 1): 1, ("txn_aborted_read", 1): 1},
        [
            ("pipeline_duplicate", 0, "b-0", 0, 0, "in-0"),
            ("duplicate", 1, "a-1", 1, 3, "a-1"),
            ("txn_aborted_read", 1, "x-0", 1, 4, "x-0"),
        ],
    ),
    Case(
        "a covered readable input with no visible or promised output is pipeline_lost",
        _pipeline_lost,
        {("pipeline_lost", 0): 2, ("lost", 1): 1},
        [
            ("pipeline_lost", 0, "in-2", 0, 2, "in-2"),
            ("pipeline_lost", 0, "in-3", 0, 3, "in-3"),
            ("lost", 1, "a-1", 1, 9, None),
        ],
    ),
    Case(
        "a partition a pipeline group committed in but made no output of still loses its records",
        _pipeline_lost_without_outputs,
        {("pipeline_lost", 2): 2},
        [
            ("pipeline_lost", 2, "in-1", 2, 0, "in-1"),
            ("pipeline_lost", 2, "in-2", 2, 1, "in-2"),
        ],
    ),
    Case(
        "a visible output whose source does not hold the record it was made from is an orphan",
        _pipeline_orphans,
        {("pipeline_orphan", 0): 3, ("lost", 1): 1},
        [
            ("pipeline_orphan", 0, "a-0", 0, 5, None),
            ("pipeline_orphan", 0, "a-1", 0, 1, "r-0"),
            ("pipeline_orphan", 0, "a-2", 0, 2, "in-2"),
            ("lost", 1, "b-0", 1, 9, None),
        ],
    ),
]
ALL_CASES = [*CASES, *TXN_CASES, *PIPELINE_CASES]


def topic_of(case: Case) -> str:
    return f"t{ALL_CASES.index(case)}"


def write_cases(root: Path, cases: list[Case]) -> None:
    """Every case in one history, each in its own topic."""
    with HistoryWriter(root, run_id="edge-cases") as w:
        for case in cases:
            case.write(Story(w, topic_of(case)))


def named(case: Case, mid: str | None) -> str | None:
    """An id of a case as its story wrote it (stories prefix ids with their topic)."""
    return None if mid is None else f"{topic_of(case)}.{mid}"


def expected_counts(case: Case) -> dict[tuple[str, int], dict[str, int]]:
    """The case's counts per partition, every kind, as the verdict lists them."""
    out: dict[tuple[str, int], dict[str, int]] = {}
    for (kind, partition), count in case.counts.items():
        out.setdefault((topic_of(case), partition), dict.fromkeys(CHECKED_KINDS, 0))[kind] = count
    return out


# An example as compared: (kind, partition listed under, id, where, final id).
Shown = tuple[str, tuple[str, int], str | None, tuple[str, int, int | None], str | None]


def expected_examples(case: Case) -> list[Shown]:
    """The case's examples, with the ids its story wrote, sorted."""
    t = topic_of(case)
    return sorted(
        ((kind, (t, listed), named(case, mid), (t, part, offset), named(case, final))
         for kind, listed, mid, part, offset, final in case.examples),
        key=repr,
    )


def reference_examples(ref: Verdict, topic: str) -> list[Shown]:
    """The reference's findings of one topic, sorted (every hand-written finding names
    exactly one id)."""
    shown: list[Shown] = []
    for f in ref.findings:
        if f.listed_in[0] == topic:
            (mid,) = f.message_ids
            shown.append((f.kind, f.listed_in, mid, f.where, f.final_message_id))
    return sorted(shown, key=repr)


# ---------------------------------------------------------------------------- hand-written


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_case_numbers_from_the_doc(case: Case, tmp_path: Path) -> None:
    write_cases(tmp_path, [case])
    ref = check(tmp_path)
    assert ref.partition_counts() == expected_counts(case)
    assert reference_examples(ref, topic_of(case)) == expected_examples(case)


def test_a_gap_shows_in_the_log_summary(tmp_path: Path) -> None:
    (case,) = [c for c in CASES if c.write is _offset_gap]
    write_cases(tmp_path, [case])
    ref = check(tmp_path)
    assert ref.logs == {(topic_of(case), 0): {"start": 0, "end": 3, "records": 3, "dense": False}}


def test_sends_of_unknown_partition_are_listed_under_minus_one(tmp_path: Path) -> None:
    (case,) = [c for c in CASES if c.write is _home_copy]
    write_cases(tmp_path, [case])
    ref = check(tmp_path)
    t = topic_of(case)
    assert ref.sends == {
        (t, 0): {"acked": 1, "failed": 0, "unknown": 0},
        (t, 1): {"acked": 0, "failed": 1, "unknown": 0},
        (t, -1): {"acked": 0, "failed": 0, "unknown": 2},
    }
    assert ref.totals()["sends"] == 4 and ref.totals()["final_log_records"] == 6


def test_sends_and_availability_count_a_sends_own_outcome(tmp_path: Path) -> None:
    """Judged outcomes are the kinds' business: sends per partition, totals and availability
    count what the producer was told (six acknowledged, one failed; none in doubt), and
    records the read_committed drain was not given are final-log records all the same."""
    (case,) = [c for c in TXN_CASES if c.write is _judged_outcomes]
    write_cases(tmp_path, [case])
    ref = check(tmp_path)
    assert ref.sends == {(topic_of(case), 0): {"acked": 6, "failed": 1, "unknown": 0}}
    assert ref.availability == {1.0: (6, 1, 0)}
    assert ref.logs == {(topic_of(case), 0): {"start": 0, "end": 8, "records": 5, "dense": False}}


def test_cases_side_by_side_do_not_meet(tmp_path: Path) -> None:
    """All cases in one history (as the Spark test judges them) find what each finds alone."""
    write_cases(tmp_path, ALL_CASES)
    ref = check(tmp_path)
    want: dict[tuple[str, int], dict[str, int]] = {}
    for case in ALL_CASES:
        want.update(expected_counts(case))
    assert ref.partition_counts() == want


# ------------------------------------------------------------------------------- generated

SETTINGS = settings(
    deadline=None,
    derandomize=True,  # CI must not flake on a shape it never saw before
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@st.composite
def planted_specs(draw: st.DrawFn, max_each: int = 3, txn: bool = False, pipes: bool = False) -> SynthSpec:
    """A small history with every kind and edge case planted 0..max_each times: those before
    transactions, and with ``txn`` the transaction kinds and edge cases too, and with
    ``pipes`` a pipeline and its kinds (each drawn after the others, so that the histories
    without them are the ones they always were)."""
    spec = SynthSpec(
        sends=draw(st.integers(120, 500)),
        producers=draw(st.integers(1, 4)),
        partitions=draw(st.integers(2, 4)),
        consumers=draw(st.integers(1, 3)),
        failed_rate=0.06,
        unknown_rate=0.06,
        repoll_rate=draw(st.sampled_from([0.0, 0.1])),
        anomalies={k: draw(st.integers(0, max_each)) for k in BASE_KINDS},
        edges={e: draw(st.integers(0, max_each)) for e in BASE_EDGES},
        seed=draw(st.integers(0, 2**16)),
        part_rows=draw(st.sampled_from([60, 10_000])),
        chunk_sends=draw(st.sampled_from([10_000, 200])),
    )
    if txn:
        spec = _with_transactions(draw, spec, max_each)
    if pipes:
        pipeline_kinds = {k: draw(st.integers(0, max_each)) for k in PIPELINE_KINDS}
        spec = dataclasses.replace(spec, anomalies={**spec.anomalies, **pipeline_kinds}, pipelines=True)
    return spec


def _with_transactions(draw: st.DrawFn, spec: SynthSpec, max_each: int) -> SynthSpec:
    return dataclasses.replace(
        spec,
        sends=2 * spec.sends,  # the transactional producers' sends come on top
        anomalies={**spec.anomalies, **{k: draw(st.integers(0, max_each)) for k in TXN_KINDS}},
        edges={**spec.edges, **{e: draw(st.integers(0, max_each)) for e in sorted(TXN_EDGES)}},
        transactions=True,  # implied anyway when a transaction kind or edge is planted
        txn_producers=draw(st.integers(1, 2)),
        txn_max_messages=draw(st.sampled_from([2, 4])),
        groups=draw(st.booleans()),
    )


def assert_finds_what_was_planted(ref: Verdict, truth: SynthHistory) -> None:
    counts = ref.partition_counts()
    for kind in CHECKED_KINDS:
        got = {p: c[kind] for p, c in counts.items() if c[kind]}
        assert got == truth.expected[kind], kind
    for f in ref.findings:  # each finding is about a planted message (some id it may name)
        assert f.message_ids & truth.planted[f.kind], f


@settings(SETTINGS, max_examples=150)
@given(spec=planted_specs())
def test_reference_finds_exactly_what_was_planted(spec: SynthSpec) -> None:
    with tempfile.TemporaryDirectory() as root:
        truth = generated(spec, root)
        assert_finds_what_was_planted(check(root), truth)


@pytest.mark.parametrize("edge", sorted(EDGE_CASES))
def test_each_edge_case_alone_adds_its_listed_counts(edge: str, tmp_path: Path) -> None:
    """One edge case, planted twice in an otherwise clean history: the reference finds
    the counts EDGE_CASES lists for it, twice, and nothing else."""
    spec = SynthSpec(sends=300, producers=2, partitions=3, failed_rate=0.05, unknown_rate=0.05,
                     edges={edge: 2}, seed=7)
    truth = generate(spec, tmp_path)
    counts = check(tmp_path).counts()
    assert counts == {k: 2 * EDGE_CASES[edge].get(k, 0) for k in CHECKED_KINDS}
    assert_finds_what_was_planted(check(tmp_path), truth)
    if edge in TXN_EDGES:
        assert_transactions_sound(tmp_path, truth)


# ------------------------------------------------------------------ generated transactions


def _table(root: str | Path, table: str) -> list[dict[str, Any]]:
    return pq.read_table(Path(root) / table, schema=SCHEMAS[table]).to_pylist()


def assert_transactions_sound(root: str | Path, truth: SynthHistory) -> None:
    """The generated transactional data is what a sound run records, wherever no plant or
    edge case says otherwise: a committed transaction's messages acknowledged and readable
    under read_committed; an aborted one's records on the final log, not given to the
    read_committed drain and read by nobody; read_committed consumers reading a committed
    transaction's record only once its commit was asked for; a marker's offset gap between
    one transaction's records and the next one's in every partition; times in order; and
    read_committed recorded for every final-log record."""
    sends = _table(root, "sends")
    log, polls, txns = _table(root, "final_log"), _table(root, "polls"), _table(root, "transactions")
    rows_of = Counter(t["transaction_id"] for t in txns)
    rows = {t["transaction_id"]: t for t in txns if rows_of[t["transaction_id"]] == 1}  # doubled: unknown
    of = {s["message_id"]: s["transaction_id"] for s in sends}
    members: dict[str, list[dict[str, Any]]] = {}
    for s in sends:
        if s["transaction_id"] is not None:
            members.setdefault(s["transaction_id"], []).append(s)
    planted = truth.planted
    bent = {of[m] for k in ("txn_lost", "txn_partial") for m in planted[k]}  # drain not given all
    assert {t["outcome"] for t in txns} <= {TXN_COMMITTED, TXN_ABORTED, TXN_UNKNOWN}
    assert all(r["read_committed"] is not None for r in log)
    drained: dict[str, list[bool]] = {}  # per message id: read_committed of its records
    for r in log:
        drained.setdefault(r["message_id"], []).append(r["read_committed"])
    for txn_id, mine in members.items():
        row = rows.get(txn_id)
        if row is None:  # the orphan and doubled-row edge cases: judged unknown
            continue
        assert row["begin_ts"] <= min(s["send_ts"] for s in mine)
        if row["end_requested_ts"] is not None:
            assert row["end_requested_ts"] > max(s["send_ts"] for s in mine)
            assert row["end_ts"] is None or row["end_ts"] >= row["end_requested_ts"]
        if row["outcome"] == TXN_COMMITTED:
            assert all(s["outcome"] == "acked" for s in mine), txn_id
            if txn_id not in bent:
                assert all(any(drained.get(s["message_id"], [])) for s in mine), txn_id
        if row["outcome"] == TXN_ABORTED:
            for s in mine:
                if s["message_id"] not in planted["txn_aborted_read"]:
                    assert not any(drained.get(s["message_id"], [])), s
    for p in polls:
        polled_txn = of.get(p["message_id"])
        row = rows.get(polled_txn) if polled_txn is not None else None
        if row is None:
            continue
        if row["outcome"] == TXN_ABORTED:
            assert p["message_id"] in planted["txn_aborted_read"], p
        early = row["end_requested_ts"] is None or p["poll_ts"] < row["end_requested_ts"]
        if row["outcome"] == TXN_COMMITTED and p["isolation"] == READ_COMMITTED and early:
            assert p["message_id"] in planted["txn_uncommitted_read"], p
    # markers: between a producer's consecutive records of two transactions in a partition
    offsets: dict[tuple[str, int], set[int]] = {}
    for r in log:
        offsets.setdefault((r["topic"], r["partition"]), set()).add(r["offset"])
    records: dict[tuple[str, str, int], list[tuple[int, str]]] = {}
    for r in log:
        logged_txn = of.get(r["message_id"])
        if logged_txn is not None:
            where = (r["id_producer"], r["topic"], r["partition"])
            records.setdefault(where, []).append((r["offset"], logged_txn))
    for (_, topic, partition), mine_here in records.items():
        held = offsets[(topic, partition)]
        for (a, ta), (b, tb) in zip(sorted(mine_here), sorted(mine_here)[1:], strict=False):
            if ta != tb:
                assert any(o not in held for o in range(a + 1, b)), (topic, partition, a, b)


@settings(SETTINGS, max_examples=100)
@given(spec=planted_specs(txn=True))
def test_reference_finds_exactly_the_planted_transactions(spec: SynthSpec) -> None:
    """Every kind and edge case, transactions included, with or without a consumer group:
    the reference finds the planted counts, and the rest of the transactional data is sound."""
    with tempfile.TemporaryDirectory() as root:
        truth = generated(spec, root)
        assert_finds_what_was_planted(check(root), truth)
        assert_transactions_sound(root, truth)


@settings(SETTINGS, max_examples=60)
@given(data=st.data())
def test_reference_finds_exactly_the_planted_pipelines(data: st.DataObject) -> None:
    """A pipeline and its kinds beside every other kind and edge case, with or without
    transactions (whose aborted records a pipeline may make orphans of)."""
    spec = data.draw(planted_specs(txn=data.draw(st.booleans()), pipes=True))
    with tempfile.TemporaryDirectory() as root:
        truth = generated(spec, root)
        assert_finds_what_was_planted(check(root), truth)


@pytest.mark.parametrize("kind", PIPELINE_KINDS)
@settings(SETTINGS, max_examples=10)
@given(data=st.data())
def test_each_pipeline_kind_alone(kind: str, data: st.DataObject) -> None:
    spec = data.draw(planted_specs(txn=data.draw(st.booleans())))
    spec = dataclasses.replace(spec, anomalies={kind: data.draw(st.integers(1, 4))}, edges={})
    with tempfile.TemporaryDirectory() as root:
        truth = generated(spec, root)
        ref = check(root)
        assert ref.counts() == {k: sum(truth.expected[k].values()) for k in CHECKED_KINDS}
        assert_finds_what_was_planted(ref, truth)


@pytest.mark.parametrize("kind", TXN_KINDS)
@settings(SETTINGS, max_examples=10)
@given(data=st.data())
def test_each_transaction_kind_alone(kind: str, data: st.DataObject) -> None:
    spec = data.draw(planted_specs(txn=True))
    spec = dataclasses.replace(spec, anomalies={kind: data.draw(st.integers(1, 4))}, edges={})
    with tempfile.TemporaryDirectory() as root:
        truth = generated(spec, root)
        ref = check(root)
        assert ref.counts() == {k: sum(truth.expected[k].values()) for k in CHECKED_KINDS}
        assert_finds_what_was_planted(ref, truth)
        assert_transactions_sound(root, truth)


def test_a_history_without_transactions_has_none(tmp_path: Path) -> None:
    """Without transactions nothing of them is written: no rows, null columns."""
    spec = SynthSpec(sends=500, anomalies=dict.fromkeys(BASE_KINDS, 1), edges=dict.fromkeys(BASE_EDGES, 1))
    generate(spec, tmp_path)
    assert _table(tmp_path, "transactions") == []
    assert {s["transaction_id"] for s in _table(tmp_path, "sends")} == {None}
    assert {r["read_committed"] for r in _table(tmp_path, "final_log")} == {None}
    assert {p["isolation"] for p in _table(tmp_path, "polls")} == {None}
    assert _table(tmp_path, "final_offsets") == []  # nor any pipeline's
    assert {s["source_offset"] for s in _table(tmp_path, "sends")} == {None}
