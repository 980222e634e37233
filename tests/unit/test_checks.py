"""A scenario's declared checks, judged on made-up evidence: each holds where the
timeline shows it and fails, with the reason, where it does not."""

from __future__ import annotations

from typing import Any

import pytest

from faults.conditions import ControllerChanged, IsrIs, LeaderChanged, LeaderIs, Not, Offline
from harness import history as hist
from harness.cluster.state import ClusterState, PartitionState
from harness.scenario.checks import (
    Anchor,
    Attempts,
    CheckSpecError,
    CommitGap,
    Commits,
    CommitsKept,
    CountRange,
    Eventually,
    Evidence,
    Moment,
    NeverVisible,
    Observed,
    Polls,
    ProbeResult,
    Produced,
    SecondsRange,
    Seen,
    Sends,
    Throughout,
    TransactionGap,
    TransactionOutcomes,
    Unavailable,
    check_anchors,
    error_names,
    heal,
    inject,
    parse_check,
    transaction_known_at,
)


def _state(leader: int, isr: tuple[int, ...], epoch: int, controller_epoch: int = 1) -> ClusterState:
    part = PartitionState(topic="t", partition=0, leader=leader, leader_epoch=epoch, isr=isr,
                          controller_epoch=controller_epoch, replicas=(0, 1, 2))
    return ClusterState(live_brokers=(0, 1, 2), controller=2, controller_epoch=controller_epoch,
                        partitions={("t", 0): part})


# Mono and wall clocks 1000 s apart, so a check reading the wrong one fails.
WALL = 1000.0
TIMELINE = [
    Observed(0.0, 9.9, _state(0, (0, 1, 2), 5)),       # before the kill at 10
    Observed(10.0, 15.9, _state(0, (0, 1, 2), 5)),     # the kill not seen yet
    Observed(16.0, 29.9, _state(-1, (0,), 6)),          # offline from 16 s
    Observed(30.0, 60.0, _state(0, (0, 1, 2), 7)),     # back after the heal at 25
]
MOMENTS = {inject(1): Moment(WALL + 10, 10.0), heal(1): Moment(WALL + 25, 25.0)}


def _send(partition: int, at: float, outcome: str = "acked", producer: str = "pa") -> dict[str, Any]:
    return {"producer_id": producer, "partition": partition, "send_ts": WALL + at,
            "ack_ts": WALL + at + 0.01 if outcome == "acked" else None, "outcome": outcome}


SENDS = ([_send(0, t) for t in range(0, 10)] + [_send(0, t, "failed") for t in range(11, 24)]
         + [_send(0, t) for t in range(31, 40)] + [_send(1, t / 2) for t in range(0, 80)])
EVIDENCE = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0))


def test_eventually_holds_at_the_first_state_that_shows_it_and_fails_past_its_bound() -> None:
    offline = Offline("t", 0)
    held = Eventually(offline, inject(1), within_s=10).evaluate(EVIDENCE)
    assert held.passed and held.detail == "held 6.0 s after entry 1's inject"
    late = Eventually(offline, inject(1), within_s=5).evaluate(EVIDENCE)
    assert not late.passed and "t-0 led by 0" in late.detail
    # A comparing condition compares with the last state before the moment (epoch 5).
    assert Eventually(LeaderChanged("t", 0), inject(1), within_s=10).evaluate(EVIDENCE).passed


def test_throughout_fails_on_the_first_state_that_breaks_it() -> None:
    kept = Throughout(LeaderIs("t", 0, broker=0), inject(1), heal(1)).evaluate(EVIDENCE)
    assert not kept.passed and kept.detail.startswith("6.0 s after entry 1's inject: t-0 led by -1")
    quiet = Throughout(Not(ControllerChanged()), inject(1)).evaluate(EVIDENCE)
    assert quiet.passed and quiet.detail == "3 states over 30.0 s, all held"
    # settle_s moves the start: the stretch after the heal shows the ISR full throughout.
    settled = Throughout(IsrIs("t", 0, brokers=(0, 1, 2)), heal(1), settle_s=5).evaluate(EVIDENCE)
    assert settled.passed, settled.detail
    assert not Throughout(IsrIs("t", 0, brokers=(0, 1, 2)), heal(1)).evaluate(EVIDENCE).passed


def test_a_check_anchored_to_a_moment_that_never_came_fails() -> None:
    result = Eventually(Offline("t", 0), inject(2), within_s=10).evaluate(EVIDENCE)
    assert (result.passed, result.detail) == (False, "entry 2's inject never ran")
    empty = Evidence([], MOMENTS, SENDS, Moment(WALL + 40, 40.0))
    assert not Throughout(Offline("t", 0), inject(1)).evaluate(empty).passed


def test_sends_count_per_partition_in_the_window_by_when_they_were_made() -> None:
    failed = Sends("failed", CountRange(at_least=1), partitions=(0,), start=inject(1), until=heal(1))
    result = failed.evaluate(EVIDENCE)
    assert result.passed and result.detail == "p0: 13 of 13"
    none_failed = Sends("not_acked", CountRange(0, 0), partitions=(1,)).evaluate(EVIDENCE)
    assert none_failed.passed and none_failed.detail == "p1: 0 of 80"
    assert not Sends("not_acked", CountRange(0, 0)).evaluate(EVIDENCE).passed  # p0 had failures
    by_other = Sends("acked", CountRange(at_least=1), producers=("pz",)).evaluate(EVIDENCE)
    assert not by_other.passed and "no send" in by_other.detail


def test_unavailability_is_the_longest_stretch_without_an_ack_in_the_window() -> None:
    dark = Unavailable(SecondsRange(at_least=15), partitions=(0,), start=inject(1)).evaluate(EVIDENCE)
    assert dark.passed and dark.detail.startswith("p0: 21.01 s")  # the inject at 10 -> the ack at 31.01
    live = Unavailable(SecondsRange(at_most=1), partitions=(1,), start=inject(1)).evaluate(EVIDENCE)
    assert live.passed, live.detail
    assert not Unavailable(SecondsRange(at_most=1), start=inject(1)).evaluate(EVIDENCE).passed


CHECK_FORMS: list[dict[str, Any]] = [
    {"eventually": {"offline": {"topic": "$topic", "partition": 1}}, "after": {"inject": 1},
     "within_s": 30.0},
    {"throughout": {"not": "controller_changed"}, "from": {"inject": 1}, "until": {"heal": 2},
     "settle_s": 2.0, "name": "no election"},
    {"throughout": {"joins_isr": {"broker": 1, "topic": "$topic", "partition": 0}}, "from": {"inject": 1},
     "for_s": 4.0},
    {"sends": "not_acked", "count": {"min": 1}, "partitions": [1, 4], "producers": ["pdead"],
     "from": {"inject": 1}, "until": {"heal": 1}},
    {"sends": "acked", "count": {"min": 0, "max": 0}, "timed_by": "ack", "settle_s": 0.5,
     "until": {"inject": 2}},
    {"unavailable_s": {"max": 6.0}, "partitions": [0], "from": {"heal": 1}},
    {"probe": "b0", "holds": {"leader_is": {"broker": 0, "topic": "$topic", "partition": 0}}},
    {"probe": "b0", "answers": False, "name": "broker 0 is gone"},
    {"polls": ["ca", "cb"], "count": {"max": 0}, "from": {"inject": 1}, "settle_s": 2.0,
     "until": {"heal": 1}},
    {"polls": ["cb"], "count": {"min": 1}, "partitions": [0], "contiguous": True},
    {"probe": "lookup", "resumes": True},
    {"probe": "via-b1", "acked": {"min": 0, "max": 0}},
    {"probe": "read-back", "reads_acked": True},
    {"sends": "not_acked", "count": {"min": 0, "max": 0}, "from": {"inject": 1}, "for_s": 3.0},
    {"attempts": ["pa", "pb"], "count": {"min": 1}, "from": {"inject": 2}, "for_s": 5.0,
     "errors": ["NOT_LEADER_OR_FOLLOWER"]},
    {"commits": "committed", "count": {"max": 0}, "consumers": ["g1", "g2"], "from": {"inject": 1},
     "for_s": 4.0, "settle_s": 0.5},
    {"commits": "any", "count": {"min": 1}, "from": {"heal": 1}},
    {"commit_gap_s": {"min": 4.0}, "consumers": ["g1"], "from": {"inject": 1}, "until": {"heal": 1}},
    {"transactions": "committed", "count": {"min": 1}, "producers": ["tx"], "until": {"inject": 1},
     "name": "transactions committed before the kill"},
    {"transactions": "any", "count": {"max": 0}, "from": {"inject": 1}, "for_s": 4.0, "settle_s": 0.5},
    {"transaction_gap_s": {"min": 4.0, "max": 30.0}, "producers": ["tx"], "from": {"inject": 1},
     "until": {"heal": 1}},
    {"transactions": "unknown", "count": {"min": 1, "max": 1}, "producers": ["zombie"],
     "errors": ["_FENCED", "PRODUCER_FENCED"]},
    {"never_visible": ["zombie"], "name": "nothing of the zombie's held transaction is visible"},
    {"commits_kept": True},
    {"cluster_rules": True, "name": "ZooKeeper never showed two controllers at once"},
    {"commits_kept": ["g1-7"], "name": "the group's commits survived its coordinator's loss"},
]


@pytest.mark.parametrize("form", CHECK_FORMS, ids=[next(iter(f)) for f in CHECK_FORMS])
def test_every_check_form_parses_and_writes_back_what_it_read(form: dict[str, Any]) -> None:
    assert parse_check(form).to_spec() == form


@pytest.mark.parametrize(("raw", "message"), [
    ({"within_s": 3}, "needs exactly one of: attempts, cluster_rules, commit_gap_s, commits"),
    ({"eventually": "isr_full", "within_s": 3}, "'eventually' needs 'after'"),
    ({"eventually": "isr_full", "after": {"inject": 1}, "within_s": 0}, "within_s must be a positive"),
    ({"eventually": "sunny", "after": {"inject": 1}, "within_s": 3}, "unknown condition 'sunny'"),
    ({"throughout": "isr_full", "from": {"crash": 1}}, "an anchor is { inject = N } or { heal = N }"),
    ({"throughout": "isr_full", "from": {"inject": 0}}, "an anchor names a schedule entry from 1"),
    ({"sends": "lost", "count": 1}, "outcome 'lost' is not one of"),
    ({"sends": "failed"}, "'sends' needs 'count'"),
    ({"unavailable_s": {"min": 5, "max": 2}}, "min 5 is above max 2"),
    ({"sends": "failed", "count": 1, "colour": "red"}, "unknown key(s) colour"),
    ({"probe": "b0"}, "takes 'holds' (a condition), 'answers = false', 'resumes = true', 'acked'"),
    ({"probe": "b0", "resumes": False}, "'resumes' can only be true"),
    ({"attempts": ["pa"], "count": 1, "for_s": 3}, "'attempts' needs 'from'"),
    ({"probe": "b0", "answers": True}, "'answers' can only be false"),
    ({"polls": "ca", "count": 1}, "'polls' must be a list of names"),
    ({"commits": "lost", "count": 1}, "outcome 'lost' is not one of committed, failed, any"),
    ({"commits": "failed", "count": 1, "until": {"heal": 1}, "for_s": 2}, "'for_s' counts from 'from'"),
    ({"transactions": "lost", "count": 1}, "outcome 'lost' is not one of committed, aborted, unknown, any"),
    ({"transactions": "committed", "count": 1, "consumers": ["m-a"]}, "unknown key(s) consumers"),
    ({"transaction_gap_s": 4}, "'transaction_gap_s' must be { min = .., max = .. }"),
    ({"transaction_gap_s": {"min": 4}, "producers": "tx"}, "'producers' must be a list of names"),
    ({"transactions": "unknown", "count": 1, "errors": "_FENCED"}, "'errors' must be a list of names"),
    ({"transactions": "unknown", "count": 1, "errors": []}, "'errors' names at least one error"),
    ({"never_visible": "zombie"}, "'never_visible' must be a list of names"),
    ({"never_visible": []}, "never_visible: name at least one producer"),
    ({"never_visible": ["zombie"], "count": 0}, "unknown key(s) count for a 'never_visible' check"),
    ({"commits_kept": False}, "'commits_kept' is true (every group) or a list of group ids"),
    ({"commits_kept": []}, "'commits_kept' is true (every group) or a list of group ids"),
    ({"commits_kept": "g1"}, "'commits_kept' is true (every group) or a list of group ids"),
])
def test_malformed_checks_are_refused_in_one_line(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(CheckSpecError) as caught:
        parse_check(raw, "check 3")
    assert str(caught.value).startswith("check 3") and message in str(caught.value)


def test_a_check_naming_an_entry_the_schedule_lacks_is_refused() -> None:
    checks = [Eventually(Offline("t", 0), Anchor(3, "heal"), within_s=5)]
    check_anchors(checks, 3)
    with pytest.raises(CheckSpecError, match="entry 3's heal - the schedule has 2 entries"):
        check_anchors(checks, 2)


def test_acknowledgements_can_be_placed_by_when_they_arrived() -> None:
    # A send made before the inject at 10 but acknowledged after it: by send time it is
    # outside the window, by acknowledgement inside.
    late = [{"producer_id": "pa", "partition": 0, "send_ts": WALL + 9.5, "ack_ts": WALL + 12.0,
             "outcome": "acked"}]
    evidence = Evidence(TIMELINE, MOMENTS, late, Moment(WALL + 40, 40.0))
    by_ack = Sends("acked", CountRange(at_least=1), start=inject(1), until=heal(1), timed_by="ack")
    assert by_ack.evaluate(evidence).passed
    by_send = Sends("acked", CountRange(at_least=1), start=inject(1), until=heal(1))
    assert not by_send.evaluate(evidence).passed
    settled = Sends("acked", CountRange(0, 0), start=inject(1), until=heal(1), timed_by="ack", settle_s=3)
    assert settled.evaluate(evidence).passed, "the ack at 12 s is inside the 3 s settling"
    with pytest.raises(CheckSpecError, match="only acknowledged sends"):
        Sends("failed", CountRange(0, 0), timed_by="ack")


def test_throughout_can_run_for_a_stretch_instead_of_to_a_moment() -> None:
    # Leader 0 holds for the first 5 s after the kill at 10 (offline from 16), not for 7 s.
    assert Throughout(LeaderIs("t", 0, broker=0), inject(1), for_s=5).evaluate(EVIDENCE).passed
    assert not Throughout(LeaderIs("t", 0, broker=0), inject(1), for_s=7).evaluate(EVIDENCE).passed
    with pytest.raises(CheckSpecError, match="'until' or 'for_s', not both"):
        Throughout(LeaderIs("t", 0, broker=0), inject(1), until=heal(1), for_s=5)



def _probe(state: ClusterState | None, error: str | None = None) -> dict[str, ProbeResult]:
    return {"b1": ProbeResult("b1", WALL + 20, state, error)}


def test_a_probe_check_judges_the_brokers_own_view_or_its_silence() -> None:
    end = Moment(WALL + 40, 40.0)
    stale = Evidence(TIMELINE, MOMENTS, SENDS, end, probes=_probe(_state(0, (0, 1, 2), -1)))
    # ZooKeeper has the partition offline at 20 s; broker 1 still names broker 0 as leader.
    assert Seen("b1", LeaderIs("t", 0, broker=0)).evaluate(stale).passed
    assert not Seen("b1", Offline("t", 0)).evaluate(stale).passed
    assert not Seen("b1", None).evaluate(stale).passed  # it answered
    silent = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), probes=_probe(None, "refused"))
    assert Seen("b1", None).evaluate(silent).passed
    detail = Seen("b1", LeaderIs("t", 0, broker=0)).evaluate(silent).detail
    assert detail == "the broker did not answer: refused"
    assert Seen("b9", None).evaluate(silent).detail.startswith("probe b9 was never taken")


def test_polls_count_each_consumers_records_in_the_window() -> None:
    polls = [{"consumer_id": "ca", "partition": 0, "offset": i, "poll_ts": WALL + t}
             for i, t in enumerate((5, 12, 30))] + \
            [{"consumer_id": "cb", "partition": 1, "offset": t * 2, "poll_ts": WALL + t}
             for t in range(10, 26)]
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), polls=polls)
    window: dict[str, Any] = {"start": inject(1), "until": heal(1)}
    assert Polls(("ca",), CountRange(1, 1), **window).evaluate(evidence).detail == "ca: 1"
    assert not Polls(("ca",), CountRange(0, 0), **window).evaluate(evidence).passed
    assert Polls(("ca",), CountRange(0, 0), settle_s=3, **window).evaluate(evidence).passed
    assert Polls(("cb",), CountRange(at_least=15), **window).evaluate(evidence).passed
    assert not Polls(("cc",), CountRange(at_least=1)).evaluate(evidence).passed  # never polled
    # ca read offsets 0, 1, 2 in turn; cb skipped every other offset.
    assert Polls(("ca",), CountRange(at_least=1), contiguous=True).evaluate(evidence).passed
    skipped = Polls(("cb",), CountRange(at_least=1), contiguous=True).evaluate(evidence)
    assert not skipped.passed and "cb p1 20 -> 22" in skipped.detail


def test_attempts_count_the_producers_errors_in_the_stretch_after_a_moment() -> None:
    not_leader_error = "NOT_LEADER_OR_FOLLOWER"
    rows = [{"producer_id": "pa", "ts": WALL + t, "error": e}
            for t, e in ((9, not_leader_error), (11, not_leader_error), (12, "_TRANSPORT"),
                         (30, not_leader_error))]
    rows.append({"producer_id": "pb", "ts": WALL + 11, "error": "X"})
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), attempts=rows)
    not_leader = Attempts(("pa",), CountRange(at_least=1), inject(1), for_s=5, errors=(not_leader_error,))
    result = not_leader.evaluate(evidence)
    assert result.passed and result.detail.startswith("1 counted")
    assert Attempts(("pa", "pb"), CountRange(3, 3), inject(1), for_s=5).evaluate(evidence).passed
    assert not Attempts(("pa",), CountRange(at_least=1), heal(1), for_s=4).evaluate(evidence).passed


def test_attempts_of_a_producer_that_reports_none_are_not_judged_and_never_pass() -> None:
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), attempts=[],
                        attempts_unreported=frozenset({"pa"}))
    none_seen = Attempts(("pa", "pb"), CountRange(0, 0), inject(1), for_s=5).evaluate(evidence)
    assert not none_seen.passed  # "no attempt failed" would be a guess
    assert none_seen.detail.startswith("not judged: pa run on Kafka's Java client")
    assert Attempts(("pb",), CountRange(0, 0), inject(1), for_s=5).evaluate(evidence).passed



def test_produce_and_read_probes_are_judged_by_their_counts() -> None:
    end = Moment(WALL + 40, 40.0)
    produced = {"via": ProbeResult("via", WALL + 20, None, produced=Produced(0, 20, ("_MSG_TIMED_OUT",)))}
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, end, probes=produced)
    assert Seen("via", acked=CountRange(0, 0)).evaluate(evidence).passed
    assert not Seen("via", acked=CountRange(20, 20)).evaluate(evidence).passed
    # p0 had 10 acknowledgements before 20 s (at 0.01..9.01 s): a read of 10 covers them, 9 does not.
    for read, passed in ((10, True), (9, False)):
        result = {"rb": ProbeResult("rb", WALL + 20, None, read=(0, read))}
        judged = Seen("rb", reads_acked=True).evaluate(Evidence(TIMELINE, MOMENTS, SENDS, end, probes=result))
        assert judged.passed is passed, judged.detail


def test_sends_can_count_a_stretch_after_a_moment() -> None:
    # p0's sends at 11..23 s failed: the 3 s after the inject at 10 hold three (11, 12, 13).
    check = Sends("failed", CountRange(3, 3), partitions=(0,), start=inject(1), for_s=3)
    assert check.evaluate(EVIDENCE).detail == "p0: 3 of 3"
    with pytest.raises(CheckSpecError, match="'for_s' counts from 'from'"):
        Sends("failed", CountRange(1, 1), until=heal(1), start=inject(1), for_s=3)


def test_commits_count_the_members_commit_outcomes_in_the_window() -> None:
    def commit(member: str, at: float, outcome: str = "committed",
               error: str | None = None) -> dict[str, Any]:
        return {"consumer_id": member, "ts": WALL + at, "outcome": outcome, "error": error}

    rows = [commit("g1", t) for t in (1, 5, 9)] + [commit("g1", 12, "failed", "NOT_COORDINATOR")]
    rows += [commit("g2", t) for t in (26, 27)] + [commit("g2", 11, "failed", "_TIMED_OUT")]
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), commits=rows)
    stall = Commits("committed", CountRange(at_most=0), start=inject(1), until=heal(1))
    result = stall.evaluate(evidence)
    assert result.passed, result.detail
    assert "failed (NOT_COORDINATOR) 1" in result.detail and "failed (_TIMED_OUT) 1" in result.detail
    assert Commits("failed", CountRange(2, 2), start=inject(1), for_s=5).evaluate(evidence).passed
    assert not Commits("committed", CountRange(at_most=0), consumers=("g2",), start=heal(1)).evaluate(
        evidence).passed
    assert not Commits("committed", CountRange(at_most=0), start=inject(1), settle_s=-2,
                       until=heal(1)).evaluate(evidence).passed  # g1's commit at 9 falls inside
    # Between the inject at 10 and the heal at 25 nothing went through: a 15 s gap; g1's
    # last commit at 9 and g2's first at 26 lie outside, so the window's ends bound it.
    gap = CommitGap(SecondsRange(at_least=14), start=inject(1), until=heal(1)).evaluate(evidence)
    assert gap.passed and gap.detail.startswith("15.00 s"), gap.detail
    assert not CommitGap(SecondsRange(at_most=10), start=inject(1)).evaluate(evidence).passed  # 10 -> 26
    assert CommitGap(SecondsRange(12.9, 13.1), start=heal(1)).evaluate(evidence).passed  # 27 -> the end at 40


def _txn(producer: str, begin: float, end: float | None, outcome: str = "committed",
         requested: float | None = None, error: str | None = None) -> dict[str, Any]:
    """A transactions row; its end is asked for just before it returns unless said otherwise."""
    asked = requested if requested is not None else None if end is None else end - 0.05
    return {"producer_id": producer, "begin_ts": WALL + begin,
            "end_requested_ts": None if asked is None else WALL + asked,
            "end_ts": None if end is None else WALL + end, "outcome": outcome, "error": error}


# tx's coordinator is lost at the inject (10 s): its commit asked for at 10.2 returns only
# at 17, once the coordinator moved; an abort on purpose (13) and a fenced transaction
# (asked at 14.5, never returned) fall in between. tb commits every second throughout.
TRANSACTIONS = (
    [_txn("tx", t - 0.3, t) for t in (2, 5, 9.5)]
    + [_txn("tx", 10.0, 17.0, requested=10.2), _txn("tx", 12.8, 13.0, "aborted"),
       _txn("tx", 14.0, None, "unknown", requested=14.5, error="_FENCED: fenced by a newer instance")]
    + [_txn("tx", t - 0.3, t) for t in (19, 22, 26, 30)]
    + [_txn("tb", t - 0.3, t) for t in range(1, 40)]
)
TXN_EVIDENCE = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), transactions=TRANSACTIONS)


def test_a_transaction_is_placed_by_when_its_producer_learnt_the_outcome() -> None:
    assert transaction_known_at(_txn("tx", 1.0, 3.0)) == WALL + 3.0  # its commit returned
    assert transaction_known_at(_txn("tx", 1.0, None, "unknown", requested=2.0)) == WALL + 2.0
    assert transaction_known_at(_txn("tx", 1.0, None, "unknown")) == WALL + 1.0  # never asked to end


def test_transaction_outcomes_count_each_outcome_in_the_window() -> None:
    before = TransactionOutcomes("committed", CountRange(at_least=1), producers=("tx",), until=inject(1))
    result = before.evaluate(TXN_EVIDENCE)
    assert result.passed and result.detail == "3 counted; every transaction in the window: committed 3"
    during = TransactionOutcomes("any", CountRange(5, 5), producers=("tx",), start=inject(1), until=heal(1))
    result = during.evaluate(TXN_EVIDENCE)
    assert result.passed, result.detail
    assert "aborted 1" in result.detail and "unknown (_FENCED) 1" in result.detail  # the name, not the text
    in_doubt = TransactionOutcomes("unknown", CountRange(1, 1), start=inject(1), for_s=5)
    assert in_doubt.evaluate(TXN_EVIDENCE).passed
    # The 5 s after the kill held no commit of tx; tb's went on.
    stalled = TransactionOutcomes("committed", CountRange(0, 0), producers=("tx",), start=inject(1), for_s=5)
    assert stalled.evaluate(TXN_EVIDENCE).passed
    assert not TransactionOutcomes("committed", CountRange(0, 0), start=inject(1), for_s=5).evaluate(
        TXN_EVIDENCE).passed
    after = TransactionOutcomes("committed", CountRange(at_least=1), producers=("tx",), start=heal(1))
    assert after.evaluate(TXN_EVIDENCE).detail.startswith("2 counted")


def test_transaction_outcomes_fail_when_the_producer_committed_nothing_after_the_restart() -> None:
    # tx stopped transacting at 22 (fenced or fatal: the loop ends without a client error).
    stopped = [row for row in TRANSACTIONS if row["producer_id"] != "tx" or row["begin_ts"] < WALL + 23]
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), transactions=stopped)
    after = TransactionOutcomes("committed", CountRange(at_least=1), producers=("tx",), start=heal(1))
    result = after.evaluate(evidence)
    assert not result.passed and result.detail == "0 counted; every transaction in the window: none"
    never = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0))  # no transactional producer at all
    before = TransactionOutcomes("committed", CountRange(at_least=1), until=inject(1))
    assert not before.evaluate(never).passed


def test_a_transaction_gap_is_the_longest_stretch_without_a_commit_returning() -> None:
    # tx committed at 9.5, then not until 17: from the inject at 10 that is 7 s. The abort
    # at 13 and the fenced transaction do not end the stretch: only commits do.
    gap = TransactionGap(SecondsRange(at_least=6), producers=("tx",), start=inject(1), until=heal(1))
    result = gap.evaluate(TXN_EVIDENCE)
    assert result.passed and result.detail == "7.00 s (window 15.0 s)"
    assert gap.describe() == ("none of tx committing a transaction for at least 6 s at the longest, "
                              "from entry 1's inject to entry 1's heal")
    # From the heal at 25: commits at 26 and 30, then none until the workload's end at 40.
    after = TransactionGap(SecondsRange(9.9, 10.1), producers=("tx",), start=heal(1))
    assert after.evaluate(TXN_EVIDENCE).passed


def test_a_transaction_gap_fails_where_commits_never_stalled() -> None:
    # tb's commits went through every second: no stretch of 6 s, for tb or for every producer.
    for producers in (("tb",), None):
        gap = TransactionGap(SecondsRange(at_least=6), producers=producers, start=inject(1), until=heal(1))
        result = gap.evaluate(TXN_EVIDENCE)
        assert not result.passed and result.detail.startswith("1.00 s"), result.detail
    # With no commit in the window at all, the window itself is the stretch.
    idle = TransactionGap(SecondsRange(at_least=6), producers=("nobody",), start=inject(1), until=heal(1))
    assert idle.evaluate(TXN_EVIDENCE).detail == "15.00 s (window 15.0 s)"
    assert not TransactionGap(SecondsRange(at_least=1), start=inject(2)).evaluate(TXN_EVIDENCE).passed


def test_error_names_are_read_from_each_error_a_row_records() -> None:
    assert error_names("_FENCED: Producer fenced by newer instance") == ("_FENCED",)
    assert error_names("INVALID_PRODUCER_EPOCH: Broker: stale epoch; _FENCED: fenced; in abort") == (
        "INVALID_PRODUCER_EPOCH", "_FENCED")  # "in abort" is a sentence's tail, not a name
    assert error_names("REBALANCE_IN_PROGRESS") == ("REBALANCE_IN_PROGRESS",)
    assert error_names(None) == ()


def test_transaction_outcomes_can_count_only_those_ended_by_a_named_error() -> None:
    # The zombie's held transaction ended unknown: straight from its commit, or from the
    # abort an epoch error led to. Another ended unknown because its commit ran out of time.
    rows = [_txn("zombie", 1.0, 2.0), _txn("zombie", 3.0, None, "unknown", requested=20.0,
                                           error="INVALID_PRODUCER_EPOCH: stale; _FENCED: fenced"),
            _txn("other", 3.0, None, "unknown", requested=21.0, error="_TIMED_OUT: no answer")]
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), transactions=rows)
    fenced = TransactionOutcomes("unknown", CountRange(1, 1), producers=("zombie",), errors=("_FENCED",))
    result = fenced.evaluate(evidence)
    assert result.passed, result.detail
    assert "unknown (INVALID_PRODUCER_EPOCH; _FENCED) 1" in result.detail  # every name the row holds
    assert fenced.describe().startswith("transactions of zombie unknown with _FENCED: exactly 1")
    # The same count fails where the unknown came from something other than fencing.
    timed_out = TransactionOutcomes("unknown", CountRange(1, 1), producers=("other",), errors=("_FENCED",))
    assert not timed_out.evaluate(evidence).passed
    assert TransactionOutcomes("unknown", CountRange(1, 1), producers=("other",)).evaluate(evidence).passed
    with pytest.raises(CheckSpecError, match="at least one error"):
        TransactionOutcomes("unknown", CountRange(1, 1), errors=())


def _zombie_run() -> dict[str, list[dict[str, Any]]]:
    """A fenced zombie, as it should look: zombie.t1 committed; zombie.t2 (messages 10 to
    19) held, its records acknowledged, aborted by the coordinator and so hidden from the
    read_committed drain, its producer told _FENCED; fresh.t1 committed after it."""
    transactions = [
        {"transaction_id": "zombie.t1", "producer_id": "zombie", "outcome": hist.TXN_COMMITTED},
        {"transaction_id": "zombie.t2", "producer_id": "zombie", "outcome": hist.TXN_UNKNOWN},
        {"transaction_id": "fresh.t1", "producer_id": "fresh", "outcome": hist.TXN_COMMITTED},
    ]
    sends = ([{"message_id": f"zombie-{n}", "transaction_id": f"zombie.t{1 + n // 10}",
               "outcome": hist.OUTCOME_ACKED} for n in range(20)]
             + [{"message_id": f"fresh-{n}", "transaction_id": "fresh.t1", "outcome": hist.OUTCOME_ACKED}
                for n in range(10)])
    committed = [m["message_id"] for m in sends if m["transaction_id"] != "zombie.t2"]
    polls = ([{"message_id": m, "isolation": hist.READ_COMMITTED} for m in committed]
             + [{"message_id": "zombie-12", "isolation": hist.READ_UNCOMMITTED}])  # allowed at that level
    final_log = [{"message_id": m["message_id"], "read_committed": m["transaction_id"] != "zombie.t2"}
                 for m in sends]
    return {"transactions": transactions, "sends": sends, "polls": polls, "final_log": final_log}


def _judge_zombie(run: dict[str, list[dict[str, Any]]]) -> tuple[bool, str]:
    evidence = Evidence(TIMELINE, MOMENTS, run["sends"], Moment(WALL + 40, 40.0), polls=run["polls"],
                        transactions=run["transactions"], final_log=run["final_log"])
    result = NeverVisible(("zombie",)).evaluate(evidence)
    return result.passed, result.detail


def test_never_visible_holds_when_the_fenced_transaction_stayed_hidden() -> None:
    passed, detail = _judge_zombie(_zombie_run())
    assert passed, detail
    assert detail == ("1 transaction(s) unknown (zombie.t2), 10 sends, 10 acknowledged; 0 polled at "
                      "read_committed; 10 on the final log, 0 of them given to the read_committed drain")


def test_never_visible_fails_when_nothing_was_acknowledged_to_hide() -> None:
    run = _zombie_run()
    run["sends"] = [{**m, "outcome": hist.OUTCOME_UNKNOWN} if m["transaction_id"] == "zombie.t2" else m
                    for m in run["sends"]]
    passed, detail = _judge_zombie(run)
    assert not passed and "10 sends, 0 acknowledged" in detail
    no_zombie = _zombie_run()
    no_zombie["transactions"] = [t for t in no_zombie["transactions"] if t["outcome"] != hist.TXN_UNKNOWN]
    passed, detail = _judge_zombie(no_zombie)
    assert not passed and detail.startswith("0 transaction(s) unknown (none), 0 sends")


def test_never_visible_fails_when_a_read_committed_consumer_polled_a_held_record() -> None:
    run = _zombie_run()
    run["polls"].append({"message_id": "zombie-15", "isolation": hist.READ_COMMITTED})
    passed, detail = _judge_zombie(run)
    assert not passed and "1 polled at read_committed" in detail


def test_never_visible_fails_when_the_read_committed_drain_was_given_a_held_record() -> None:
    run = _zombie_run()
    run["final_log"] = [{**row, "read_committed": True} if row["message_id"] == "zombie-11" else row
                        for row in run["final_log"]]
    passed, detail = _judge_zombie(run)
    assert not passed and "1 of them given to the read_committed drain" in detail
    undrained = _zombie_run()  # no read_committed drain was made: hidden cannot be shown
    undrained["final_log"] = [{**row, "read_committed": None} for row in undrained["final_log"]]
    passed, detail = _judge_zombie(undrained)
    assert not passed and detail.endswith("10 never drained at read_committed")


def _commit(group: str, partition: int, offset: int, ts: float, outcome: str = hist.COMMIT_COMMITTED
            ) -> dict[str, Any]:
    return {"group": group, "consumer_id": "m-a", "topic": "t", "partition": partition, "offset": offset,
            "ts": ts, "outcome": outcome, "error": None}


def _judge_kept(commits: list[dict[str, Any]], final: dict[tuple[str, int], int | None],
                groups: tuple[str, ...] | None = None) -> tuple[bool, str]:
    final_offsets = [{"group": g, "topic": "t", "partition": p, "offset": o} for (g, p), o in final.items()]
    evidence = Evidence(TIMELINE, MOMENTS, SENDS, Moment(WALL + 40, 40.0), commits=commits,
                        final_offsets=final_offsets)
    result = CommitsKept(groups).evaluate(evidence)
    return result.passed, result.detail


def test_commits_kept_holds_when_the_broker_gives_the_last_commit_that_went_through() -> None:
    commits = [_commit("g", 0, 10, 1.0), _commit("g", 0, 25, 2.0), _commit("g", 1, 7, 1.5),
               _commit("g", 1, 9, 3.0, hist.COMMIT_FAILED)]  # may have reached the coordinator
    passed, detail = _judge_kept(commits, {("g", 0): 25, ("g", 1): 9})
    assert passed, detail
    assert detail == "2 partition(s) kept across 1 group(s)"
    passed, _ = _judge_kept(commits, {("g", 0): 25, ("g", 1): 7})  # the failed one did not land
    assert passed


def test_commits_kept_fails_when_the_broker_lost_or_moved_an_acknowledged_commit() -> None:
    commits = [_commit("g", 0, 10, 1.0), _commit("g", 0, 25, 2.0), _commit("g", 1, 7, 1.5)]
    passed, detail = _judge_kept(commits, {("g", 0): 10, ("g", 1): 7})
    assert not passed
    assert "1 not: g t-0: the broker holds 10, the last commit that went through was 25" in detail
    passed, detail = _judge_kept(commits, {("g", 0): 25, ("g", 1): None})
    assert not passed and "g t-1: the broker holds nothing" in detail
    # an earlier failed commit is no excuse: only attempts after the last one that went through
    earlier = [*commits, _commit("g", 0, 10, 0.5, hist.COMMIT_UNKNOWN)]
    assert not _judge_kept(earlier, {("g", 0): 10, ("g", 1): 7})[0]


def test_commits_kept_fails_when_nothing_was_committed_to_keep() -> None:
    passed, detail = _judge_kept([_commit("g", 0, 10, 1.0, hist.COMMIT_FAILED)], {("g", 0): 10})
    assert not passed and "no group committed anything" in detail
    commits = [_commit("g", 0, 10, 1.0)]
    passed, detail = _judge_kept(commits, {("g", 0): 10}, groups=("g", "other"))
    assert not passed and "no commit of other went through" in detail
    assert _judge_kept(commits, {("g", 0): 10}, groups=("g",))[0]


def _controlled_by(controller: int, epoch: int) -> ClusterState:
    return ClusterState(live_brokers=(0, 1, 2), controller=controller, controller_epoch=epoch, partitions={})


def test_s9s_controller_checks_allow_kraft_one_election_after_the_heal_but_not_the_returning_voter() -> None:
    from tests.chaos.scenarios.test_s09_zone_isolated_leader_elsewhere import controller_kept

    # Zone c's voter (102) leads throughout the isolation (10-25 s); after the heal zone a's
    # voter (100) comes back with a raised epoch and the majority elects 101, as 3.9.1 did.
    seen = [Observed(0.0, 27.9, _controlled_by(102, 5)), Observed(28.0, 60.0, _controlled_by(101, 15))]
    evidence = Evidence(seen, MOMENTS, SENDS, Moment(WALL + 40, 40.0))
    kraft = [check.evaluate(evidence) for check in controller_kept("kraft", 102, returning=100)]
    assert all(result.passed for result in kraft), kraft
    zookeeper = controller_kept("zookeeper", 102, returning=100)
    assert not any(check.evaluate(evidence).passed for check in zookeeper), "ZooKeeper mode has no election"
    led = Evidence([seen[0], Observed(28.0, 60.0, _controlled_by(100, 15))], MOMENTS, SENDS,
                   Moment(WALL + 40, 40.0))
    assert not controller_kept("kraft", 102, returning=100)[1].evaluate(led).passed
    moved = Evidence([Observed(0.0, 14.9, _controlled_by(102, 5)),
                      Observed(15.0, 60.0, _controlled_by(101, 6))], MOMENTS, SENDS, Moment(WALL + 40, 40.0))
    during = controller_kept("kraft", 102, returning=100)[0]
    assert not during.evaluate(moved).passed, "an election while cut off"
