"""The group and pipeline passes shuffle the final log (and the group pass the acknowledged
sends) of the topics they judge only: the overview names them, and the other topics'
rows are left out in the scan. In a pipeline history the pipeline's own output topic is
about 40% of the final log and holds no group or pipeline finding; the planted counts of
every kind (tests/unit/test_reconcile_properties.py) show that nothing is lost by it."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame, SparkSession

from spark_jobs import groups, pipeline_sweep, pipelines, plan, reconcile
from tests.synthetic.core import PLANTABLE_KINDS, SynthSpec, generate

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, DataFrame]:
    """A history with every kind planted: a group reads topic ``chaos``, a pipeline reads
    it and writes ``chaos-out``."""
    path = tmp_path_factory.mktemp("cut") / "h"
    generate(SynthSpec(sends=2_000, anomalies=dict.fromkeys(PLANTABLE_KINDS, 1), partitions=4, seed=11), path)
    history = str(path)
    read = plan.tables(spark, history, transactions=True)
    read.update({t: plan.read(spark, history, t) for t in (*groups.TABLES, "final_offsets")})
    return read


def _rows_of(stream: DataFrame, topics: list[str], topic: str, where: str = "true") -> int:
    """Rows of ``stream`` (packed ``tp``) in ``topic``."""
    return stream.where(f"shiftright(tp, {plan.PARTITION_BITS}) = {topics.index(topic)} AND {where}").count()


def test_the_overview_names_the_topics_a_group_and_a_pipeline_read(tables: dict[str, DataFrame]) -> None:
    prelude = reconcile._prelude(tables, 1.0)
    assert prelude.topics == ["chaos", "chaos-out"]
    assert prelude.group_topics == {"chaos"}
    assert prelude.pipeline_sources == {"chaos"}


def test_the_group_pass_reads_no_offsets_of_a_topic_no_group_touched(tables: dict[str, DataFrame]) -> None:
    prelude = reconcile._prelude(tables, 1.0)
    topics = prelude.topics
    assert _rows_of(groups._stream(tables, topics), topics, "chaos-out") > 0  # uncut: the output topic's
    assert _rows_of(groups._stream(tables, topics, prelude.group_topics), topics, "chaos-out") == 0
    assert _rows_of(groups._stream(tables, topics, prelude.group_topics), topics, "chaos") > 0


def test_the_pipeline_pass_reads_no_final_log_of_a_topic_no_output_names(
    tables: dict[str, DataFrame],
) -> None:
    prelude = reconcile._prelude(tables, 1.0)
    topics, logged = prelude.topics, f"src = {pipeline_sweep.LOG}"
    assert _rows_of(pipelines._stream(tables, topics), topics, "chaos-out", logged) > 0
    cut = pipelines._stream(tables, topics, prelude.pipeline_sources)
    assert _rows_of(cut, topics, "chaos-out", logged) == 0
    assert _rows_of(cut, topics, "chaos", logged) > 0
