"""A consume-transform-produce pipeline planted on a synthetic chunk (schema 7).

``tests.synthetic.core`` builds a chunk's input (sends, final log, polls, and its other
plants); this module adds a pipeline group that read that input and wrote one output per
record to a topic of its own (``<topic>-out``), with the group's final offsets. The
outputs are clean in every other kind's eyes: acknowledged where the final log holds
them, read there by an assign()-ing reader, one producer's seqs rising with its offsets.
So the pipeline plants count only as pipeline kinds, in the *input* partitions, whatever
else the chunk plants, and the old kinds of the input stay exactly as planted.

What a sound pipeline leaves, per input partition: final offset F (the log's end, half of
it, or nothing committed), never above the first record without an id (an output made of
one would name no source record, an orphan); one output for every record readable under
read_committed below F, and for about half of those at or above it; none for a record
the read_committed drain was not given. The plants, each exact:

- pipeline_duplicate: one or two further outputs of a source that has one.
- pipeline_lost: a readable record below F left without output.
- pipeline_orphan: an output of a source past the log's end (nothing there), of a record
  the read_committed drain was not given (an aborted transaction's), or one naming
  another record than the one its source position holds (its only output).

It draws from its own random stream, so a chunk without a pipeline is the very history it
was before pipelines existed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.history import PIPELINE_KINDS

PIPELINE_GROUP = "synthetic-pipeline"
MEMBERS = 3  # outputs are written by this many members, round robin
BEYOND_SOURCE = 5_000  # sources of "nothing there" orphans start this far past the log's end
DUPLICATE, LOST, ORPHAN = PIPELINE_KINDS


@dataclass(frozen=True)
class InputLog:
    """The chunk's final log as written: one entry per record."""

    topic: str
    partitions: int
    part: np.ndarray  # int32
    offset: np.ndarray  # int64
    message_id: pa.Array  # string, null: a record without an id
    readable: np.ndarray  # bool: read_committed true or null


@dataclass
class PlantedPipeline:
    """What the pipeline adds: the tables to write, and the ground truth per kind as
    (source partitions, planted ids, count per entry)."""

    tables: dict[str, pa.Table]
    truth: list[tuple[str, np.ndarray, list[str | None], int]] = field(default_factory=list)
    send_ts: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _highest(values: np.ndarray, parts: np.ndarray, nparts: int) -> np.ndarray:
    """Per partition, the highest of ``values`` (-1 where it has none)."""
    out = np.full(nparts, -1, np.int64)
    np.maximum.at(out, parts, values)
    return out


def _lowest(values: np.ndarray, parts: np.ndarray, nparts: int) -> np.ndarray:
    """Per partition, the lowest of ``values`` (the int64 maximum where it has none)."""
    out = np.full(nparts, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(out, parts, values)
    return out


def _take(rng: np.random.Generator, candidates: np.ndarray, k: int, what: str) -> np.ndarray:
    if k > len(candidates):
        raise ValueError(f"cannot plant {k} {what}: only {len(candidates)} candidates")
    return np.sort(rng.choice(candidates, size=k, replace=False)).astype(np.int64) if k else candidates[:0]


def plant(
    log: InputLog, want: dict[str, int], rng: np.random.Generator, t0: float, drained_rc: bool, name: str
) -> PlantedPipeline:
    """The pipeline of one chunk. ``drained_rc``: the chunk made a read_committed drain, so
    the outputs' records carry read_committed true (else null). ``name`` keeps the
    members' producer ids apart from other chunks'."""
    nparts = log.partitions
    named = pc.is_valid(log.message_id).to_numpy(zero_copy_only=False)
    ends = _highest(log.offset, log.part, nparts) + 1  # one past each partition's last record
    first_no_id = _lowest(np.where(named, np.iinfo(np.int64).max, log.offset), log.part, nparts)
    choice = rng.integers(0, 3, nparts)
    final = np.where(choice == 0, ends, np.where(choice == 1, ends // 2, -1))
    final = np.where(final >= 0, np.minimum(final, first_no_id), -1)
    covered = (final[log.part] >= 0) & (log.offset < final[log.part])

    answerable = log.readable & named
    lost = _take(rng, np.flatnonzero(covered & answerable), want[LOST], "pipeline_lost")
    has_output = answerable & (covered | (rng.random(len(log.part)) < 0.5))
    has_output[lost] = False
    base = np.flatnonzero(has_output)
    k = want[ORPHAN]
    unreadable = np.flatnonzero(~log.readable & named)
    n_unreadable = int(rng.integers(0, min(k, len(unreadable)) + 1))
    n_another = int(rng.integers(0, k - n_unreadable + 1))
    n_nothing = k - n_unreadable - n_another
    another = _take(rng, base, n_another, "orphans naming another record")
    pool = np.setdiff1d(base, another, assume_unique=True)
    twice = int(rng.integers(0, want[DUPLICATE] // 2 + 1))
    once = want[DUPLICATE] - 2 * twice
    extra = _take(rng, pool, once + twice, "pipeline duplicates")
    rng.shuffle(extra)
    extra_twice, extra_once = np.sort(extra[:twice]), np.sort(extra[twice:])
    aborted_source = _take(rng, unreadable, n_unreadable, "orphans of unreadable records")

    # Every output as (input row or -1, source partition, source offset, id read there).
    rows = np.concatenate([base, extra_once, extra_twice, extra_twice, aborted_source])
    src_part = log.part[rows].astype(np.int32)
    src_off = log.offset[rows]
    src_id = pc.take(log.message_id, pa.array(rows))
    lie = np.isin(rows[: len(base)], another)
    if lie.any():  # the only output of its source, naming a record nobody sent there
        made_up = pa.array([f"{log.topic}-nobody-{i}" for i in range(int(lie.sum()))], pa.string())
        ids = src_id.to_pylist()
        for j, i in enumerate(np.flatnonzero(lie)):
            ids[i] = made_up[j].as_py()
        src_id = pa.array(ids, pa.string())
    nothing_part = rng.integers(0, nparts, n_nothing).astype(np.int32)
    nothing_off = ends[nothing_part] + BEYOND_SOURCE + np.arange(n_nothing)
    src_part = np.concatenate([src_part, nothing_part])
    src_off = np.concatenate([src_off, nothing_off])
    src_id = pa.concat_arrays([src_id, pa.nulls(n_nothing, pa.string())])
    n = len(src_part)

    # Members take outputs round robin; seqs and offsets both rise in output order.
    member = np.arange(n) % MEMBERS
    seq = np.zeros(n, np.int64)
    for m in range(MEMBERS):
        seq[member == m] = np.arange(int((member == m).sum()))
    out_part = src_part
    out_off = np.zeros(n, np.int64)
    for p in range(nparts):
        at = out_part == p
        out_off[at] = np.arange(int(at.sum()))
    members = [f"{name}-pipe-{m}" for m in range(MEMBERS)]
    producer = pc.take(pa.array(members, pa.string()), pa.array(member))
    out_id = pc.binary_join_element_wise(producer, pa.array(seq).cast(pa.string()), "-")
    send_ts = t0 + 0.001 + np.arange(n) * 1e-4
    out_topic = pa.repeat(f"{log.topic}-out", n)
    tables = {
        "sends": pa.table(
            {
                "message_id": out_id,
                "producer_id": producer,
                "seq": seq,
                "topic": out_topic,
                "partition": out_part,
                "send_ts": send_ts,
                "ack_ts": send_ts + 0.005,
                "outcome": pa.repeat("acked", n),
                "offset": out_off,
                "source_group": pa.repeat(PIPELINE_GROUP, n),
                "source_topic": pa.repeat(log.topic, n),
                "source_partition": src_part,
                "source_offset": src_off,
                "source_message_id": src_id,
            }
        ),
        "final_log": pa.table(
            {
                "topic": out_topic,
                "partition": out_part,
                "offset": out_off,
                "message_id": out_id,
                "read_committed": pa.repeat(pa.scalar(True if drained_rc else None, pa.bool_()), n),
            }
        ),
        "polls": pa.table(
            {
                "consumer_id": pa.repeat(f"{name}-pipe-reader", n),
                "topic": out_topic,
                "partition": out_part,
                "offset": out_off,
                "message_id": out_id,
                "poll_ts": send_ts + 0.01,
            }
        ),
        "final_offsets": pa.table(
            {
                "group": pa.repeat(PIPELINE_GROUP, nparts),
                "topic": pa.repeat(log.topic, nparts),
                "partition": np.arange(nparts, dtype=np.int32),
                "offset": pa.array(final, mask=final < 0),
                "ts": pa.repeat(t0, nparts),
            }
        ),
    }

    # Ground truth, in the source partitions.
    planted = PlantedPipeline(tables, send_ts=send_ts)
    planted.truth.append((LOST, log.part[lost], pc.take(log.message_id, pa.array(lost)).to_pylist(), 1))
    for extras, times in ((extra_once, 1), (extra_twice, 2)):
        seconds = [_second_output(rows, member, out_id, r) for r in extras]
        planted.truth.append((DUPLICATE, log.part[extras], seconds, times))
    orphan_at = np.concatenate([np.flatnonzero(lie), len(base) + 2 * twice + once + np.arange(n_unreadable)])
    orphan_at = np.concatenate([orphan_at, len(rows) + np.arange(n_nothing)])
    planted.truth.append((ORPHAN, src_part[orphan_at], pc.take(out_id, pa.array(orphan_at)).to_pylist(), 1))
    return planted


def _second_output(rows: np.ndarray, member: np.ndarray, out_id: pa.Array, row: int) -> str | None:
    """The id of the second output of input row ``row`` by (producer id, seq): members'
    names order as their numbers, and a member's seqs rise in output order."""
    mine = np.flatnonzero(rows == row)
    order = sorted(mine, key=lambda i: (int(member[i]), int(i)))
    return str(out_id[int(order[1])].as_py())
