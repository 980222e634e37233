"""The judge's shipped warm-up histories: complete under today's schema, and what the
generator writes (regenerate with ``python3 -m tests.synthetic.warm_up``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.history import read_manifest, validate_history
from harness.history.schema import STATUS_COMPLETE
from spark_jobs.warm_up import warm_up_histories, write_history
from tests.synthetic.warm_up import STAGES, stage_rows

REGENERATE = "stale: run `python3 -m tests.synthetic.warm_up`"


def test_one_shipped_history_per_stage() -> None:
    assert [p.stem for p in warm_up_histories()] == sorted(STAGES)


@pytest.mark.parametrize("shipped", warm_up_histories(), ids=lambda p: p.stem)
def test_a_shipped_history_is_a_valid_complete_history(shipped: Path, tmp_path: Path) -> None:
    written = write_history(shipped, tmp_path / "h")
    validate_history(written)
    assert read_manifest(written).status == STATUS_COMPLETE


@pytest.mark.parametrize("name", sorted(STAGES))
def test_a_shipped_history_is_what_the_generator_writes(name: str) -> None:
    [shipped] = [p for p in warm_up_histories() if p.stem == name]
    assert json.loads(shipped.read_text()) == stage_rows(STAGES[name]), REGENERATE
