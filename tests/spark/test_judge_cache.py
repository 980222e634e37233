"""A judgement keeps the transactions' outcomes in its session's cache while its passes
read them, and leaves nothing cached behind: the judge's warm session judges every run of
a test session, and each judgement would otherwise keep its outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history import TXN_KINDS

pytest.importorskip("pyspark")

from pyspark import StorageLevel
from pyspark.sql import SparkSession

from spark_jobs import plan, reconcile, transactions
from tests.synthetic.core import SynthSpec, generate

pytestmark = pytest.mark.spark
NOT_CACHED = StorageLevel(False, False, False, False)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("txn") / "h"
    generate(SynthSpec(sends=3_000, anomalies=dict.fromkeys(TXN_KINDS, 1), partitions=4, seed=5), path)
    return path


def _outcomes_cache(spark: SparkSession, history: Path) -> StorageLevel:
    """The storage level Spark's cache holds for the outcomes of ``history``'s
    transactions: a plan read again is looked up by what it computes, not by object."""
    return plan.transaction_outcomes(plan.read(spark, str(history), "transactions")).storageLevel


def test_the_outcomes_are_cached_during_the_judgement_and_dropped_after_it(
    spark: SparkSession, history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    levels: list[StorageLevel] = []
    judge = transactions.judge

    def judge_and_look(*args: object, **kwargs: object) -> transactions.TxnFindings:
        levels.append(_outcomes_cache(spark, history))
        return judge(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(transactions, "judge", judge_and_look)
    found = reconcile.reconcile(spark, history)
    assert {k: found.counts()[k] for k in TXN_KINDS} == dict.fromkeys(TXN_KINDS, 1)
    assert levels and levels[0] != NOT_CACHED  # the passes read one cached relation
    assert _outcomes_cache(spark, history) == NOT_CACHED


def test_a_judgement_that_fails_drops_the_outcomes_and_keeps_its_own_error(
    spark: SparkSession, history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> transactions.TxnFindings:
        raise RuntimeError("the transaction pass broke")

    monkeypatch.setattr(transactions, "judge", broken)
    with pytest.raises(RuntimeError, match="the transaction pass broke"):
        reconcile.reconcile(spark, history)
    assert _outcomes_cache(spark, history) == NOT_CACHED
