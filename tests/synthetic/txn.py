"""The transactions of a synthetic chunk (``tests.synthetic.core`` builds the rest of it).

With ``SynthSpec.transactions`` (or any transaction kind or edge planted) the chunk also has
``txn_producers`` transactional producers (schema 6; ``Transactions``): each of their sends is in
a transaction of 1..``txn_max_messages`` consecutive sends, committed, aborted or of
unknown outcome. Their data is what a sound run records: a committed transaction's sends are
acknowledged, its records are on the final log and given to the read_committed drain;
an aborted one's records are on the final log, not given to that drain, and polled by
nobody (no consumer group member, no assign()-ing consumer); an unknown one was settled
either way by Kafka (its records then are like a committed or an aborted one's). A commit
or abort marker takes the offset after the transaction's records in each partition it
touched, so the final log has gaps. The assign()-ing consumers read at read_committed,
each record of a transaction once its commit was asked for; the group members read at
read_uncommitted (and still never an aborted record). None of this counts: the sends of
aborted or unknown transactions are judged unknown, so their records are neither lost,
unseen nor acknowledged offsets a member skips; the old plants never pick a
transactional send. Transaction plants, each exact:

- txn_aborted_read: a message of an aborted transaction polled at its own position (by a
  read_committed, a read_uncommitted or an isolation-less consumer), given to the
  read_committed drain (read_committed true), or both: one count per message.
- txn_uncommitted_read: a message of a committed transaction polled at its own position
  by a read_committed consumer before its commit was asked for, once or twice.
- txn_lost: a committed transaction whose records the read_committed drain was not given.
- txn_partial: the same for some, not all, of a committed transaction's records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_UNKNOWN,
    HistoryWriter,
)
from tests.synthetic.kit import ZONES, Picker, Truth, message_ids, offsets_in_send_order, strings

if TYPE_CHECKING:
    from tests.synthetic.core import ChunkBuilder


# A transaction's kind: orphans have no row, doubled ones two (committed, then aborted);
# both are otherwise committed ones.
COMMITTED, ABORTED, UNKNOWN, ORPHAN, DOUBLED = 0, 1, 2, 3, 4
TXN_OUTCOME_NAMES = [TXN_COMMITTED, TXN_ABORTED, TXN_UNKNOWN]
# Who reads a transaction's record in a plant: the partition's assign()-ing consumer, or
# one of two consumers of their own; and at which isolation level each reads.
ASSIGNER, DIRTY, PLAIN = 0, 1, 2
READER_NAMES = ("dirty-reader", "plain-reader")  # DIRTY's and PLAIN's
READER_LEVELS = [READ_COMMITTED, READ_UNCOMMITTED, None]  # by reader; None: not recorded
TXN_ERRORS = [None, "PRODUCER_FENCED", "_TIMED_OUT"]  # an unknown one's: died before asking, or
# the commit or abort call failed or never returned


class Transactions:
    """The transactions of one chunk (see the module docstring).

    Each transactional producer's sends are cut into transactions of 1..txn_max_messages
    consecutive sends. Per transaction: its kind (committed, aborted, unknown, or a
    committed orphan whose row is not written), for an unknown one whether Kafka settled it
    as committed, and its times: begun just before its first send, its end asked for just
    after its last one (never, for some unknown ones), returned a little later (never, for
    some unknown ones). Per send: whether its record is gone from the final log (a hole),
    read by no regular consumer, or not given to the read_committed drain. The transaction
    plants (``plant``) change only those flags and add reads of their own."""

    def __init__(self, b: ChunkBuilder) -> None:
        self.b = b
        spec = b.spec
        self.rng = np.random.default_rng((spec.seed, b.chunk.index, 11))  # other plants unmoved
        self.dt = 1.0 / spec.rate
        self._assign()
        self._outcomes()
        self._edges_on_sends()
        self._times()
        self.rows_written = 0

    # ---- who is in which transaction, and how it ended --------------------------------

    def _assign(self) -> None:
        b, spec = self.b, self.b.spec
        self.txn_of = np.full(b.n, -1, np.int64)
        firsts, lasts, producers = [], [], []
        count = 0
        for j in range(spec.txn_producers):
            mine = np.flatnonzero(b.prod == spec.producers + j)  # in seq order
            if not len(mine):
                continue
            ends = np.cumsum(self.rng.integers(1, max(1, spec.txn_max_messages) + 1, len(mine)))
            local = np.searchsorted(ends, np.arange(len(mine)), side="right")
            self.txn_of[mine] = count + local
            starts = np.r_[0, np.flatnonzero(np.diff(local)) + 1]
            firsts.append(mine[starts])
            lasts.append(mine[np.r_[starts[1:] - 1, len(mine) - 1]])
            producers.append(np.full(len(starts), spec.producers + j, np.int64))
            count += len(starts)
        self.count = count
        self.first = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
        self.last = np.concatenate(lasts) if lasts else np.zeros(0, np.int64)
        self.producer = np.concatenate(producers) if producers else np.zeros(0, np.int64)
        self.sends = np.flatnonzero(self.txn_of >= 0)
        self.by_txn = self.sends[np.argsort(self.txn_of[self.sends], kind="stable")]
        self.size = np.bincount(self.txn_of[self.sends], minlength=count)
        self.start = np.r_[0, np.cumsum(self.size)]
        self.send_pick = Picker(self.rng, b.n)  # transaction plants never share a message
        self.txn_pick = Picker(self.rng, count)  # nor a transaction

    def messages(self, t: int) -> np.ndarray:
        """The sends of transaction ``t``, in seq order."""
        return self.by_txn[self.start[t] : self.start[t + 1]]

    def _per_send(self, per_txn: np.ndarray) -> np.ndarray:
        out = np.zeros(self.b.n, per_txn.dtype)
        out[self.sends] = per_txn[self.txn_of[self.sends]]
        return out

    def _outcomes(self) -> None:
        """Transactions' kinds; their sends are acknowledged, except that some of an unknown
        transaction's are in doubt themselves (their records landed or not, as drawn)."""
        spec, b = self.b.spec, self.b
        u = self.rng.random(self.count)
        self.kind = np.full(self.count, COMMITTED, np.int8)
        self.kind[u < spec.txn_aborted_rate + spec.txn_unknown_rate] = UNKNOWN
        self.kind[u < spec.txn_aborted_rate] = ABORTED
        self.settled = (self.kind == UNKNOWN) & (self.rng.random(self.count) < 0.5)  # committed
        doubt = (self.kind[self.txn_of[self.sends]] == UNKNOWN) & (self.rng.random(len(self.sends)) < 0.3)
        b.outcome[self.sends] = np.where(doubt, 2, 0)

    def _edges_on_sends(self) -> None:
        """The edge cases that change sends or rows: orphans, aborted records gone from the
        final log, failed sends of aborted transactions on it, empty transactions."""
        b, edges = self.b, self.b.edges
        self.orphans = self._take_txns(np.flatnonzero(self.kind == COMMITTED), edges["txn_orphan"], "orphans")
        self.kind[self.orphans] = ORPHAN
        committed = np.flatnonzero(self.kind == COMMITTED)
        self.doubled = self._take_txns(committed, edges["txn_doubled_row"], "doubled rows")
        self.kind[self.doubled] = DOUBLED
        aborted = self.sends[(self.kind[self.txn_of[self.sends]] == ABORTED)]
        gone = self.send_pick.take(aborted, edges["txn_aborted_gone"], "aborted records gone")
        self.failed = self.send_pick.take(aborted, edges["txn_failed_logged"], "failed sends on the log")
        b.outcome[self.failed] = 1
        self.logged_anyway = np.zeros(b.n, bool)
        self.logged_anyway[self.failed] = True
        self.gone = np.zeros(b.n, bool)
        self.gone[gone] = True
        self.gone[self.first[self.orphans]] = True
        self.empty = int(edges["txn_empty"])
        # Records the read_committed drain is not given (an aborted transaction's, or an
        # unknown one's that Kafka aborted), and records no regular consumer reads.
        aborted_like = (self.kind == ABORTED) | ((self.kind == UNKNOWN) & ~self.settled)
        self.rc_false = self._per_send(aborted_like)
        self.hidden = self._per_send(aborted_like | (self.kind == ORPHAN)) | self.gone

    def _times(self) -> None:
        ts, dt, count = self.b.send_ts, self.dt, self.count
        unknown = self.kind == UNKNOWN
        never = unknown & ~self.settled & (self.rng.random(count) < 0.5)  # died before asking
        hung = unknown & ~never & (self.rng.random(count) < 0.5)  # the call never returned
        self.begin = ts[self.first] - 0.3 * dt
        self.asked = np.where(never, np.nan, ts[self.last] + 0.5 * dt)
        self.ended = np.where(never | hung, np.nan, self.asked + 0.3 * dt)
        self.error = np.where(unknown, np.where(never, 1, 2), 0)  # indices into TXN_ERRORS

    def judged(self, outcome: np.ndarray) -> np.ndarray:
        """The judged outcomes: unknown for a send of a transaction not committed (an orphan's
        too: it has no row)."""
        judged = outcome.copy()
        judged[self.sends[self.kind[self.txn_of[self.sends]] != COMMITTED]] = 2
        return judged

    def producer_names(self) -> list[str]:
        spec, index = self.b.spec, self.b.chunk.index
        numbers = range(index * spec.txn_producers, (index + 1) * spec.txn_producers)
        return [f"txn-{ZONES[p % len(ZONES)]}-{p}" for p in numbers]

    # ---- the final log ----------------------------------------------------------------

    def lay_out(self, e_src: np.ndarray, e_part: np.ndarray) -> np.ndarray:
        """Offsets of the log entries in send order per partition, with a marker after each
        transaction's records in each partition it has one in, placed when its last send was
        made (so other producers' records sent before then come first)."""
        b = self.b
        logged = self.sends[b.in_log[self.sends]]
        pairs = np.unique(self.txn_of[logged] * b.nparts + b.part[logged])
        self.marker_part = (pairs % b.nparts).astype(np.int32)
        key = np.r_[2 * e_src, 2 * self.last[pairs // b.nparts] + 1]
        return offsets_in_send_order(key, np.r_[e_part, self.marker_part])[: len(e_src)]

    def markers_per_partition(self) -> np.ndarray:
        return np.bincount(self.marker_part, minlength=self.b.nparts).astype(np.int64)

    def written_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Per partition, the first and last offset of a log entry that is on the final log."""
        b = self.b
        on = ~self.gone[b.e_src]
        first = np.full(b.nparts, np.iinfo(np.int64).max, np.int64)
        last = np.full(b.nparts, -1, np.int64)
        np.minimum.at(first, b.e_part[on], b.e_off[on])
        np.maximum.at(last, b.e_part[on], b.e_off[on])
        return first, last

    def _at(self, flags: np.ndarray, src: np.ndarray) -> np.ndarray:
        """``flags`` of the sends rows are copies of (False for rows of no send)."""
        return np.where(src >= 0, flags[np.maximum(src, 0)], False)

    def unread(self, src: np.ndarray) -> np.ndarray:
        return self._at(self.hidden, src)

    def gone_from_log(self, src: np.ndarray) -> np.ndarray:
        return self._at(self.gone, src)

    def given_to_read_committed(self, src: np.ndarray) -> np.ndarray:
        return ~self._at(self.rc_false, src)

    def transactional(self, src: np.ndarray) -> np.ndarray:
        return self._at(self.txn_of >= 0, src)

    def next_read_offset(self, parts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """For truncated acknowledgements: per (partition, offset), the next offset, wrapping,
        of a record the regular consumers read (never a marker's, or an aborted record's that
        a member would skip over)."""
        if not len(parts):
            return offsets
        l_part, l_off, _, l_src = self.b.log.columns()
        ok = ~self.unread(l_src)
        keys = np.sort(l_part[ok].astype(np.int64) * (1 << 40) + l_off[ok])
        base = parts.astype(np.int64) * (1 << 40)
        at = np.searchsorted(keys, base + offsets, side="right")
        after = keys[np.minimum(at, len(keys) - 1)]
        wrap = (at >= len(keys)) | (after >= base + (1 << 40))
        target = np.where(wrap, keys[np.searchsorted(keys, base)], after) - base
        if (target == offsets).any():
            raise ValueError("truncated acks need partitions holding at least two read records")
        return target

    def held_offsets(self) -> np.ndarray:
        """Sorted (partition << 40) + offset of every offset that held a record for
        commit_beyond_read: on the final log and given to read_committed, or acknowledged."""
        b = self.b
        l_part, l_off, _, l_src = b.log_cols
        on = ~np.isin(l_src, b.gap) & ~self.gone_from_log(l_src) & self.given_to_read_committed(l_src)
        acked = (b.judged == 0) & (b.ack_off >= 0)
        return np.unique(
            np.r_[
                l_part[on].astype(np.int64) * (1 << 40) + l_off[on],
                b.send_part[acked].astype(np.int64) * (1 << 40) + b.ack_off[acked],
            ]
        )

    # ---- plants -------------------------------------------------------------------------

    def _take_txns(self, candidates: np.ndarray, k: int, what: str) -> np.ndarray:
        """``k`` whole transactions among ``candidates``, their messages then taken for the
        send plants too."""
        chosen = self.txn_pick.take(candidates, k, f"{what} (transactions)")
        for t in chosen.tolist():
            self.send_pick.used[self.messages(t)] = True
        return chosen

    def plant(self) -> None:
        """The transaction kinds and the edge cases that are reads (after the acknowledgements,
        before the polls and the group, which read the flags set here)."""
        b, want, edges, rng, dt = self.b, self.b.want, self.b.edges, self.rng, self.dt
        self.reads: list[tuple[int, int, float]] = []  # (send, reader, poll_ts)
        written = self.sends[b.in_log[self.sends] & ~self.gone[self.sends]]
        kind = self.kind[self.txn_of[written]]
        # read by someone, given to the read_committed drain, or both: one count each
        aborted = written[(kind == ABORTED) & ~self.logged_anyway[written]]
        self.aborted_read = self.send_pick.take(aborted, want["txn_aborted_read"], "aborted reads")
        how = rng.integers(0, 3, len(self.aborted_read))
        self.rc_false[self.aborted_read[how >= 1]] = False
        for m in self.aborted_read[how != 1].tolist():
            self.reads.append((m, int(rng.integers(0, 3)), float(b.send_ts[m]) + 0.2 * dt))
        # before the commit was asked for, by a read_committed consumer, once or twice
        committed = written[kind == COMMITTED]
        self.uncommitted = self.send_pick.take(committed, want["txn_uncommitted_read"], "uncommitted reads")
        for m in self.uncommitted.tolist():
            asked = float(self.asked[self.txn_of[m]])
            for _ in range(int(rng.integers(1, 3))):
                self.reads.append((m, ASSIGNER, asked - (0.1 + 0.3 * float(rng.random())) * dt))
        # transactions the read_committed drain was given none, or some, of
        txns = np.flatnonzero(self.kind == COMMITTED)
        self.lost = self._take_txns(txns, want["txn_lost"], "lost transactions")
        for t in self.lost.tolist():
            self.rc_false[self.messages(t)] = True
        several = txns[self.size[txns] >= 2]
        self.partial = self._take_txns(several, want["txn_partial"], "partial transactions")
        self.partial_first = np.zeros(len(self.partial), np.int64)  # its first message not given
        for i, t in enumerate(self.partial.tolist()):
            mine = self.messages(t)
            hit = rng.choice(mine, int(rng.integers(1, len(mine))), replace=False)
            self.rc_false[hit] = True
            self.partial_first[i] = hit.min()
        # edge cases: reads that must not count
        for m in self.send_pick.take(committed, edges["txn_early_reads"], "early reads").tolist():
            asked = float(self.asked[self.txn_of[m]])
            self.reads += [(m, DIRTY, asked - 0.3 * dt), (m, PLAIN, asked - 0.2 * dt), (m, ASSIGNER, asked)]
        settled_aborted = written[(kind == UNKNOWN) & self.rc_false[written]]
        for m in self.send_pick.take(settled_aborted, edges["txn_unknown_read"], "unknown reads").tolist():
            sent = float(b.send_ts[m])
            self.reads += [(m, DIRTY, sent + 0.2 * dt), (m, ASSIGNER, sent + 0.3 * dt)]
        for t in self.doubled.tolist():
            self.reads.append((int(self.first[t]), ASSIGNER, float(self.asked[t]) - 0.3 * dt))

    # ---- polls, rows and truth ----------------------------------------------------------

    def after_commit_asked(self, src: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Poll times of the regular (read_committed) consumers: a transaction's record no
        earlier than just after its commit was asked for."""
        t = np.where(src >= 0, self.txn_of[np.maximum(src, 0)], -1)
        floor = np.full(len(ts), -np.inf)
        floor[t >= 0] = self.asked[t[t >= 0]] + 0.1 * self.dt  # nan (never asked): not read
        return np.fmax(ts, floor)

    def ids(self, s: slice) -> pa.Array:
        """The sends' transaction_id column for rows ``s``."""
        t = self.txn_of[s]
        return pc.take(self._names(), pa.array(t, mask=t < 0))

    def _names(self) -> pa.Array:
        if not hasattr(self, "names"):
            prefix = f"{self.b.chunk.topic}/tx"
            self.names = message_ids(pa.repeat(pa.scalar(prefix), self.count), np.arange(self.count))
        return self.names

    def write(self, w: HistoryWriter, topic: str) -> int:
        """Write the transactions rows and the plants' reads; return the reads written."""
        b, spec = self.b, self.b.spec
        rows = np.r_[np.flatnonzero(self.kind != ORPHAN), self.doubled]  # doubled: twice
        outcome = np.where(self.kind[rows] == ABORTED, 1, np.where(self.kind[rows] == UNKNOWN, 2, 0))
        outcome[len(rows) - len(self.doubled) :] = 1  # the second time aborted
        producers = strings(b.prod_names, self.producer[rows])
        for lo in range(0, len(rows), spec.part_rows):
            s = slice(lo, min(len(rows), lo + spec.part_rows))
            r = rows[s]
            w.write_batch(
                "transactions",
                pa.table(
                    {
                        "transaction_id": pc.take(self._names(), pa.array(r)),
                        "producer_id": producers[s],
                        "transactional_id": pc.binary_join_element_wise(producers[s], "tx", "."),
                        "begin_ts": self.begin[r],
                        "end_requested_ts": pa.array(self.asked[r], mask=np.isnan(self.asked[r])),
                        "end_ts": pa.array(self.ended[r], mask=np.isnan(self.ended[r])),
                        "outcome": strings(TXN_OUTCOME_NAMES, outcome[s]),
                        "error": strings(TXN_ERRORS, self.error[r]),  # type: ignore[arg-type]
                    }
                ),
            )
        name = b.prod_names[spec.producers]
        at = b.chunk.t0 + np.arange(self.empty) * self.dt
        empty = [
            {"transaction_id": f"{topic}/tx-empty-{i}", "producer_id": name, "transactional_id": f"{name}.tx",
             "begin_ts": float(t), "end_requested_ts": float(t) + 0.5 * self.dt,
             "end_ts": float(t) + 0.8 * self.dt, "outcome": TXN_COMMITTED, "error": None}
            for i, t in enumerate(at.tolist())
        ]  # fmt: skip
        if empty:
            w.write_batch("transactions", pa.Table.from_pylist(empty))
        self.rows_written = len(rows) + len(empty)
        return self._write_reads(w, topic)

    def _write_reads(self, w: HistoryWriter, topic: str) -> int:
        b, spec = self.b, self.b.spec
        if not self.reads:
            return 0
        m = np.array([r[0] for r in self.reads], np.int64)
        reader = np.array([r[1] for r in self.reads], np.int64)
        part = b.part[m]
        c = part % spec.consumers
        assigners = [f"consumer-{ZONES[i % len(ZONES)]}-{i}" for i in range(spec.consumers)]
        names = [*assigners, *READER_NAMES]
        who = np.where(reader == ASSIGNER, c, spec.consumers + reader - 1)
        k = len(m)
        w.write_batch(
            "polls",
            pa.table(
                {
                    "consumer_id": strings(names, who),
                    "zone": strings(list(ZONES), who % len(ZONES)),
                    "topic": pa.repeat(topic, k),
                    "partition": part.astype(np.int32),
                    "offset": b.offset_of[m],
                    "message_id": pc.take(b.mids, pa.array(m)),
                    "poll_ts": np.array([r[2] for r in self.reads], np.float64),
                    "group": pa.nulls(k, pa.string()),
                    "assignment": pa.nulls(k, pa.int32()),
                    "poll_seq": pa.nulls(k, pa.int64()),
                    "isolation": strings(READER_LEVELS, reader),  # type: ignore[arg-type]
                }
            ),
        )
        return k

    def record(self, t: Truth) -> None:
        b = self.b
        t.add("txn_aborted_read", b.part[self.aborted_read], b.ids(self.aborted_read))
        t.add("txn_uncommitted_read", b.part[self.uncommitted], b.ids(self.uncommitted))
        first = self.first[self.lost]
        t.add("txn_lost", b.part[first], b.ids(first))
        t.add("txn_partial", b.part[self.first[self.partial]], b.ids(self.partial_first))
