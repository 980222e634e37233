"""G2 A rebalance storm: automatic commits against committing after processing.

Three members of one group each leave and rejoin the group every few seconds (periods
3, 4 and 5 s, so the rebalances never line up), while a producer writes steadily. Each
member spends a few milliseconds processing every record it fetched, and a restart
interrupts the batch in hand, as a crash or a redeploy would. The brokers are never
touched: the storm is the fault.

- Automatic commits: librdkafka stores the offset of every record it hands over and
  commits the stored offsets every second and on leaving, processed or not. A restart
  mid-batch therefore commits records nobody processed, and the member that takes the
  partition over resumes past them. The judge must catch both: acknowledged records
  no one read, and commits beyond what the group had read when their answer came.
  (Poll skips are judged against the committed offset a member resumed from, which
  here already lies past the gap; any count is accepted and shown.)
- Committing after processing: each batch's offsets are committed only once all of it
  was processed, so an interrupted batch is read again (re-reads, allowed) and nothing
  is skipped: no commit beyond read, no unread record, no skip, no regression.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow.parquet as pq
import pytest

import harness.history as hist
from harness.compose.checks import Commits, CommitsKept, Polls
from harness.compose.expectations import CountRange
from harness.compose.scenario import ScenarioRun, ScenarioSpec, TopicSpec
from harness.compose.spec_runner import run_spec
from harness.history import Rule
from harness.workload.driver import ConsumerSpec, ProducerSpec

pytestmark = pytest.mark.chaos

MEMBERS = {"m-a": 3.0, "m-b": 4.0, "m-c": 5.0}  # member (zone from its last letter) -> restart period
PERIODS = ", ".join(f"{period:g}" for period in MEMBERS.values())
STORM_S = 24.0
STORM_ASSIGNMENTS = 3  # at least, per member
PROCESS_MS = 5.0
PRODUCER = {"acks": "all", "enable.idempotence": True}
CLEAN: dict[str, Rule] = {"lost": 0, "duplicate": 0, "truncated": 0, "unexpected": 0, "aborted_read": 0,
                          "reordered": 0, "unseen": 0, "poll_skip": 0, "nonmonotonic_poll": 0,
                          "commit_regression": 0, "commit_beyond_read": 0}
EXPECT = {
    "auto": {**CLEAN, "unseen": "at_least_one", "commit_beyond_read": "at_least_one", "poll_skip": "any"},
    "sync": CLEAN,
}


def g2_spec(commit: str) -> ScenarioSpec:
    """The storm with every member committing as ``commit`` says (``auto`` or ``sync``)."""
    how = ("automatic commits (every second and on leaving)" if commit == "auto"
           else "a synchronous commit after each batch is processed")
    return ScenarioSpec(
        id=f"g2-rebalance-storm-{commit}", title=f"G2 a rebalance storm with {commit} commits",
        description=f"Three members of one group restart every {PERIODS} s for {STORM_S:g} s, each "
                    f"spending {PROCESS_MS:g} ms on every record, with {how}; a "
                    "restart interrupts the batch being processed.",
        expected=("Records delivered but never processed are committed: commits beyond what the group "
                  "read and acknowledged records no one read are caught." if commit == "auto" else
                  "Interrupted batches are read again; nothing skipped, no commit beyond what was read."),
        topic=TopicSpec(partitions=6, replication_factor=3, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=300),),
        consumers=tuple(ConsumerSpec(name, name[-1], group=f"g2-{commit}", commit=commit,
                                     restart_every_s=period, process_ms=PROCESS_MS)
                        for name, period in MEMBERS.items()),
        expectations=EXPECT[commit], warmup_s=1, cooldown_s=STORM_S,
        checks=(
            Commits("committed", CountRange(at_least=1), label="the members' commits went through"),
            Polls(tuple(MEMBERS), CountRange(at_least=1), label="every member read"),
            CommitsKept(label="the broker keeps the last commit of every partition through the storm"),
        ),
    )


@pytest.mark.parametrize("commit", ["auto", "sync"])
def test_g2_a_rebalance_storm_skips_records_only_when_commits_run_ahead_of_processing(
    scenario: Callable[[ScenarioSpec], ScenarioRun], commit: str
) -> None:
    run = run_spec(g2_spec(commit), scenario)
    rebalances = pq.read_table(run.dir / "history" / "rebalances").to_pylist()
    assigned = [r for r in rebalances if r["event"] == hist.REBALANCE_ASSIGNED]
    assignments = {m: len({r["assignment"] for r in assigned if r["consumer_id"] == m}) for m in MEMBERS}
    # The storm happened: a member is reassigned at each of its own restarts and the
    # others', though a rejoin waits for the group's rebalance, so not once per period.
    assert min(assignments.values()) >= STORM_ASSIGNMENTS, f"assignments per member: {assignments}"
    assert run.passed, run.failures()
