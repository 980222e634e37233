"""The power-loss model without Docker: the sync-journal library, preloaded into a real
process on this host, records what that process made durable, and the model cuts the
process's files back to exactly that (faults/durability.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from faults.durability import Cut, JournalError, cut_plan, durable_sizes, lost_bytes
from harness.cluster.images import sync_journal_library

# -- the model, from journal lines --------------------------------------------------------


def test_a_file_keeps_what_its_last_sync_covered() -> None:
    journal = ["S 100 /d/a.log\n", "S 160 /d/a.log\n"]
    assert durable_sizes(journal) == {"/d/a.log": 160}
    assert cut_plan(durable_sizes(journal), {"/d/a.log": 250}) == [Cut("/d/a.log", 160)]


def test_a_file_never_synced_is_removed_and_a_synced_one_left_alone() -> None:
    files = {"/d/old.log": 10, "/d/new.log": 90, "/d/x.index": 8}
    plan = cut_plan(durable_sizes(["S 10 /d/old.log\n"]), files)
    assert plan == [Cut("/d/new.log", None), Cut("/d/x.index", None)]
    assert lost_bytes(plan, files) == 98


def test_files_there_at_start_count_as_durable() -> None:
    assert cut_plan(durable_sizes(["B 3 /z/myid\n"]), {"/z/myid": 3}) == []


def test_a_truncation_takes_away_synced_bytes_beyond_it() -> None:
    journal = ["S 100 /d/a.log\n", "T 40 /d/a.log\n"]
    assert durable_sizes(journal) == {"/d/a.log": 40}
    assert durable_sizes([*journal, "S 70 /d/a.log\n"]) == {"/d/a.log": 70}
    assert durable_sizes(["S 100 /d/a.log\n", "T 400 /d/a.log\n"]) == {"/d/a.log": 100}


def test_renames_carry_durability_for_files_and_whole_directories() -> None:
    journal = [
        "S 10 /d/cp.tmp\n", "R 0 /d/cp.tmp\t/d/cp\n",  # a checkpoint: write, sync, rename
        "S 5 /d/t-0/0.log\n", "S 6 /d/t-0/1.log\n", "R 0 /d/t-0\t/d/t-0.abc-delete\n",
    ]
    assert durable_sizes(journal) == {"/d/cp": 10, "/d/t-0.abc-delete/0.log": 5, "/d/t-0.abc-delete/1.log": 6}


def test_a_rename_over_a_file_replaces_it_and_an_unlink_forgets_it() -> None:
    journal = ["S 10 /d/a\n", "S 20 /d/b\n", "R 0 /d/a\t/d/b\n", "S 9 /d/c\n", "U 0 /d/c\n"]
    assert durable_sizes(journal) == {"/d/b": 10}
    # a new file under an unlinked name starts with nothing durable
    assert cut_plan(durable_sizes(journal), {"/d/c": 4}) == [Cut("/d/c", None)]


def test_a_line_torn_by_the_kill_is_not_replayed() -> None:
    assert durable_sizes(["S 10 /d/a\n", "S 99 /d/a"]) == {"/d/a": 10}


@pytest.mark.parametrize("line", ["X 1 /d/a\n", "S ten /d/a\n", "S 1\n", "R 0 /d/a\n", "S -1 /d/a\n"])
def test_a_line_the_library_cannot_have_written_is_refused(line: str) -> None:
    with pytest.raises(JournalError, match="journal line 1"):
        durable_sizes([line])


# -- the library, preloaded into a real process -------------------------------------------

# The calls a JVM makes (FileChannel.force -> fsync/fdatasync, truncate -> ftruncate64,
# Files.move -> rename, Files.delete -> unlink), made by a Python child through libc.
_WORKLOAD = textwrap.dedent("""
    import os, subprocess, sys
    data = sys.argv[1]
    fd = os.open(f"{data}/0.log", os.O_CREAT | os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"a" * 100)
    os.fsync(fd)                        # 100 bytes durable
    os.write(fd, b"b" * 50)             # 50 more, never synced
    other = os.open(f"{data}/1.log", os.O_CREAT | os.O_WRONLY)
    os.write(other, b"c" * 30)          # a new segment, never synced
    cp = os.open(f"{data}/cp.tmp", os.O_CREAT | os.O_WRONLY)
    os.write(cp, b"d" * 12)
    os.fdatasync(cp)
    os.replace(f"{data}/cp.tmp", f"{data}/cp")
    gone = os.open(f"{data}/gone", os.O_CREAT | os.O_WRONLY)
    os.ftruncate(gone, 8)
    os.fsync(gone)
    os.unlink(f"{data}/gone")
    outside = os.open(sys.argv[2], os.O_CREAT | os.O_WRONLY)
    os.fsync(outside)                   # not under a tracked directory: not journalled
    subprocess.run(["sh", "-c", f"echo x >> {data}/myid"], check=True)  # a child: forwards only
""")


def _run_with_journal(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    library = sync_journal_library(progress=lambda _: None)
    data = tmp_path / "data"
    data.mkdir()
    (data / "myid").write_text("1\n")
    journal = tmp_path / "journal"
    env = dict(os.environ, LD_PRELOAD=str(library), KAFKA_CHAOS_SYNC_JOURNAL=str(journal),
               KAFKA_CHAOS_SYNC_DIRS=f"{data}:{tmp_path / 'absent'}",
               KAFKA_CHAOS_SYNC_EXE=Path(os.path.realpath(sys.executable)).name)
    subprocess.run([os.path.realpath(sys.executable), "-c", _WORKLOAD, str(data), str(tmp_path / "outside")],
                   env=env, check=True)
    return data, journal, journal.read_text().splitlines(keepends=True)


def test_the_library_journals_each_durable_call_of_the_process(tmp_path: Path) -> None:
    data, _, lines = _run_with_journal(tmp_path)
    assert lines == [
        f"B 2 {data}/myid\n",
        f"S 100 {data}/0.log\n",
        f"S 12 {data}/cp.tmp\n",
        f"R 0 {data}/cp.tmp\t{data}/cp\n",
        f"T 8 {data}/gone\n",
        f"S 8 {data}/gone\n",
        f"U 0 {data}/gone\n",
    ]


def test_the_cut_leaves_exactly_what_was_synced(tmp_path: Path) -> None:
    data, _, lines = _run_with_journal(tmp_path)
    files = {str(p): p.stat().st_size for p in data.rglob("*") if p.is_file()}
    plan = cut_plan(durable_sizes(lines), files)
    # 0.log back to its synced 100 bytes; the unsynced segment gone; the renamed checkpoint
    # kept whole; myid, there at start, cut back to it (the child's append was never synced)
    assert plan == [Cut(f"{data}/0.log", 100), Cut(f"{data}/1.log", None), Cut(f"{data}/myid", 2)]
    assert lost_bytes(plan, files) == 50 + 30 + 2


def test_a_cut_outside_the_data_directory_is_refused_before_any_container() -> None:
    from harness.cluster.node_disks import NodeDisks
    from harness.cluster.resources import RunIdentity
    from harness.errors import ChaosError

    disks = NodeDisks(RunIdentity("unit"))
    with pytest.raises(ChaosError, match="not under /var/lib/kafka/data"):
        disks.cut(None, "image", "kafka-0", "/var/lib/kafka/data",
                  {"/var/lib/kafka/data/t-0/0.log": 10, "/var/lib/kafka/data-other/x": None})
