"""What the clients lived through, read back from a run's closed history.

ZooKeeper tells a scenario what the cluster decided; this tells it what the producers and
consumers saw: acknowledgements per producer and per partition, how every send ended,
what each consumer polled. It reads the same sends and polls tables the Spark judge
reads, after :meth:`ScenarioRun.finish`, so a scenario's client-side figures and the
verdict describe one history. The process-fault scenarios (S1-S6) ask per partition,
the network ones (S7-S12) per client, since each client sits in one zone.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from harness import history as hist
from harness.compose.scenario import ScenarioRun


@dataclass(frozen=True)
class Attempt:
    """One failed produce attempt of a batch (the history's ``attempts`` table)."""

    ts: float
    partition: int
    messages: int
    error: str
    possibly_persisted: bool


@dataclass(frozen=True)
class ClientLog:
    """Sorted timestamps per client and per partition, and the errors of unacknowledged
    sends per partition. A send counts as acknowledged only with an acknowledgement time."""

    acks: dict[str, tuple[float, ...]]  # producer -> sorted ack_ts
    sends: dict[str, tuple[tuple[float, str], ...]]  # producer -> (send_ts, outcome), by send_ts
    polls: dict[str, tuple[float, ...]]  # consumer -> sorted poll_ts
    partition_acks: dict[int, tuple[float, ...]]  # partition -> sorted ack_ts, all producers
    errors: dict[int, dict[str, int]]  # partition -> error name (else outcome) -> sends
    attempts: dict[str, tuple[Attempt, ...]]  # producer -> its failed attempts (batches), by time
    outcome_of: dict[str, str]  # message id -> how its send ended

    @classmethod
    def of(cls, run: ScenarioRun) -> ClientLog:
        return cls.read(run.dir / "history")

    @classmethod
    def read(cls, history_dir: Path) -> ClientLog:
        columns = ["message_id", "producer_id", "partition", "outcome", "send_ts", "ack_ts", "error"]
        acks: dict[str, list[float]] = {}
        sends: dict[str, list[tuple[float, str]]] = {}
        by_partition: dict[int, list[float]] = {}
        errors: dict[int, dict[str, int]] = {}
        outcome_of: dict[str, str] = {}
        for row in pq.read_table(history_dir / "sends", columns=columns).to_pylist():
            producer, partition = str(row["producer_id"]), int(row["partition"])
            outcome_of[str(row["message_id"])] = str(row["outcome"])
            sends.setdefault(producer, []).append((float(row["send_ts"]), str(row["outcome"])))
            if row["outcome"] == hist.OUTCOME_ACKED and row["ack_ts"] is not None:
                acks.setdefault(producer, []).append(float(row["ack_ts"]))
                by_partition.setdefault(partition, []).append(float(row["ack_ts"]))
            else:
                names = errors.setdefault(partition, {})
                name = row["error"] or row["outcome"]
                names[name] = names.get(name, 0) + 1
        polls: dict[str, list[float]] = {}
        for row in pq.read_table(history_dir / "polls", columns=["consumer_id", "poll_ts"]).to_pylist():
            polls.setdefault(str(row["consumer_id"]), []).append(float(row["poll_ts"]))
        attempts: dict[str, list[Attempt]] = {}
        attempt_columns = ["producer_id", "ts", "partition", "messages", "error", "possibly_persisted"]
        for row in pq.read_table(history_dir / "attempts", columns=attempt_columns).to_pylist():
            attempts.setdefault(str(row["producer_id"]), []).append(Attempt(
                float(row["ts"]), int(row["partition"]), int(row["messages"]), str(row["error"]),
                bool(row["possibly_persisted"])))
        return cls({p: tuple(sorted(t)) for p, t in acks.items()},
                   {p: tuple(sorted(s)) for p, s in sends.items()},
                   {c: tuple(sorted(t)) for c, t in polls.items()},
                   {p: tuple(sorted(t)) for p, t in by_partition.items()},
                   errors,
                   {p: tuple(sorted(a, key=lambda x: x.ts)) for p, a in attempts.items()},
                   outcome_of)

    # ------------------------------------------------------------------ per client

    def acked_between(self, producer: str, start: float, end: float) -> int:
        """Acknowledgements ``producer`` received with start <= ack_ts <= end."""
        return _between(self.acks.get(producer, ()), start, end)

    def rate_between(self, producer: str, start: float, end: float) -> float:
        return self.acked_between(producer, start, end) / max(end - start, 1e-9)

    def polled_between(self, consumer: str, start: float, end: float) -> int:
        """Records ``consumer`` polled with start <= poll_ts <= end."""
        return _between(self.polls.get(consumer, ()), start, end)

    def outcomes_sent_between(self, producer: str, start: float, end: float) -> dict[str, int]:
        """How the sends ``producer`` made in [start, end] ended (acked / failed / unknown)."""
        counts = dict.fromkeys(hist.OUTCOMES, 0)
        for ts, outcome in self.sends.get(producer, ()):
            if start <= ts <= end:
                counts[outcome] += 1
        return counts

    def producer_gap(self, producer: str, start: float, end: float) -> float:
        """The longest stretch in [start, end] without an acknowledgement to ``producer``."""
        return _longest_gap(self.acks.get(producer, ()), start, end)

    def attempt_errors_between(self, producer: str, start: float, end: float) -> dict[str, int]:
        """Failed attempts of ``producer`` in [start, end], by error name."""
        counts: dict[str, int] = {}
        for attempt in self.attempts.get(producer, ()):
            if start <= attempt.ts <= end:
                counts[attempt.error] = counts.get(attempt.error, 0) + 1
        return counts

    # --------------------------------------------------------------- per partition

    def acked_on(self, partitions: Sequence[int], start: float, end: float) -> int:
        """Acknowledgements on ``partitions``, all producers, with start <= ack_ts <= end."""
        return sum(_between(self.partition_acks.get(p, ()), start, end) for p in partitions)

    def partition_gap(self, partition: int, start: float, end: float) -> float:
        """The longest stretch in [start, end] without an acknowledgement on ``partition``."""
        return _longest_gap(self.partition_acks.get(partition, ()), start, end)


def _between(times: Sequence[float], start: float, end: float) -> int:
    return bisect.bisect_right(times, end) - bisect.bisect_left(times, start)


def _longest_gap(times: Sequence[float], start: float, end: float) -> float:
    """``start`` and ``end`` count as boundaries, so a stream that goes dark at a fault
    shows the whole time from the fault to its first acknowledgement after it."""
    inside = times[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]
    points = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(points))
