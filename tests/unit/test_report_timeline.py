"""The timeline figure: gaps shown as zero, long runs merged, inline-ready SVG."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from harness.report.model import Bucket, ClusterEvent, FaultWindow, HistoryInfo, Scenario, Verdict
from harness.report.timeline import MAX_POINTS, origin, series, timeline_svg

T0 = 1_700_000_000.0


def _verdict(buckets: list[Bucket]) -> Verdict:
    return Verdict(True, [], {}, [], {}, {}, 1.0, buckets, [])


def _scenario(**kwargs: object) -> Scenario:
    s = Scenario(id="s", page="s.html")
    for k, v in kwargs.items():
        setattr(s, k, v)
    return s


def test_series_fills_gaps_with_zero_and_is_relative_to_t0() -> None:
    data = series([Bucket(T0 + 1, 5, 0, 0), Bucket(T0 + 4, 1, 2, 3)], 1.0, T0)
    assert data is not None
    assert data.x == [1.0, 2.0, 3.0, 4.0]
    assert (data.acked, data.failed, data.unknown) == ([5, 0, 0, 1], [0, 0, 0, 2], [0, 0, 0, 3])


def test_series_merges_buckets_of_long_runs_and_keeps_totals() -> None:
    buckets = [Bucket(T0 + i, 1, i % 2, 0) for i in range(MAX_POINTS * 3 + 7)]
    data = series(buckets, 1.0, T0)
    assert data is not None
    assert len(data.x) <= MAX_POINTS and data.width == 4.0
    assert sum(data.acked) == len(buckets) and sum(data.failed) == sum(b.failed for b in buckets)


def test_series_of_nothing_is_none() -> None:
    assert series([], 1.0, T0) is None


def test_origin_prefers_the_history_start() -> None:
    events = [ClusterEvent(T0 - 5, "leader", "t", 0, "")]
    assert origin(_scenario(events=events)) == T0 - 5
    history = HistoryInfo("complete", T0, T0 + 9, [])
    assert origin(_scenario(events=events, history=history)) == T0
    assert origin(_scenario()) is None


def test_nothing_recorded_draws_nothing() -> None:
    assert timeline_svg(_scenario(), T0) is None


def test_svg_is_an_inline_element_with_a_text_summary() -> None:
    s = _scenario(
        verdict=_verdict([Bucket(T0 + i, 10, 2 if 3 <= i < 6 else 0, 1 if i == 3 else 0) for i in range(10)]),
        faults=[
            FaultWindow("kill", "kafka-0", T0 + 3, T0 + 6, ok=True),
            FaultWindow("pause", "kafka-2", T0 + 7, None, ok=False),
        ],
        events=[
            ClusterEvent(T0 + 4, "leader", "t", 0, "leader 0 -> 1"),
            ClusterEvent(T0 + 5, "mystery", None, None, ""),
        ],
    )
    svg = timeline_svg(s, T0, end=T0 + 12)
    assert svg is not None and svg.startswith('<svg class="timeline" role="img"')
    root = ElementTree.fromstring(svg)  # well-formed on its own, no prolog needed
    assert root.tag.endswith("svg")
    assert 'aria-label="Timeline: 100 sends acknowledged, 6 failed, 1 in doubt; 2 fault window(s); ' in svg
    for label in ("kill kafka-0", "pause kafka-2", "leader", "other", "in doubt"):
        assert f">{label}<" in svg or f"> {label}<" in svg or label in svg


def test_the_same_input_gives_the_same_svg() -> None:
    s = _scenario(verdict=_verdict([Bucket(T0, 3, 1, 0)]), faults=[FaultWindow("cut", "a", T0, T0 + 1, True)])
    assert timeline_svg(s, T0) == timeline_svg(s, T0)


@pytest.mark.parametrize("name", ["<script>x</script>", "cost $5 & $6", "a\"b'c"])
def test_data_in_labels_is_escaped_and_literal(name: str) -> None:
    s = _scenario(faults=[FaultWindow(name, "", T0, T0 + 1, True)])
    svg = timeline_svg(s, T0)
    assert svg is not None
    ElementTree.fromstring(svg)
    assert "<script" not in svg
    texts = "".join(ElementTree.fromstring(svg).itertext())
    assert name in texts


def test_long_fault_labels_are_shortened_in_the_middle_keeping_the_target() -> None:
    name = "kill leader of s4-killing-the-leader-elects-from-the-isr-and-loses-nothing-e0ba12-0"
    svg = timeline_svg(_scenario(faults=[FaultWindow(name, "kafka-0", T0, T0 + 1, True)]), T0)
    assert svg is not None
    texts = "".join(ElementTree.fromstring(svg).itertext())
    assert "kill leader of s4-k\u2026-0 kafka-0" in texts
    assert name not in texts
