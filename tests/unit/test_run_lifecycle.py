"""One test's lifecycle outside pytest (:meth:`ChaosRun.run_case`, used by
``kafka-chaos run FILE``) gives each outcome the record the pytest plugin gives a test."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.lifecycle import HealthReport
from harness.cluster.recovery import ClusterKeeper
from harness.scenario import chaos_run as chaos_run_module
from harness.scenario.chaos_run import ChaosRun


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


def test_an_xdist_run_merges_every_workers_record_into_one_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers, each with its own cluster label and header file; the controller's
    records (forwarded by xdist) gain the workers' scenario links, and one report says
    FAILED because one worker's test failed."""
    monkeypatch.setenv("KAFKA_CHAOS_REPORTS", str(tmp_path))
    heal = lambda c: None  # noqa: E731
    workers = [ChaosRun("r2", "3.7.2", "three_az", healer=heal, worker=w) for w in ("gw0", "gw1")]
    assert [w.identity.run_id for w in workers] == ["r2-gw0", "r2-gw1"], "each worker labels its own cluster"
    for worker, (test, outcome) in zip(workers, [("t::a", "passed"), ("t::b", "failed")], strict=True):
        record = worker.record(test)
        record.outcome, record.scenario = outcome, test.replace("t::", "s-")
        worker.directory.scenario_dir(record.scenario)
        assert worker.finish() is None, "a worker never renders"
    assert not (tmp_path / "r2" / "run.json").exists()

    controller = ChaosRun("r2", "3.7.2", "three_az", healer=heal)
    controller.record("t::a").outcome = "passed"
    controller.record("t::b").outcome = "failed"
    assert controller.absorb_workers()
    result = controller.finish()
    assert result is not None and result.headline == "failed" and not result.succeeded
    import json
    header = json.loads((tmp_path / "r2" / "run.json").read_text())
    assert header["scenarios"] == ["s-a", "s-b"]
    assert {t["id"]: (t["outcome"], t["scenario"]) for t in header["tests"]} == {
        "t::a": ("passed", "s-a"), "t::b": ("failed", "s-b")}


def test_a_controller_without_workers_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_CHAOS_REPORTS", str(tmp_path))
    controller = ChaosRun("r3", "3.7.2", "three_az", healer=lambda c: None)
    assert not controller.absorb_workers() and not controller.opened


def test_after_each_case_the_index_says_how_far_the_run_got_and_never_passed(
        run: Any, tmp_path: Path) -> None:
    from harness.report import load_run
    from harness.report.model import Outcome

    chaos, _, _ = run
    chaos.expected = 3
    chaos.run_case("file:a.toml", "scenario-file", lambda cluster: None)
    mid = load_run(tmp_path / "r1")
    assert mid.info.status_text == "running: 1 of 3 tests done"
    assert [t.id for t in mid.tests] == ["file:a.toml"] and mid.outcome is Outcome.NOT_JUDGED
    index = (tmp_path / "r1" / "index.html").read_text()
    assert "running: 1 of 3 tests done" in index and "lists no tests" not in index
    chaos.run_case("file:b.toml", "scenario-file", lambda cluster: None)
    assert load_run(tmp_path / "r1").info.status_text == "running: 2 of 3 tests done"
    chaos.finish()
    done = load_run(tmp_path / "r1")
    assert done.info.status_text == "complete" and done.outcome is Outcome.PASSED
