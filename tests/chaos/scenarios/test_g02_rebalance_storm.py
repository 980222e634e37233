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
from harness.history import Rule
from harness.scenario.checks import Commits, CommitsKept, CountRange, Polls
from harness.scenario.runner import ScenarioRun, ScenarioSpec, TopicSpec
from harness.scenario.spec_runner import run_spec
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


@pytest.mark.parametrize("commit", [
    "auto", pytest.param("sync", marks=pytest.mark.core(judges=("messages", "groups")))])
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


# Crashes: a member killed leaves a ghost that holds its partitions until its session
# times out. The coordinator drops it no sooner than a session after its last heartbeat,
# which came at most a heartbeat interval before the crash (twice that, for a heartbeat
# delayed on a busy machine); a clean leave rebalances within about one heartbeat.
CRASH_SESSION_MS, CRASH_HEARTBEAT_MS = 10_000, 1_000
CRASH_EVERY_S, CRASH_UNTIL_S = 12.0, 26.0  # longer than a ghost's life, so each member is back first
GHOST_AT_LEAST_S = (CRASH_SESSION_MS - 2 * CRASH_HEARTBEAT_MS) / 1000
CRASH_COOLDOWN_S = 45.0


def g2_crash_spec(restart: str = "crash") -> ScenarioSpec:
    """Three members committing after processing crash every 12 s during the first 26 s of
    the workload, then read on undisturbed."""
    return ScenarioSpec(
        id=f"g2-member-{'crashes' if restart == 'crash' else 'clean-restarts'}",
        title=f"G2 group members that {restart} inside a window",
        description=f"Three members of one group, each committing synchronously after processing, "
                    f"{restart} every {CRASH_EVERY_S:g} s during the first {CRASH_UNTIL_S:g} s of the "
                    f"workload (session.timeout.ms {CRASH_SESSION_MS}, heartbeat.interval.ms "
                    f"{CRASH_HEARTBEAT_MS}), then read on undisturbed.",
        expected="Each crashed member's partitions wait for its session to time out before they move; "
                 "no crash after the window; nothing skipped, no commit beyond what was read.",
        topic=TopicSpec(partitions=6, replication_factor=3, config={"min.insync.replicas": 2}),
        producers=(ProducerSpec("pa", "a", PRODUCER, rate_per_s=300),),
        consumers=tuple(ConsumerSpec(name, name[-1], group=f"g2-{restart}", commit="sync",
                                     restart_every_s=CRASH_EVERY_S, restart=restart,
                                     restart_until_s=CRASH_UNTIL_S, process_ms=PROCESS_MS,
                                     settings={"session.timeout.ms": CRASH_SESSION_MS,
                                               "heartbeat.interval.ms": CRASH_HEARTBEAT_MS})
                        for name in MEMBERS),
        expectations=CLEAN, warmup_s=1, cooldown_s=CRASH_COOLDOWN_S,
        checks=(
            Commits("committed", CountRange(at_least=1), label="the members' commits went through"),
            Polls(tuple(MEMBERS), CountRange(at_least=1), label="every member read"),
            CommitsKept(label="the broker keeps the last commit of every partition through the crashes"),
        ),
    )


def test_g2_a_crashed_member_holds_its_partitions_until_its_session_times_out_and_only_in_its_window(
    scenario: Callable[[ScenarioSpec], ScenarioRun],
) -> None:
    run = run_spec(g2_crash_spec(), scenario)
    history = run.dir / "history"
    faults = [r for r in pq.read_table(history / "faults").to_pylist() if r["fault"] == "member_crash"]
    began = min(r["send_ts"] for r in pq.read_table(history / "sends", columns=["send_ts"]).to_pylist())
    crashed = {m: [r["ts"] for r in faults if r["action"] == "inject" and m in r["targets"]] for m in MEMBERS}
    back = {m: [r["ts"] for r in faults if r["action"] == "heal" and m in r["targets"]] for m in MEMBERS}
    assert min(map(len, crashed.values())) >= 1, f"crashes per member: {crashed}"
    # Only inside the window: the members start before the first send.
    late = {m: [round(t - began, 1) for t in ts if t - began > CRASH_UNTIL_S + 1]
            for m, ts in crashed.items()}
    assert not any(late.values()), f"crashes past {CRASH_UNTIL_S:g} s: {late}"
    # A ghost, not a leave: each crashed member is handed partitions again only once the
    # coordinator dropped the ghost.
    ghosts = {m: [round(b - c, 1) for c, b in zip(crashed[m], back[m], strict=False)] for m in MEMBERS}
    assert all(ghosts.values()) and min(min(g) for g in ghosts.values()) >= GHOST_AT_LEAST_S, (
        f"seconds from each crash to the member's next assignment: {ghosts}")
    # The group settled after the window: every member read in its last 10 s.
    polls = pq.read_table(history / "polls", columns=["consumer_id", "poll_ts"]).to_pylist()
    last_read = {m: max(p["poll_ts"] for p in polls if p["consumer_id"] == m) for m in MEMBERS}
    assert min(last_read.values()) - began > CRASH_UNTIL_S + GHOST_AT_LEAST_S, f"last reads: {last_read}"
    assert run.passed, run.failures()
