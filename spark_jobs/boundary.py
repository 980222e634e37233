"""Reorders that straddle two seq blocks, found on the driver from the blocks' end messages.

The main pass judges reordering inside blocks of consecutive seqs of one producer (see
``plan.py``): the sweep there sees every pair of seq-adjacent messages except the pair
made of one block's last message in a partition and the next block's first message in
that partition. Those ends leave the pass anyway, and there are only two per block and
partition (about 15k rows for 10M sends), so comparing them here is cheaper than another
Spark shuffle, which on a small history costs more than the data does.

Plain Python and no Spark, so the rule is unit-tested on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class BlockEnd:
    """The first (``head``) and/or last message of one block of one producer's seqs in one
    partition of the final log, by its first copy there."""

    log_tp: int  # the final-log partition both messages of a compared pair sit in
    producer: int  # P: 64-bit hash of the producer id
    seq: int
    block: int
    offset: int  # of the first copy in log_tp
    head: bool


@dataclass(frozen=True)
class CrossBlockReorder:
    """``end`` (a block's first message) sits below ``prev_seq``, the producer's message
    sent just before it to the same partition, which ended an earlier block."""

    end: BlockEnd
    prev_seq: int


def cross_block_reorders(ends: Iterable[BlockEnd]) -> list[CrossBlockReorder]:
    """Descents between consecutive ends of different blocks, in seq order per producer
    and final-log partition: exactly the reorders the in-block sweep cannot see."""
    found: list[CrossBlockReorder] = []
    previous: BlockEnd | None = None
    for end in sorted(ends, key=lambda e: (e.log_tp, e.producer, e.seq)):
        if (
            previous is not None
            and (previous.log_tp, previous.producer) == (end.log_tp, end.producer)
            and end.head
            and previous.block != end.block
            and end.offset < previous.offset
        ):
            found.append(CrossBlockReorder(end, previous.seq))
        previous = end
    return found
