"""The run history: what a chaos run recorded, in one versioned on-disk format.

The harness writes a history while a run is in progress and the Spark reconciliation
(``spark_jobs/reconcile.py``) judges it afterwards. The two sides only share this module,
so the schema lives here and nowhere else; docs/HISTORY.md explains every column and
the verdict JSON built from it.

A history is a directory::

    manifest.json            schema_version, run_id, status, times, scenario metadata
    sends/part-NNNN.parquet  one row per send attempt, as the producer saw it
    polls/part-NNNN.parquet  one row per record a live consumer polled
    final_log/part-NNNN.parquet  every record from log start to high watermark, after healing
    faults/part-NNNN.parquet fault inject/heal events
    attempts/part-NNNN.parquet one row per produce attempt (a batch) that failed

Tables are directories of part files so that a long run can flush as it goes instead of
holding everything in memory; Spark and pyarrow read a directory of parts as one table.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes meaning: the
reconciliation refuses histories of another version instead of misreading them.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

SCHEMA_VERSION = 3
MANIFEST = "manifest.json"

# Manifest statuses. Only a "complete" history may be judged: a "running" one is still
# being written (or its writer died without closing), an "aborted" one stopped on error.
STATUS_RUNNING = "running"
STATUS_COMPLETE = "complete"
STATUS_ABORTED = "aborted"

# Send outcomes as the producer client saw them. "failed" means a definitive error code
# (the write did not happen, as far as the client was told); "unknown" means in doubt
# (timed out, connection lost): the write may or may not be on the log.
OUTCOME_ACKED = "acked"
OUTCOME_FAILED = "failed"
OUTCOME_UNKNOWN = "unknown"
OUTCOMES = (OUTCOME_ACKED, OUTCOME_FAILED, OUTCOME_UNKNOWN)

SENDS_SCHEMA = pa.schema(
    [
        pa.field("message_id", pa.string(), nullable=False),
        pa.field("producer_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("key", pa.string()),
        pa.field("zone", pa.string()),
        pa.field("send_ts", pa.float64(), nullable=False),
        pa.field("ack_ts", pa.float64()),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("offset", pa.int64()),
        pa.field("error", pa.string()),
    ]
)

POLLS_SCHEMA = pa.schema(
    [
        pa.field("consumer_id", pa.string(), nullable=False),
        pa.field("zone", pa.string()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("message_id", pa.string()),
        pa.field("poll_ts", pa.float64(), nullable=False),
        pa.field("id_producer", pa.string()),
        pa.field("id_seq", pa.int64()),
    ]
)

FINAL_LOG_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("message_id", pa.string()),
        pa.field("id_producer", pa.string()),
        pa.field("id_seq", pa.int64()),
    ]
)

FAULTS_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("mono", pa.float64(), nullable=False),
        pa.field("fault", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("targets", pa.string()),
        pa.field("outcome", pa.string()),
    ]
)

# One row per failed produce attempt of a batch (librdkafka's per-batch errors, see
# harness/attempts.py): the errors a final delivery report hides, and whether the attempt
# may have appended its messages although they did not end acknowledged.
ATTEMPTS_SCHEMA = pa.schema(
    [
        pa.field("producer_id", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("messages", pa.int32(), nullable=False),
        pa.field("error", pa.string(), nullable=False),
        pa.field("actions", pa.string()),
        pa.field("possibly_persisted", pa.bool_(), nullable=False),
    ]
)

SCHEMAS: Mapping[str, pa.Schema] = {
    "sends": SENDS_SCHEMA,
    "polls": POLLS_SCHEMA,
    "final_log": FINAL_LOG_SCHEMA,
    "faults": FAULTS_SCHEMA,
    "attempts": ATTEMPTS_SCHEMA,
}
TABLES = tuple(SCHEMAS)

# ------------------------------------------------------------------------- message ids

# A message id is "<producer_id>-<seq>": the producer id may contain "-", the seq follows
# the last one, in canonical decimal (no sign, no leading zero, at most 18 digits so it
# fits an int64). Polled and final-log records carry their id split this way in
# id_producer / id_seq, written by HistoryWriter, so that the reconciliation matches
# records to sends on (producer, seq) without parsing millions of strings itself.
MESSAGE_ID_PATTERN = r"(?s)(?P<id_producer>.+)-(?P<id_seq>0|[1-9][0-9]{0,17})"
_MESSAGE_ID = re.compile(MESSAGE_ID_PATTERN)
SPLIT_ID_TABLES = ("polls", "final_log")


def split_message_id(mid: str | None) -> tuple[str | None, int | None]:
    """(id_producer, id_seq) of a record's message id: the producer and seq it names; an
    id that names none is kept whole with seq None (it can only match itself); no id gives
    (None, None)."""
    if mid is None:
        return None, None
    m = _MESSAGE_ID.fullmatch(mid)
    if m is None:
        return mid, None
    return m["id_producer"], int(m["id_seq"])


def with_split_ids(data: pa.Table) -> pa.Table:
    """``data`` with id_producer / id_seq (re)computed from message_id, columnar: the same
    rule as ``split_message_id``, for bulk writers of millions of rows."""
    mid = data.column("message_id")
    parts = pc.extract_regex(mid, f"^(?:{MESSAGE_ID_PATTERN})$")  # RE2: $ is the very end
    named = pc.is_valid(parts)
    producer = pc.if_else(named, pc.struct_field(parts, "id_producer"), mid)
    seq = pc.if_else(named, pc.cast(pc.struct_field(parts, "id_seq"), pa.int64()), None)
    for name, column in (("id_producer", producer), ("id_seq", seq)):
        if name in data.column_names:
            data = data.drop_columns(name)
        data = data.append_column(name, column)
    return data


class HistoryError(Exception):
    """A history that cannot be judged. The message is one line, meant for a human."""


# --------------------------------------------------------------------------- expectations

# The anomaly kinds the reconciliation reports; the order is the report's order.
ANOMALY_KINDS = (
    "lost",
    "duplicate",
    "truncated",
    "unexpected",
    "aborted_read",
    "reordered",
    "unseen",
)

RuleWord = Literal["any", "at_least_one"]
Rule = int | RuleWord


@dataclass(frozen=True)
class RuleResult:
    """How one anomaly count fared against its rule, with a reason a reader can act on."""

    kind: str
    rule: Rule
    count: int
    passed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rule": self.rule,
            "count": self.count,
            "passed": self.passed,
            "reason": self.reason,
        }


def check_rule(kind: str, rule: Rule, count: int) -> RuleResult:
    """Judge one count: an int is a maximum, "any" always passes, "at_least_one" demands
    the anomaly be seen (the unsafe side of a scenario must be caught losing data, or the
    checker is blind)."""
    if rule == "any":
        return RuleResult(kind, rule, count, True, f"{kind}={count}, any count accepted")
    if rule == "at_least_one":
        ok = count >= 1
        why = "caught as required" if ok else "expected at least one, checker saw none"
        return RuleResult(kind, rule, count, ok, f"{kind}={count}, {why}")
    ok = count <= rule
    why = f"within max {rule}" if ok else f"exceeds max {rule}"
    return RuleResult(kind, rule, count, ok, f"{kind}={count} {why}")


def _parse_rule(kind: str, value: object) -> Rule:
    bad = f"expectation {kind!r}: {value!r} is not an int, 'any' or 'at_least_one'"
    # bool is an int subclass; True read as "max 1" would be a silent misreading.
    if isinstance(value, bool):
        raise HistoryError(bad)
    if isinstance(value, int):
        if value < 0:
            raise HistoryError(f"expectation {kind!r}: maximum {value} is negative")
        return value
    if value == "any":
        return "any"
    if value == "at_least_one":
        return "at_least_one"
    raise HistoryError(bad)


@dataclass(frozen=True)
class Expectations:
    """A scenario's acceptance rules, one per anomaly kind.

    Every kind defaults to 0 (none tolerated): a scenario has to say out loud which
    anomalies it accepts, so forgetting a rule makes a run fail rather than pass.
    """

    lost: Rule = 0
    duplicate: Rule = 0
    truncated: Rule = 0
    unexpected: Rule = 0
    aborted_read: Rule = 0
    reordered: Rule = 0
    unseen: Rule = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Expectations:
        unknown = sorted(set(data) - set(ANOMALY_KINDS))
        if unknown:
            raise HistoryError(f"unknown anomaly kind(s) in expectations: {', '.join(unknown)}")
        return cls(**{k: _parse_rule(k, v) for k, v in data.items()})

    def to_dict(self) -> dict[str, Rule]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def rule(self, kind: str) -> Rule:
        if kind not in ANOMALY_KINDS:
            raise KeyError(kind)
        rule: Rule = getattr(self, kind)
        return rule

    def judge(self, counts: Mapping[str, int]) -> list[RuleResult]:
        """One result per kind, in report order; a kind missing from counts counts 0."""
        return [check_rule(k, self.rule(k), int(counts.get(k, 0))) for k in ANOMALY_KINDS]


# ------------------------------------------------------------------------------ manifest


@dataclass
class Manifest:
    """The history's header. ``scenario`` is free-form except for ``expectations``."""

    run_id: str
    status: str = STATUS_RUNNING
    schema_version: int = SCHEMA_VERSION
    started: float | None = None
    finished: float | None = None
    scenario: dict[str, Any] = field(default_factory=dict)

    @property
    def expectations(self) -> Expectations:
        return Expectations.from_dict(self.scenario.get("expectations") or {})

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "status": self.status,
            "started": self.started,
            "finished": self.finished,
            "scenario": self.scenario,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Manifest:
        try:
            return cls(
                run_id=str(data["run_id"]),
                status=str(data["status"]),
                schema_version=int(data["schema_version"]),
                started=data.get("started"),
                finished=data.get("finished"),
                scenario=dict(data.get("scenario") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HistoryError(f"manifest is malformed: {exc!r}") from exc


# ------------------------------------------------------------------------------- writing


class HistoryWriter:
    """Buffers rows per table and writes them as Parquet part files.

    The manifest says "running" from the moment the writer opens until ``close()``, so a
    reader that races the harness (or finds the remains of a crashed run) is refused
    instead of judging half a history. Part files are written under a dot-name and renamed
    into place, because Spark and pyarrow skip dot-files: a reader never sees half a part.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        run_id: str,
        scenario: Mapping[str, Any] | None = None,
        flush_rows: int = 100_000,
    ) -> None:
        self.root = Path(path)
        self.flush_rows = flush_rows
        self.manifest = Manifest(run_id=run_id, started=time.time(), scenario=dict(scenario or {}))
        # Validate the rules now: a typo should fail the run at start, not at judgement.
        self.manifest.expectations  # noqa: B018
        self._rows: dict[str, list[Mapping[str, Any]]] = {t: [] for t in TABLES}
        self._parts: dict[str, int] = dict.fromkeys(TABLES, 0)
        self._closed = False
        self.root.mkdir(parents=True, exist_ok=True)
        for table in TABLES:
            (self.root / table).mkdir(exist_ok=True)
        self._write_manifest()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close(STATUS_COMPLETE if exc_type is None else STATUS_ABORTED)

    def append(self, table: str, row: Mapping[str, Any]) -> None:
        """Buffer one row (a dict keyed by column name); flushes every ``flush_rows``."""
        buf = self._rows[self._check(table)]
        if table in SPLIT_ID_TABLES:
            producer, seq = split_message_id(row.get("message_id"))
            row = {**row, "id_producer": producer, "id_seq": seq}
        buf.append(row)
        if len(buf) >= self.flush_rows:
            self.flush(table)

    def write_batch(self, table: str, data: pa.Table | pa.RecordBatch) -> None:
        """Write already-columnar rows as one part (bulk writers and generators)."""
        schema = SCHEMAS[self._check(table)]
        self.flush(table)
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if table in SPLIT_ID_TABLES:
            data = with_split_ids(data)
        self._write_part(table, data.select(schema.names).cast(schema))

    def flush(self, table: str | None = None) -> None:
        for name in (table,) if table else TABLES:
            rows = self._rows[self._check(name)]
            if rows:
                self._write_part(name, pa.Table.from_pylist(rows, schema=SCHEMAS[name]))
                self._rows[name] = []

    def close(self, status: str = STATUS_COMPLETE) -> None:
        """Flush everything, give every table at least one (maybe empty) part so readers
        always find its schema, then publish the final status."""
        if self._closed:
            return
        self.flush()
        for table in TABLES:
            if self._parts[table] == 0:
                self._write_part(table, SCHEMAS[table].empty_table())
        self.manifest.status = status
        self.manifest.finished = time.time()
        self._write_manifest()
        self._closed = True

    def _check(self, table: str) -> str:
        if self._closed:
            raise HistoryError(f"history {self.root} is closed")
        if table not in SCHEMAS:
            raise HistoryError(f"unknown history table {table!r}")
        return table

    def _write_part(self, table: str, data: pa.Table) -> None:
        name = f"part-{self._parts[table]:04d}.parquet"
        tmp = self.root / table / f".{name}.tmp"
        pq.write_table(data.cast(SCHEMAS[table]), tmp)
        tmp.replace(self.root / table / name)
        self._parts[table] += 1

    def _write_manifest(self) -> None:
        tmp = self.root / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(self.manifest.to_dict(), indent=2, sort_keys=True))
        tmp.replace(self.root / MANIFEST)


# ------------------------------------------------------------------------------- reading


def _filesystem(path: str | os.PathLike[str]) -> tuple[pafs.FileSystem, str]:
    """Local paths and URIs (s3://, hdfs://, gs://) alike, so a history on a cluster's
    storage is validated by the same code as one on a laptop."""
    text = os.fspath(path)
    if "://" in text:
        fs, root = pafs.FileSystem.from_uri(text)
        return fs, root.rstrip("/")
    return pafs.LocalFileSystem(), str(Path(text).absolute())


def read_manifest(path: str | os.PathLike[str]) -> Manifest:
    fs, root = _filesystem(path)
    info = fs.get_file_info(root)
    if info.type != pafs.FileType.Directory:
        raise HistoryError(f"history directory {path} does not exist")
    try:
        with fs.open_input_stream(f"{root}/{MANIFEST}") as stream:
            raw = stream.read()
    except (FileNotFoundError, OSError) as exc:
        raise HistoryError(f"history {path} has no {MANIFEST}") from exc
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise HistoryError(f"{MANIFEST} in {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise HistoryError(f"{MANIFEST} in {path} is not a JSON object")
    return Manifest.from_dict(data)


def part_files(path: str | os.PathLike[str], table: str) -> list[str]:
    """The visible Parquet parts of one table (dot- and underscore-files are skipped, as
    Spark skips them)."""
    fs, root = _filesystem(path)
    selector = pafs.FileSelector(f"{root}/{table}", allow_not_found=True)
    return sorted(
        i.path
        for i in fs.get_file_info(selector)
        if i.type == pafs.FileType.File
        and i.base_name.endswith(".parquet")
        and not i.base_name.startswith((".", "_"))
    )


def history_bytes(path: str | os.PathLike[str], tables: tuple[str, ...] = TABLES) -> int:
    """Total size of the tables' part files: lets a reader size its work before reading."""
    fs, _ = _filesystem(path)
    files = [f for t in tables for f in part_files(path, t)]
    return sum(i.size or 0 for i in fs.get_file_info(files)) if files else 0


def _normalise(t: pa.DataType) -> pa.DataType:
    # Spark reads these alike, so a writer's choice between them is not an error.
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    return t


def _check_schema(table: str, part: str, actual: pa.Schema) -> None:
    expected = SCHEMAS[table]
    missing = [n for n in expected.names if n not in actual.names]
    if missing:
        raise HistoryError(f"table {table}: {part} lacks column(s) {', '.join(missing)}")
    for want in expected:
        got = actual.field(want.name).type
        if not _normalise(got).equals(want.type):
            raise HistoryError(f"table {table}: column {want.name} in {part} is {got}, expected {want.type}")


def validate_history(path: str | os.PathLike[str]) -> Manifest:
    """Check that a history can be judged, and return its manifest.

    Only footers are read, so this is cheap even for a 100M-row history; it runs before
    Spark starts so that a bad history fails fast with one line instead of a stack trace
    from deep inside a job. Extra columns are allowed (a newer harness may add some).
    """
    manifest = read_manifest(path)
    if manifest.schema_version != SCHEMA_VERSION:
        raise HistoryError(
            f"history {path} has schema_version {manifest.schema_version}, "
            f"this reconciliation reads version {SCHEMA_VERSION}"
        )
    if manifest.status == STATUS_RUNNING:
        raise HistoryError(f"history {path} is still being written (status running)")
    if manifest.status != STATUS_COMPLETE:
        raise HistoryError(f"history {path} is not complete (status {manifest.status})")
    manifest.expectations  # noqa: B018  (raises HistoryError on bad rules)
    fs, _ = _filesystem(path)
    for table in TABLES:
        parts = part_files(path, table)
        if not parts:
            raise HistoryError(f"history {path} has no Parquet files for table {table}")
        for part in parts:
            try:
                schema = pq.read_schema(part, filesystem=fs)
            except (OSError, pa.ArrowInvalid) as exc:
                raise HistoryError(f"table {table}: {part} is not readable Parquet: {exc}") from exc
            _check_schema(table, part, schema)
    return manifest


def iter_tables(path: str | os.PathLike[str]) -> Iterator[tuple[str, pa.Table]]:
    """Read every table fully with pyarrow: for tests and small tools, not for Spark."""
    fs, _ = _filesystem(path)
    for table in TABLES:
        parts = part_files(path, table)
        tables = [pq.read_table(p, filesystem=fs, schema=SCHEMAS[table]) for p in parts]
        yield table, pa.concat_tables(tables) if tables else SCHEMAS[table].empty_table()
