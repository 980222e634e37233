"""The consumer group of a synthetic chunk (``tests.synthetic.core`` builds the rest of it).

With ``SynthSpec.groups`` (or any group kind or group edge planted) the chunk also has a
consumer group (``spark_jobs.groups``; docs/HISTORY.md): each partition's reads up to its
first unseen message are a group's, in two assignments (generation 0 reads the first half
from the log start, generation 1 the rest from where generation 0 committed), with
periodic commits, failed commits below them (which must not count) and rebalance rows;
the rest of the reads stay an assign()-ing consumer's. Group plants, each exact:

- poll_skip: a run of one or two reads of acknowledged offsets handed to the assign()-ing
  consumer (still polled, so nothing is unseen), inside a member's reads or at the start
  of its assignment (then above its resume offset); one finding per run, one count per
  offset.
- nonmonotonic_poll: a member reads offsets j..k again right after k (k - j < 3).
- commit_regression: an extra commit of the previous commit's offset, right after a commit.
- commit_beyond_read: an extra commit of the next commit's offset, made before the member
  read the record below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import (
    COMMIT_COMMITTED,
    COMMIT_FAILED,
    GROUP_KINDS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REBALANCES_SCHEMA,
    HistoryWriter,
)
from tests.synthetic.kit import ZONES, Truth, rank_within, strings

if TYPE_CHECKING:
    from tests.synthetic.core import ChunkBuilder

GROUP = "synthetic-group"


def windows_clear(busy: np.ndarray, lo: int, hi: int) -> bool:
    return not busy[max(lo, 0) : hi + 1].any()


class Pool:
    """Candidates in a random order, handed out one by one (an array and a cursor: a list
    of ten million numbers would cost more than the plants)."""

    def __init__(self, order: np.ndarray) -> None:
        self.order, self.at = order, 0

    def next(self) -> int | None:
        if self.at >= len(self.order):
            return None
        self.at += 1
        return int(self.order[self.at - 1])


class ConsumerGroup:
    """The consumer group of one chunk (see the module docstring): which rows of the final
    log its members read and in what order, the plants, and the commits and rebalances.

    Reads are kept in time order: generation, partition, offset (a re-read sorts right
    after the read it repeats). Generation 0 of partition p reads offsets [0, x_p) as
    member p mod C, generation 1 reads [x_p, stop_p) as member p + 1 mod C, where stop_p
    is the first unseen message's offset (the group must not read it, and a gap below it
    would be a skip) and x_p = stop_p // 2. A member's assignment number is its
    generation. Commits follow every ``commit_every`` reads of a segment and its last one,
    at the offset after that read; a plant never moves such a read, so every regular
    commit is at most one above what the group had read."""

    def __init__(self, b: ChunkBuilder, keep: np.ndarray) -> None:
        self.b = b
        spec, nparts = b.spec, b.nparts
        self.rng = np.random.default_rng((spec.seed, b.chunk.index, 7))  # old plants unmoved
        l_part, l_off, l_mid, _ = b.log_cols
        stop = b.hw.copy()
        np.minimum.at(stop, b.part[b.unseen], b.offset_of[b.unseen])
        self.stop, self.x = stop, stop // 2
        rows = keep[l_off[keep] < stop[l_part[keep]]]
        gen = (l_off[rows] >= self.x[l_part[rows]]).astype(np.int64)
        order = np.lexsort((l_off[rows], l_part[rows], gen))
        self.rows = rows[order]
        self.part = l_part[self.rows].astype(np.int64)
        self.off = l_off[self.rows]
        self.mid = pc.take(l_mid, pa.array(self.rows))
        self.gen = gen[order]
        self.member = (self.part + self.gen) % spec.consumers
        n = len(self.rows)
        seg = self.gen * nparts + self.part
        self.first = np.r_[True, seg[1:] != seg[:-1]] if n else np.zeros(0, bool)
        self.last = np.r_[seg[1:] != seg[:-1], True] if n else np.zeros(0, bool)
        self.seg_start = np.maximum.accumulate(np.where(self.first, np.arange(n), 0)) if n else self.first
        rel = np.arange(n) - self.seg_start
        self.anchor = ((rel + 1) % max(1, spec.commit_every) == 0) | self.last
        acked = (b.judged == 0) & (b.ack_off >= 0)
        keys = b.send_part[acked].astype(np.int64) * (1 << 40) + b.ack_off[acked]
        self.acked = np.isin(self.part * (1 << 40) + self.off, keys)
        # reads a plant may hand to the assign()-ing consumer: not a transaction's (that
        # consumer reads at read_committed, and only after the commit was asked for)
        self.plain = np.ones(n, bool) if b.txn is None else ~b.txn.transactional(b.log_cols[3][self.rows])
        self.grouped = np.ones(n, bool)
        self.busy = np.zeros(n, bool)
        # Extra rows: re-reads (index of the read repeated, sort key) and commits (row the
        # commit follows, fraction of a read interval after it, offset, mode, outcome).
        self.reread: list[tuple[int, float]] = []
        self.commits: list[tuple[int, float, int, str, str]] = []
        self.skips: list[tuple[int, int]] = []  # (partition, acknowledged offsets passed over)
        self.early: list[tuple[int, int]] = []  # early commits: (read made after, regular commit's read)
        self.planted: dict[str, list[int]] = {k: [] for k in GROUP_KINDS}
        self._regular_commits()
        self._skips(b.want["poll_skip"], acked_runs=True)
        self._skips(b.edges["unacked_gap"], acked_runs=False)
        self._rereads(b.want["nonmonotonic_poll"])
        self._regressions(b.want["commit_regression"])
        self._early_commits(b.want["commit_beyond_read"])
        self._skip_commits(b.edges["txn_skip_commit"])
        self._timeline()

    # ---- plants ---------------------------------------------------------------------------

    def _regular_commits(self) -> None:
        every = max(1, self.b.spec.commit_every)
        rel = np.arange(len(self.rows)) - self.seg_start
        for i in np.flatnonzero(self.anchor).tolist():
            mode = "sync" if self.last[i] else "auto"
            self.commits.append((i, 0.2, int(self.off[i]) + 1, mode, COMMIT_COMMITTED))
            if (rel[i] + 1) % (3 * every) == 0:  # a failed commit far below: never counts
                self.commits.append((i, 0.25, max(0, int(self.off[i]) + 1 - every), "async", COMMIT_FAILED))

    def _skips(self, want: int, acked_runs: bool) -> None:
        """Runs of one or two reads handed to the assign()-ing consumer, all at acknowledged
        offsets (``acked_runs``: each offset counts) or none (nothing counts). A run starts
        inside a segment (neither its first nor last read nor a commit's read) or, for
        acknowledged runs, at a segment's start (the member then starts above its resume
        offset)."""
        n = len(self.rows)
        free = ~self.last & ~self.anchor & (self.acked if acked_runs else ~self.acked) & self.plain
        inside = free & ~self.first
        nxt = np.r_[inside[1:], False]
        same = np.r_[~self.first[1:], False]  # row i + 1 is in row i's segment
        lead = self.first & free & same if acked_runs else np.zeros(n, bool)  # one left after
        starts = {
            (False, 1): np.flatnonzero(inside),
            (False, 2): np.flatnonzero(inside & nxt & same),
            (True, 1): np.flatnonzero(lead),
            (True, 2): np.flatnonzero(lead & np.r_[(free & same)[1:], False]),
        }
        pools = {k: Pool(self.rng.permutation(v)) for k, v in starts.items()}
        left = want
        while left > 0:
            width = 1 if left == 1 else int(self.rng.integers(1, 3))
            at_start = bool(self.rng.random() < 1 / 3)
            for key in ((at_start, width), (not at_start, width), (at_start, 1), (not at_start, 1)):
                i = self._draw(pools[key], key)
                if i is not None:
                    break
            else:
                raise ValueError(f"cannot plant {left} more read gaps: no candidate reads left")
            start, width = i, key[1]
            self.grouped[start : start + width] = False
            self.busy[max(start - 1, 0) : start + width + 1] = True
            if acked_runs:
                self.skips.append((int(self.part[start]), width))
                left -= width
            else:
                left -= 1

    def _draw(self, pool: Pool, key: tuple[bool, int]) -> int | None:
        at_start, width = key
        while (i := pool.next()) is not None:
            lo = i if at_start else i - 1
            if windows_clear(self.busy, lo, i + width):
                return i
        return None

    def _rereads(self, want: int) -> None:
        """A member reads j..k again right after k: one step back, then on by one."""
        pool = Pool(self.rng.permutation(len(self.rows)))
        for _ in range(want):
            while True:
                if (k := pool.next()) is None:
                    raise ValueError("cannot plant nonmonotonic reads: no candidate reads left")
                back = min(int(self.rng.integers(0, 3)), k - int(self.seg_start[k]))
                j = k - back
                if self.grouped[j : k + 1].all() and windows_clear(self.busy, j - 1, k + 1):
                    break
            self.busy[max(j - 1, 0) : k + 2] = True
            self.reread.extend((r, float(self.off[k]) + 0.1 * (t + 1)) for t, r in enumerate(range(j, k + 1)))
            self.planted["nonmonotonic_poll"].append(int(self.part[k]))

    def _anchors(self) -> tuple[np.ndarray, np.ndarray]:
        """Regular commits' reads in time order, and the previous one of the same partition
        (-1: none), in whatever generation."""
        a = np.flatnonzero(self.anchor)
        order = np.lexsort((a, self.part[a]))
        prev = np.full(len(a), -1, np.int64)
        same = self.part[a[order]][1:] == self.part[a[order]][:-1]
        prev[order[1:][same]] = a[order[:-1][same]]
        return a, prev

    def _regressions(self, want: int) -> None:
        """Right after a regular commit, another of the previous commit's offset."""
        a, prev = self._anchors()
        ok = np.flatnonzero(prev >= 0)
        if want > len(ok):
            raise ValueError(f"cannot plant {want} commit regressions: only {len(ok)} candidates")
        for c in np.sort(self.rng.choice(ok, want, replace=False)).tolist():
            i = int(a[c])
            self.commits.append((i, 0.3, int(self.off[prev[c]]) + 1, "async", COMMIT_COMMITTED))
            self.planted["commit_regression"].append(int(self.part[i]))

    def _early_commits(self, want: int) -> None:
        """Before a regular commit, one of its offset made while the member had read only up
        to a read k at or after the previous commit's, at least two below it: the offsets
        in between were on the log and not read yet. k may have been handed away (a skip):
        then the group had read even less."""
        a, _ = self._anchors()
        same_seg = np.r_[False, self.seg_start[a][1:] == self.seg_start[a][:-1]]
        lb = np.where(same_seg, np.r_[0, a[:-1]], self.seg_start[a])
        ok = np.flatnonzero(a > lb)
        if want > len(ok):
            raise ValueError(f"cannot plant {want} early commits: only {len(ok)} candidates")
        for c in np.sort(self.rng.choice(ok, want, replace=False)).tolist():
            i = int(a[c])
            k = int(self.rng.integers(lb[c], i))
            self.commits.append((k, 0.5, int(self.off[i]) + 1, "async", COMMIT_COMMITTED))
            self.early.append((k, i))
            self.planted["commit_beyond_read"].append(int(self.part[i]))

    def _skip_commits(self, want: int) -> None:
        """Right after a member's read i (0.45 of a read interval after it), a commit of the
        offset of its next read i + 1, where everything between the two reads is aborted
        records and markers: no record the read_committed drain was given and no
        acknowledged offset. The group had read i, so it committed nothing it had not read.
        The commit is above every commit before it (regular ones are at most one above a
        read, and i is outside every early commit's stretch k < i < its regular commit's
        read) and below every commit after it (the next regular one is above read i + 1)."""
        if not want:
            return
        assert self.b.txn is not None  # the edge implies transactions
        held = self.b.txn.held_offsets()
        i = np.flatnonzero(~self.last)
        i = i[self.grouped[i] & self.grouped[i + 1] & (self.off[i + 1] - self.off[i] >= 2)]
        base = self.part[i] * (1 << 40)
        between = np.searchsorted(held, base + self.off[i + 1]) - np.searchsorted(
            held, base + self.off[i], side="right"
        )
        i = i[between == 0]
        for read, anchor in self.early:
            i = i[(i <= read) | (i >= anchor)]
        pool = Pool(self.rng.permutation(i))
        for _ in range(want):
            while True:
                if (k := pool.next()) is None:
                    raise ValueError("cannot plant commits over aborted records: no candidate reads")
                if windows_clear(self.busy, k, k + 1):
                    break
            self.busy[k : k + 2] = True
            self.commits.append((k, 0.45, int(self.off[k + 1]), "async", COMMIT_COMMITTED))

    # ---- time, rows and truth -----------------------------------------------------------

    def _timeline(self) -> None:
        """Poll times in time order, one read interval apart; poll_seq per member."""
        n = len(self.rows)
        src = np.r_[np.arange(n), np.array([r for r, _ in self.reread], np.int64)].astype(np.int64)
        key = np.r_[self.off.astype(np.float64), np.array([k for _, k in self.reread], np.float64)]
        order = np.lexsort((key, self.part[src], self.gen[src]))
        self.src = src[order]
        self.dt = 1.0 / self.b.spec.rate
        self.ts = self.b.chunk.t0 + 0.01 + np.arange(len(order)) * self.dt
        self.grouped_row = np.r_[self.grouped, np.ones(len(self.reread), bool)][order]
        self.ts_of = np.empty(n, np.float64)
        original = np.r_[np.ones(n, bool), np.zeros(len(self.reread), bool)][order]
        self.ts_of[self.src[original]] = self.ts[original]
        seq = np.full(len(order), -1, np.int64)
        g = np.flatnonzero(self.grouped_row)
        seq[g] = rank_within(self.member[self.src[g]])
        self.seq = seq

    def write(self, w: HistoryWriter, topic: str, step: int) -> int:
        """Write the group's reads, commits and rebalances; return the reads written."""
        spec, src, grouped = self.b.spec, self.src, self.grouped_row
        members = [f"member-{ZONES[c % len(ZONES)]}-{c}" for c in range(spec.consumers)]
        readers = [f"consumer-{ZONES[c % len(ZONES)]}-{c}" for c in range(spec.consumers)]
        names = np.where(grouped, self.member[src], spec.consumers + self.part[src] % spec.consumers)
        # members read at read_uncommitted (never an aborted record, still), the assign()-ing
        # consumer at read_committed, when the history has transactions
        txns = self.b.txn is not None
        isolation = pa.scalar(READ_UNCOMMITTED if txns else None, pa.string())
        reader_isolation = pa.scalar(READ_COMMITTED if txns else None, pa.string())
        for lo in range(0, len(src), step):
            s = slice(lo, min(len(src), lo + step))
            k, g = s.stop - s.start, grouped[s]
            w.write_batch(
                "polls",
                pa.table(
                    {
                        "consumer_id": strings(members + readers, names[s]),
                        "zone": strings(list(ZONES), names[s] % len(ZONES)),
                        "topic": pa.repeat(topic, k),
                        "partition": self.part[src[s]].astype(np.int32),
                        "offset": self.off[src[s]],
                        "message_id": pc.take(self.mid, pa.array(src[s])),
                        "poll_ts": self.ts[s],
                        "group": pc.if_else(pa.array(g), GROUP, pa.scalar(None, pa.string())),
                        "assignment": pa.array(self.gen[src[s]].astype(np.int32), mask=~g),
                        "poll_seq": pa.array(self.seq[s], mask=~g),
                        "isolation": pc.if_else(pa.array(g), isolation, reader_isolation),
                    }
                ),
            )
        rows, at, offset, modes, outcomes = (
            np.array([c[0] for c in self.commits], np.int64),
            np.array([c[1] for c in self.commits], np.float64),
            np.array([c[2] for c in self.commits], np.int64),
            [c[3] for c in self.commits],
            [c[4] for c in self.commits],
        )
        failed = np.array([o == COMMIT_FAILED for o in outcomes], bool)
        w.write_batch(
            "commits",
            pa.table(
                {
                    "group": pa.repeat(GROUP, len(rows)),
                    "consumer_id": strings(members, self.member[rows]),
                    "assignment": self.gen[rows].astype(np.int32),
                    "topic": pa.repeat(topic, len(rows)),
                    "partition": self.part[rows].astype(np.int32),
                    "offset": offset,
                    "ts": self.ts_of[rows] + at * self.dt,
                    "mode": pa.array(modes, pa.string()),
                    "outcome": pa.array(outcomes, pa.string()),
                    "error": pc.if_else(
                        pa.array(failed, pa.bool_()), "REBALANCE_IN_PROGRESS", pa.scalar(None, pa.string())
                    ),
                }
            ),
        )
        self.rows_written = {"commits": len(rows), "rebalances": self._rebalances(w, topic, members)}
        return len(src)

    def _rebalances(self, w: HistoryWriter, topic: str, members: list[str]) -> int:
        """Per partition the group read: generation 0 assigned from the log start (nothing
        committed), revoked, generation 1 assigned from where generation 0 committed."""
        b = self.b
        parts = np.flatnonzero(self.stop > 0)
        gen1 = np.flatnonzero(self.gen[self.src] == 1)
        t0 = b.chunk.t0
        turn = float(self.ts[gen1[0]]) - 0.5 * self.dt if len(gen1) else t0
        resume = [int(self.x[p]) if self.x[p] > 0 else None for p in parts]
        rows: list[dict[str, Any]] = []
        for p, r in zip(parts.tolist(), resume, strict=True):
            base = {"group": GROUP, "topic": topic, "partition": p}
            first, second = members[p % len(members)], members[(p + 1) % len(members)]
            rows += [
                {**base, "consumer_id": first, "ts": t0, "event": "assigned", "assignment": 0,
                 "resume_offset": None},
                {**base, "consumer_id": first, "ts": turn, "event": "revoked", "assignment": 0,
                 "resume_offset": None},
                {**base, "consumer_id": second, "ts": turn, "event": "assigned", "assignment": 1,
                 "resume_offset": r},
            ]  # fmt: skip
        if rows:
            w.write_batch("rebalances", pa.Table.from_pylist(rows, schema=REBALANCES_SCHEMA))
        return len(rows)

    def record(self, t: Truth) -> None:
        for p, width in self.skips:
            t.add("poll_skip", [p], [None], times=width)
        t.found("poll_skip", [p for p, _ in self.skips])
        for kind, parts in self.planted.items():
            t.add(kind, parts, [None] if parts else [])
