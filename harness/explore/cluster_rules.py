"""What the metadata's view of the cluster (ZooKeeper's, or the KRaft quorum's and the
Admin API's) must never show, whatever the faults.

Read from the sampler's timeline (each state with the span it was seen to hold):
- one controller per controller epoch: the epoch is bumped at every election, so two
  brokers seen as controller under one epoch would be two controllers at once;
- a partition's leader epoch never goes back;
- a partition's leader is in its ISR, and its ISR within its replicas.

A snapshot is several znode reads, not one atomic read, so a state caught mid-change can
pair, say, a new controller with the old epoch. A rule about more than one znode (the
controller and its epoch; a partition's state and its assignment) therefore counts only
states seen to hold over at least two reads; a partition's leader, leader epoch and ISR
share one znode and are judged in every state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.cluster.state import ClusterState


@dataclass(frozen=True)
class Seen:
    """A state and the span of monotonic time it was seen to hold."""

    mono: float
    until: float
    state: ClusterState

    @property
    def settled(self) -> bool:
        """Read more than once: not a mix of reads caught mid-change."""
        return self.until > self.mono


@dataclass(frozen=True)
class Violation:
    rule: str
    detail: str


ONE_CONTROLLER = "one controller per controller epoch"
LEADER_EPOCHS = "leader epochs never go back"
LEADER_IN_ISR = "the leader is in the ISR"
ISR_IN_REPLICAS = "the ISR is within the replicas"
RULES = (ONE_CONTROLLER, LEADER_EPOCHS, LEADER_IN_ISR, ISR_IN_REPLICAS)


def violations(timeline: Sequence[Seen]) -> list[Violation]:
    """Every breach of the rules above, in time order within each rule."""
    found: list[Violation] = []
    found += _controllers(timeline)
    found += _leader_epochs(timeline)
    for seen in timeline:
        for (topic, number), p in sorted(seen.state.partitions.items()):
            where = f"{topic}-{number} at {seen.mono:.1f}"
            if p.leader >= 0 and p.leader not in p.isr:
                found.append(Violation(LEADER_IN_ISR, f"{where}: leader {p.leader}, ISR {list(p.isr)}"))
            if seen.settled and not set(p.isr) <= set(p.replicas):
                found.append(Violation(ISR_IN_REPLICAS,
                                       f"{where}: ISR {list(p.isr)}, replicas {list(p.replicas)}"))
    return found


def _controllers(timeline: Sequence[Seen]) -> list[Violation]:
    """Epochs of one count only (ClusterState.epoch_count): a migration's reading moves
    from ZooKeeper's controller epoch to the quorum's leader epoch, whose numbers repeat
    the other's without meaning the same election."""
    by_epoch: dict[tuple[str, int], dict[int, float]] = {}
    for seen in timeline:
        state = seen.state
        if seen.settled and state.controller is not None and state.controller_epoch is not None:
            key = (state.epoch_count or "", state.controller_epoch)
            by_epoch.setdefault(key, {}).setdefault(state.controller, seen.mono)
    return [Violation(ONE_CONTROLLER, f"{count + ' ' if count else ''}epoch {epoch}: brokers "
                      + ", ".join(f"{b} (seen at {t:.1f})" for b, t in sorted(brokers.items())))
            for (count, epoch), brokers in sorted(by_epoch.items()) if len(brokers) > 1]


def _leader_epochs(timeline: Sequence[Seen]) -> list[Violation]:
    last: dict[tuple[str, int], tuple[int, float]] = {}
    found = []
    for seen in timeline:
        for key, p in sorted(seen.state.partitions.items()):
            before = last.get(key)
            if before is not None and p.leader_epoch < before[0]:
                found.append(Violation(LEADER_EPOCHS,
                                       f"{key[0]}-{key[1]}: epoch {before[0]} at {before[1]:.1f}, "
                                       f"then {p.leader_epoch} at {seen.mono:.1f}"))
            if before is None or p.leader_epoch >= before[0]:
                last[key] = (p.leader_epoch, seen.mono)
    return found
