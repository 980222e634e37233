"""The consumer-group kinds (docs/HISTORY.md) on hand-written histories: the corners the
synthetic generator does not reach, each worked out from the definitions, and judged by the
Spark judge and the reference checker alike.

Every case is its own topic of one history (one partition each), so one reconciliation
judges them all.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.history import ANOMALY_KINDS, GROUP_KINDS, HistoryWriter
from spark_jobs.groups import has_group_data
from tests.reference_checker import check
from tests.synthetic.core import PLANTABLE_KINDS, SynthSpec, generate

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from spark_jobs.reconcile import reconcile  # noqa: E402
from tests.unit.test_reconcile_properties import local_session  # noqa: E402
from tests.unit.test_reference_checker_spark import assert_agrees  # noqa: E402

# The group kinds the generator can plant (a new one is the judge's alone until it can).
PLANTED_GROUP_KINDS = tuple(k for k in GROUP_KINDS if k in PLANTABLE_KINDS)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    yield from local_session()


# A read: (consumer, assignment, offset, poll_ts); poll_seq follows the list's order.
Read = tuple[str, int | None, int, float]


@dataclass(frozen=True)
class Case:
    """One partition's sends, final log, group reads, commits and rebalances, and the
    counts and example offsets the definitions give."""

    name: str
    acked: tuple[int, ...]  # offsets acknowledged (each its own send)
    log: tuple[int, ...]  # offsets on the final log (each an acknowledged send's, or a ghost)
    reads: tuple[Read, ...] = ()
    commits: tuple[tuple[int, float, str], ...] = ()  # (offset, ts, outcome), by member "a"
    resume: dict[tuple[str, int], int | None] = field(default_factory=dict)  # assigned rows
    counts: dict[str, int] = field(default_factory=dict)
    at: dict[str, list[int]] = field(default_factory=dict)  # example offsets per kind
    extra_reads: tuple[int, ...] = ()  # read by an assign()-ing consumer (no group)


CASES = (
    Case(
        "unacked_gap",  # offsets 2 and 3: an in-doubt send and a never-sent record
        acked=(0, 1, 4),
        log=(0, 1, 2, 3, 4),
        reads=(("a", 0, 0, 1.0), ("a", 0, 1, 2.0), ("a", 0, 4, 3.0)),
    ),
    Case(
        "gap_counts_acked_only",  # 2 acked, 3 not, 4 acked: one finding of 2
        acked=(0, 1, 2, 4, 5),
        log=(0, 1, 2, 3, 4, 5),
        reads=(("a", 0, 0, 1.0), ("a", 0, 1, 2.0), ("a", 0, 5, 3.0)),
        counts={"poll_skip": 2},
        at={"poll_skip": [2]},
    ),
    Case(
        "two_members_same_offset",  # each skips 1: counts 2, two findings
        acked=(0, 1, 2),
        log=(0, 1, 2),
        reads=(("a", 0, 0, 1.0), ("a", 0, 2, 2.0), ("b", 0, 0, 3.0), ("b", 0, 2, 4.0)),
        counts={"poll_skip": 2},
        at={"poll_skip": [1, 1]},
    ),
    Case(
        "first_read_above_log_start",  # no resume offset (null, or no row): from 0
        acked=(0, 1, 2, 3),
        log=(0, 1, 2, 3),
        reads=(("a", 0, 2, 1.0), ("a", 0, 3, 2.0), ("b", 1, 1, 3.0)),
        resume={("a", 0): None},
        counts={"poll_skip": 3},  # a skipped 0, 1; b (no assigned row) skipped 0
        at={"poll_skip": [0, 0]},
    ),
    Case(
        "first_read_at_resume",  # started where the group committed: sound
        acked=(0, 1, 2, 3),
        log=(0, 1, 2, 3),
        reads=(("a", 1, 2, 1.0), ("a", 1, 3, 2.0)),
        resume={("a", 1): 2},
    ),
    Case(
        "reassigned_reread",  # a new assignment may read again from below: not a step back
        acked=(0, 1, 2),
        log=(0, 1, 2),
        reads=(("a", 0, 0, 1.0), ("a", 0, 1, 2.0), ("a", 1, 1, 3.0), ("a", 1, 2, 4.0)),
        resume={("a", 1): 1},
    ),
    Case(
        "steps_back",  # 2 after 3, and 3 after 3
        acked=(0, 1, 2, 3, 4),
        log=(0, 1, 2, 3, 4),
        reads=(
            ("a", 0, 0, 1.0),
            ("a", 0, 1, 2.0),
            ("a", 0, 2, 3.0),
            ("a", 0, 3, 4.0),
            ("a", 0, 2, 5.0),
            ("a", 0, 3, 6.0),
            ("a", 0, 3, 7.0),
            ("a", 0, 4, 8.0),
        ),
        counts={"nonmonotonic_poll": 2},
        at={"nonmonotonic_poll": [2, 3]},
    ),
    Case(
        "commits",  # a tie in time is ordered by offset; failed commits do not count
        acked=(0, 1, 2, 3, 4, 5),
        log=(0, 1, 2, 3, 4, 5),
        reads=tuple(("a", 0, o, float(o)) for o in range(6)),
        commits=(
            (3, 3.5, "committed"),
            (5, 4.5, "committed"),  # 4 and 5 at one time: 4 first, so 5 is no regression
            (4, 4.5, "committed"),
            (1, 4.7, "failed"),
            (5, 4.8, "committed"),
            (4, 5.5, "committed"),  # below 5: the one regression
        ),
        counts={"commit_regression": 1},
        at={"commit_regression": [4]},
    ),
    Case(
        "beyond_read",  # committed 4 at 2.5 with offset 2 unread: once; 6 over a gap: never
        acked=(0, 1, 2, 3, 4),
        log=(0, 1, 2, 3, 4, 7),
        reads=(("a", 0, 0, 1.0), ("a", 0, 1, 2.0), ("a", 0, 2, 3.0), ("a", 0, 3, 4.0), ("a", 0, 4, 5.0)),
        commits=((1, 1.0, "committed"), (4, 2.5, "committed"), (5, 5.0, "committed"), (7, 5.5, "committed")),
        counts={"commit_beyond_read": 1},
        at={"commit_beyond_read": [4]},
    ),
    Case(
        "committed_unread",  # a commit in a partition the group never read: offsets 0-2 held records
        acked=(0, 1, 2, 3),
        log=(0, 1, 2, 3),
        commits=((3, 1.0, "committed"),),
        counts={"commit_beyond_read": 1},
        at={"commit_beyond_read": [3]},
    ),
    Case(
        "not_a_member",  # reads with no group are not judged by the group kinds
        acked=(0, 1, 2, 3),
        log=(0, 1, 2, 3),
        extra_reads=(3, 0, 2),
    ),
)


def write_cases(root: Path, cases: tuple[Case, ...]) -> None:
    with HistoryWriter(root, run_id="groups") as w:
        for case in cases:
            topic = case.name
            ghost = 0
            for off in case.acked:
                w.append(
                    "sends",
                    {
                        "message_id": f"p{topic}-{off}",
                        "producer_id": f"p{topic}",
                        "seq": off,
                        "topic": topic,
                        "partition": 0,
                        "send_ts": 1.0,
                        "ack_ts": 1.1,
                        "outcome": "acked",
                        "offset": off,
                    },
                )
            mids: dict[int, str] = {}
            for off in case.log:
                if off in case.acked:
                    mids[off] = f"p{topic}-{off}"
                else:  # an in-doubt send's record, a second copy: anything not acknowledged
                    mids[off] = f"q{topic}-{ghost}"
                    w.append(
                        "sends",
                        {
                            "message_id": mids[off],
                            "producer_id": f"q{topic}",
                            "seq": ghost,
                            "topic": topic,
                            "partition": 0,
                            "send_ts": 1.0,
                            "outcome": "unknown",
                        },
                    )
                    ghost += 1
                w.append(
                    "final_log", {"topic": topic, "partition": 0, "offset": off, "message_id": mids[off]}
                )
            seq: dict[str, int] = {}
            for consumer, assignment, off, ts in case.reads:
                n = seq[consumer] = seq.get(consumer, -1) + 1
                w.append(
                    "polls",
                    {
                        "consumer_id": consumer,
                        "topic": topic,
                        "partition": 0,
                        "offset": off,
                        "message_id": mids.get(off),
                        "poll_ts": ts,
                        "group": "g",
                        "assignment": assignment,
                        "poll_seq": n,
                    },
                )
            for off in (*case.extra_reads, *(o for o in case.log if o not in {r[2] for r in case.reads})):
                w.append(
                    "polls",
                    {
                        "consumer_id": "solo",
                        "topic": topic,
                        "partition": 0,
                        "offset": off,
                        "message_id": mids.get(off),
                        "poll_ts": 9.0,
                    },
                )
            for off, ts, outcome in case.commits:
                w.append(
                    "commits",
                    {
                        "group": "g",
                        "consumer_id": "a",
                        "assignment": 0,
                        "topic": topic,
                        "partition": 0,
                        "offset": off,
                        "ts": ts,
                        "mode": "auto",
                        "outcome": outcome,
                        "error": None if outcome == "committed" else "X",
                    },
                )
            for (consumer, assignment), resume in case.resume.items():
                w.append(
                    "rebalances",
                    {
                        "group": "g",
                        "consumer_id": consumer,
                        "ts": 0.5,
                        "event": "assigned",
                        "assignment": assignment,
                        "topic": topic,
                        "partition": 0,
                        "resume_offset": resume,
                    },
                )


def test_hand_written_group_cases(spark: SparkSession, tmp_path: Path) -> None:
    write_cases(tmp_path, CASES)
    found = reconcile(spark, tmp_path, examples=5, partitions=2)
    for case in CASES:
        p = found.partition(case.name, 0)
        assert p is not None, case.name
        assert p.counts == {k: case.counts.get(k, 0) for k in ANOMALY_KINDS}, case.name
        assert {k: [e.offset for e in v] for k, v in p.examples.items()} == case.at, case.name
        for examples in p.examples.values():
            for e in examples:  # each example's offset is an acknowledged one on the log
                assert e.final_message_id == f"p{case.name}-{e.offset}", e
                assert (e.message_id is None and "(group g" in e.detail) or " for group g" in e.detail
    assert found.timings["groups_s"] > 0
    assert_agrees(found, check(tmp_path), 5)


def test_a_history_without_group_data_skips_the_group_pass(spark: SparkSession) -> None:
    """No commits, no rebalances, no grouped poll: the footers say so and the judge runs
    no group job (its time is 0), yet finds the old kinds as before."""
    spec = SynthSpec(sends=300, partitions=2, anomalies={"lost": 2, "unseen": 1}, seed=5)
    with tempfile.TemporaryDirectory() as root:
        truth = generate(spec, root)
        assert not has_group_data(root)
        found = reconcile(spark, root, partitions=2)
    assert found.timings["groups_s"] < 0.05
    assert found.counts() == {k: sum(v.values()) for k, v in truth.expected.items()}


def test_group_data_is_seen_in_any_table(tmp_path: Path) -> None:
    """One grouped poll, one commit or one rebalance row each make the pass run."""
    at = {"topic": "t", "partition": 0}
    solo = {**at, "consumer_id": "solo", "offset": 0, "poll_ts": 1.0}
    rows: dict[str, dict[str, Any]] = {
        "polls": {**solo, "consumer_id": "c", "group": "g"},
        "commits": {
            **at,
            "group": "g",
            "consumer_id": "c",
            "offset": 1,
            "ts": 1.0,
            "mode": "sync",
            "outcome": "failed",
        },
        "rebalances": {
            **at,
            "group": "g",
            "consumer_id": "c",
            "ts": 1.0,
            "event": "revoked",
            "assignment": 0,
        },
    }
    for table, row in rows.items():
        root = tmp_path / table
        with HistoryWriter(root, run_id=table) as w:
            w.append("polls", solo)
            w.append(table, row)
        assert has_group_data(root), table
    with HistoryWriter(tmp_path / "none", run_id="none") as w:
        w.append("polls", solo)
    assert not has_group_data(tmp_path / "none")


def test_unacked_gaps_in_a_synthetic_run_count_nothing(spark: SparkSession) -> None:
    """The generator's control-record-like gaps, with every group kind planted around them:
    the counts are exactly the planted ones."""
    spec = SynthSpec(
        sends=600,
        partitions=2,
        consumers=2,
        unknown_rate=0.08,
        failed_rate=0.05,
        anomalies=dict.fromkeys(PLANTED_GROUP_KINDS, 2),
        edges={"unacked_gap": 4},
        commit_every=9,
        seed=13,
    )
    with tempfile.TemporaryDirectory() as root:
        truth = generate(spec, root)
        found = reconcile(spark, root, examples=3, partitions=2)
        ref = check(root)
    assert found.counts() == {k: 2 if k in PLANTED_GROUP_KINDS else 0 for k in ANOMALY_KINDS}
    assert found.counts() == {k: sum(v.values()) for k, v in truth.expected.items()}
    assert_agrees(found, ref, 3)
