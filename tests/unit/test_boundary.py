"""The driver-side half of the reorder rule: descents between blocks of seqs."""

from __future__ import annotations

from itertools import pairwise
from random import Random

from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.boundary import BlockEnd, cross_block_reorders

BLOCK = 4  # seqs per block in these tests


def ends_of(offsets_by_seq: dict[int, int], log_tp: int = 1, producer: int = 7) -> list[BlockEnd]:
    """The head and tail of each block, as the Spark pass hands them over."""
    by_block: dict[int, list[int]] = {}
    for seq in sorted(offsets_by_seq):
        by_block.setdefault(seq // BLOCK, []).append(seq)
    ends: list[BlockEnd] = []
    for block, seqs in by_block.items():
        for seq in {seqs[0], seqs[-1]}:
            ends.append(BlockEnd(log_tp, producer, seq, block, offsets_by_seq[seq], head=seq == seqs[0]))
    return ends


def descents_in_seq_order(offsets_by_seq: dict[int, int]) -> set[tuple[int, int]]:
    seqs = sorted(offsets_by_seq)
    return {(b, a) for a, b in pairwise(seqs) if offsets_by_seq[b] < offsets_by_seq[a]}


def test_a_swap_across_a_block_boundary_is_found_once() -> None:
    offsets = {0: 0, 1: 1, 2: 2, 3: 4, 4: 3, 5: 5}  # seq 3 ends block 0, seq 4 heads block 1
    found = cross_block_reorders(ends_of(offsets))
    assert [(f.end.seq, f.prev_seq) for f in found] == [(4, 3)]


def test_a_swap_inside_a_block_is_left_to_the_window() -> None:
    offsets = {0: 0, 1: 2, 2: 1, 3: 3, 4: 4}
    assert cross_block_reorders(ends_of(offsets)) == []


def test_partitions_and_producers_are_compared_apart() -> None:
    # Block 0 of producer 7 ends high in partition 1; the next block's head sits lower,
    # but only in partition 2 and for producer 8: no pair there.
    ends = [
        BlockEnd(1, 7, 3, 0, 100, head=False),
        BlockEnd(2, 7, 4, 1, 5, head=True),
        BlockEnd(1, 8, 4, 1, 5, head=True),
    ]
    assert cross_block_reorders(ends) == []


def test_an_empty_block_in_between_still_pairs_the_neighbours() -> None:
    offsets = {2: 10, 3: 11, 12: 4}  # block 1 sent nothing to this partition
    found = cross_block_reorders(ends_of(offsets))
    assert [(f.end.seq, f.prev_seq) for f in found] == [(12, 3)]


@given(
    st.lists(st.integers(0, 10_000), min_size=1, max_size=60, unique=True),
    st.randoms(use_true_random=False),
)
def test_blocks_plus_window_give_every_descent(offsets: list[int], rnd: Random) -> None:
    """Descents found across blocks, plus the descents inside blocks (the window's share),
    are exactly the descents of the whole seq order."""
    seqs = sorted(rnd.sample(range(200), len(offsets)))
    by_seq = dict(zip(seqs, offsets, strict=True))
    inside = {(b, a) for b, a in descents_in_seq_order(by_seq) if b // BLOCK == a // BLOCK}
    across = {(f.end.seq, f.prev_seq) for f in cross_block_reorders(ends_of(by_seq))}
    assert inside | across == descents_in_seq_order(by_seq)
    assert not inside & across
