"""History schema: round trip, expectations, and validation errors (no Spark)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.history import (
    ANOMALY_KINDS,
    SCHEMA_VERSION,
    SCHEMAS,
    Expectations,
    HistoryError,
    HistoryWriter,
    check_rule,
    iter_tables,
    read_manifest,
    split_message_id,
    validate_history,
    with_split_ids,
)

SEND = {
    "message_id": "prod-a-0-7",
    "producer_id": "prod-a-0",
    "seq": 7,
    "topic": "t",
    "partition": 1,
    "key": "k",
    "zone": "a",
    "send_ts": 10.0,
    "ack_ts": 10.5,
    "outcome": "acked",
    "offset": 3,
    "error": None,
}


def _write(path: Path, **scenario: object) -> Path:
    with HistoryWriter(path, run_id="r1", scenario=scenario, flush_rows=2) as w:
        for seq in range(5):
            w.append("sends", {**SEND, "seq": seq, "message_id": f"prod-a-0-{seq}"})
        w.append("final_log", {"topic": "t", "partition": 1, "offset": 3, "message_id": "x"})
    return path


def test_round_trip(tmp_path: Path) -> None:
    root = _write(tmp_path / "h", expectations={"lost": 0, "duplicate": "any"})
    manifest = validate_history(root)
    assert manifest.status == "complete"
    assert manifest.schema_version == SCHEMA_VERSION
    assert manifest.finished is not None and manifest.started is not None
    assert manifest.expectations.rule("duplicate") == "any"
    tables = dict(iter_tables(root))
    assert tables["sends"].num_rows == 5
    assert tables["sends"].column("seq").to_pylist() == [0, 1, 2, 3, 4]
    assert tables["polls"].num_rows == 0  # an empty part still carries the schema
    for name, table in tables.items():
        assert table.schema.equals(SCHEMAS[name])
    # flush_rows=2: five sends become three parts
    assert len(list((root / "sends").glob("part-*.parquet"))) == 3


def _polls(path: Path, *rows: dict[str, object]) -> Path:
    with HistoryWriter(path, run_id="r1") as w:
        for row in rows:
            w.append("polls", {"consumer_id": "c", "topic": "t", "partition": 0, "offset": 0,
                               "message_id": "prod-a-0-0", "poll_ts": 1.0, **row})  # fmt: skip
    return path


def test_a_group_read_without_poll_seq_is_refused(tmp_path: Path) -> None:
    fine = _polls(tmp_path / "fine", {"group": "g", "poll_seq": 0}, {"group": None, "poll_seq": None})
    validate_history(fine)  # a consumer outside a group may leave it null
    bad = _polls(tmp_path / "bad", {"group": "g", "poll_seq": 0}, {"group": "g", "poll_seq": None})
    with pytest.raises(HistoryError, match=r"1 group read\(s\) with a null poll_seq"):
        validate_history(bad)


def test_manifest_running_until_closed(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "h", run_id="r1")
    assert read_manifest(tmp_path / "h").status == "running"
    with pytest.raises(HistoryError, match="still being written"):
        validate_history(tmp_path / "h")
    writer.close()
    assert validate_history(tmp_path / "h").status == "complete"


def test_exception_marks_aborted(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), HistoryWriter(tmp_path / "h", run_id="r1"):
        raise RuntimeError("boom")
    with pytest.raises(HistoryError, match=r"not complete \(status aborted\)"):
        validate_history(tmp_path / "h")


def test_write_batch(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h", run_id="r1") as w:
        w.write_batch(
            "final_log",
            pa.table(
                {
                    "topic": ["t", "t"],
                    "partition": [0, 0],
                    "offset": [0, 1],
                    "message_id": ["a", None],
                }
            ),
        )
    assert dict(iter_tables(tmp_path / "h"))["final_log"].num_rows == 2


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: None, None),
        (lambda p: (p / "manifest.json").unlink(), "has no manifest.json"),
        (lambda p: (p / "manifest.json").write_text("{nope"), "not valid JSON"),
        (lambda p: [f.unlink() for f in (p / "polls").glob("*.parquet")], "table polls"),
        (lambda p: [f.unlink() for f in (p / "final_offsets").glob("*.parquet")], "table final_offsets"),
        (lambda p: _patch(p, schema_version=7), "schema_version 7, this reconciliation reads version 9"),
        (lambda p: _patch(p, schema_version=99), "schema_version 99"),
        (lambda p: _patch(p, status="running"), "still being written"),
        (lambda p: _patch(p, scenario={"expectations": {"lost": "maybe"}}), "'lost'"),
        (lambda p: _patch(p, scenario={"expectations": {"bogus": 0}}), "unknown anomaly"),
        (
            lambda p: _replace(p, "final_log", pa.table({"topic": ["t"], "partition": [0]})),
            "lacks column.s. offset, message_id, id_producer, id_seq",
        ),
        (
            lambda p: _replace(
                p,
                "final_log",
                pa.table(
                    {
                        "topic": ["t"],
                        "partition": pa.array([0], pa.int64()),
                        "offset": [1],
                        "message_id": ["m"],
                        "id_producer": ["m"],
                        "id_seq": pa.array([None], pa.int64()),
                        "read_committed": pa.array([None], pa.bool_()),
                    }
                ),
            ),
            "column partition .* is int64, expected int32",
        ),
    ],
)
def test_validation_errors(tmp_path: Path, mutate: Callable[[Path], object], message: str | None) -> None:
    root = _write(tmp_path / "h")
    mutate(root)
    if message is None:
        validate_history(root)
        return
    with pytest.raises(HistoryError, match=message) as info:
        validate_history(root)
    assert "\n" not in str(info.value)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="does not exist"):
        validate_history(tmp_path / "nope")


def _patch(root: Path, **fields: object) -> None:
    data = json.loads((root / "manifest.json").read_text())
    data.update(fields)
    (root / "manifest.json").write_text(json.dumps(data))


def _replace(root: Path, table: str, data: pa.Table) -> None:
    for f in (root / table).glob("*.parquet"):
        f.unlink()
    pq.write_table(data, root / table / "part-0000.parquet")


def test_expectations_round_trip_and_defaults() -> None:
    exp = Expectations.from_dict({"lost": "at_least_one", "duplicate": "any", "unseen": 3})
    assert Expectations.from_dict(exp.to_dict()) == exp
    assert Expectations().to_dict() == dict.fromkeys(ANOMALY_KINDS, 0)
    with pytest.raises(HistoryError):
        Expectations.from_dict({"lost": True})
    with pytest.raises(HistoryError):
        Expectations.from_dict({"lost": -1})


@pytest.mark.parametrize(
    ("rule", "count", "passed"),
    [
        (0, 0, True),
        (0, 1, False),
        (2, 2, True),
        ("any", 10**6, True),
        ("at_least_one", 0, False),
        ("at_least_one", 4, True),
    ],
)
def test_rules(rule: int | str, count: int, passed: bool) -> None:
    result = check_rule("lost", rule, count)  # type: ignore[arg-type]
    assert result.passed is passed
    assert f"lost={count}" in result.reason


def test_judge_covers_every_kind() -> None:
    results = Expectations(lost="at_least_one").judge({"lost": 2, "duplicate": 1})
    assert [r.kind for r in results] == list(ANOMALY_KINDS)
    assert {r.kind for r in results if not r.passed} == {"duplicate"}


@pytest.mark.parametrize(
    ("mid", "split"),
    [
        ("prod-a-0-17", ("prod-a-0", 17)),  # the producer id keeps its own dashes
        ("ghost-0", ("ghost", 0)),
        ("a--1", ("a-", 1)),  # "-1" is not a seq: the producer id ends in "-"
        ("a-01", ("a-01", None)),  # not canonical decimal: kept whole, matches only itself
        ("-5", ("-5", None)),  # no producer
        ("a-", ("a-", None)),
        ("a-3\n", ("a-3\n", None)),
        ("x\n-3", ("x\n", 3)),
        ("a-" + "9" * 19, ("a-" + "9" * 19, None)),  # more than 18 digits
        (None, (None, None)),
    ],
)
def test_split_message_id(mid: str | None, split: tuple[str | None, int | None]) -> None:
    assert split_message_id(mid) == split
    table = with_split_ids(pa.table({"message_id": pa.array([mid], pa.string())}))
    assert (table["id_producer"][0].as_py(), table["id_seq"][0].as_py()) == split


@given(st.lists(st.one_of(st.none(), st.text("ab-019\n", max_size=8)), max_size=30))
def test_columnar_split_agrees_with_row_split(ids: list[str | None]) -> None:
    table = with_split_ids(pa.table({"message_id": pa.array(ids, pa.string())}))
    got = list(zip(table["id_producer"].to_pylist(), table["id_seq"].to_pylist(), strict=True))
    assert got == [split_message_id(m) for m in ids]


def test_writer_stores_the_split_of_every_record_id(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h", run_id="r") as w:
        w.append("polls", {"consumer_id": "c", "topic": "t", "partition": 0, "offset": 1,
                           "message_id": "p-q-3", "poll_ts": 1.0})
        w.write_batch("final_log", pa.table({"topic": ["t", "t"], "partition": pa.array([0, 0], pa.int32()),
                                             "offset": [0, 1], "message_id": ["p-q-3", None]}))
    tables = dict(iter_tables(tmp_path / "h"))
    split = ["id_producer", "id_seq"]
    assert tables["polls"].select(split).to_pylist() == [{"id_producer": "p-q", "id_seq": 3}]
    assert tables["final_log"].select(split).to_pylist() == [
        {"id_producer": "p-q", "id_seq": 3},
        {"id_producer": None, "id_seq": None},
    ]


def test_older_schema_version_is_refused(tmp_path: Path) -> None:
    root = _write(tmp_path / "h")
    _patch(root, schema_version=1)
    expected = f"schema_version 1, this reconciliation reads version {SCHEMA_VERSION}"
    with pytest.raises(HistoryError, match=expected):
        validate_history(root)


def test_cluster_state_rows_round_trip_with_list_columns_and_gap_rows(tmp_path: Path) -> None:
    """The sampler's table: broker lists stay lists, a gap row keeps its nulls, and a
    history whose writer recorded no sample still validates with an empty table."""
    state = {"sample": 0, "ts": 10.0, "mono": 1.0, "readable": True, "error": None, "controller": 1,
             "controller_epoch": 3, "live_brokers": [0, 1, 2], "zk_modes": '{"zookeeper-0": "leader"}',
             "topic": "t", "partition": 0, "leader": 1, "leader_epoch": 4, "isr": [1, 2],
             "replicas": [0, 1, 2], "migration_phase": "dual_write"}
    gap = {**dict.fromkeys(state), "sample": 1, "ts": 11.0, "mono": 2.0, "readable": False,
           "error": "ConnectionLoss"}
    with HistoryWriter(tmp_path / "h", run_id="r1") as w:
        w.append("cluster_state", state)
        w.append("cluster_state", gap)
    validate_history(tmp_path / "h")
    assert dict(iter_tables(tmp_path / "h"))["cluster_state"].to_pylist() == [state, gap]
    empty = _write(tmp_path / "e")
    validate_history(empty)
    assert dict(iter_tables(empty))["cluster_state"].num_rows == 0


def test_pipeline_output_sends_store_the_split_of_their_source_id(tmp_path: Path) -> None:
    """Schema 7: a send that transforms an input record keeps that record's id split as
    polls keep theirs, by row and by batch; an ordinary send's source columns stay null."""
    source = {"source_group": "etl", "source_topic": "in", "source_partition": 2, "source_offset": 9,
              "source_message_id": "prod-a-0-41"}
    with HistoryWriter(tmp_path / "h", run_id="r1") as w:
        w.append("sends", {**SEND, **source})
        w.append("sends", {**SEND, "seq": 8, "message_id": "prod-a-0-8"})
        w.write_batch("sends", pa.Table.from_pylist([{**SEND, "seq": 9, "message_id": "prod-a-0-9", **source,
                                                      "source_message_id": "not an id"}]))
        w.write_batch("sends", pa.Table.from_pylist([{**SEND, "seq": 10, "message_id": "prod-a-0-10"}]))
    validate_history(tmp_path / "h")
    split = ["source_group", "source_offset", "source_id_producer", "source_id_seq"]
    assert dict(iter_tables(tmp_path / "h"))["sends"].select(split).to_pylist() == [
        {"source_group": "etl", "source_offset": 9, "source_id_producer": "prod-a-0", "source_id_seq": 41},
        dict.fromkeys(split),
        {"source_group": "etl", "source_offset": 9, "source_id_producer": "not an id", "source_id_seq": None},
        dict.fromkeys(split),
    ]


def test_final_offsets_and_transactional_commits_round_trip(tmp_path: Path) -> None:
    """Schema 7's new table and the commit row of offsets sent to a transaction."""
    looked_up = [{"group": "g", "topic": "t", "partition": 0, "offset": 17, "ts": 5.0},
                 {"group": "g", "topic": "t", "partition": 1, "offset": None, "ts": 5.0}]
    commit = {"group": "g", "consumer_id": "m", "assignment": 0, "topic": "t", "partition": 0, "offset": 17,
              "ts": 4.0, "mode": "txn", "outcome": "unknown", "error": "_ABANDONED", "transaction_id": "m-3"}
    with HistoryWriter(tmp_path / "h", run_id="r1") as w:
        for row in looked_up:
            w.append("final_offsets", row)
        w.append("commits", commit)
    validate_history(tmp_path / "h")
    tables = dict(iter_tables(tmp_path / "h"))
    assert tables["final_offsets"].to_pylist() == looked_up
    assert tables["commits"].to_pylist() == [commit]
    assert SCHEMA_VERSION == 9
