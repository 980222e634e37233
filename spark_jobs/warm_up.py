"""The tiny fixed histories a judge warms its Spark session on, shipped with the judge.

A session's first judgement pays for starting the JVM and planning every query once; a
run's judge therefore judges these in the background while the first scenario runs (see
:class:`harness.scenario.judge.Judge`). They are written as JSON rows, one file per
history (``warm_up_histories/*.json``): the plain message kinds with a loss, a duplicate
and an unexpected record planted, and one with a consumer group, transactions and a
pipeline, so that every family's queries are planned. JSON rather than Parquet keeps
them readable and lets a later schema add nullable columns without rewriting them;
:func:`write_history` turns one into a history folder through the history's own writer.
They are test data made once, by ``tests/synthetic/warm_up.py``; the judge never
generates histories.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.history import HistoryWriter

FOLDER = Path(__file__).with_name("warm_up_histories")


def warm_up_histories() -> list[Path]:
    """The shipped histories, in the order they are judged (by file name)."""
    return sorted(FOLDER.glob("*.json"))


def write_history(source: Path, dest: Path) -> Path:
    """Write the history ``source`` holds as a complete history folder at ``dest``."""
    data: dict[str, Any] = json.loads(source.read_text())
    with HistoryWriter(dest, run_id=f"warm-up-{source.stem}", scenario=data["scenario"]) as writer:
        for table, rows in data["tables"].items():
            for row in rows:
                writer.append(table, row)
    return dest
