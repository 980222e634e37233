"""The anomaly kinds, each written once: its name, family, count unit, definition and how
an example of it is told.

Everything else that names a kind is derived from :data:`KINDS`: ``ANOMALY_KINDS`` and
the families (``harness.history.rules``), ``Expectations``, the kinds tables of
docs/HISTORY.md (``harness.history.kinds_reference``), the codes each family's sweep
emits (:func:`code`), the examples' ``detail`` and the report's rows. Code outside this
module names a kind only through :func:`kind` or :func:`code`, which refuse an unknown
name when the module is imported; a unit test holds the tree to that.

The registry names and describes. It does not judge: each family's sweep in spark_jobs/
computes its rules, emitting :func:`code` of the kind it found.
"""

# ruff: noqa: RUF001  (the definitions keep docs/HISTORY.md's typography, its minus signs included)

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from harness.history.schema import READ_COMMITTED

Facts = Mapping[str, Any]
"""What a family's sweep knows about one example, by name: the columns of its finding row
(``offset``, ``holder``, ``consumer_id``, ...). A kind's ``detail`` reads the ones it needs."""


class Family(StrEnum):
    """A set of kinds judged by one pass of the reconciliation (and so timed apart in a
    verdict's ``timings``), each needing its own history tables; in report order."""

    MESSAGES = "messages"
    GROUPS = "groups"
    TRANSACTIONS = "transactions"
    PIPELINES = "pipelines"

    @property
    def needs(self) -> str:
        """What a history must hold for this family's pass to judge anything."""
        return _NEEDS[self]


_NEEDS = {
    Family.MESSAGES: "sends or records",
    Family.GROUPS: "consumer-group reads, commits or rebalances",
    Family.TRANSACTIONS: "transactions",
    Family.PIPELINES: "pipeline outputs",
}


@dataclass(frozen=True)
class AnomalyKind:
    """One anomaly kind. ``definition`` and ``unit`` are docs/HISTORY.md's words (Markdown);
    ``detail`` tells one example in a sentence a reviewer can check against the log, and
    ``example`` is such an example's facts."""

    name: str
    family: Family
    definition: str
    unit: str
    detail: Callable[[Facts], str]
    example: Facts  # one example's facts, as its sweep names them: shows and tests ``detail``


def _held(f: Facts) -> str:
    return f"final log holds {f['holder']}" if f.get("holder") else "final log holds nothing there"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _member(f: Facts) -> str:
    assignment = "" if f.get("assignment") is None else f", assignment {f['assignment']}"
    return f"{f['consumer_id']} (group {f['grp']}{assignment})"


def _poll_skip(f: Facts) -> str:
    skipped = f"{_plural(f['n'], 'acknowledged offset')} from {f['first']}"
    if f["first_read"]:
        where = f"first read offset {f['offset']}, above its resume offset {f['lo']}"
    else:
        where = f"read offset {f['offset']} right after offset {f['prev']}"
    return f"{_member(f)} {where}, skipping {skipped}"


def _commit_beyond_read(f: Facts) -> str:
    read = "had read nothing" if f["lo"] == 0 else f"had read up to offset {f['lo'] - 1}"
    return (
        f"{f['consumer_id']} committed offset {f['offset']} for group {f['grp']} when the group "
        f"{read} there; offset {f['first']} held a record"
    )


def _txn_aborted_read(f: Facts) -> str:
    txn = f"transaction {f['tid']}"
    if f["reader"] is None:
        return f"{txn} was aborted, yet the final log's read_committed drain was given it"
    iso = f["reader_iso"] or "isolation not recorded"
    also = "; the final log's read_committed drain was given it too" if f["drain_gave"] else ""
    return f"{txn} was aborted, yet consumer {f['reader']} ({iso}) polled it{also}"


def _txn_partial(f: Facts) -> str:
    are = "is" if f["k"] == 1 else "are"
    return (
        f"transaction {f['tid']} was committed, yet only {f['k']} of its {_plural(f['n'], 'message')} "
        f"{are} readable under read_committed on the final log"
    )


def _pipeline_orphan(f: Facts) -> str:
    what = {
        "nothing": "no record",
        "unreadable": f"{f['holder']}, not readable under read_committed",
        "another": f"{f['holder']}, not {f['source_message_id']}",
    }[f["held"]]
    return f"a visible output of group {f['grp']}; at its source offset {f['o']} the final log holds {what}"


M, G, T, P = Family.MESSAGES, Family.GROUPS, Family.TRANSACTIONS, Family.PIPELINES

KINDS: tuple[AnomalyKind, ...] = (
    AnomalyKind(
        "lost", M,
        "judged outcome `acked`, and no copy of the message anywhere on the final log",
        "message",
        lambda f: f"acknowledged at offset {f['offset']}; absent from the final log ({_held(f)})",
        {"offset": 7, "holder": "p-9"},
    ),
    AnomalyKind(
        "duplicate", M,
        "the same message at more than one position of the final log, in one partition or "
        "several (never-sent ids too; records without an id never)",
        "extra copies (`copies − 1`)",
        lambda f: f"{f['aux']} copies on the final log; last copy at offset {f['offset']}",
        {"offset": 7, "aux": 3},
    ),
    AnomalyKind(
        "truncated", M,
        "for a message that was sent (*m*): each position a live consumer read *m* at that the "
        "final log does not give to *m* (it holds another message there, nothing — a gap — or "
        "the position lies beyond its range); and, if *m* was acknowledged (judged outcome "
        "`acked`), its acknowledged offset when that lies inside its partition's first..last "
        "offset on the final log and the log does not hold *m* there (another message, or a "
        "gap). A never-sent or undecodable record read somewhere is `unexpected`, not also "
        "truncated",
        "polled position of a message: one message read at three such positions counts 3, two "
        "messages read at one such position count 2; acknowledged message",
        lambda f: f"read or acknowledged at offset {f['offset']}; {_held(f)}",
        {"offset": 7, "holder": None},
    ),
    AnomalyKind(
        "unexpected", M,
        "a position of the final log or of the polls holding a record whose id was never sent: "
        "a canonical id with no send, any other id, or no id (undecodable)",
        "distinct position: however many such records were logged or read there, and however "
        "often, it counts once, in that position's partition",
        lambda f: f"never sent; found at offset {f['offset']}",
        {"offset": 7},
    ),
    AnomalyKind(
        "aborted_read", M,
        "judged outcome `failed` (definitive) yet on the final log",
        "message",
        lambda f: f"send failed definitively, yet on the final log at offset {f['offset']}",
        {"offset": 7},
    ),
    AnomalyKind(
        "reordered", M,
        "for each partition of the final log and each producer: take the producer's sent "
        "messages that have a copy in that partition, in seq (send) order, each at the offset "
        "of its *first* copy in that partition (so duplicates are not also reorders); a message "
        "at a lower offset than the one just before it in that order is reordered. A message "
        "with copies in several partitions is judged in each; never-sent records take no part",
        "message, per partition of the final log it is judged in",
        lambda f: (
            f"at offset {f['offset']}, below seq {f['aux']} of the same producer, which was sent before it"
        ),
        {"offset": 7, "aux": 12},
    ),
    AnomalyKind(
        "unseen", M,
        "judged outcome `acked`, on the final log, but polled by no live consumer at any "
        "position (consumer-side; kept apart from loss)",
        "message",
        lambda f: f"on the final log at offset {f['offset']}, never polled by a live consumer",
        {"offset": 7},
    ),
    AnomalyKind(
        "poll_skip", G,
        "(a) two consecutive reads of a member at offsets *a* then *b* with *b* > *a* + 1: each "
        "acknowledged offset *o* with *a* < *o* < *b*; (b) a member's first read of a partition "
        "in an assignment, at offset *f*: each acknowledged offset *o* with *r* ≤ *o* < *f*, "
        "where *r* is the `resume_offset` of its `rebalances` row (`event` `assigned`, same "
        "group, consumer, assignment, topic and partition; of several, the lowest); *r* = 0 "
        "when it is null or there is no such row. Offsets where no send was acknowledged "
        "(control records, aborted transactions, in-doubt sends' records, never-sent records) "
        "never count",
        "skipped acknowledged offset, per member and assignment: two members skipping one "
        "offset count 2, and an offset inside two gaps of one member (possible only after a "
        "step back) counts in each",
        _poll_skip,
        {"consumer_id": "c-1", "grp": "g", "assignment": 2, "offset": 9, "prev": 4, "n": 4, "first": 5,
         "lo": 0, "first_read": False},
    ),
    AnomalyKind(
        "nonmonotonic_poll", G,
        "two consecutive reads of a member where the later offset is ≤ the earlier (a re-read "
        "of the same offset included). A new assignment starts afresh: reading again after a "
        "rebalance is not a step back",
        "backward step: one per such pair",
        lambda f: f"{_member(f)} read offset {f['offset']} right after offset {f['prev']}, not above it",
        {"consumer_id": "c-1", "grp": "g", "assignment": None, "offset": 3, "prev": 4},
    ),
    AnomalyKind(
        "commit_regression", G,
        "a commit whose offset is lower than that of the commit just before it in its (group, "
        "topic, partition) order",
        "commit",
        lambda f: (
            f"{f['consumer_id']} committed offset {f['offset']} for group {f['grp']}, "
            f"below the offset {f['prev']} committed before it"
        ),
        {"consumer_id": "c-1", "grp": "g", "offset": 3, "prev": 4},
    ),
    AnomalyKind(
        "commit_beyond_read", G,
        "a commit of offset *c* at time *ts* for (group, topic, partition), where *m* is the "
        "highest offset any member of that group had read of that partition with `poll_ts` ≤ "
        "*ts* (−1 if none), and some offset *o* with *m* < *o* < *c* held a record: it is on "
        "the final log with `read_committed` not false, or it is an acknowledged offset. A "
        "commit over a gap of offsets that held nothing (control records, aborted "
        "transactions' records) is not counted",
        "commit",
        _commit_beyond_read,
        {"consumer_id": "c-1", "grp": "g", "offset": 9, "lo": 5, "first": 6},
    ),
    AnomalyKind(
        "txn_aborted_read", T,
        "a message of a transaction with outcome `aborted` that a reader was given: polled by a "
        "live consumer at any position (under `read_uncommitted` that is what the level "
        "allows, and the scenario showing the difference requires it there), or on the final "
        "log with `read_committed` true (null, no read_committed drain made, does not count "
        "here)",
        "message, in its home partition",
        _txn_aborted_read,
        {"tid": "t-1", "reader": "c-2", "reader_iso": "read_uncommitted", "drain_gave": True},
    ),
    AnomalyKind(
        "txn_uncommitted_read", T,
        "a message of a transaction with outcome `committed`, polled by a consumer whose "
        "`isolation` is `read_committed` at a `poll_ts` earlier than the transaction's "
        "`end_requested_ts` (before its producer asked to commit, no commit marker could "
        "exist); a null `end_requested_ts` never counts",
        "message, in its home partition",
        lambda f: (
            f"consumer {f['early_reader']} ({READ_COMMITTED}) polled it "
            f"{f['end_req'] - f['early_ts']:.3f} s before transaction {f['tid']} asked to commit"
        ),
        {"tid": "t-1", "early_reader": "c-2", "end_req": 10.5, "early_ts": 10.25},
    ),
    AnomalyKind(
        "txn_lost", T,
        "a transaction with outcome `committed` and at least one message, none of whose "
        "messages has a record readable under read_committed",
        "transaction, in the home partition of its first message (lowest seq; a transaction's "
        "sends come from its one producer)",
        lambda f: (
            f"transaction {f['tid']} was committed, yet none of its {_plural(f['n'], 'message')} "
            "is readable under read_committed on the final log"
        ),
        {"tid": "t-1", "n": 3},
    ),
    AnomalyKind(
        "txn_partial", T,
        "a transaction with outcome `committed` some, but not all, of whose messages have a "
        "record readable under read_committed",
        "transaction, as `txn_lost`",
        _txn_partial,
        {"tid": "t-1", "n": 3, "k": 1},
    ),
    AnomalyKind(
        "pipeline_duplicate", P,
        "a (group, source) with *k* > 1 visible outputs (distinct messages)",
        "extra output, *k* − 1",
        lambda f: (
            f"group {f['grp']} turned the input record at offset {f['o']} into {f['k']} visible "
            f"outputs; the first is {f['first_out']}"
        ),
        {"grp": "g", "o": 4, "k": 2, "first_out": "out-1"},
    ),
    AnomalyKind(
        "pipeline_lost", P,
        "a position covered by a pipeline group whose final-log record is readable under "
        "read_committed, with no visible and no promised output of that group for it",
        "source record, per group",
        lambda f: (
            f"group {f['grp']} committed past it (final offset {f['committed']}), yet none of its "
            "outputs is visible or acknowledged"
        ),
        {"grp": "g", "committed": 9},
    ),
    AnomalyKind(
        "pipeline_orphan", P,
        "a visible output whose source position holds no record on the final log, holds one "
        "not readable under read_committed (an aborted input), or holds another record than "
        "the one the member read there (`source_id_producer` / `source_id_seq` against the "
        "record's split id; a null id on either side matches nothing)",
        "output message",
        _pipeline_orphan,
        {"grp": "g", "o": 4, "held": "another", "holder": "in-3", "source_message_id": "in-4"},
    ),
)  # fmt: skip

_BY_NAME = {k.name: k for k in KINDS}


def kind(name: str) -> AnomalyKind:
    """The kind called ``name``; KeyError naming the known ones when there is none."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown anomaly kind {name!r}; known: {', '.join(_BY_NAME)}") from None


def kinds_of(family: Family) -> tuple[str, ...]:
    """The names of ``family``'s kinds, in report order."""
    return tuple(k.name for k in KINDS if k.family == family)


def code(name: str) -> int:
    """The number ``name``'s family sweep emits for it: its place among its family's kinds,
    so a kind added to a family leaves the others' meaning alone."""
    return kinds_of(kind(name).family).index(name)


def of_code(family: Family, number: int) -> str:
    """The kind a family's sweep means by ``number`` (the inverse of :func:`code`)."""
    return kinds_of(family)[number]


def detail(name: str, facts: Facts) -> str:
    """One example of ``name`` in words, from the facts its sweep found."""
    return kind(name).detail(facts)
