"""The timeline's further panels: latency quantiles, partition health and client errors,
read from a history and drawn."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from harness.history import Expectations, HistoryWriter
from harness.history.verdict import Findings, PartitionFindings, Range, Verdict
from harness.report.load_panels import (
    acked_offsets,
    client_errors,
    group_activity,
    latency_buckets,
    leader_spans,
    partition_health,
    transaction_spans,
)
from harness.report.model import ClientError, FaultWindow, LeaderSpan, PartitionHealth, Scenario
from harness.report.offset_map import offset_map_svg
from harness.report.timeline import timeline_svg

T0 = 1_700_000_000.0
NER, NLP = "NOT_ENOUGH_REPLICAS", "NOT_LEADER_FOR_PARTITION"
ERRORS = [ClientError(T0 + 2.1, NER, 3), ClientError(T0 + 2.2, NER, 3), ClientError(T0 + 4.5, NLP, 3)]


def _state(sample: int, ts: float, leader: int, isr: list[int], readable: bool = True) -> dict[str, object]:
    row: dict[str, object] = {"sample": sample, "ts": T0 + ts, "mono": ts, "readable": readable}
    if readable:
        row.update(topic="t", partition=0, leader=leader, leader_epoch=0, isr=isr, replicas=[0, 1, 2])
    else:
        row.update(error="ConnectionLoss: gone")
    return row


def _history(hdir: Path) -> None:
    with HistoryWriter(hdir, "run") as w:
        for i in range(100):  # second 0: 1 ms each; second 1: 10 ms, one send of 2 s
            late = 2.0 if i == 99 else (0.001 if i < 50 else 0.010)
            w.append("sends", {"message_id": f"p-{i}", "producer_id": "p", "seq": i, "topic": "t",
                               "partition": 0, "zone": "a", "send_ts": T0 + (0 if i < 50 else 1) + i / 1000,
                               "ack_ts": T0 + (0 if i < 50 else 1) + i / 1000 + late, "outcome": "acked",
                               "offset": i})  # fmt: skip
        w.append("sends", {"message_id": "p-x", "producer_id": "p", "seq": 100, "topic": "t", "partition": 0,
                           "zone": "a", "send_ts": T0 + 1.5, "outcome": "unknown"})  # fmt: skip
        for row in (_state(0, 0, 0, [0, 1, 2]), _state(1, 2, 0, [0, 1]), _state(2, 4, -1, [1]),
                    _state(3, 5, -1, [], readable=False), _state(4, 6, 1, [1, 0, 2])):  # fmt: skip
            w.append("cluster_state", row)
        for e in ERRORS:
            attempt = {"ts": e.ts, "messages": e.messages, "error": e.error, "possibly_persisted": False}
            w.append("attempts", {"producer_id": "p", "topic": "t", "partition": 0, **attempt})


def test_latency_quantiles_per_send_bucket(tmp_path: Path) -> None:
    _history(tmp_path)
    problems: list[str] = []
    found = latency_buckets(tmp_path, 1.0, problems)
    assert problems == [] and found is not None
    first, second = found
    assert (first.start, round(first.p50, 4), round(first.max, 4)) == (T0, 0.001, 0.001)
    assert (second.start, round(second.p50, 4), round(second.max, 4)) == (T0 + 1, 0.010, 2.0)
    assert 0.01 < second.p99 < 2.0


def test_partition_health_counts_each_snapshot_and_marks_unreadable_ones(tmp_path: Path) -> None:
    _history(tmp_path)
    found = partition_health(tmp_path, [])
    assert found == [PartitionHealth(T0, 0, 0), PartitionHealth(T0 + 2, 1, 0), PartitionHealth(T0 + 4, 1, 1),
                     PartitionHealth(T0 + 5, None, None), PartitionHealth(T0 + 6, 0, 0)]  # fmt: skip


def test_client_errors_in_time_order(tmp_path: Path) -> None:
    _history(tmp_path)
    assert client_errors(tmp_path, []) == ERRORS


def test_the_panels_are_drawn_with_their_legends(tmp_path: Path) -> None:
    _history(tmp_path)
    s = Scenario("s", "s.html")
    s.latency = latency_buckets(tmp_path, 1.0, [])
    s.partition_health = partition_health(tmp_path, [])
    s.client_errors = ERRORS
    svg = timeline_svg(s, T0, end=T0 + 8)
    assert svg is not None
    texts = " ".join(ElementTree.fromstring(svg).itertext())
    for label in ("ack latency (s)", "p99", "under-replicated", "offline", "client errors",
                  "NOT_ENOUGH_REPLICAS (2)", "NOT_LEADER_FOR_PARTITION (1)"):  # fmt: skip
        assert label in texts, label
    bare = Scenario("s", "s.html", faults=[FaultWindow("kill", "kafka-0", T0, T0 + 1, True)])
    assert "ack latency" not in " ".join(ElementTree.fromstring(timeline_svg(bare, T0) or "").itertext())


def test_acked_offsets_and_leaders_of_the_mapped_partitions(tmp_path: Path) -> None:
    _history(tmp_path)
    acked = acked_offsets(tmp_path, {("t", 0)}, [])
    assert acked is not None
    mine = acked[("t", 0)]
    assert (mine.total, mine.offsets[:3], len(mine.ack_ts)) == (100, [0, 1, 2], 100)
    assert acked_offsets(tmp_path, set(), []) == {}
    spans = leader_spans(tmp_path, {("t", 0)}, T0 + 9, [])
    assert spans == {("t", 0): [LeaderSpan(T0, T0 + 4, 0, 0), LeaderSpan(T0 + 4, T0 + 6, -1, 0),
                                LeaderSpan(T0 + 6, T0 + 9, 1, 0)]}  # fmt: skip


def _verdict(*partitions: PartitionFindings) -> Verdict:
    return Verdict(Findings("r", "h", 1.0, list(partitions), [], {}), Expectations(), [], True)


def test_the_offset_map_draws_each_lossy_partition_with_its_leaders(tmp_path: Path) -> None:
    _history(tmp_path)
    lost = Range(40, 69, 30, T0 + 0.04, T0 + 0.07)
    partition = PartitionFindings("t", 0, ranges={"lost": [lost], "truncated": [lost]})
    s = Scenario("s", "s.html", faults=[FaultWindow("kill", "kafka-0", T0 + 1, T0 + 3, True)])
    s.verdict = _verdict(partition, PartitionFindings("t", 1))
    s.acked_offsets = acked_offsets(tmp_path, {("t", 0)}, [])
    s.leader_spans = leader_spans(tmp_path, {("t", 0)}, T0 + 9, [])
    svg = offset_map_svg(s, T0)
    assert svg is not None
    texts = " ".join(ElementTree.fromstring(svg).itertext())
    drawn = ("t-0", "leader 0 (epoch 0)", "no leader (epoch 0)", "acknowledged and lost", "truncated away")
    for label in drawn:
        assert label in texts, label
    assert "t-1" not in texts, "a partition without a finding has no map"
    assert 'aria-label="Offset map: t-0: lost 30 offsets, truncated 30 offsets"' in svg
    s.verdict = _verdict(PartitionFindings("t", 0))
    assert offset_map_svg(s, T0) is None


def _group_history(hdir: Path) -> None:
    """Group g: member a reads offsets 0-9 and commits 5; after a rebalance b resumes
    from 5 and reads 5-9 again (5 re-reads), then commits 10; one commit fails."""
    with HistoryWriter(hdir, "run") as w:
        for i in range(10):
            w.append("sends", {"message_id": f"p-{i}", "producer_id": "p", "seq": i, "topic": "t",
                               "partition": 0, "zone": "a", "send_ts": T0 + i, "ack_ts": T0 + i + 0.01,
                               "outcome": "acked", "offset": i})  # fmt: skip
        reads = [("a", 0, o, 1.0 + o) for o in range(10)] + [("b", 0, o, 20.0 + o) for o in range(5, 10)]
        for n, (member, assignment, offset, ts) in enumerate(reads):
            w.append("polls", {"consumer_id": member, "topic": "t", "partition": 0, "offset": offset,
                               "message_id": f"p-{offset}", "poll_ts": T0 + ts, "group": "g",
                               "assignment": assignment, "poll_seq": n})  # fmt: skip
        for member, ts, event in (("a", 0.5, "assigned"), ("a", 15.0, "revoked"), ("b", 16.0, "assigned")):
            w.append("rebalances", {"group": "g", "consumer_id": member, "ts": T0 + ts, "event": event,
                                    "assignment": 0, "topic": "t", "partition": 0})  # fmt: skip
        for member, ts, offset, outcome in (("a", 6.5, 5, "committed"), ("a", 14.0, 9, "failed"),
                                            ("b", 30.0, 10, "committed")):  # fmt: skip
            commit = {"offset": offset, "ts": T0 + ts, "mode": "sync", "outcome": outcome}
            w.append("commits", {"group": "g", "consumer_id": member, "topic": "t", "partition": 0, **commit})


def test_a_groups_rebalances_commits_rereads_and_lag(tmp_path: Path) -> None:
    _group_history(tmp_path)
    [g] = group_activity(tmp_path, []) or []
    assert [(c.ts - T0, c.consumer_id, c.event) for c in g.changes] == [
        (0.5, "a", "assigned"), (15.0, "a", "revoked"), (16.0, "b", "assigned")]
    assert [(ts - T0, ok) for ts, ok in g.commits] == [(6.5, True), (14.0, False), (30.0, True)]
    assert g.rereads == 5 and len(g.reread_ts) == 5
    # At 6.5 s, offsets 0-6 were acknowledged (end 7), 5 committed: lag 2; at 30 s, all 10 and 10.
    assert [(ts - T0, lag) for ts, lag in g.lag] == [(6.5, 2), (30.0, 0)]


def test_the_groups_lanes_and_lag_are_drawn(tmp_path: Path) -> None:
    _group_history(tmp_path)
    s = Scenario("s", "s.html")
    s.groups = group_activity(tmp_path, [])
    svg = timeline_svg(s, T0, end=T0 + 31)
    assert svg is not None
    texts = " ".join(ElementTree.fromstring(svg).itertext())
    for label in ("group g: members", "group g: commits", "commit failed", "read again after a rebalance (5)",
                  "group lag"):  # fmt: skip
        assert label in texts, label
    assert group_activity(_empty(tmp_path / "none"), []) == []


def _empty(hdir: Path) -> Path:
    with HistoryWriter(hdir, "run"):
        pass
    return hdir


def test_the_transactions_lane_shows_each_outcome_and_the_gaps(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path, "run") as w:
        spans = ((1.0, 2.0, "committed"), (3.0, 4.0, "aborted"), (5.0, None, "unknown"),
                 (9.0, 10.0, "committed"))  # fmt: skip
        for n, (begin, end, outcome) in enumerate(spans):
            ended = None if end is None else T0 + end
            txn = {"transaction_id": f"x-{n}", "producer_id": "tp", "transactional_id": "tx"}
            w.append("transactions", {**txn, "begin_ts": T0 + begin, "end_ts": ended, "outcome": outcome})
    s = Scenario("s", "s.html")
    s.transactions = transaction_spans(tmp_path, [])
    assert s.transactions is not None and [t.outcome for t in s.transactions] == [
        "committed", "aborted", "unknown", "committed"]
    svg = timeline_svg(s, T0, end=T0 + 12)
    assert svg is not None
    texts = " ".join(ElementTree.fromstring(svg).itertext())
    told = ("transactions", "transaction committed (2)", "transaction aborted (1)", "transaction unknown (1)")
    for label in told:
        assert label in texts, label
