"""The reference checker (tests/reference_checker.py) against docs/HISTORY.md and the generator.

Two kinds of evidence, both without Spark:

* hand-written histories, one per edge case of the rules, each with the numbers worked out
  from the doc by hand (``CASES``; the Spark tests judge the very same histories);
* many generated histories with every anomaly kind and edge case planted: the reference
  finds exactly the planted counts, per partition, and its findings are about the
  planted messages.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.history import ANOMALY_KINDS, HistoryWriter
from spark_jobs.synthetic import EDGE_CASES, SynthHistory, SynthSpec, generate
from tests.reference_checker import Verdict, check
from tests.unit._synth import generated

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
    ) -> str:
        mid = self.mid(producer, seq)
        self.w.append(
            "sends",
            {
                "message_id": mid,
                "producer_id": f"{self.topic}.{producer}",
                "seq": seq,
                "topic": self.topic,
                "partition": partition,
                "send_ts": ts,
                "ack_ts": ts + 0.1 if outcome == "acked" else None,
                "outcome": outcome,
                "offset": offset if outcome == "acked" else None,
            },
        )
        return mid

    def log(self, partition: int, offset: int, mid: str | None) -> None:
        record = {"topic": self.topic, "partition": partition, "offset": offset, "message_id": mid}
        self.w.append("final_log", record)

    def poll(self, partition: int, offset: int, mid: str | None, consumer: str = "c") -> None:
        self.w.append(
            "polls",
            {"consumer_id": consumer, "topic": self.topic, "partition": partition, "offset": offset,
             "message_id": mid, "poll_ts": 2.0},
        )

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


def topic_of(case: Case) -> str:
    return f"t{CASES.index(case)}"


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
        out.setdefault((topic_of(case), partition), dict.fromkeys(ANOMALY_KINDS, 0))[kind] = count
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


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
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


def test_cases_side_by_side_do_not_meet(tmp_path: Path) -> None:
    """All cases in one history (as the Spark test judges them) find what each finds alone."""
    write_cases(tmp_path, CASES)
    ref = check(tmp_path)
    want: dict[tuple[str, int], dict[str, int]] = {}
    for case in CASES:
        want.update(expected_counts(case))
    assert ref.partition_counts() == want


# ------------------------------------------------------------------------------- generated

SETTINGS = settings(
    deadline=None,
    derandomize=True,  # CI must not flake on a shape it never saw before
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@st.composite
def planted_specs(draw: st.DrawFn, max_each: int = 3) -> SynthSpec:
    """A small history with every kind and edge case planted 0..max_each times."""
    return SynthSpec(
        sends=draw(st.integers(120, 500)),
        producers=draw(st.integers(1, 4)),
        partitions=draw(st.integers(2, 4)),
        consumers=draw(st.integers(1, 3)),
        failed_rate=0.06,
        unknown_rate=0.06,
        repoll_rate=draw(st.sampled_from([0.0, 0.1])),
        anomalies={k: draw(st.integers(0, max_each)) for k in ANOMALY_KINDS},
        edges={e: draw(st.integers(0, max_each)) for e in EDGE_CASES},
        seed=draw(st.integers(0, 2**16)),
        part_rows=draw(st.sampled_from([60, 10_000])),
        chunk_sends=draw(st.sampled_from([10_000, 200])),
    )


def assert_finds_what_was_planted(ref: Verdict, truth: SynthHistory) -> None:
    counts = ref.partition_counts()
    for kind in ANOMALY_KINDS:
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
    assert counts == {k: 2 * EDGE_CASES[edge].get(k, 0) for k in ANOMALY_KINDS}
    assert_finds_what_was_planted(check(tmp_path), truth)
