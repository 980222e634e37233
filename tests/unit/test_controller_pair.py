"""The controller and its epoch read as one pair from their two znodes (no ZooKeeper: the
reads are played back as an election between them would leave them)."""

from __future__ import annotations

import json
from collections.abc import Callable

from harness.cluster.zkstate import ZnodeRead, paired_controller


def _controller(broker: int, czxid: int) -> ZnodeRead:
    return ZnodeRead(json.dumps({"version": 1, "brokerid": broker}).encode(), czxid, czxid)


def _epoch(epoch: int, mzxid: int) -> ZnodeRead:
    return ZnodeRead(str(epoch).encode(), 2, mzxid)


Pair = tuple[ZnodeRead | None, ZnodeRead | None]


def _reads(*pairs: Pair) -> Callable[[], Pair]:
    played = iter(pairs)
    return lambda: next(played)


def test_a_pair_torn_by_an_election_between_its_reads_is_read_again() -> None:
    """Broker 0 was controller in epoch 1 (elected in transaction 10); broker 2 took over
    in transaction 20 (epoch 2) between the reads of /controller and /controller_epoch.
    Read apart, that is "controller 0 in epoch 2", which never was."""
    reads = _reads((_controller(0, 10), _epoch(2, 20)), (_controller(2, 20), _epoch(2, 20)))
    assert paired_controller(reads) == (2, 2)


def test_the_other_tear_a_new_controller_with_its_predecessors_epoch_is_read_again() -> None:
    reads = _reads((_controller(2, 20), _epoch(1, 10)), (_controller(2, 20), _epoch(2, 20)))
    assert paired_controller(reads) == (2, 2)


def test_an_untorn_pair_is_taken_as_read() -> None:
    assert paired_controller(_reads((_controller(1, 30), _epoch(3, 30)))) == (1, 3)


def test_no_controller_gives_the_last_epoch_and_no_epoch_at_all_gives_none() -> None:
    assert paired_controller(_reads((None, _epoch(4, 40)))) == (None, 4)
    assert paired_controller(_reads((None, None))) == (None, None)


def test_a_pair_that_never_agrees_keeps_the_controller_and_drops_the_epoch() -> None:
    torn = (_controller(0, 10), _epoch(2, 20))
    assert paired_controller(_reads(*[torn] * 3), attempts=3) == (0, None)
