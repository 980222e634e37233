"""One test's lifecycle outside pytest (:meth:`ChaosRun.run_case`, used by
``kafka-chaos run FILE``) gives each outcome the record the pytest plugin gives a test."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.lifecycle import HealthReport
from harness.cluster.recovery import ClusterKeeper
from harness.compose import chaos_run as chaos_run_module
from harness.compose.chaos_run import ChaosRun


@dataclass
class StandInCluster:
    """Heals by itself unless ``broken``; a restart of its blocking node mends it."""

    broken: bool = False
    restarted: list[str] = field(default_factory=list)

    def start(self) -> StandInCluster:
        return self

    def health(self) -> HealthReport:
        report = HealthReport()
        if self.broken:
            report.add("kafka-1 out of the ISR", "kafka-1")
        return report

    def restart_node(self, node: str) -> None:
        self.restarted.append(node)
        self.broken = False

    def wait_healthy(self, timeout_s: float) -> None:
        if self.broken:
            raise RuntimeError("still unhealthy")

    def close(self) -> None:
        pass


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ChaosRun, StandInCluster, list[str]]:
    monkeypatch.setenv("KAFKA_CHAOS_REPORTS", str(tmp_path))
    cluster = StandInCluster()
    chaos = ChaosRun("r1", "3.7.2", "three_az", healer=lambda c: c.wait_healthy(1))
    chaos.keeper = ClusterKeeper(lambda: cluster, lambda c: c.wait_healthy(1))  # type: ignore[arg-type, return-value]
    kept: list[str] = []
    monkeypatch.setattr(chaos_run_module, "collect_diagnostics", lambda c, dest: kept.append(str(dest)))
    return chaos, cluster, kept


def test_a_passing_case_is_recorded_passed_without_diagnostics(run: Any) -> None:
    chaos, _, kept = run
    record = chaos.run_case("file:a.toml", "scenario-file", lambda cluster: None, scenario="a")
    assert (record.outcome, record.phase, record.error, record.kind) == ("passed", None, "", "scenario-file")
    assert kept == [] and not chaos.keeper.handed_out


def test_a_failing_case_keeps_its_reason_and_the_clusters_logs(run: Any) -> None:
    chaos, _, kept = run
    record = chaos.run_case("file:b.toml", "scenario-file", lambda c: "lost=3 above max 0", scenario="b")
    assert (record.outcome, record.phase, record.error) == ("failed", "call", "lost=3 above max 0")
    assert kept and kept[0].endswith("b/diagnostics"), kept
    assert record.diagnostics == "b/diagnostics"


def test_an_exception_is_an_error_with_its_traceback(run: Any) -> None:
    chaos, _, _ = run

    def body(cluster: Any) -> str | None:
        raise ValueError("the fault could not be injected")

    record = chaos.run_case("file:c.toml", "scenario-file", body, scenario="c")
    assert (record.outcome, record.phase) == ("error", "call")
    assert "Traceback" in record.error and "ValueError: the fault could not be injected" in record.error


def test_a_passing_case_that_leaves_the_cluster_broken_errors_at_teardown(run: Any) -> None:
    chaos, cluster, _ = run

    def breaks(c: StandInCluster) -> None:
        c.broken = True

    record = chaos.run_case("file:d.toml", "scenario-file", breaks, scenario="d")
    assert (record.outcome, record.phase) == ("error", "teardown")
    assert "kafka-1 out of the ISR" in record.error and "restarted kafka-1" in record.error
    assert cluster.restarted == ["kafka-1"] and not cluster.broken
    after = chaos.run_case("file:e.toml", "scenario-file", lambda c: None, scenario="e")
    assert after.outcome == "passed", "only the case that broke the cluster fails"


def test_ctrl_c_is_recorded_and_re_raised(run: Any) -> None:
    chaos, _, _ = run

    def interrupted(cluster: Any) -> str | None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chaos.run_case("file:f.toml", "scenario-file", interrupted, scenario="f")
    record = chaos.records["file:f.toml"]
    assert (record.outcome, record.phase, record.error) == ("error", "call", "interrupted")
    assert chaos.keeper.handed_out, "the next case must restore health before it starts"
