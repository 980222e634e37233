"""The judge through Spark Connect: the same reconciliation, driven from a thin client
with no JVM of its own, must give what the classic session gives. The reference
checker's property tests and hand-written edge cases (tests/unit/
test_reference_checker_spark.py: those from before transactions, and those of the
transaction kinds and judged outcomes, and those of the pipeline kinds) and the
planted-count property tests of transactions and pipelines
(tests/unit/test_reconcile_properties.py) run here unchanged on a Connect session,
and small synthetic histories, without and with transactions, are reconciled through
both."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_jobs.reconcile import reconcile
from spark_jobs.session import REMOTE_ENV, build_session, parallelism
from tests.reference_checker import check
from tests.synthetic.core import EDGE_CASES, PLANTABLE_KINDS, SynthHistory, SynthSpec, generate
from tests.unit import test_reconcile_properties as properties
from tests.unit import test_reference_checker_spark as reference

pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect]")
pytestmark = pytest.mark.spark


CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@pytest.fixture(scope="module")
def spark(connect_remote: str) -> Iterator[SparkSession]:
    """A Connect session for this module only. pyspark marks the whole process as being in
    Connect mode (an environment variable) once a remote session exists, and builds every
    later session and Column that way; the mark is lifted at the end so the classic
    sessions of the tests that follow are classic again."""
    marked = CONNECT_MODE in os.environ
    session = build_session(remote=connect_remote)
    try:
        yield session
    finally:
        session.stop()
        if not marked:
            os.environ.pop(CONNECT_MODE, None)


def test_a_small_reconcile_agrees_with_the_reference(spark: SparkSession, history: SynthHistory) -> None:
    """The session-wide synthetic history (every kind planted), reconciled through Connect:
    the planted counts, and every count, range and example the reference checker gives.
    (The same history through local[*] and local-cluster is test_masters.py's.)"""
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    found = reconcile(spark, history.path, examples=5)
    assert found.counts() == {k: sum(v.values()) for k, v in history.expected.items()}
    reference.assert_agrees(found, check(str(history.path)), 5)


def test_a_transactional_reconcile_agrees_with_the_reference(spark: SparkSession, tmp_path: Path) -> None:
    """Every kind and edge case planted, transactions and a consumer group included."""
    spec = SynthSpec(sends=6_000, partitions=3, producers=3, anomalies=dict.fromkeys(PLANTABLE_KINDS, 2),
                     edges=dict.fromkeys(EDGE_CASES, 1), seed=13)  # fmt: skip
    truth = generate(spec, tmp_path)
    found = reconcile(spark, tmp_path, examples=5)
    assert found.counts() == {k: sum(v.values()) for k, v in truth.expected.items()}
    reference.assert_agrees(found, check(tmp_path), 5)


def test_reference_checker_properties_through_connect(spark: SparkSession) -> None:
    reference.test_judge_agrees_with_reference(spark=spark)


def test_reference_checker_transaction_properties_through_connect(spark: SparkSession) -> None:
    reference.test_judge_agrees_with_reference_on_transactions(spark=spark)


def test_transaction_properties_through_connect(spark: SparkSession) -> None:
    properties.test_mixed_anomalies_with_transactions(spark=spark)


def test_reference_checker_pipeline_properties_through_connect(spark: SparkSession) -> None:
    reference.test_judge_agrees_with_reference_on_pipelines(spark=spark)


def test_pipeline_properties_through_connect(spark: SparkSession) -> None:
    properties.test_mixed_anomalies_with_pipelines(spark=spark)


def test_hand_written_pipeline_cases_through_connect(spark: SparkSession, tmp_path: Path) -> None:
    reference.test_hand_written_pipeline_cases(spark, tmp_path)


def test_hand_written_edge_cases_through_connect(spark: SparkSession, tmp_path: Path) -> None:
    reference.test_hand_written_edge_cases(spark, tmp_path)


def test_hand_written_transaction_cases_through_connect(spark: SparkSession, tmp_path: Path) -> None:
    reference.test_hand_written_transaction_cases(spark, tmp_path)


def test_remote_is_chosen_by_environment_unless_a_master_is_named(
    connect_remote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spark_jobs.session import resolve_remote

    monkeypatch.setenv(REMOTE_ENV, connect_remote)
    assert resolve_remote(None, None) == connect_remote
    assert resolve_remote("local[2]", None) is None
    assert resolve_remote("sc://elsewhere:1", None) == "sc://elsewhere:1"


def test_parallelism_is_read_from_the_server(spark: SparkSession) -> None:
    assert parallelism(spark) == 2  # the fixture's server runs local[2]
