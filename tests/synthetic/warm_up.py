"""Write the judge's warm-up histories (``spark_jobs/warm_up_histories``) from the generator.

Run ``python3 -m tests.synthetic.warm_up`` after a schema change that the shipped files no
longer satisfy (tests/unit/test_warm_up_histories.py says when). Each is a small
generated history, its rows dumped as JSON (the split message-id columns left out: the
history writer derives them again).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.history import iter_tables
from harness.history.kinds import kind
from harness.history.schema import SPLIT_IDS
from spark_jobs.warm_up import FOLDER
from tests.synthetic.core import SynthSpec, generate

SENDS = 40
STAGES: dict[str, dict[str, Any]] = {
    "1-messages": {"anomalies": {kind(name).name: 1 for name in ("lost", "duplicate", "unexpected")}},
    "2-families": {"groups": True, "transactions": True, "pipelines": True},
}


def _derived(table: str) -> set[str]:
    split = SPLIT_IDS.get(table)
    return set() if split is None else {split.producer, split.seq}


def stage_rows(stage: dict[str, Any]) -> dict[str, Any]:
    """One generated history as the JSON the judge ships: its scenario and its rows."""
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-warm-up-") as folder:
        generate(SynthSpec(sends=SENDS, partitions=2, producers=2, consumers=1, **stage), folder)
        manifest = json.loads((Path(folder) / "manifest.json").read_text())
        tables = {}
        for table, data in iter_tables(folder):
            rows = [{k: v for k, v in row.items() if k not in _derived(table)} for row in data.to_pylist()]
            if rows:
                tables[table] = rows
    # Only the kinds with a rule other than 0 (a kind left out means 0), so a new kind in
    # the registry leaves the shipped files as they are.
    expectations = {k: v for k, v in manifest["scenario"]["expectations"].items() if v != 0}
    return {"scenario": {**manifest["scenario"], "expectations": expectations}, "tables": tables}


def as_text(data: dict[str, Any]) -> str:
    """JSON with one row per line, so a regenerated file diffs row by row."""
    tables = ",\n".join(
        f"{json.dumps(table)}: [\n" + ",\n".join(json.dumps(row, sort_keys=True) for row in rows) + "\n]"
        for table, rows in sorted(data["tables"].items())
    )
    return f'{{"scenario": {json.dumps(data["scenario"], sort_keys=True)},\n"tables": {{\n{tables}\n}}}}\n'


def main(folder: Path = FOLDER) -> None:
    folder.mkdir(exist_ok=True)
    for name, stage in STAGES.items():
        (folder / f"{name}.json").write_text(as_text(stage_rows(stage)))
        print(f"wrote {folder / name}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
