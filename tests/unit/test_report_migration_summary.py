"""A migration's cost per phase, read from the history: the longest stretch without an
acknowledgement (by ack time), and the words when a cost cannot be known."""

from __future__ import annotations

from harness.cluster.migration.plan import PHASE_PURPOSE, Phase
from harness.report.migration_summary import PhaseCost, longest_without_acks, migration_summary
from harness.report.model import AckBucket, MigrationPhase, Scenario

T = 1_700_000_000.0


def _acks(*seconds: int) -> list[AckBucket]:
    return [AckBucket(T + s, 10) for s in seconds]


def test_every_phase_says_what_it_did() -> None:
    assert set(PHASE_PURPOSE) == set(Phase)


def test_the_longest_stretch_without_an_acknowledgement_is_the_widest_gap_in_the_phase() -> None:
    phase = MigrationPhase("broker_roll", T, T + 20, "completed")
    assert longest_without_acks(phase, _acks(*range(20)), 1.0) == 0.0
    # Acks in seconds 0-4 and 12-19: none arrived in seconds 5 to 11.
    assert longest_without_acks(phase, _acks(*range(5), *range(12, 20)), 1.0) == 7.0
    # An ack in the middle of that stretch halves it.
    assert longest_without_acks(phase, _acks(*range(5), 8, *range(12, 20)), 1.0) == 3.0
    # From the phase's start to its first ack, from its last ack to its end, and none at all.
    assert longest_without_acks(phase, _acks(*range(6, 20)), 1.0) == 6.0
    assert longest_without_acks(phase, _acks(*range(15)), 1.0) == 5.0
    assert longest_without_acks(phase, _acks(30, 31), 1.0) == 20.0
    # Buckets of another width.
    assert longest_without_acks(phase, [AckBucket(T, 3), AckBucket(T + 15, 3)], 5.0) == 10.0


def test_a_cost_the_history_cannot_give_is_said_unknown_and_an_unknown_phase_has_no_purpose() -> None:
    scenario = Scenario.__new__(Scenario)
    scenario.migration = [MigrationPhase("dual_write", T, T + 10, "completed"),
                          MigrationPhase("reticulate", T + 10, T + 12, "failed", "ValueError: splines")]
    scenario.verdict = None
    scenario.ack_buckets = None
    text = migration_summary(scenario)
    assert text.startswith("The migration walked 2 phases in 12.0 s; reticulate failed and the walk "
                           "stopped there.")
    assert ("dual_write (10.0 s) held the cluster with a KRaft controller leading it and writing each "
            "change to ZooKeeper too: its sends unknown (no verdict), how long acknowledgements stopped "
            "unknown (the sends were not read).") in text
    assert "reticulate (2.0 s): its sends unknown" in text and "It failed: ValueError: splines." in text
    assert PhaseCost(scenario.migration[1], None, None, None).purpose is None
