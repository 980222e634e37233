"""The figures a matrix page sets side by side per scenario, from a report's own data."""

from __future__ import annotations

from harness.history import Expectations
from harness.history.verdict import Bucket, Findings, PartitionFindings, Verdict
from harness.report.comparison import figures
from harness.report.model import ClusterEvent, FaultWindow, Scenario


def _verdict(outage_buckets: dict[int, int]) -> Verdict:
    partitions = [PartitionFindings("t", p, outage=[Bucket(float(i), 0, 1, 0) for i in range(n)])
                  for p, n in outage_buckets.items()]
    return Verdict(Findings("r", "history", 0.5, partitions, [], {}), Expectations(), [], True)


def _events() -> list[ClusterEvent]:
    return [
        ClusterEvent(100.0, "isr", "t", 0, "isr none -> [0, 1, 2]"),
        ClusterEvent(100.0, "isr", "t", 1, "isr none -> [0, 1, 2]"),
        ClusterEvent(100.0, "leader", "t", 0, "leader none -> 0 (epoch 0)"),
        ClusterEvent(104.0, "leader", "t", 0, "leader 0 -> -1 (epoch 1)"),
        ClusterEvent(106.5, "leader", "t", 0, "leader -1 -> 2 (epoch 2)"),
        ClusterEvent(106.5, "isr", "t", 0, "isr [0, 1, 2] -> [1, 2]"),
        ClusterEvent(107.0, "isr", "other", 0, "isr [0, 1, 2] -> [1]"),  # another topic: not counted
        ClusterEvent(121.0, "isr", "t", 0, "isr [1, 2] -> [0, 1, 2]"),
    ]


def test_the_figures_come_from_the_outage_the_events_and_the_fault_windows() -> None:
    scenario = Scenario("s", None, verdict=_verdict({0: 8, 1: 0}), events=_events(),
                        faults=[FaultWindow("kill", "kafka-0", 103.0, 118.0, True)])
    found = figures(scenario)
    assert found.unavailable_s == {0: 4.0, 1: 0.0}
    assert found.new_leader_s == 3.5, "the first leader that is a broker, not -1"
    assert found.full_isr_s == 3.0
    assert found.text() == ("lost 0 · duplicate 0 · longest stall 4.0 s · new leader 3.5 s · "
                            "ISR full 3.0 s after heal")
    assert found.per_partition() == "p0: 4.0 s, p1: 0.0 s"


def test_the_longest_stretch_without_an_acknowledgement_is_the_unavailability_when_read() -> None:
    """A stall whose sends were retried and acknowledged late fails no send: only the
    acknowledgements' times show it."""
    scenario = Scenario("s", None, verdict=_verdict({0: 0, 1: 0}), events=_events(),
                        faults=[FaultWindow("kill", "kafka-0", 103.0, 118.0, True)],
                        ack_stalls={0: 6.25, 1: 0.5})
    assert figures(scenario).unavailable_s == {0: 6.25, 1: 0.5}
    assert figures(scenario).text().startswith("lost 0 · duplicate 0 · longest stall 6.2 s")


def test_an_isr_full_at_the_heal_counts_zero_and_one_never_full_again_none() -> None:
    full_at_heal = Scenario("s", None, verdict=_verdict({0: 0}), events=_events(),
                            faults=[FaultWindow("cut", "x", 103.0, 125.0, True)])
    assert figures(full_at_heal).full_isr_s == 0.0
    events = [*_events()[:-1]]
    never = Scenario("s", None, verdict=_verdict({0: 0}), events=events,
                     faults=[FaultWindow("kill", "kafka-0", 103.0, 118.0, True)])
    assert figures(never).full_isr_s is None
    unhealed = Scenario("s", None, verdict=_verdict({0: 0}), events=events,
                        faults=[FaultWindow("kill", "kafka-0", 103.0, None, True)])
    assert figures(unhealed).full_isr_s is None and figures(unhealed).new_leader_s == 3.5


def test_a_client_comparison_reads_the_first_acknowledgement_after_the_leader_change() -> None:
    scenario = Scenario("s", None, verdict=_verdict({0: 0}), events=_events(),
                        faults=[FaultWindow("kill", "kafka-0", 103.0, 118.0, True)],
                        first_ack_after_leader_s=0.75)
    found = figures(scenario)
    assert found.first_ack_s == 0.75
    assert "new leader 3.5 s · first ack 0.8 s after it" in found.text()


def test_figures_without_a_verdict_leave_the_counts_out() -> None:
    scenario = Scenario("s", None, verdict=None, events=_events(), faults=[])
    assert figures(scenario).lost is None
    assert figures(scenario).text() == "longest stall 0.0 s"


def test_the_first_acknowledgement_after_the_first_leader_change_is_timed_from_the_sends() -> None:
    from harness.report.load import first_ack_after_leader

    rows = [{"partition": 0, "outcome": "acked", "ack_ts": t, "send_ts": t - 0.1}
            for t in (103.5, 107.25, 108.0)]
    rows += [{"partition": 1, "outcome": "acked", "ack_ts": 106.6, "send_ts": 106.5},
             {"partition": 0, "outcome": "unknown", "ack_ts": None, "send_ts": 105.0}]
    faults = [FaultWindow("kill", "kafka-0", 103.0, 118.0, True)]
    # p0's new leader at 106.5 (the first leader change after the fault), its next ack at 107.25
    assert first_ack_after_leader(rows, _events(), faults) == 0.75
    assert first_ack_after_leader(rows, _events(), []) is None
    assert first_ack_after_leader([r for r in rows if r["ack_ts"] != 107.25 and r["ack_ts"] != 108.0],
                                  _events(), faults) is None
