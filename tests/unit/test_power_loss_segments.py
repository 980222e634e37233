"""The power-loss model against real segment files written by a real broker.

tests/fixtures/power_loss/segments-<version>.tar.gz holds a partition's directory and
the broker's sync journal, taken right after a ``kill -9`` (see capture.py there): 35
records, each its own batch, on a topic with ``flush.messages=10``, so the broker synced
its segment after the 10th, 20th and 30th. A power loss then must leave exactly the first
30 records, ending on a whole batch, and take away the indexes it cannot vouch for."""

from __future__ import annotations

import struct
import tarfile
from pathlib import Path

import pytest

from faults.durability import Cut, cut_plan, durable_sizes, lost_bytes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "power_loss"
CAPTURES = sorted(FIXTURES.glob("segments-*.tar.gz"))
DATA = "/var/lib/kafka/data"
RECORDS, SYNCED = 35, 30


def _batches(log: bytes) -> list[tuple[int, int, int]]:
    """(base offset, record count, end position) of each whole v2 record batch in a
    segment; stops at a batch that does not fit, as Kafka's recovery does."""
    found, at = [], 0
    while at + 61 <= len(log):
        base, length = struct.unpack_from(">qi", log, at)
        end = at + 12 + length
        if log[at + 16] != 2 or end > len(log):
            break
        (count,) = struct.unpack_from(">i", log, at + 57)
        found.append((base, count, end))
        at = end
    return found


@pytest.fixture(params=CAPTURES, ids=lambda p: p.name)
def captured(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, list[str]]:
    with tarfile.open(request.param) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "data", (tmp_path / "sync-journal").read_text().splitlines(keepends=True)


def test_there_is_a_capture_to_check() -> None:
    assert CAPTURES, f"no segments-*.tar.gz in {FIXTURES}: run capture.py there"


def test_the_broker_wrote_every_record_before_it_died(captured: tuple[Path, list[str]]) -> None:
    data, _ = captured
    (log,) = sorted(data.rglob("*.log"))
    batches = _batches(log.read_bytes())
    assert sum(count for _, count, _ in batches) == RECORDS
    assert batches[-1][2] == log.stat().st_size


def test_a_power_loss_keeps_exactly_the_synced_records(captured: tuple[Path, list[str]]) -> None:
    data, journal = captured
    files = {f"{DATA}/{p.relative_to(data)}": p.stat().st_size for p in data.rglob("*") if p.is_file()}
    plan = cut_plan(durable_sizes(journal), files)
    (segment,) = [c for c in plan if c.path.endswith(".log")]
    assert segment.size is not None
    local = data / Path(segment.path).relative_to(DATA)
    kept = _batches(local.read_bytes()[: segment.size])
    assert sum(count for _, count, _ in kept) == SYNCED  # the records of the last fsync, no more
    assert [base for base, _, _ in kept] == list(range(SYNCED))  # one batch per record
    assert kept[-1][2] == segment.size  # the cut falls on a batch's end
    # memory-mapped indexes never pass a sync the journal sees: removed, Kafka rebuilds them
    assert {Path(c.path).suffix for c in plan if c.removes} >= {".index", ".timeindex"}
    assert lost_bytes([segment], files) == files[segment.path] - segment.size > 0


def test_without_the_journal_nothing_would_be_kept(captured: tuple[Path, list[str]]) -> None:
    """The journal is what the cut rests on: with none, every file is removed."""
    data, _ = captured
    files = {f"{DATA}/{p.relative_to(data)}": p.stat().st_size for p in data.rglob("*") if p.is_file()}
    assert cut_plan({}, files) == [Cut(path, None) for path in sorted(files)]
