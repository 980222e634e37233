"""The reference checker: the rules of docs/HISTORY.md, executed as plainly as Python allows.

Why it exists. The Spark judge (``spark_jobs/``) is shaped for speed: one shuffle, packed
positions, a JVM sweep over blocks of seqs, reorders across blocks finished on the driver.
None of that is how the rules are written, and a test that only compares the judge with
the synthetic generator's planted counts trusts the generator's reading of the doc as
much as the judge's. This module is a third reading, written from the doc alone: each
anomaly kind is one small function over a history read whole into Python objects, in the
words of the "Anomaly kinds" section, and each finding says where it happened as the
verdict section defines it. The property tests hold the three (doc, generator, judge) to
one another, and a rewrite of the judge can be checked against this file without trusting
anything of the code it replaces.

Schema 6 adds transactions: every message kind reads a send's *judged* outcome (its own,
except ``unknown`` for a send of a transaction that was not committed, or has no row, or
several: a transaction on several rows is judged as unknown), and four kinds judge the
transactions themselves. ``Send.judged`` is that outcome; the four
rules come after the consumer-group ones. Schema 7's three pipeline kinds close the file.

Nothing from ``spark_jobs`` is imported: only the history schema and constants of
``harness.history``, which the doc names as its code twin. Speed is no goal; it is meant
for histories of a few thousand rows.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from harness.history import (
    ANOMALY_KINDS,
    OUTCOME_ACKED,
    OUTCOME_FAILED,
    OUTCOME_UNKNOWN,
    READ_COMMITTED,
    SCHEMAS,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_UNKNOWN,
)
from harness.history.kinds import kind as registry_kind

Partition = tuple[str, int]  # (topic, partition)

# The kinds this reference implements, each named here and in registry order. A kind new
# to the registry is judged by the Spark judge alone until a rule for it is written here;
# the agreement tests compare these kinds and no other, so the reference never "agrees"
# on a kind it does not look for.
_RULES = frozenset(registry_kind(name).name for name in (
    "lost", "duplicate", "truncated", "unexpected", "aborted_read", "reordered", "unseen",
    "poll_skip", "nonmonotonic_poll", "commit_regression", "commit_beyond_read",
    "txn_aborted_read", "txn_uncommitted_read", "txn_lost", "txn_partial",
    "pipeline_duplicate", "pipeline_lost", "pipeline_orphan",
))
CHECKED_KINDS: tuple[str, ...] = tuple(k for k in ANOMALY_KINDS if k in _RULES)
Position = tuple[str, int, int]  # (topic, partition, offset): tuples order as the doc's "first"
Key = tuple[str, int | None]  # a message: (producer, seq), or (whole id, None) for other ids


@dataclass(frozen=True)
class Send:
    """One row of ``sends``."""

    key: Key
    message_id: str
    topic: str
    partition: int
    outcome: str
    offset: int | None
    send_ts: float
    ack_ts: float | None
    transaction_id: str | None
    # Schema 7: the input record a pipeline output transforms, (group, position, its id's
    # split key, or None for a record without an id); None for an ordinary send.
    source: tuple[str, Position, Key | None] | None
    # The judged outcome (docs/HISTORY.md, "transactions"): ``outcome``, except unknown for
    # a send of a transaction whose outcome is not committed or that has no row (or
    # several). Every anomaly kind reads this one; totals and availability count ``outcome``.
    judged: str

    @property
    def acknowledged_at(self) -> Position | None:
        """Where its (judged) acknowledgement put it; None: not acknowledged."""
        if self.judged != OUTCOME_ACKED or self.offset is None:
            return None
        return (self.topic, self.partition, self.offset)


@dataclass(frozen=True)
class Record:
    """One row of ``polls`` or ``final_log``: where it was and which message it names
    (``key`` None: a record without an id, which matches nothing)."""

    position: Position
    message_id: str | None
    key: Key | None
    # final log: whether the read_committed drain was given it (None: no such drain, which
    # counts as given); polls: unused
    read_committed: bool | None = None
    # polls only: when it was read, and at which isolation level (None: not recorded)
    poll_ts: float | None = None
    isolation: str | None = None

    @property
    def given_to_read_committed(self) -> bool:
        """A final-log record readable under read_committed: read_committed true or null."""
        return self.read_committed is not False


@dataclass(frozen=True)
class Finding:
    """One example-worthy finding and the number of units it adds to its kind's count.

    ``listed_in`` is the partition whose count it adds to (the message's home; for
    ``unexpected`` the position's own partition). ``where`` is where it happened, which
    is what the verdict's example reports as topic / partition / offset. ``message_ids``
    holds the id the example names, or, for an unexpected position read with several
    never-sent ids and none of them on the log, each id the doc lets it name."""

    kind: str
    listed_in: Partition
    count: int
    message_ids: frozenset[str | None]
    where: tuple[str, int, int | None]
    final_message_id: str | None
    ack_ts: float | None


@dataclass
class Verdict:
    """Everything the reference concludes: findings, and the facts the verdict reports
    beside them (sends per partition, final-log ranges, availability buckets)."""

    findings: list[Finding]
    sends: dict[Partition, dict[str, int]]
    logs: dict[Partition, dict[str, Any]]
    availability: dict[float, tuple[int, int, int]]
    final_log_records: int

    def counts(self) -> dict[str, int]:
        """Total per anomaly kind."""
        totals = dict.fromkeys(CHECKED_KINDS, 0)
        for f in self.findings:
            totals[f.kind] += f.count
        return totals

    def partition_counts(self) -> dict[Partition, dict[str, int]]:
        """Counts per partition; only partitions with some finding."""
        out: dict[Partition, dict[str, int]] = {}
        for f in self.findings:
            out.setdefault(f.listed_in, dict.fromkeys(CHECKED_KINDS, 0))[f.kind] += f.count
        return out

    def totals(self) -> dict[str, int]:
        """The verdict's ``totals``: sends by outcome, final-log records, every kind."""
        outcomes = {o: sum(s[o] for s in self.sends.values()) for o in ("acked", "failed", "unknown")}
        return {
            "sends": sum(outcomes.values()),
            **outcomes,
            "final_log_records": self.final_log_records,
            **self.counts(),
        }

    def examples(self, partition: Partition, kind: str) -> list[Finding]:
        """Every finding the verdict may pick its examples from, by offset (no offset last)."""
        mine = [f for f in self.findings if f.listed_in == partition and f.kind == kind]
        return sorted(mine, key=lambda f: (f.where[2] is None, f.where[2] or 0))


# --------------------------------------------------------------------------------- reading


def _rows(history: Path, table: str) -> list[dict[str, Any]]:
    """A table's rows; pyarrow skips dot- and underscore-files as the doc requires."""
    data = pq.read_table(history / table, schema=SCHEMAS[table])
    return data.to_pylist()


def _record(row: dict[str, Any]) -> Record:
    """A record keyed by the split its writer stored (``id_producer``, ``id_seq``), as
    "How records are matched" says; no id at all is no key."""
    key: Key | None = None if row["id_producer"] is None else (row["id_producer"], row["id_seq"])
    return Record(
        (row["topic"], row["partition"], row["offset"]),
        row["message_id"],
        key,
        read_committed=row.get("read_committed"),
        poll_ts=row.get("poll_ts"),
        isolation=row.get("isolation"),
    )


def _send(row: dict[str, Any], transactions: dict[str, dict[str, Any]]) -> Send:
    txn = row["transaction_id"]
    judged = row["outcome"]
    if txn is not None and (txn not in transactions or transactions[txn]["outcome"] != TXN_COMMITTED):
        judged = OUTCOME_UNKNOWN  # the transaction's business: the transaction kinds judge it
    source = None
    if row["source_offset"] is not None:
        at = (row["source_topic"], row["source_partition"], row["source_offset"])
        key = None if row["source_id_producer"] is None else (row["source_id_producer"], row["source_id_seq"])
        source = (row["source_group"], at, key)
    return Send(
        key=(row["producer_id"], row["seq"]),
        message_id=row["message_id"],
        topic=row["topic"],
        partition=row["partition"],
        outcome=row["outcome"],
        offset=row["offset"],
        send_ts=row["send_ts"],
        ack_ts=row["ack_ts"],
        transaction_id=txn,
        source=source,
        judged=judged,
    )


@dataclass
class History:
    """A history in memory, with the look-ups every rule needs."""

    sends: dict[Key, Send]
    log: dict[Position, Record]  # the final log: one record per position
    polls: list[Record]
    copies: dict[Key, list[Position]] = field(default_factory=dict)  # final-log positions, first first
    reads: dict[Key, set[Position]] = field(default_factory=dict)  # positions it was polled at
    polled: dict[Key, list[Record]] = field(default_factory=dict)  # its polls rows
    group_reads: list[dict[str, Any]] = field(default_factory=list)  # polls rows with a group
    commits: list[dict[str, Any]] = field(default_factory=list)
    rebalances: list[dict[str, Any]] = field(default_factory=list)
    transactions: dict[str, dict[str, Any]] = field(default_factory=dict)  # by transaction_id
    final_offsets: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> History:
        root = Path(path)
        transactions: dict[str, dict[str, Any]] = {}
        for row in _rows(root, "transactions"):
            if row["transaction_id"] in transactions:  # on several rows: judged as unknown
                row = {**row, "outcome": TXN_UNKNOWN}
            transactions[row["transaction_id"]] = row
        sends = {s.key: s for s in (_send(r, transactions) for r in _rows(root, "sends"))}
        log: dict[Position, Record] = {}
        for record in map(_record, _rows(root, "final_log")):
            if record.position in log:
                raise ValueError(f"final log holds two records at {record.position}")
            log[record.position] = record
        rows = _rows(root, "polls")
        polls = [_record(r) for r in rows]
        grouped = [r for r in rows if r["group"] is not None]
        return cls(sends, log, polls, group_reads=grouped, commits=_rows(root, "commits"),
                   rebalances=_rows(root, "rebalances"), transactions=transactions,
                   final_offsets=_rows(root, "final_offsets"))  # fmt: skip

    def __post_init__(self) -> None:
        for position in sorted(self.log):
            key = self.log[position].key
            if key is not None:
                self.copies.setdefault(key, []).append(position)
        for record in self.polls:
            if record.key is not None:
                self.reads.setdefault(record.key, set()).add(record.position)
                self.polled.setdefault(record.key, []).append(record)

    def holds(self, position: Position, key: Key) -> bool:
        record = self.log.get(position)
        return record is not None and record.key == key

    def held_id(self, where: tuple[str, int, int | None]) -> str | None:
        """What the final log holds at a position: its message id, or None (nothing there,
        or a record without an id)."""
        topic, partition, offset = where
        record = self.log.get((topic, partition, offset)) if offset is not None else None
        return record.message_id if record is not None else None

    def log_range(self, partition: Partition) -> tuple[int, int] | None:
        """First and last offset of a partition's final log (None: it has no record)."""
        offsets = [p[2] for p in self.log if p[:2] == partition]
        return (min(offsets), max(offsets)) if offsets else None

    def never_sent(self, record: Record) -> bool:
        return record.key is None or record.key not in self.sends

    def message_id(self, key: Key) -> str:
        """A message's id: its send's, else the one its records carry."""
        if key in self.sends:
            return self.sends[key].message_id
        producer, seq = key
        return producer if seq is None else f"{producer}-{seq}"

    def home(self, key: Key) -> Partition:
        """The partition a message's counts go to: its send's partition unless unknown
        (-1); else that of its first copy on the final log; else of the first position
        it was polled at; else its send's (topic, -1)."""
        send = self.sends.get(key)
        if send is not None and send.partition != -1:
            return (send.topic, send.partition)
        if self.copies.get(key):
            return self.copies[key][0][:2]
        if self.reads.get(key):
            return min(self.reads[key])[:2]
        assert send is not None, "a message that is neither sent nor seen does not exist"
        return (send.topic, send.partition)

    def finding(self, kind: str, key: Key, where: tuple[str, int, int | None], count: int = 1) -> Finding:
        """A finding about one message, listed in its home partition."""
        send = self.sends.get(key)
        return Finding(
            kind=kind,
            listed_in=self.home(key),
            count=count,
            message_ids=frozenset([self.message_id(key)]),
            where=where,
            final_message_id=self.held_id(where),
            ack_ts=send.ack_ts if send is not None else None,
        )


# ----------------------------------------------------------------------------------- rules


def lost(h: History) -> Iterator[Finding]:
    """Acknowledged (judged), and no copy anywhere on the final log. Where: the
    acknowledged offset."""
    for key, send in h.sends.items():
        if send.judged == OUTCOME_ACKED and not h.copies.get(key):
            yield h.finding("lost", key, (send.topic, send.partition, send.offset))


def duplicate(h: History) -> Iterator[Finding]:
    """At more than one position of the final log, counted copies - 1 (never-sent ids
    too; records without an id never). Where: the last copy."""
    for key, copies in h.copies.items():
        if len(copies) > 1:
            yield h.finding("duplicate", key, copies[-1], count=len(copies) - 1)


def truncated(h: History) -> Iterator[Finding]:
    """For a sent message: each position it was polled at that the final log does not give
    to it, plus its acknowledged offset (judged acked only) when that lies inside its
    partition's first..last offset and the log does not hold it there (another message,
    or a gap). Where: the first such polled position, else the acknowledged offset."""
    for key, send in h.sends.items():
        wrong_reads = sorted(p for p in h.reads.get(key, ()) if not h.holds(p, key))
        acked = send.acknowledged_at
        span = h.log_range(acked[:2]) if acked is not None else None
        wrong_ack = (
            acked is not None
            and span is not None
            and span[0] <= acked[2] <= span[1]
            and not h.holds(acked, key)
        )
        count = len(wrong_reads) + int(wrong_ack)
        if count:
            where = wrong_reads[0] if wrong_reads else acked
            assert where is not None
            yield h.finding("truncated", key, where, count=count)


def unexpected(h: History) -> Iterator[Finding]:
    """Each distinct position of the final log or the polls holding a record whose id was
    never sent (or that has no id): one count however many such records were seen there,
    listed in the position's own partition. The example names the log's record there if
    it is one of them, else any of those read there."""
    seen: dict[Position, set[str | None]] = {}
    for record in [*h.log.values(), *h.polls]:
        if h.never_sent(record):
            seen.setdefault(record.position, set()).add(record.message_id)
    for position, ids in seen.items():
        on_log = h.log.get(position)
        named = {on_log.message_id} if on_log is not None and h.never_sent(on_log) else ids
        yield Finding(
            kind="unexpected",
            listed_in=position[:2],
            count=1,
            message_ids=frozenset(named),
            where=position,
            final_message_id=h.held_id(position),
            ack_ts=None,
        )


def aborted_read(h: History) -> Iterator[Finding]:
    """Send failed definitively (judged), yet on the final log. Where: its first copy."""
    for key, send in h.sends.items():
        if send.judged == OUTCOME_FAILED and h.copies.get(key):
            yield h.finding("aborted_read", key, h.copies[key][0])


def reordered(h: History) -> Iterator[Finding]:
    """Per final-log partition and producer: the producer's sent messages with a copy in
    that partition, in seq order, each at its first copy there; a message below the one
    just before it counts once for that partition. Where: that first copy."""
    windows: dict[tuple[Partition, str], dict[int, int]] = {}
    for key, copies in h.copies.items():
        if key not in h.sends:  # never sent: no send order to break
            continue
        producer, seq = key
        assert seq is not None  # a send always has one
        for topic, partition, offset in copies:  # first copy first: setdefault keeps it
            windows.setdefault(((topic, partition), producer), {}).setdefault(seq, offset)
    for ((topic, partition), producer), first_offsets in windows.items():
        for before, seq in pairwise(sorted(first_offsets)):
            if first_offsets[seq] < first_offsets[before]:
                yield h.finding("reordered", (producer, seq), (topic, partition, first_offsets[seq]))


def unseen(h: History) -> Iterator[Finding]:
    """Acknowledged (judged) and on the final log, yet polled nowhere. Where: its first copy."""
    for key, send in h.sends.items():
        if send.judged == OUTCOME_ACKED and h.copies.get(key) and not h.reads.get(key):
            yield h.finding("unseen", key, h.copies[key][0])


# ------------------------------------------------------------------- consumer-group rules


def _acked_offsets(h: History) -> dict[Partition, set[int]]:
    """The acknowledged offsets per partition: of sends whose judged outcome is acked."""
    out: dict[Partition, set[int]] = {}
    for send in h.sends.values():
        at = send.acknowledged_at
        if at is not None:
            out.setdefault(at[:2], set()).add(at[2])
    return out


def _position_finding(kind: str, topic: str, partition: int, offset: int, count: int, h: History) -> Finding:
    """A group finding: about a position, named by no message."""
    where = (topic, partition, offset)
    return Finding(kind, (topic, partition), count, frozenset([None]), where, h.held_id(where), None)


def _member_reads(h: History) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Group reads per (group, consumer, assignment, topic, partition), each in order of
    poll_seq, then poll_ts, then offset (a null first, as in an ascending SQL order)."""
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in h.group_reads:
        key = (r["group"], r["consumer_id"], r["assignment"], r["topic"], r["partition"])
        out.setdefault(key, []).append(r)
    for reads in out.values():
        reads.sort(key=lambda r: (r["poll_seq"] is not None, r["poll_seq"] or 0, r["poll_ts"], r["offset"]))
    return out


def poll_skip(h: History) -> Iterator[Finding]:
    """Acknowledged offsets strictly between two consecutive reads of a member, or from its
    resume offset up to its first read. Where: the first such offset; one per gap."""
    acked = _acked_offsets(h)
    resume: dict[tuple[Any, ...], int] = {}
    for r in h.rebalances:
        if r["event"] == "assigned":
            k = (r["group"], r["consumer_id"], r["assignment"], r["topic"], r["partition"])
            resume[k] = min(resume.get(k, r["resume_offset"] or 0), r["resume_offset"] or 0)
    for (group, consumer, assignment, topic, partition), reads in _member_reads(h).items():
        offsets = [r["offset"] for r in reads]
        start = resume.get((group, consumer, assignment, topic, partition), 0)
        gaps = [(start, offsets[0])] + [(a + 1, b) for a, b in pairwise(offsets)]
        for lo, hi in gaps:
            skipped = [o for o in acked.get((topic, partition), set()) if lo <= o < hi]
            if skipped:
                yield _position_finding("poll_skip", topic, partition, min(skipped), len(skipped), h)


def nonmonotonic_poll(h: History) -> Iterator[Finding]:
    """A member's read at or below its previous read in one assignment. Where: that read."""
    for (_, _, _, topic, partition), reads in _member_reads(h).items():
        for a, b in pairwise(r["offset"] for r in reads):
            if b <= a:
                yield _position_finding("nonmonotonic_poll", topic, partition, b, 1, h)


def _committed(h: History) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for c in h.commits:
        if c["outcome"] == "committed":
            out.setdefault((c["group"], c["topic"], c["partition"]), []).append(c)
    for commits in out.values():
        commits.sort(key=lambda c: (c["ts"], c["offset"]))
    return out


def commit_regression(h: History) -> Iterator[Finding]:
    """A commit below the one just before it, per group and partition. Where: the commit."""
    for (_, topic, partition), commits in _committed(h).items():
        for a, b in pairwise(commits):
            if b["offset"] < a["offset"]:
                yield _position_finding("commit_regression", topic, partition, b["offset"], 1, h)


def commit_beyond_read(h: History) -> Iterator[Finding]:
    """A commit of c while the group's highest read m (poll_ts <= the commit's ts) left an
    offset in m+1..c-1 that held a record: on the final log with read_committed not false,
    or acknowledged (judged). Where: the commit."""
    acked = _acked_offsets(h)
    for (group, topic, partition), commits in _committed(h).items():
        logged = {p[2] for p, r in h.log.items() if p[:2] == (topic, partition) and r.given_to_read_committed}
        held = logged | acked.get((topic, partition), set())
        here = (group, topic, partition)
        reads = [r for r in h.group_reads if (r["group"], r["topic"], r["partition"]) == here]
        for c in commits:
            m = max((r["offset"] for r in reads if r["poll_ts"] <= c["ts"]), default=-1)
            if any(m < o < c["offset"] for o in held):
                yield _position_finding("commit_beyond_read", topic, partition, c["offset"], 1, h)


# ---------------------------------------------------------------------- transaction rules


def _messages(h: History) -> dict[str, list[Key]]:
    """Each transaction's messages (the sends naming it), lowest seq first."""
    out: dict[str, list[Key]] = {}
    for key, send in h.sends.items():
        if send.transaction_id is not None:
            out.setdefault(send.transaction_id, []).append(key)
    for keys in out.values():
        keys.sort(key=lambda k: (k[1], k[0]))  # a send's key always has a seq
    return out


def _readable(h: History, key: Key) -> bool:
    """Has a record readable under read_committed: a copy with read_committed true or null."""
    return any(h.log[p].given_to_read_committed for p in h.copies.get(key, ()))


def txn_aborted_read(h: History) -> Iterator[Finding]:
    """A message of an aborted transaction that a reader was given: polled by anyone, at any
    position, or on the final log with read_committed true (null is not enough). Where: the
    first position it was polled at, else its first such final-log position."""
    messages = _messages(h)
    for txn_id, txn in h.transactions.items():
        if txn["outcome"] != TXN_ABORTED:
            continue
        for key in messages.get(txn_id, []):
            polled = sorted(r.position for r in h.polled.get(key, []))
            drained = [p for p in h.copies.get(key, ()) if h.log[p].read_committed is True]
            if polled or drained:
                yield h.finding("txn_aborted_read", key, polled[0] if polled else drained[0])


def txn_uncommitted_read(h: History) -> Iterator[Finding]:
    """A message of a committed transaction polled by a read_committed consumer at a poll_ts
    before the transaction's end_requested_ts (null: never asked, so no read is before it).
    Where: its earliest such poll (ties: the first position)."""
    messages = _messages(h)
    for txn_id, txn in h.transactions.items():
        asked = txn["end_requested_ts"]
        if txn["outcome"] != TXN_COMMITTED or asked is None:
            continue
        for key in messages.get(txn_id, []):
            early = [
                r
                for r in h.polled.get(key, [])
                if r.isolation == READ_COMMITTED and r.poll_ts is not None and r.poll_ts < asked
            ]
            if early:
                first = min(early, key=lambda r: (r.poll_ts, r.position))
                yield h.finding("txn_uncommitted_read", key, first.position)


def _acknowledged_or_home(h: History, key: Key) -> tuple[str, int, int | None]:
    """A message's acknowledged offset (judged), else its home with no offset."""
    at = h.sends[key].acknowledged_at
    return at if at is not None else (*h.home(key), None)


def _committed_transactions(h: History) -> Iterator[tuple[list[Key], list[Key]]]:
    """Each committed transaction with at least one message: its messages, lowest seq first,
    and those of them with no record readable under read_committed."""
    messages = _messages(h)
    for txn_id, txn in h.transactions.items():
        keys = messages.get(txn_id, [])
        if txn["outcome"] == TXN_COMMITTED and keys:
            yield keys, [k for k in keys if not _readable(h, k)]


def _transaction_finding(kind: str, h: History, keys: list[Key], named: Key) -> Finding:
    """A finding about a transaction: listed in the home of its first message, at the
    acknowledged offset of the message ``named`` (its example's message)."""
    return replace(h.finding(kind, named, _acknowledged_or_home(h, named)), listed_in=h.home(keys[0]))


def txn_lost(h: History) -> Iterator[Finding]:
    """A committed transaction none of whose messages is readable under read_committed.
    Where: its first message's acknowledged offset (no offset if none)."""
    for keys, unreadable in _committed_transactions(h):
        if len(unreadable) == len(keys):
            yield _transaction_finding("txn_lost", h, keys, keys[0])


def txn_partial(h: History) -> Iterator[Finding]:
    """A committed transaction some, not all, of whose messages are readable under
    read_committed. Where: its first unreadable message's acknowledged offset."""
    for keys, unreadable in _committed_transactions(h):
        if 0 < len(unreadable) < len(keys):
            yield _transaction_finding("txn_partial", h, keys, unreadable[0])


# ------------------------------------------------------------------------- pipeline rules


def _aborted(h: History, send: Send) -> bool:
    """Its transaction's outcome is aborted (a transaction on several rows is unknown)."""
    txn = h.transactions.get(send.transaction_id) if send.transaction_id is not None else None
    return txn is not None and txn["outcome"] == TXN_ABORTED


def _outputs(h: History) -> dict[tuple[str, Position], list[Send]]:
    """Pipeline outputs by (group, source position)."""
    out: dict[tuple[str, Position], list[Send]] = {}
    for send in h.sends.values():
        if send.source is not None:
            out.setdefault((send.source[0], send.source[1]), []).append(send)
    return out


def _visible(h: History, send: Send) -> bool:
    """Not of an aborted transaction, and readable under read_committed on the final log."""
    return not _aborted(h, send) and _readable(h, send.key)


def _source_finding(kind: str, h: History, where: Position, mid: str | None, count: int = 1,
                    ack_ts: float | None = None) -> Finding:  # fmt: skip
    """A finding about a source position: counted in its partition, shown there."""
    return Finding(kind, where[:2], count, frozenset([mid]), where, h.held_id(where), ack_ts)


def pipeline_duplicate(h: History) -> Iterator[Finding]:
    """A (group, source) with k > 1 visible outputs counts k - 1. Shown: the second
    visible output, by (producer id, seq)."""
    for (_, where), sends in _outputs(h).items():
        visible = sorted((s for s in sends if _visible(h, s)), key=lambda s: (s.key[0], s.key[1]))
        if len(visible) > 1:
            second = visible[1]
            yield _source_finding("pipeline_duplicate", h, where, second.message_id, len(visible) - 1,
                                  second.ack_ts)  # fmt: skip


def pipeline_lost(h: History) -> Iterator[Finding]:
    """A record readable under read_committed below a pipeline group's final offset for
    its partition, with no visible and no promised output of that group."""
    outputs = _outputs(h)
    pipeline_groups = {group for group, _ in outputs}
    for row in h.final_offsets:
        if row["group"] not in pipeline_groups or row["offset"] is None:
            continue
        for position, record in h.log.items():
            if position[:2] != (row["topic"], row["partition"]) or position[2] >= row["offset"]:
                continue
            if not record.given_to_read_committed:
                continue
            sends = outputs.get((row["group"], position), [])
            if not any(_visible(h, s) or s.judged == OUTCOME_ACKED for s in sends):
                yield _source_finding("pipeline_lost", h, position, record.message_id)


def pipeline_orphan(h: History) -> Iterator[Finding]:
    """A visible output whose source position holds no record, one not readable under
    read_committed, or another message than the one the member read there."""
    for (_, where), sends in _outputs(h).items():
        record = h.log.get(where)
        for send in sends:
            assert send.source is not None
            read = send.source[2]
            holds_it = (record is not None and record.given_to_read_committed
                        and read is not None and record.key == read)  # fmt: skip
            if _visible(h, send) and not holds_it:
                yield _source_finding("pipeline_orphan", h, where, send.message_id, ack_ts=send.ack_ts)


RULES = (
    lost,
    duplicate,
    truncated,
    unexpected,
    aborted_read,
    reordered,
    unseen,
    poll_skip,
    nonmonotonic_poll,
    commit_regression,
    commit_beyond_read,
    txn_aborted_read,
    txn_uncommitted_read,
    txn_lost,
    txn_partial,
    pipeline_duplicate,
    pipeline_lost,
    pipeline_orphan,
)


# ---------------------------------------------------------------------- beside the findings


def _sends_per_partition(h: History) -> dict[Partition, dict[str, int]]:
    out: dict[Partition, dict[str, int]] = {}
    for send in h.sends.values():
        counts = out.setdefault((send.topic, send.partition), {"acked": 0, "failed": 0, "unknown": 0})
        counts[_outcome(send)] += 1
    return out


def _outcome(send: Send) -> str:
    """acked, failed, or unknown (in doubt)."""
    return send.outcome if send.outcome in (OUTCOME_ACKED, OUTCOME_FAILED) else "unknown"


def _logs(h: History) -> dict[Partition, dict[str, Any]]:
    """Per partition of the final log: first and last offset, records, and density."""
    out: dict[Partition, dict[str, Any]] = {}
    for partition in {p[:2] for p in h.log}:
        start, end = h.log_range(partition) or (0, -1)
        records = sum(1 for p in h.log if p[:2] == partition)
        out[partition] = {"start": start, "end": end, "records": records, "dense": records == end - start + 1}
    return out


def _availability(sends: Iterable[Send], bucket_seconds: float) -> dict[float, tuple[int, int, int]]:
    """Send outcomes per bucket of floor(send_ts / bucket_seconds)."""
    out: dict[float, list[int]] = {}
    for send in sends:
        counts = out.setdefault(math.floor(send.send_ts / bucket_seconds) * bucket_seconds, [0, 0, 0])
        counts[("acked", "failed", "unknown").index(_outcome(send))] += 1
    return {start: (c[0], c[1], c[2]) for start, c in out.items()}


def check(path: str | os.PathLike[str], bucket_seconds: float = 1.0) -> Verdict:
    """Judge the history at ``path`` by the doc's rules."""
    h = History.read(path)
    return Verdict(
        findings=[f for rule in RULES for f in rule(h)],
        sends=_sends_per_partition(h),
        logs=_logs(h),
        availability=_availability(h.sends.values(), bucket_seconds),
        final_log_records=len(h.log),
    )
