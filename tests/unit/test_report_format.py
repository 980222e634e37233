"""How values read on the report's pages."""

from __future__ import annotations

import pytest

from harness.history.verdict import Range
from harness.report import format as fmt


def test_times() -> None:
    assert fmt.utc(1_700_000_000.5) == "2023-11-14 22:13:20.500 UTC"
    assert fmt.utc(None) == fmt.NONE
    assert fmt.rel(1_700_000_013.14, 1_700_000_000.0) == "+13.1 s"
    assert fmt.rel(None, 1.0) == fmt.NONE


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.04, "0.0 s"),
        (6.1, "6.1 s"),
        (45, "45 s"),
        (130, "2 min 10 s"),
        (7325, "2 h 02 min"),
        (None, fmt.NONE),
    ],
)
def test_duration(seconds: float | None, text: str) -> None:
    assert fmt.duration(seconds) == text


def test_settings_read_as_written_in_a_config_file() -> None:
    assert fmt.scalar(True) == "true"
    assert fmt.scalar(None) == fmt.NONE
    assert fmt.scalar({"leader_of": ["orders", 0]}) == '{"leader_of": ["orders", 0]}'
    assert fmt.params({"target": {"broker": 1}, "latency_ms": 200}) == 'target={"broker": 1} latency_ms=200'
    assert fmt.count(1234567) == "1\u2009234\u2009567"


def test_rules_in_words() -> None:
    assert [fmt.rule(r) for r in ("0", "3", "any", "at_least_one")] == [
        "none allowed",
        "at most 3",
        "any count",
        "at least one (must be caught)",
    ]


def test_record_columns_only_for_lists_of_objects() -> None:
    assert fmt.record_columns([{"id": 0, "zone": "a"}, {"id": 1, "rack": "b"}]) == ["id", "zone", "rack"]
    assert fmt.record_columns(["a", "b"]) is None
    assert fmt.record_columns([]) is None


def test_links_are_percent_encoded_relative_paths() -> None:
    assert fmt.href("s5[acks=1] #2", "history/sends/part-0000.parquet") == (
        "s5%5Backs%3D1%5D%20%232/history/sends/part-0000.parquet"
    )


def test_an_offset_range_names_its_span_count_and_acknowledgements() -> None:
    t0 = 1_700_000_000.0
    lost = Range(0, 3773, 3774, t0 + 1.62, t0 + 25.9)
    assert fmt.offset_range("orders", 0, lost, t0) == (
        "orders-0 offsets 0\u20133773 (3\u2009774), acknowledged +1.6 s to +25.9 s"
    )
    one = Range(7, 7, 1, t0 + 3, t0 + 3)
    assert fmt.offset_range("orders", 2, one, t0) == "orders-2 offset 7, acknowledged +3.0 s"
    assert fmt.offset_range("orders", 2, Range(7, 8, 2, None, None), t0).endswith("none acknowledged")
