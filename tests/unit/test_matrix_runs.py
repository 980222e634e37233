"""The matrix's columns: each release in each metadata mode it runs, side by side."""

from __future__ import annotations

import pytest

from harness.compose.matrix import MatrixRun, matrix_runs
from harness.errors import UnsupportedVersion


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
