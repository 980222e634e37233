"""The Spark judge against the reference checker (tests/reference_checker.py).

Generated histories with every anomaly kind and edge case planted, and the hand-written
edge cases of test_reference_checker.py, are judged by both. They must agree on every
count per partition, the totals, sends and final-log ranges per partition, availability,
and every example: the message it names, where it happened, what the final log holds
there, and that the examples are the first by offset. The tests from before schema 6 judge
the histories they always judged; the transaction kinds, their edge cases and the judged
outcomes have tests of their own beside them.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.history import ANOMALY_KINDS
from harness.history.verdict import Example, Findings
from tests.reference_checker import CHECKED_KINDS, Finding, Verdict, check
from tests.synthetic.core import SynthSpec
from tests.unit.test_reference_checker import (
    CASES,
    PIPELINE_CASES,
    SETTINGS,
    TXN_CASES,
    Case,
    Shown,
    assert_finds_what_was_planted,
    expected_counts,
    expected_examples,
    generated,
    planted_specs,
    topic_of,
    write_cases,
)

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from spark_jobs.reconcile import reconcile  # noqa: E402
from tests.unit.test_reconcile_properties import local_session  # noqa: E402

pytestmark = pytest.mark.spark
EXAMPLES = 3  # fewer than some partitions' findings, so the choice of the first is tested


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    yield from local_session()


def _offset_key(offset: int | None) -> tuple[bool, int]:
    return (offset is None, offset or 0)


def assert_same_examples(got: list[Example], allowed: list[Finding], limit: int) -> None:
    """``got`` are the first ``limit`` of ``allowed`` by offset (ties in any order), each
    one of them as the reference states it."""
    assert len(got) == min(limit, len(allowed))
    want_offsets = sorted((f.where[2] for f in allowed), key=_offset_key)[: len(got)]
    assert sorted((e.offset for e in got), key=_offset_key) == want_offsets
    left = list(allowed)
    for e in got:
        match = [
            f
            for f in left
            if f.where == (e.topic, e.partition, e.offset)
            and e.message_id in f.message_ids
            and e.final_message_id == f.final_message_id
            and e.ack_ts == f.ack_ts
        ]
        assert match, (e, allowed)
        left.remove(match[0])


def checked(counts: dict[str, int]) -> dict[str, int]:
    """``counts`` without the kinds the reference does not implement (other keys kept)."""
    return {k: n for k, n in counts.items() if k in CHECKED_KINDS or k not in ANOMALY_KINDS}


def assert_agrees(found: Findings, ref: Verdict, limit: int) -> None:
    """Every number and example of the judge's findings is the reference's, for every
    kind the reference implements."""
    counts = {(p.topic, p.partition): checked(p.counts) for p in found.partitions
              if any(checked(p.counts).values())}
    assert counts == ref.partition_counts()
    assert checked(found.totals) == ref.totals()
    assert {(p.topic, p.partition): p.sends for p in found.partitions if any(p.sends.values())} == ref.sends
    assert {(p.topic, p.partition): p.log for p in found.partitions if p.log} == ref.logs
    assert {b.start: (b.acked, b.failed, b.unknown) for b in found.availability} == ref.availability
    listed = {(p.topic, p.partition) for p in found.partitions} | set(ref.partition_counts())
    for partition in listed:
        mine = found.partition(*partition)
        for kind in CHECKED_KINDS:
            got = mine.examples.get(kind, []) if mine is not None else []
            assert_same_examples(got, ref.examples(partition, kind), limit)


@st.composite
def chunked_specs(draw: st.DrawFn, txn: bool = False, pipes: bool = False) -> SynthSpec:
    """Two to four independent chunks, a topic each, with the plants shared out between
    them: several planted shapes per Spark job, which costs seconds whatever its size.
    With ``txn`` the transaction kinds and edge cases are planted too."""
    chunk, chunks = draw(st.integers(150, 300)), draw(st.integers(2, 4))
    spec = draw(planted_specs(max_each=4, txn=txn, pipes=pipes))
    if txn:  # the transactional producers' sends come on top
        chunk *= 2
    return dataclasses.replace(spec, sends=chunk * chunks, chunk_sends=chunk)


def _agrees_on(spark: SparkSession, spec: SynthSpec, partitions: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        truth = generated(spec, root)
        ref = check(root)
        assert_finds_what_was_planted(ref, truth)
        assert_agrees(reconcile(spark, root, examples=EXAMPLES, partitions=partitions), ref, EXAMPLES)


@settings(SETTINGS, max_examples=8)
@given(spec=chunked_specs(), partitions=st.integers(1, 3))
def test_judge_agrees_with_reference(spark: SparkSession, spec: SynthSpec, partitions: int) -> None:
    _agrees_on(spark, spec, partitions)


@settings(SETTINGS, max_examples=8)
@given(spec=chunked_specs(txn=True), partitions=st.integers(1, 3))
def test_judge_agrees_with_reference_on_transactions(
    spark: SparkSession, spec: SynthSpec, partitions: int
) -> None:
    """Every kind and edge case, the transaction ones included, with or without a group."""
    _agrees_on(spark, spec, partitions)


@settings(SETTINGS, max_examples=6)
@given(spec=chunked_specs(txn=True, pipes=True), partitions=st.integers(1, 3))
def test_judge_agrees_with_reference_on_pipelines(
    spark: SparkSession, spec: SynthSpec, partitions: int
) -> None:
    """Every kind and edge case, a pipeline and its kinds included."""
    _agrees_on(spark, spec, partitions)


def judged_examples(found: Findings, topic: str) -> list[Shown]:
    shown: list[Shown] = [
        (kind, (p.topic, p.partition), e.message_id, (e.topic, e.partition, e.offset), e.final_message_id)
        for p in found.partitions
        if p.topic == topic
        for kind, examples in p.examples.items()
        for e in examples
    ]
    return sorted(shown, key=repr)


def _judge_cases(spark: SparkSession, root: Path, cases: list[Case]) -> Findings:
    """The cases in one history (a topic each), judged once: the numbers and examples
    worked out from the doc, and the reference's, are the judge's."""
    write_cases(root, cases)
    found = reconcile(spark, root, examples=5, partitions=2)
    for case in cases:
        t = topic_of(case)
        mine = [p for p in found.partitions if p.topic == t]
        # The kinds a case was written for (the reference's); a newer kind has its own tests.
        counts = {(p.topic, p.partition): checked(p.counts) for p in mine if any(p.counts.values())}
        assert counts == expected_counts(case), case.name
        assert judged_examples(found, t) == expected_examples(case), case.name
    assert_agrees(found, check(root), 5)
    return found


def test_hand_written_edge_cases(spark: SparkSession, tmp_path: Path) -> None:
    """Every hand-written case before transactions."""
    _judge_cases(spark, tmp_path, CASES)


def test_hand_written_transaction_cases(spark: SparkSession, tmp_path: Path) -> None:
    """The transaction kinds and judged outcomes, worked out by hand."""
    _judge_cases(spark, tmp_path, TXN_CASES)


def test_hand_written_pipeline_cases(spark: SparkSession, tmp_path: Path) -> None:
    """The pipeline kinds, worked out by hand, beside the kinds an output can also show;
    the earlier cases' history has no pipeline data and ran no pipeline pass."""
    assert _judge_cases(spark, tmp_path / "pipelines", PIPELINE_CASES).timings["pipelines_s"] > 0
    assert _judge_cases(spark, tmp_path / "before", CASES).timings["pipelines_s"] == 0
