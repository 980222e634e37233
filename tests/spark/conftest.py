"""Shared fixtures for tests that run the reconciliation on real Spark masters."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

import pyspark

from spark_jobs.synthetic import SynthHistory, SynthSpec, generate

# local-cluster starts real worker and executor JVMs through $SPARK_HOME/bin/spark-class;
# a pip-installed pyspark ships that script inside the package directory.
os.environ.setdefault("SPARK_HOME", str(Path(pyspark.__file__).parent))

ALL_KINDS = {
    "lost": 3,
    "duplicate": 2,
    "truncated": 4,
    "unexpected": 2,
    "aborted_read": 2,
    "reordered": 3,
    "unseen": 2,
}


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynthHistory]:
    root = tmp_path_factory.mktemp("history")
    spec = SynthSpec(sends=20_000, partitions=4, producers=3, anomalies=ALL_KINDS, seed=11)
    yield generate(spec, root)
