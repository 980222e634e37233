"""The timeline figure: gaps shown as zero, long runs merged, inline-ready SVG."""

from __future__ import annotations

import math
from pathlib import Path
from xml.etree import ElementTree

import pyarrow as pa
import pytest

from harness.history import SENDS_SCHEMA, Expectations, HistoryWriter
from harness.history.verdict import Bucket, Findings, Verdict
from harness.report.load import ack_buckets, migration_phases
from harness.report.model import (
    AckBucket,
    ClusterEvent,
    FaultWindow,
    HistoryInfo,
    MigrationPhase,
    Scenario,
    ScenarioConfig,
)
from harness.report.timeline import MAX_POINTS, ack_series, clip_at, origin, series, timeline_svg

T0 = 1_700_000_000.0


def _verdict(buckets: list[Bucket]) -> Verdict:
    return Verdict(Findings("r", "history", 1.0, [], buckets, {}), Expectations(), [], True)


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


def _lossy() -> list[Bucket]:
    """Ten seconds of 10 sends; in the first three, 4 acknowledged sends were lost."""
    lost = {"lost": 4}
    return [Bucket(T0 + i, 10, 0, 0, *((lost, {"acked": 4}) if i < 3 else ({}, {}))) for i in range(10)]


def test_fated_sends_leave_the_outcome_they_were_counted_under() -> None:
    doubt = Bucket(T0, 5, 1, 2, {"duplicate": 1, "aborted_read": 1}, {"unknown": 1, "failed": 1})
    data = series([*_lossy(), doubt], 1.0, T0)
    assert data is not None
    layers = data.layers()
    assert layers["kept"][:4] == [6 + 5, 6, 6, 10]  # the doubt bucket shares second 0
    assert layers["lost"][:4] == [4, 4, 4, 0]
    assert (layers["duplicate"][0], layers["aborted_read"][0], layers["failed"][0], layers["unknown"][0]) == (
        1, 1, 0, 1)  # fmt: skip
    assert sum(map(sum, layers.values())) == sum(data.acked) + sum(data.failed) + sum(data.unknown)


def test_a_lost_send_is_drawn_lost_and_counted_so_in_the_legend() -> None:
    svg = timeline_svg(_scenario(verdict=_verdict(_lossy())), T0)
    assert svg is not None
    texts = "".join(ElementTree.fromstring(svg).itertext())
    assert "acknowledged and lost (12)" in texts
    assert "acknowledged and kept (88)" in texts
    assert "#ee3377" in svg.lower(), "no area in the lost colour"
    assert "of them 12 acknowledged and lost" in svg


def test_a_burst_cuts_the_axis_and_says_where() -> None:
    assert clip_at([200.0] * 50 + [8000.0]) == 600.0
    assert clip_at([200.0] * 12 + [1200.0, 8000.0]) == 600.0  # a few bursts do not move the median
    assert clip_at([200.0] * 50 + [1000.0]) is None  # no burst: nothing to cut
    assert clip_at([0.0, 8000.0]) is None  # too few to judge a burst
    buckets = [Bucket(T0 + i, 200, 0, 0) for i in range(50)] + [Bucket(T0 + 50, 8000, 0, 0)]
    svg = timeline_svg(_scenario(verdict=_verdict(buckets)), T0)
    assert svg is not None
    assert "axis cut at 600; peak 8,000" in "".join(ElementTree.fromstring(svg).itertext())


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


def test_long_fault_labels_are_cut_at_the_end_keeping_their_start() -> None:
    windows = [FaultWindow("power_loss zone a", "kafka-0, kafka-1, zk-a, toxiproxy-a", T0, T0 + 1, True)]
    svg = timeline_svg(_scenario(faults=windows), T0)
    assert svg is not None
    texts = "".join(ElementTree.fromstring(svg).itertext())
    assert "toxiproxy-a" not in texts
    assert "power_loss zone a kafka-0, kafka-1, zk-\u2026" in texts


# --------------------------------------------------- acknowledgements by arrival time


STALL = (10.0, 40.0)  # sends in this stretch are all acknowledged 30 s after they were sent


def _stalled_history(hdir: Path) -> list[dict[str, object]]:
    """10 sends a second for 60 s; those sent during the stall are acked 30 s late."""
    rows: list[dict[str, object]] = []
    for i in range(600):
        t = i / 10
        late = STALL[0] <= t < STALL[1]
        rows.append({
            "message_id": f"p-{i}", "producer_id": "p", "seq": i, "topic": "t", "partition": 0,
            "key": None, "zone": "a", "send_ts": T0 + t, "ack_ts": T0 + t + (30.0 if late else 0.004),
            "outcome": "acked", "offset": i, "error": None,
        })
    with HistoryWriter(hdir, "run") as writer:
        writer.write_batch("sends", pa.Table.from_pylist(rows, schema=SENDS_SCHEMA))
    return rows


def _send_buckets(rows: list[dict[str, object]]) -> list[Bucket]:
    """What the verdict's availability buckets hold: outcomes by SEND time."""
    counts: dict[float, int] = {}
    for r in rows:
        start = float(math.floor(float(r["send_ts"])))  # type: ignore[arg-type]
        counts[start] = counts.get(start, 0) + 1
    return [Bucket(s, c, 0, 0) for s, c in sorted(counts.items())]


def test_a_stall_acknowledged_late_is_a_gap_in_acks_but_not_in_sends(tmp_path: Path) -> None:
    rows = _stalled_history(tmp_path / "history")
    problems: list[str] = []
    acks = ack_buckets(tmp_path / "history", 1.0, problems)
    assert problems == [] and acks is not None
    buckets = _send_buckets(rows)
    sends = series(buckets, 1.0, T0)
    arrived = ack_series(acks, 1.0, T0, (buckets[0].start, buckets[-1].start))
    assert sends is not None and arrived is not None
    sent = dict(zip(sends.x, sends.acked, strict=True))
    got = dict(zip(arrived.x, arrived.counts, strict=True))
    stall = [float(s) for s in range(int(STALL[0]), int(STALL[1]))]
    assert all(sent[s] == 10 for s in stall)  # by send time the stall looks perfectly healthy
    assert all(got[s] == 0 for s in stall)  # by arrival time nothing came back for 30 s
    assert got[9.0] == 10 and got[40.0] > 0  # either side of it, acknowledgements flow
    assert sum(arrived.counts) == len(rows)
    assert arrived.per_second[int(STALL[1])] == got[STALL[1]]


def test_the_svg_draws_the_acknowledgement_panel_when_acks_were_read(tmp_path: Path) -> None:
    rows = _stalled_history(tmp_path / "history")
    acks = ack_buckets(tmp_path / "history", 1.0, [])
    with_acks = _scenario(verdict=_verdict(_send_buckets(rows)), ack_buckets=acks)
    svg = timeline_svg(with_acks, T0)
    assert svg is not None and "acks received /s" in svg
    assert "acknowledgements arrived in 40 of 70 buckets" in svg  # 30 buckets of silence
    without = timeline_svg(_scenario(verdict=_verdict(_send_buckets(rows))), T0)
    assert without is not None and "acks received" not in without


def test_ack_series_of_nothing_is_none_but_zeros_over_a_send_span() -> None:
    assert ack_series([], 1.0, T0) is None
    zeros = ack_series([], 1.0, T0, (T0 + 2, T0 + 5))
    assert zeros is not None and zeros.x == [2.0, 3.0, 4.0, 5.0] and zeros.counts == [0, 0, 0, 0]
    merged = ack_series([AckBucket(T0 + i, 1) for i in range(MAX_POINTS * 2 + 1)], 1.0, T0)
    assert merged is not None and len(merged.counts) <= MAX_POINTS
    assert sum(merged.counts) == MAX_POINTS * 2 + 1


# -------------------------------------------------------------- ZooKeeper unreadable


def test_a_kraft_runs_gaps_are_named_after_its_metadata() -> None:
    events = [
        ClusterEvent(T0 + 2, "zk_unreadable", None, None, "metadata unreadable: KafkaConnectionError"),
        ClusterEvent(T0 + 6, "zk_readable", None, None, "readable again"),
    ]
    config = ScenarioConfig("t", "", "", "3.9.1", [], {"metadata": {"mode": "kraft", "cluster_id": "x"}})
    svg = timeline_svg(_scenario(events=events, config=config), T0)
    assert svg is not None
    texts = "".join(ElementTree.fromstring(svg).itertext())
    assert "KRaft metadata unreadable" in texts and "ZooKeeper" not in texts
    assert "1 stretch(es) with KRaft metadata unreadable" in svg


def test_zookeeper_gaps_get_a_lane_and_a_legend_entry() -> None:
    events = [
        ClusterEvent(T0 + 2, "zk_unreadable", None, None, "ZooKeeper state unreadable: ConnectionLoss"),
        ClusterEvent(T0 + 6, "zk_readable", None, None, "readable again"),
        ClusterEvent(T0 + 7, "leader", "t", 0, "leader 0 -> 1"),
    ]
    svg = timeline_svg(_scenario(events=events), T0)
    assert svg is not None
    texts = "".join(ElementTree.fromstring(svg).itertext())
    assert "ZooKeeper unreadable" in texts and "ZooKeeper" in texts.replace("ZooKeeper unreadable", "")
    assert "1 cluster change(s); 1 stretch(es) with ZooKeeper unreadable" in svg
    assert "other" not in texts  # the gap events are a band, not unknown markers
    plain = timeline_svg(_scenario(events=events[2:]), T0)
    assert plain is not None and "ZooKeeper" not in "".join(ElementTree.fromstring(plain).itertext())


def test_a_migrations_phases_are_a_lane_of_named_bars_read_from_the_history(tmp_path: Path) -> None:
    rows = [{"phase": "provision", "ts": T0, "mono": 1.0, "end_ts": T0 + 4, "end_mono": 5.0,
             "outcome": "completed", "detail": "cluster id x", "steps": "start kraft-a as migrating"},
            {"phase": "enter_migration", "ts": T0 + 4, "mono": 5.0, "end_ts": T0 + 30, "end_mono": 31.0,
             "outcome": "failed", "detail": "RuntimeError: kafka-1 did not start", "steps": None}]
    with HistoryWriter(tmp_path / "h", run_id="r") as writer:
        for row in rows:
            writer.append("migration", row)
    problems: list[str] = []
    phases = migration_phases(tmp_path / "h", problems)
    assert problems == [] and [(p.phase, p.completed) for p in phases] == [("provision", True),
                                                                          ("enter_migration", False)]
    svg = timeline_svg(_scenario(migration=phases), T0)
    assert svg is not None
    texts = "".join(ElementTree.fromstring(svg).itertext())
    assert "migration" in texts and "provision" in texts and "enter migration" in texts
    assert "#ee99aa" in svg.lower()  # the failed phase drawn in red
    alone = [MigrationPhase("copy", T0, T0 + 1, "completed")]
    assert timeline_svg(_scenario(migration=alone), T0) is not None
    assert migration_phases(tmp_path / "none", problems) == [] and problems == []
