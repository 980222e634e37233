"""The matrix's columns: each release in each metadata mode it runs, side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.entry.matrix import MatrixRun, VersionResult, matrix_runs, write_summary
from harness.errors import UnsupportedVersion
from harness.scenario.rundir import REPORTS_ENV
from tests.report.sample_run import RUN_ID, build_sample_run


def test_a_release_with_both_modes_gets_a_column_for_each_by_default() -> None:
    assert matrix_runs(["3.7.2", "3.9.1", "4.4.0"], None) == [
        MatrixRun("3.7.2", "zookeeper"), MatrixRun("3.9.1", "zookeeper"), MatrixRun("3.9.1", "kraft"),
        MatrixRun("4.4.0", "kraft")]
    assert [r.label for r in matrix_runs(["3.9.1"], None)] == ["Kafka 3.9.1 ZooKeeper", "Kafka 3.9.1 KRaft"]


def test_asked_modes_narrow_the_columns() -> None:
    assert matrix_runs(["3.9.1", "4.0.0"], ["kraft"]) == [MatrixRun("3.9.1", "kraft"),
                                                         MatrixRun("4.0.0", "kraft")]


def test_a_mode_a_release_lacks_is_refused_before_anything_runs() -> None:
    with pytest.raises(UnsupportedVersion, match=r"Kafka 4\.4\.0 does not run in zookeeper mode"):
        matrix_runs(["3.9.1", "4.4.0"], ["zookeeper"])


def test_the_summary_sets_each_mode_beside_the_other_with_its_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REPORTS_ENV, str(tmp_path))
    results = []
    for run in matrix_runs(["3.9.1"], None):
        run_dir = build_sample_run(tmp_path / f"m-{run.version}-{run.metadata}")
        results.append(VersionResult(run, run_dir, 0))
    page = write_summary("m", results).read_text()
    assert page.index("Kafka 3.9.1 ZooKeeper") < page.index("Kafka 3.9.1 KRaft")
    assert page.count("longest stall ") >= 2 and "new leader" in page, "each cell carries its figures"
    assert page.count(f'href="../{RUN_ID}/index.html"') == 2, "each column links its own report"


def test_each_client_gets_its_column_beside_the_others() -> None:
    from harness.workload.client_settings import ClientChoice

    clients = [ClientChoice.parse(c) for c in ("librdkafka", "java", "java:4.0.0")]
    runs = matrix_runs(["3.9.1"], ["kraft"], clients)
    assert [r.label for r in runs] == ["Kafka 3.9.1 KRaft", "Kafka 3.9.1 KRaft, java client",
                                       "Kafka 3.9.1 KRaft, java 4.0.0 client"]
    assert [r.run_id("m") for r in runs] == ["m-3.9.1-kraft", "m-3.9.1-kraft-java",
                                             "m-3.9.1-kraft-java-4.0.0"]
