"""The transaction kinds and judged outcomes (docs/HISTORY.md) on hand-written histories:
each kind's boundaries, and how a transaction's outcome changes what the message and
group kinds read, each worked out from the definitions.

Every case is its own topic of one history, so one reconciliation judges them all; the
cases without transactions are judged again in a history without any, which must find the
same and run no transaction pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.history import ANOMALY_KINDS, TXN_KINDS, HistoryWriter
from spark_jobs.transactions import has_transaction_data

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from harness.history.verdict import Findings  # noqa: E402
from spark_jobs.reconcile import reconcile  # noqa: E402
from spark_jobs.session import build_session  # noqa: E402

pytestmark = pytest.mark.spark
EXAMPLES = 2  # fewer than one case's findings, so the choice of the first is tested
RU, RC = "read_uncommitted", "read_committed"


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """The small local session of the reconciliation's tests (as test_group_kinds.py's)."""
    session = build_session("local[2]", {"spark.driver.memory": "1g"})
    yield session
    session.stop()


class Rows:
    """The rows of one case: its topic, one producer (``<topic>.p``), its transactions."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.producer = f"{topic}.p"
        self.rows: list[tuple[str, dict[str, Any]]] = []
        self.reads: dict[str, int] = {}

    def mid(self, seq: int) -> str:
        return f"{self.producer}-{seq}"

    def tid(self, name: str) -> str:
        return f"{self.topic}.{name}"

    def txn(self, name: str, outcome: str, end_req: float = 5.0) -> None:
        self.rows.append(
            (
                "transactions",
                {
                    "transaction_id": self.tid(name),
                    "producer_id": self.producer,
                    "transactional_id": f"{self.topic}.tx",
                    "begin_ts": 1.0,
                    "end_requested_ts": end_req,
                    "end_ts": end_req + 0.1 if outcome != "unknown" else None,
                    "outcome": outcome,
                    "error": "X" if outcome == "unknown" else None,
                },
            )
        )

    def send(
        self,
        seq: int,
        outcome: str = "acked",
        offset: int | None = None,
        txn: str | None = None,
        partition: int = 0,
    ) -> None:
        self.rows.append(
            (
                "sends",
                {
                    "message_id": self.mid(seq),
                    "producer_id": self.producer,
                    "seq": seq,
                    "topic": self.topic,
                    "partition": partition,
                    "send_ts": 1.0 + seq,
                    "ack_ts": 1.5 + seq if outcome == "acked" else None,
                    "outcome": outcome,
                    "offset": offset if outcome == "acked" else None,
                    "error": None if outcome == "acked" else "X",
                    "transaction_id": None if txn is None else self.tid(txn),
                },
            )
        )

    def log(self, seq: int, offset: int, rc: bool | None = None, partition: int = 0) -> None:
        row = {"topic": self.topic, "partition": partition, "offset": offset, "message_id": self.mid(seq)}
        self.rows.append(("final_log", {**row, "read_committed": rc}))

    def poll(
        self,
        seq: int,
        offset: int,
        consumer: str = "solo",
        isolation: str | None = None,
        ts: float = 20.0,
        partition: int = 0,
        group: str | None = None,
    ) -> None:
        n = self.reads[consumer] = self.reads.get(consumer, -1) + 1
        row = {"consumer_id": consumer, "topic": self.topic, "partition": partition, "offset": offset}
        grouped = {"group": group, "assignment": 0 if group else None, "poll_seq": n}
        self.rows.append(
            ("polls", {**row, "message_id": self.mid(seq), "poll_ts": ts, "isolation": isolation, **grouped})
        )

    def message(
        self, seq: int, offset: int, txn: str | None = None, rc: bool | None = None, polled: bool = True
    ) -> None:
        """Acknowledged at ``offset``, on the final log there, and (``polled``) read there."""
        self.send(seq, "acked", offset, txn)
        self.log(seq, offset, rc)
        if polled:
            self.poll(seq, offset)


@dataclass(frozen=True)
class Case:
    """One topic's rows, and per partition the counts and the txn kinds' example offsets
    the definitions give."""

    name: str
    build: Callable[[Rows], None]
    counts: dict[int, dict[str, int]] = field(default_factory=dict)
    at: dict[int, dict[str, list[int | None]]] = field(default_factory=dict)
    sends: dict[str, int] | None = None  # the sends' own outcomes in partition 0

    def rows(self) -> Rows:
        r = Rows(self.name)
        self.build(r)
        return r


def _aborted_polled(r: Rows) -> None:
    r.txn("A", "aborted")
    r.message(0, 0, "A", rc=False, polled=False)
    r.poll(0, 0, "ru", RU, ts=3.0)  # read_uncommitted: allowed, and counted
    r.message(1, 1, "A", rc=False, polled=False)  # acked, on the log, polled by none: not unseen
    r.message(2, 2, "A", rc=False, polled=False)
    r.poll(2, 2, "nul", None)  # isolation not recorded
    r.message(3, 3, "A", rc=False, polled=False)
    r.poll(3, 3, "rc", RC)


def _aborted_drain(r: Rows) -> None:
    r.txn("A", "aborted")
    r.message(0, 0, "A", rc=True, polled=False)  # the read_committed drain was given it
    r.message(1, 1, "A", rc=None, polled=False)  # no such drain: not a read
    r.message(2, 2, "A", rc=False, polled=False)


def _aborted_poll_first(r: Rows) -> None:
    r.txn("A", "aborted")
    r.message(0, 0, "A", rc=True, polled=False)
    r.poll(0, 3, "ru", RU)  # read where the log holds nothing: also truncated


def _failed_in_aborted(r: Rows) -> None:
    r.txn("A", "aborted")
    r.send(0, "failed", txn="A")  # judged unknown: on the log, yet no aborted_read
    r.log(0, 0, rc=False)
    r.message(1, 1)


def _acked_in_aborted(r: Rows) -> None:
    r.txn("A", "aborted")
    r.message(0, 0)
    r.send(1, "acked", 1, "A")  # judged unknown: absent from the log, yet not lost or truncated
    r.message(2, 2)


def _uncommitted(r: Rows) -> None:
    r.txn("C", "committed", end_req=10.0)
    r.message(0, 0, "C", rc=True, polled=False)
    r.poll(0, 0, "rc1", RC, ts=9.5)
    r.poll(0, 0, "rc2", RC, ts=9.25)  # the earliest such poll: 0.75 s early
    r.message(1, 1, "C", rc=True, polled=False)
    r.poll(1, 1, "rc1", RC, ts=10.0)  # at end_requested_ts: not before it
    r.message(2, 2, "C", rc=True, polled=False)
    r.poll(2, 2, "rc1", RC, ts=10.5)
    r.message(3, 3, "C", rc=True, polled=False)
    r.poll(3, 3, "ru", RU, ts=9.0)  # not read_committed consumers
    r.poll(3, 3, "nul", None, ts=8.0)
    r.message(4, 4, "C", rc=True, polled=False)
    r.poll(4, 4, "rc1", RC, ts=2.0)


def _unknown_txn(r: Rows) -> None:
    r.txn("U", "unknown", end_req=10.0)
    r.message(0, 0, "U", rc=True, polled=False)
    r.poll(0, 0, "ru", RU, ts=1.0)
    r.poll(0, 0, "rc", RC, ts=1.0)
    r.send(1, "acked", 1, "U")  # absent from the log
    r.message(2, 2, "U", rc=False)


def _no_row(r: Rows) -> None:
    r.send(0, "acked", 0, "ghost")  # names a transaction without a row: judged unknown
    r.message(1, 1)


def _lost_on_log(r: Rows) -> None:
    r.txn("C", "committed")
    r.message(0, 0, "C", rc=False)
    r.message(1, 1, "C", rc=False)


def _lost_absent(r: Rows) -> None:
    r.txn("C", "committed")
    r.send(0, "unknown", txn="C")  # the first message: no acknowledged offset
    r.send(1, "acked", 5, "C")


def _lost_aimless(r: Rows) -> None:
    r.txn("C", "committed")
    r.send(0, "unknown", txn="C", partition=-1)  # home: its copy's partition, where it is shown
    r.log(0, 2, rc=False, partition=1)


def _partial(r: Rows) -> None:
    r.txn("C", "committed")
    r.message(0, 0, "C", rc=True)
    r.message(1, 1, "C", rc=None)  # no read_committed drain: counts as given
    r.message(2, 2, "C", rc=False)
    r.message(3, 3, "C", rc=False)


def _complete(r: Rows) -> None:
    r.txn("C", "committed")
    r.message(0, 0, "C", rc=True)
    r.message(1, 1, "C", rc=None)


def _partial_home(r: Rows) -> None:
    r.txn("C", "committed")
    r.send(0, "acked", 0, "C", partition=1)  # the first message: its home is the finding's
    r.log(0, 0, rc=True, partition=1)
    r.poll(0, 0, partition=1)
    r.send(1, "acked", 0, "C", partition=0)  # the first unreadable: the example
    r.log(1, 0, rc=False, partition=0)
    r.poll(1, 0, partition=0)


def _aimless(r: Rows) -> None:
    r.txn("A", "aborted")
    r.send(0, "unknown", txn="A", partition=-1)  # home: its first copy's partition
    r.log(0, 4, rc=False, partition=1)
    r.poll(0, 4, "ru", RU, partition=1)


def _group(outcome: str, rc: bool) -> Callable[[Rows], None]:
    """A member reads 0, 1 then 5 and the group commits 5 before reading it; offsets 2 and
    3 hold a transaction's records (4 its marker)."""

    def build(r: Rows) -> None:
        r.txn("T", outcome)
        for seq in (0, 1, 5):
            r.message(seq, seq, polled=False)
        for seq in (2, 3):
            r.message(seq, seq, "T", rc=rc, polled=False)
        for seq, ts in ((0, 1.0), (1, 2.0), (5, 3.0)):
            r.poll(seq, seq, "a", RC, ts=ts, group="g")
        at = {"topic": r.topic, "partition": 0, "group": "g", "consumer_id": "a", "assignment": 0}
        r.rows.append(("commits", {**at, "offset": 5, "ts": 2.5, "mode": "sync", "outcome": "committed"}))

    return build


def _plain_lost(r: Rows) -> None:
    r.message(0, 0)
    r.send(1, "acked", 1)
    r.message(2, 2)


def _plain_unseen(r: Rows) -> None:
    r.message(0, 0, polled=False)
    r.message(1, 1)


def _plain_failed(r: Rows) -> None:
    r.send(0, "failed")
    r.log(0, 0)
    r.message(1, 1)


PLAIN = (
    Case("plain_lost", _plain_lost, {0: {"lost": 1, "truncated": 1}}),
    Case("plain_unseen", _plain_unseen, {0: {"unseen": 1}}),
    Case("plain_failed", _plain_failed, {0: {"aborted_read": 1}}),
)
CASES = (
    *PLAIN,
    Case(
        "aborted_polled",
        _aborted_polled,
        {0: {"txn_aborted_read": 3}},
        {0: {"txn_aborted_read": [0, 2]}},
        sends={"acked": 4, "failed": 0, "unknown": 0},
    ),
    Case("aborted_drain", _aborted_drain, {0: {"txn_aborted_read": 1}}, {0: {"txn_aborted_read": [0]}}),
    Case(
        "aborted_poll_first",
        _aborted_poll_first,
        {0: {"txn_aborted_read": 1, "truncated": 1}},
        {0: {"txn_aborted_read": [3]}},
    ),
    Case("failed_in_aborted", _failed_in_aborted, sends={"acked": 1, "failed": 1, "unknown": 0}),
    Case("acked_in_aborted", _acked_in_aborted, sends={"acked": 3, "failed": 0, "unknown": 0}),
    Case(
        "uncommitted",
        _uncommitted,
        {0: {"txn_uncommitted_read": 2}},
        {0: {"txn_uncommitted_read": [0, 4]}},
    ),
    Case("unknown_txn", _unknown_txn),
    Case("no_row", _no_row),
    Case("lost_on_log", _lost_on_log, {0: {"txn_lost": 1}}, {0: {"txn_lost": [0]}}),
    Case("lost_absent", _lost_absent, {0: {"txn_lost": 1, "lost": 1}}, {0: {"txn_lost": [None]}}),
    Case("lost_aimless", _lost_aimless, {1: {"txn_lost": 1}}, {1: {"txn_lost": [None]}}),
    Case("partial", _partial, {0: {"txn_partial": 1}}, {0: {"txn_partial": [2]}}),
    Case("complete", _complete),
    Case("partial_home", _partial_home, {1: {"txn_partial": 1}}, {1: {"txn_partial": [0]}}),
    Case("aimless", _aimless, {1: {"txn_aborted_read": 1}}, {1: {"txn_aborted_read": [4]}}),
    Case("group_aborted", _group("aborted", rc=False)),
    Case(
        "group_committed",
        _group("committed", rc=True),
        {0: {"poll_skip": 2, "commit_beyond_read": 1, "unseen": 2}},
    ),
)


def write_cases(root: Path, cases: tuple[Case, ...]) -> dict[str, Rows]:
    built = {case.name: case.rows() for case in cases}
    with HistoryWriter(root, run_id="txns") as w:
        for rows in built.values():
            for table, row in rows.rows:
                w.append(table, row)
    return built


def _txn_examples(found: Findings, name: str, partition: int) -> dict[str, list[int | None]]:
    p = found.partition(name, partition)
    assert p is not None, (name, partition)
    return {k: [e.offset for e in v] for k, v in p.examples.items() if k in TXN_KINDS}


@pytest.fixture(scope="module")
def judged(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Findings, dict[str, Rows]]:
    root = tmp_path_factory.mktemp("txns")
    built = write_cases(root, CASES)
    return reconcile(spark, root, examples=EXAMPLES, partitions=2), built


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_case_counts_what_the_definitions_give(
    judged: tuple[Findings, dict[str, Rows]], case: Case
) -> None:
    found, _ = judged
    for p in found.partitions:
        if p.topic != case.name:
            continue
        want = case.counts.get(p.partition, {})
        assert p.counts == {k: want.get(k, 0) for k in ANOMALY_KINDS}, p.partition
        assert _txn_examples(found, case.name, p.partition) == case.at.get(p.partition, {})
    if case.sends is not None:  # totals and availability count the sends' own outcomes
        p0 = found.partition(case.name, 0)
        assert p0 is not None and p0.sends == case.sends


def test_examples_name_the_message_and_what_happened(judged: tuple[Findings, dict[str, Rows]]) -> None:
    found, built = judged

    def shown(name: str, kind: str, partition: int = 0) -> list[Any]:
        p = found.partition(name, partition)
        assert p is not None
        return p.examples[kind]

    read = shown("aborted_polled", "txn_aborted_read")
    r = built["aborted_polled"]
    assert [(e.message_id, e.producer_id, e.final_message_id) for e in read] == [
        (r.mid(0), r.producer, r.mid(0)),
        (r.mid(2), r.producer, r.mid(2)),
    ]
    assert read[0].detail == f"transaction {r.tid('A')} was aborted, yet consumer ru ({RU}) polled it"
    assert "consumer nul (isolation not recorded)" in read[1].detail
    assert read[0].ack_ts == 1.5

    (drain,) = shown("aborted_drain", "txn_aborted_read")
    assert "read_committed drain was given it" in drain.detail and "consumer" not in drain.detail

    (first,) = shown("aborted_poll_first", "txn_aborted_read")
    assert (first.offset, first.final_message_id) == (3, None)
    assert "consumer ru" in first.detail and "drain was given it too" in first.detail

    early = shown("uncommitted", "txn_uncommitted_read")
    r = built["uncommitted"]
    before = f"polled it 0.750 s before transaction {r.tid('C')} asked to commit"
    assert early[0].detail == f"consumer rc2 ({RC}) {before}"
    assert [e.message_id for e in early] == [r.mid(0), r.mid(4)]

    (lost,) = shown("lost_on_log", "txn_lost")
    r = built["lost_on_log"]
    assert (lost.message_id, lost.final_message_id) == (r.mid(0), r.mid(0))
    assert lost.detail.endswith("none of its 2 messages is readable under read_committed on the final log")
    (absent,) = shown("lost_absent", "txn_lost")
    assert (absent.message_id, absent.offset, absent.ack_ts) == (built["lost_absent"].mid(0), None, None)
    (aimless,) = shown("lost_aimless", "txn_lost", 1)  # no acknowledged offset: in its home
    assert (aimless.topic, aimless.partition, aimless.offset) == ("lost_aimless", 1, None)

    (partial,) = shown("partial", "txn_partial")
    assert partial.message_id == built["partial"].mid(2)
    assert "only 2 of its 4 messages are readable" in partial.detail
    (away,) = shown("partial_home", "txn_partial", 1)  # counted in 1, happened in 0
    assert (away.message_id, away.topic, away.partition, away.offset) == (
        built["partial_home"].mid(1),
        "partial_home",
        0,
        0,
    )


def test_the_transaction_pass_is_timed(judged: tuple[Findings, dict[str, Rows]]) -> None:
    found, _ = judged
    assert found.timings["transactions_s"] > 0
    assert list(found.timings) == [
        "prelude_s",
        "main_pass_s",
        "groups_s",
        "transactions_s",
        "pipelines_s",
        "examples_s",
        "total_s",
        "shuffle_partitions",
    ]


def test_a_history_without_transactions_is_judged_as_before(
    spark: SparkSession, judged: tuple[Findings, dict[str, Rows]], tmp_path: Path
) -> None:
    """The plain cases alone: no transaction data in the footers, no transaction pass (its
    time 0), and the same counts and sends as among the transactions."""
    write_cases(tmp_path, PLAIN)
    assert not has_transaction_data(tmp_path)
    found = reconcile(spark, tmp_path, examples=EXAMPLES, partitions=2)
    assert found.timings["transactions_s"] == 0
    assert found.timings["pipelines_s"] == 0  # nor pipeline data: no pipeline pass either
    among, _ = judged
    for case in PLAIN:
        alone, mixed = found.partition(case.name, 0), among.partition(case.name, 0)
        assert alone is not None and mixed is not None
        assert alone.counts == {k: case.counts[0].get(k, 0) for k in ANOMALY_KINDS}
        assert (alone.counts, alone.sends) == (mixed.counts, mixed.sends)
    assert found.counts() == {k: sum(c.counts[0].get(k, 0) for c in PLAIN) for k in ANOMALY_KINDS}


def test_transaction_data_is_seen_in_either_table(tmp_path: Path) -> None:
    """A transactions row, or a send naming a transaction (judged unknown without a row),
    each make the judge read transactions; neither, and it does not."""
    r = Rows("t")
    r.txn("A", "aborted")
    only_txn = tmp_path / "txn"
    with HistoryWriter(only_txn, run_id="txn") as w:
        w.append(*r.rows[0])
    r = Rows("t")
    r.send(0, txn="A")
    only_send = tmp_path / "send"
    with HistoryWriter(only_send, run_id="send") as w:
        w.append(*r.rows[0])
    r = Rows("t")
    r.send(0)
    neither = tmp_path / "neither"
    with HistoryWriter(neither, run_id="neither") as w:
        w.append(*r.rows[0])
    assert has_transaction_data(only_txn)
    assert has_transaction_data(only_send)
    assert not has_transaction_data(neither)
