"""Property tests of the reconciliation: it finds exactly what was planted, nothing else.

Histories come from ``tests.synthetic.core``, which plants each anomaly kind without
touching any other kind and records the planted counts per partition; hypothesis chooses
the shape (sizes, producers, partitions, whether a consumer group reads the partitions,
whether transactional producers write beside the others) and how many of each kind to
plant. The tests from before transactions plant the kinds they always planted, so they
judge the histories they always judged.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.history import ANOMALY_KINDS, GROUP_KINDS, PIPELINE_KINDS, TXN_KINDS
from harness.history.verdict import VERDICT_SCHEMA_VERSION, Findings
from tests.synthetic.core import PLANTABLE_KINDS, SynthHistory, SynthSpec, generate
from tests.unit._synth import generated

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from spark_jobs.reconcile import reconcile  # noqa: E402
from spark_jobs.session import build_session  # noqa: E402

pytestmark = pytest.mark.spark
EXAMPLES = 3
TXN_ERA_KINDS = tuple(k for k in PLANTABLE_KINDS if k not in PIPELINE_KINDS)  # before pipelines
BASE_KINDS = tuple(k for k in TXN_ERA_KINDS if k not in TXN_KINDS)  # before transactions
SETTINGS_BASE = settings(
    deadline=None,
    derandomize=True,  # CI must not flake on a shape it never saw before
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _settings(max_examples: int) -> settings:
    return settings(SETTINGS_BASE, max_examples=max_examples)


def local_session() -> Iterator[SparkSession]:
    """The small local session of the reconciliation's tests, for module-scoped fixtures
    (test_reference_checker_spark.py uses it too)."""
    session = build_session("local[2]", {"spark.driver.memory": "1g"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    yield from local_session()


def _plant(draw: st.DrawFn, kinds: tuple[str, ...]) -> SynthSpec:
    return SynthSpec(
        sends=draw(st.integers(80, 400)),
        producers=draw(st.integers(1, 4)),
        partitions=draw(st.integers(1, 3)),
        consumers=draw(st.integers(1, 2)),
        failed_rate=0.05,
        unknown_rate=0.03,
        repoll_rate=0.05,
        anomalies={k: draw(st.integers(1 if len(kinds) == 1 else 0, 4)) for k in kinds},
        seed=draw(st.integers(0, 2**16)),
        part_rows=draw(st.sampled_from([50, 1000])),  # several parts per table, or one
        chunk_sends=draw(st.sampled_from([10_000, 150])),  # one chunk, or topics side by side
        groups=draw(st.booleans()),  # implied anyway when a group kind is planted
        commit_every=draw(st.sampled_from([7, 40])),
    )


@st.composite
def specs(draw: st.DrawFn, kinds: tuple[str, ...]) -> SynthSpec:
    return _plant(draw, kinds)


@st.composite
def txn_specs(draw: st.DrawFn, kinds: tuple[str, ...]) -> SynthSpec:
    """As ``specs``, with transactional producers whatever is planted."""
    return dataclasses.replace(
        _plant(draw, kinds),
        transactions=True,
        txn_producers=draw(st.integers(1, 2)),
        txn_max_messages=draw(st.sampled_from([2, 4])),
    )


def _transactions_of(truth: SynthHistory) -> dict[str, str]:
    """Message id -> transaction id, for the sends that name one."""
    sends = pq.read_table(truth.path / "sends", columns=["message_id", "transaction_id"]).to_pylist()
    return {s["message_id"]: s["transaction_id"] for s in sends if s["transaction_id"] is not None}


def _check(found: Findings, truth: SynthHistory) -> None:
    txn_of = _transactions_of(truth) if any(truth.expected[k] for k in TXN_KINDS) else {}
    for kind in ANOMALY_KINDS:
        got = {(p.topic, p.partition): p.counts[kind] for p in found.partitions if p.counts[kind]}
        assert got == truth.expected[kind], kind
        findings = truth.findings.get(kind, {})  # where findings are not count units
        for p in found.partitions:
            examples = p.examples.get(kind, [])
            shown = findings.get((p.topic, p.partition), 0) if kind in truth.findings else p.counts[kind]
            assert len(examples) == min(EXAMPLES, shown), (kind, p.partition)
            for e in examples:
                assert e.message_id in truth.planted[kind], (kind, e)
                if kind != "txn_partial":  # its first unreadable message may live elsewhere
                    assert (e.topic, e.partition) == (p.topic, p.partition)
                assert e.topic == p.topic
                if kind in GROUP_KINDS:  # who did it is in the detail; first by offset
                    assert "member-" in e.detail, e.detail
                    assert [x.offset for x in examples] == sorted(x.offset or 0 for x in examples)
                if kind in TXN_KINDS:  # the message's, at its own position; named in the detail
                    assert e.message_id is not None and e.message_id.startswith(f"{e.producer_id}-")
                    assert e.final_message_id == e.message_id
                    who = "consumer-" if kind == "txn_uncommitted_read" else txn_of[e.message_id]
                    assert who in e.detail, e.detail
                if kind == "lost":
                    assert e.final_message_id is None  # acked beyond the log's end
                if kind in ("duplicate", "aborted_read", "unseen", "reordered", "unexpected"):
                    assert e.final_message_id == e.message_id
    sends = {
        name: sum(b[i] for b in truth.availability.values())
        for i, name in enumerate(("acked", "failed", "unknown"))
    }
    assert {k: found.totals[k] for k in sends} == sends
    buckets = {b.start: (b.acked, b.failed, b.unknown) for b in found.availability}
    assert buckets == {k: v for k, v in truth.availability.items() if any(v)}


def _run(spark: SparkSession, spec: SynthSpec) -> None:
    with tempfile.TemporaryDirectory() as root:
        truth = generated(spec, root)
        _check(reconcile(spark, root, examples=EXAMPLES, partitions=2), truth)


@_settings(4)
@given(spec=specs(kinds=()))
def test_clean_history_has_no_findings(spark: SparkSession, spec: SynthSpec) -> None:
    _run(spark, spec)


@pytest.mark.parametrize("kind", PLANTABLE_KINDS)
@_settings(2)
@given(data=st.data())
def test_each_kind_alone(spark: SparkSession, kind: str, data: st.DataObject) -> None:
    _run(spark, data.draw(specs(kinds=(kind,))))


@_settings(8)
@given(spec=specs(kinds=BASE_KINDS))
def test_mixed_anomalies(spark: SparkSession, spec: SynthSpec) -> None:
    _run(spark, spec)


@_settings(3)
@given(spec=txn_specs(kinds=()))
def test_sound_transactions_have_no_findings(spark: SparkSession, spec: SynthSpec) -> None:
    """Committed, aborted and unknown transactions, markers' offset gaps, records the
    read_committed drain was not given, read_committed and read_uncommitted consumers: as
    a sound run records them, nothing counts (aborted records are neither unseen nor
    acknowledged offsets a member skips)."""
    _run(spark, spec)


@_settings(8)
@given(spec=txn_specs(kinds=TXN_ERA_KINDS))
def test_mixed_anomalies_with_transactions(spark: SparkSession, spec: SynthSpec) -> None:
    """Every kind, transaction kinds included, with and without a consumer group."""
    _run(spark, spec)


@_settings(3)
@given(spec=txn_specs(kinds=()))
def test_a_sound_pipeline_has_no_findings(spark: SparkSession, spec: SynthSpec) -> None:
    """A pipeline group's outputs and final offsets, beside transactions, as a sound run
    records them: nothing counts."""
    _run(spark, dataclasses.replace(spec, pipelines=True))


@_settings(6)
@given(spec=txn_specs(kinds=PLANTABLE_KINDS), transactions=st.booleans())
def test_mixed_anomalies_with_pipelines(spark: SparkSession, spec: SynthSpec, transactions: bool) -> None:
    """Every kind, pipeline kinds included, with or without transactions and a group."""
    _run(spark, dataclasses.replace(spec, transactions=transactions))


def test_chunked_history_is_judged_as_one(spark: SparkSession) -> None:
    """Large benchmark histories are generated chunk by chunk; each chunk is its own topic
    with its own producers, and the reconciliation must see them as one run."""
    kinds = dict.fromkeys(BASE_KINDS, 3)
    spec = SynthSpec(
        sends=1_500, chunk_sends=500, partitions=2, failed_rate=0.05, anomalies=kinds, seed=5
    )
    with tempfile.TemporaryDirectory() as root:
        truth = generate(spec, root)
        found = reconcile(spark, root, examples=EXAMPLES, partitions=2)
        _check(found, truth)
    assert {p.topic for p in found.partitions} == {"chaos", "chaos-1", "chaos-2"}
    assert truth.rows["sends"] == 1_500 and found.totals["sends"] == 1_500
    planted = {k: sum(v.values()) for k, v in truth.expected.items()}
    assert planted == {**dict.fromkeys(ANOMALY_KINDS, 0), **kinds}


def test_chunked_transactions_are_judged_as_one(spark: SparkSession) -> None:
    """The same with transactions: each chunk has its own transactional producers and
    transactions, and every kind is planted in all."""
    kinds = dict.fromkeys(TXN_ERA_KINDS, 3)
    spec = SynthSpec(sends=2_100, chunk_sends=700, partitions=2, failed_rate=0.05, anomalies=kinds, seed=5)
    with tempfile.TemporaryDirectory() as root:
        truth = generate(spec, root)
        found = reconcile(spark, root, examples=EXAMPLES, partitions=2)
        _check(found, truth)
    assert {p.topic for p in found.partitions} == {"chaos", "chaos-1", "chaos-2"}
    assert truth.rows["sends"] == 2_100 and found.totals["sends"] == 2_100
    planted = {k: sum(v.values()) for k, v in truth.expected.items()}
    assert planted == {**dict.fromkeys(ANOMALY_KINDS, 0), **kinds}


def test_verdict_follows_rules(spark: SparkSession) -> None:
    spec = SynthSpec(sends=200, partitions=2, anomalies={"lost": 2, "duplicate": 1}, seed=3)
    with tempfile.TemporaryDirectory() as root:
        generate(spec, root)
        found = reconcile(spark, root, partitions=2)
    from harness.history import Expectations

    ok = found.judge(Expectations(lost="at_least_one", duplicate="any"))
    assert ok.passed
    bad = found.judge(Expectations(lost=1, duplicate="any"))
    assert not bad.passed
    assert [r.kind for r in bad.rules if not r.passed] == ["lost"]
    out = bad.to_dict()
    assert out["schema_version"] == VERDICT_SCHEMA_VERSION and out["counts"]["lost"] == 2
    assert out["rules"]["lost"]["reason"] == "lost=2 exceeds max 1"


def test_records_match_sends_only_by_canonical_ids(spark: SparkSession) -> None:
    """"p-01", "p-a" and a record without an id name no send: each is unexpected once, and
    none of them is taken for p's seq 1 (which is on the log and polled, so clean)."""
    from harness.history import HistoryWriter

    odd = ["p-01", None, "p-a"]
    with tempfile.TemporaryDirectory() as root:
        with HistoryWriter(root, run_id="ids") as w:
            for seq in (0, 1):
                w.append(
                    "sends",
                    {"message_id": f"p-{seq}", "producer_id": "p", "seq": seq, "topic": "t",
                     "partition": 0, "send_ts": 1.0, "ack_ts": 1.1, "outcome": "acked", "offset": seq},
                )
            for offset, mid in enumerate(["p-0", "p-1", *odd]):
                record = {"topic": "t", "partition": 0, "offset": offset, "message_id": mid}
                w.append("final_log", record)
                w.append("polls", {**record, "consumer_id": "c", "poll_ts": 2.0})
        found = reconcile(spark, root, partitions=2)
    assert found.counts() == {k: 3 if k == "unexpected" else 0 for k in ANOMALY_KINDS}
    examples = found.partitions[0].examples["unexpected"]
    assert [(e.offset, e.message_id) for e in examples] == [(2, "p-01"), (3, None), (4, "p-a")]
