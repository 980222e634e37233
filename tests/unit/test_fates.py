"""The fates: located send-side findings as bucket counts by fate and as offset ranges."""

from __future__ import annotations

from harness.history.verdict import Range
from spark_jobs import fates
from spark_jobs.fates import Located

T0 = 1_700_000_000.0


def _at(kind: str, seq: int, offset: int, sent: float, acked: float | None = None) -> Located:
    return Located(kind, (7, seq), "t", 0, offset, T0 + sent, None if acked is None else T0 + acked)


def test_each_message_has_one_fate_the_first_kind_that_found_it() -> None:
    located = [
        _at("truncated", 1, 10, 0.2), _at("lost", 1, 10, 0.2),  # lost and truncated: lost
        _at("truncated", 2, 11, 0.7),
        _at("duplicate", 3, 12, 1.5), _at("aborted_read", 3, 12, 1.5),
    ]  # fmt: skip
    by_second = fates.bucket_fates(located, 1.0)
    assert by_second == {T0: ({"lost": 1, "truncated": 1}, {"acked": 2}),
                         T0 + 1: ({"duplicate": 1}, {"acked": 1})}  # fmt: skip
    halves = {start: by_fate for start, (by_fate, _) in fates.bucket_fates(located, 0.5).items()}
    assert halves == {T0: {"lost": 1}, T0 + 0.5: {"truncated": 1}, T0 + 1.5: {"duplicate": 1}}


def test_a_fated_send_is_counted_under_its_own_outcome() -> None:
    failed = Located("aborted_read", (7, 1), "t", 0, 4, T0, None, "failed")
    doubt = Located("duplicate", (7, 2), "t", 0, 5, T0, None, "unknown")
    assert fates.bucket_fates([failed, doubt], 1.0) == {
        T0: ({"aborted_read": 1, "duplicate": 1}, {"failed": 1, "unknown": 1})
    }


def test_offsets_become_ranges_of_consecutive_offsets_with_their_ack_span() -> None:
    located = [_at("lost", s, o, 0.0, float(o)) for s, o in enumerate([5, 3, 4, 9, 11, 10])]
    located.append(_at("lost", 99, 20, 0.0))  # never acknowledged: a range without an ack span
    [(place, placed)] = fates.offset_ranges(located).items()
    assert place == ("t", 0)
    ranges, total = placed["lost"]
    assert total == 3
    assert ranges == [
        Range(3, 5, 3, T0 + 3, T0 + 5),
        Range(9, 11, 3, T0 + 9, T0 + 11),
        Range(20, 20, 1, None, None),
    ]


def test_ranges_are_kept_per_kind_and_cut_at_the_limit() -> None:
    located = [_at("duplicate", s, 2 * s, 0.0) for s in range(fates.RANGES_PER_KIND + 5)]
    located.append(_at("lost", 1000, 2, 0.0))
    placed = fates.offset_ranges(located)[("t", 0)]
    ranges, total = placed["duplicate"]
    assert (len(ranges), total) == (fates.RANGES_PER_KIND, fates.RANGES_PER_KIND + 5)
    assert ranges[0] == Range(0, 0, 1, None, None)
    assert placed["lost"] == ([Range(2, 2, 1, None, None)], 1)


def test_a_send_without_a_position_has_a_fate_but_no_range() -> None:
    nowhere = Located("lost", (7, 5), "t", 0, None, T0, T0 + 1)
    assert fates.bucket_fates([nowhere], 1.0) == {T0: ({"lost": 1}, {"acked": 1})}
    assert fates.offset_ranges([nowhere, _at("lost", 6, 9, 0.0, 1.0)])[("t", 0)]["lost"] == (
        [Range(9, 9, 1, T0 + 1, T0 + 1)], 1)
