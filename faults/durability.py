"""What a power loss leaves of a node's files: the model behind the ``power_loss`` fault.

A JVM started with the sync-journal library (``docker/kafka/syncjournal.c``) appends a
line to a journal for every call that makes data durable or changes what is durable:

    B <size> <path>    a file present when the JVM started, durable at that size
    S <size> <path>    fsync/fdatasync: the file's first <size> bytes are durable
    D 0 <dir>          a directory's entries were synced
    T <length> <path>  ftruncate: nothing beyond <length> survives
    R 0 <from>\\t<to>   rename (a file, or a directory and everything under it)
    U 0 <path>         unlink

:func:`durable_sizes` replays the journal into the durable size of every file, and
:func:`cut_plan` compares that with the files as they are when the node dies: a file is
cut back to its durable size, and a file with none (created and never synced: the
active segment's new files, Kafka's memory-mapped indexes, which it rebuilds) is removed.
That is the worst case a power loss allows on a disk that keeps what ``fsync`` returned
for: nothing reached the disk that was not synced. Assumptions (docs/design/power-loss.md):
directory entries count as durable once their file is (creations and renames are not
lost on their own), and a file's synced bytes are its first ``size`` bytes (Kafka
appends; it never writes into the middle of a ``.log`` file, and it rewrites a checkpoint
by writing a temporary file, syncing it and renaming it over the old one).

Pure: no container, no file system. Applying a plan is the fault's job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


class JournalError(ValueError):
    """A journal line that the library cannot have written."""


@dataclass(frozen=True)
class Cut:
    """One file's fate: cut back to ``size`` bytes, or removed (``size`` None)."""

    path: str
    size: int | None

    @property
    def removes(self) -> bool:
        return self.size is None


def _parse(line: str, number: int) -> tuple[str, int, str, str | None]:
    kind, sep, rest = line.partition(" ")
    size_text, sep2, where = rest.partition(" ")
    if not sep or not sep2 or kind not in "BSDTRU" or len(kind) != 1 or not where:
        raise JournalError(f"journal line {number}: not a journal entry: {line!r}")
    try:
        size = int(size_text)
    except ValueError:
        raise JournalError(f"journal line {number}: size {size_text!r} is not a number") from None
    if size < 0:
        raise JournalError(f"journal line {number}: negative size {size}")
    if kind == "R":
        source, tab, target = where.partition("\t")
        if not tab or not source or not target:
            raise JournalError(f"journal line {number}: a rename needs 'from<TAB>to': {line!r}")
        return kind, size, source, target
    return kind, size, where, None


def durable_sizes(lines: Iterable[str]) -> dict[str, int]:
    """The durable size of every file the journal knows, after replaying it in order.

    A journal cut short by the kill (its last line without a newline) loses that line:
    the call it recorded may not have finished either."""
    sizes: dict[str, int] = {}
    for number, raw in enumerate(lines, 1):
        if not raw.endswith("\n"):
            break  # torn by the kill: the library writes each line whole, newline last
        kind, size, path, target = _parse(raw[:-1], number)
        if kind in "BS":
            sizes[path] = size
        elif kind == "T":
            if path in sizes:
                sizes[path] = min(sizes[path], size)
        elif kind == "U":
            sizes.pop(path, None)
        elif kind == "R" and target is not None:
            _rename(sizes, path, target)
    return sizes


def _rename(sizes: dict[str, int], source: str, target: str) -> None:
    """Move what is durable under ``source`` (a file, or a directory's whole tree) to
    ``target``; what ``target`` held before is replaced."""
    moved = {path: size for path, size in sizes.items() if path == source or path.startswith(source + "/")}
    for path in [p for p in sizes if p == target or p.startswith(target + "/")]:
        del sizes[path]
    for path, size in moved.items():
        del sizes[path]
        sizes[target + path[len(source):]] = size


def cut_plan(durable: Mapping[str, int], files: Mapping[str, int]) -> list[Cut]:
    """What a power loss does to ``files`` (path -> size now): every file longer than its
    durable size is cut to it, every file with no durable size removed, in path order."""
    plan: list[Cut] = []
    for path in sorted(files):
        kept = durable.get(path)
        if kept is None:
            plan.append(Cut(path, None))
        elif kept < files[path]:
            plan.append(Cut(path, kept))
    return plan


def lost_bytes(plan: Iterable[Cut], files: Mapping[str, int]) -> int:
    """How many bytes the plan takes away."""
    return sum(files[c.path] - (c.size or 0) for c in plan)
