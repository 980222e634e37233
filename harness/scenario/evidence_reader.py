"""What a finished scenario recorded, read back as the evidence its checks judge.

The checks are pure functions of :class:`~harness.scenario.checks.Evidence`; this module
is the one place that builds it from a run: the closed history's tables (only the
columns checks read), the sampler's timeline and rows, the schedule's moments, the
probes' results and the ISR watched after the heal.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from harness import history as hist
from harness.scenario.checks import Evidence, Moment, Observed
from harness.scenario.isr_poll import IsrPoll, isr_after_heal
from harness.workload.client_settings import JAVA

if TYPE_CHECKING:
    from harness.scenario.runner import ScenarioRun

COLUMNS: dict[str, list[str]] = {
    "sends": ["producer_id", "partition", "send_ts", "ack_ts", "outcome", "message_id", "transaction_id"],
    "polls": ["consumer_id", "partition", "offset", "poll_ts", "message_id", "isolation"],
    "attempts": ["producer_id", "ts", "error"],
    "commits": ["group", "consumer_id", "topic", "partition", "offset", "ts", "outcome", "error"],
    "transactions": ["transaction_id", "producer_id", "begin_ts", "end_requested_ts", "end_ts", "outcome",
                     "error"],
    "final_log": ["message_id", "read_committed"],
    "final_offsets": ["group", "topic", "partition", "offset"],
}
"""The history's tables the checks read, and the columns they read of each."""


def history_rows(history: Path, table: str) -> list[dict[str, Any]]:
    """The closed history's ``table``, the columns checks read only, as rows."""
    return [row for part in hist.part_files(history, table)
            for row in pq.read_table(part, columns=COLUMNS[table]).to_pylist()]


def gather_evidence(run: ScenarioRun, isr: IsrPoll | None) -> Evidence:
    """Everything ``run`` recorded that a check may read; raises when a table cannot be read."""
    tables = {table: history_rows(run.dir / "history", table) for table in COLUMNS}
    records = [] if run.sampler is None else run.sampler.records()
    timeline = [Observed(r.mono, r.held_until(), state) for r in records
                if (state := r.with_modes()) is not None]
    stopped = Moment(run.workload_stopped or time.time(), run.workload_stopped_mono or time.monotonic())
    rows = None if run.sampler is None else run.sampler.rows()
    return Evidence(timeline, dict(run.moments), tables["sends"], stopped, tables["polls"],
                    tables["attempts"], dict(run.probe_results), tables["commits"], tables["transactions"],
                    tables["final_log"], tables["final_offsets"], run.topic, rows,
                    isr_after_heal(rows or [], run.topic, isr),
                    frozenset(p.name for p in run.spec.producers if p.client == JAVA))
