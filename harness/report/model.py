"""What a run directory says, as typed objects the templates can read without guessing.

The loader (``load.py``) fills these in from JSON and Parquet written by different
people at different times, often after something went wrong; so every field here is
already validated and defaulted, and whatever could not be read is kept as a plain
sentence in ``problems`` instead of an exception. The one judgement this module makes is
the outcome: a scenario passes only when both sources of truth were recorded and both say
so, and a run passes only when everything that ran in it passed - every scenario and
every pytest test (fault, fabric and cleanup tests included) - because a report that
shows green for a run nobody judged, or whose other tests failed, is worse than no report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from harness.history.schema import MIGRATION_COMPLETED
from harness.history.verdict import Verdict
from harness.workload.client_settings import DEFAULT_CLIENT


class RunStatus(StrEnum):
    """``run.json``'s status: "running" until the run ends, so an interrupted run's report
    is never passed off as complete. Written by harness.scenario, read here."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"


class TestOutcome(StrEnum):
    """What became of one test or scenario file of a run, as ``run.json`` lists it."""

    __test__ = False  # not a pytest test class, whatever its name

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


RUN_COMPLETE = RunStatus.COMPLETE
SHRINK_FILE = "shrink.json"  # beside run.json in a shrink run (ShrinkResult)
ZK_UNREADABLE = "zk_unreadable"  # cluster event kinds written by harness.cluster.sampler
# Where each metadata mode keeps the cluster state, as a page names it.
METADATA_STORES = {"zookeeper": "ZooKeeper", "kraft": "KRaft metadata",
                   "migration": "ZooKeeper, then KRaft metadata"}
ZK_READABLE = "zk_readable"


class Outcome(StrEnum):
    """The one word a reviewer reads first. NOT_JUDGED is never shown as a pass."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_JUDGED = "not judged"


def combine(judgements: list[bool | None]) -> Outcome:
    """Any recorded failure fails; otherwise anything unrecorded (None) means not judged.

    Failure wins over missing data because a failure already recorded is news a reviewer
    must see, whatever else is missing.
    """
    if any(j is False for j in judgements):
        return Outcome.FAILED
    if not judgements or any(j is None for j in judgements):
        return Outcome.NOT_JUDGED
    return Outcome.PASSED


# ------------------------------------------------------------------------------ verdict


# The verdict itself (Verdict, Example, Bucket, RuleResult, PartitionFindings) is the
# history layer's one model, harness.history.verdict, read back from verdict.json.


@dataclass(frozen=True)
class AckBucket:
    """Acknowledgements that ARRIVED in [start, start + bucket_seconds), by ack time.

    Send-time buckets cannot show a stall whose sends were acknowledged late: the sends
    of the stall count as acknowledged in the second they were sent. Ack time can.
    """

    start: float
    count: int


@dataclass(frozen=True)
class LatencyBucket:
    """Produce latency (ack_ts - send_ts) of the acknowledged sends made in one bucket."""

    start: float
    p50: float
    p99: float
    max: float


@dataclass(frozen=True)
class PartitionHealth:
    """One cluster_state snapshot counted: partitions under-replicated (an ISR smaller
    than its replica list) and offline (no leader); None on a stretch that was unreadable."""

    ts: float
    under_replicated: int | None
    offline: int | None


@dataclass(frozen=True)
class AckedOffsets:
    """A partition's acknowledged sends as (ack_ts, offset) points, thinned evenly to at
    most a few thousand: the offset map's background of what was acknowledged."""

    ack_ts: list[float]
    offsets: list[int]
    total: int  # before thinning


@dataclass(frozen=True)
class LeaderSpan:
    """A stretch during which a partition had one leader (-1: none) in one epoch."""

    start: float
    end: float
    leader: int
    epoch: int | None


@dataclass(frozen=True)
class MemberChange:
    """A group member's rebalance callback: ``event`` assigned, revoked or lost."""

    ts: float
    consumer_id: str
    event: str


@dataclass(frozen=True)
class GroupActivity:
    """One consumer group as its members saw it: their rebalances, their commits (ts,
    whether committed), the reads of a position the group had read before (what
    at-least-once costs after a rebalance: counted, with the times of a thinned few),
    and its lag (records acknowledged but not yet committed, summed over partitions) at
    each commit."""

    group: str
    changes: list[MemberChange]
    commits: list[tuple[float, bool]]
    rereads: int
    reread_ts: list[float]
    lag: list[tuple[float, int]]


@dataclass(frozen=True)
class TransactionSpan:
    """One transaction as its producer saw it: from begin to the end of its commit or
    abort (None: it never ended), and what it was told."""

    producer_id: str
    begin: float
    end: float | None
    outcome: str


@dataclass(frozen=True)
class ClientError:
    """A failed produce attempt as the attempts table has it: when, which error, how many
    messages its batch held."""

    ts: float
    error: str
    messages: int


# --------------------------------------------------------------------------- assertions


@dataclass(frozen=True)
class Check:
    """One assertion on cluster state (ZooKeeper, broker metadata) made by the test."""

    name: str
    passed: bool | None  # None: the test recorded the check without a result
    detail: str


@dataclass(frozen=True)
class Window:
    """A measured duration, e.g. how long a partition had no leader."""

    name: str
    seconds: float | None


@dataclass(frozen=True)
class Assertions:
    passed: bool
    checks: list[Check]
    windows: list[Window]


# ------------------------------------------------------------------------ cluster, faults


_NEW_LEADER = re.compile(r"-> (-?\d+)\b")


@dataclass(frozen=True)
class ClusterEvent:
    """A change sampled from ZooKeeper during the run."""

    ts: float
    kind: str  # leader | isr | controller | broker_up | broker_down (others kept as-is)
    topic: str | None
    partition: int | None
    detail: str

    @property
    def where(self) -> str:
        if self.topic is None:
            return ""
        return self.topic if self.partition is None else f"{self.topic}-{self.partition}"

    @property
    def new_leader(self) -> int | None:
        """The live broker a leader event moved leadership to (``2 -> 0``); None for any
        other event, and for a move to no leader (``-> -1``)."""
        if self.kind != "leader":
            return None
        moved = _NEW_LEADER.search(self.detail)
        return int(moved.group(1)) if moved and int(moved.group(1)) >= 0 else None


# A heal that took at least this long has its start shown beside its end.
SLOW_HEAL_S = 1.0


@dataclass(frozen=True)
class FaultWindow:
    """When a fault was in force. ``end`` None: never healed within the recorded history.

    ``approximate`` marks windows taken from the planned schedule rather than from the
    recorded inject/heal events, so the report never passes a plan off as a measurement.
    """

    fault: str
    targets: str
    start: float
    end: float | None
    ok: bool  # the inject and (if healed) the heal both reported "ok"
    approximate: bool = False
    errors: tuple[str, ...] = ()  # the error texts of a failed inject or heal, as recorded
    # When the heal began; a node the heal started was out of the cluster until ``end``,
    # and the window runs until then.
    heal_began: float | None = None
    overrun: str = ""  # why the window lasted longer than planned, in words ("" if it did not)

    @property
    def coming_back_s(self) -> float | None:
        """How long the heal took when that is worth saying (a second or more): the nodes
        it started were back in the cluster only then. None otherwise."""
        if self.heal_began is None or self.end is None or self.end - self.heal_began < SLOW_HEAL_S:
            return None
        return self.end - self.heal_began

    @property
    def label(self) -> str:
        return f"{self.fault} {self.targets}".strip()

    @property
    def kind(self) -> str:
        """The fault's kind, as the schedule names it (its description's first word)."""
        return self.fault.split(" ", 1)[0]


@dataclass(frozen=True)
class FaultAction:
    """One inject or heal as recorded, with its outcome text ("ok" or the error)."""

    ts: float
    fault: str
    action: str  # inject | heal
    targets: str
    outcome: str
    ok: bool
    done: float | None = None  # when the action finished (None: not recorded)


@dataclass(frozen=True)
class ZkGap:
    """A stretch during which the sampler could not read ZooKeeper; ``end`` None: until
    the end of the recording. Changes in it were not seen, so "no change" means nothing."""

    start: float
    end: float | None
    detail: str


@dataclass(frozen=True)
class MigrationPhase:
    """One phase of a ZooKeeper-to-KRaft migration, as the history's migration table has
    it: epoch seconds of its start and end, and whether it completed."""

    phase: str
    start: float
    end: float
    outcome: str
    detail: str | None = None

    @property
    def completed(self) -> bool:
        return self.outcome == MIGRATION_COMPLETED


@dataclass(frozen=True)
class MetadataDifference:
    """One path whose value the readings before and after a migration disagree on (None:
    absent on that side)."""

    path: str
    before: Any
    after: Any


@dataclass(frozen=True)
class MetadataComparison:
    """metadata.json: how many paths each reading had, where each was read, and every
    difference."""

    before_source: str
    before_paths: int
    after_source: str
    after_paths: int
    differences: list[MetadataDifference]


@dataclass(frozen=True)
class ScheduleEntry:
    """One planned fault; ``params`` is everything but the timing and the fault name."""

    start_s: float
    duration_s: float
    fault: str
    params: dict[str, Any]


# ------------------------------------------------------------------------------- config


SETTING_SOURCES = ("default", "scenario", "harness", "topology", "release", "broker")


@dataclass(frozen=True)
class Setting:
    """One setting as it ran and where its value came from (one of SETTING_SOURCES):
    a harness client default, the scenario, the harness itself, the topology, the Kafka
    release, or - for a topic - the broker setting it defaults to. ``replaced`` is the
    lower layer's value the winning one replaced, if any."""

    key: str
    value: Any  # a JSON value; None from the harness: chosen per client, not recorded
    source: str
    replaced: Any = None
    replaced_source: str | None = None

    @property
    def by_scenario(self) -> bool:
        return self.source == "scenario"


@dataclass(frozen=True)
class ClientConfig:
    """A producer's or consumer's effective configuration, in its client library's own
    names (``client``: ``librdkafka``, or ``java <release>``)."""

    role: str  # producer | consumer
    name: str
    zone: str
    settings: list[Setting]
    client: str = DEFAULT_CLIENT.label


@dataclass(frozen=True)
class TopicConfig:
    name: str
    partitions: int | None
    replication_factor: int | None
    settings: list[Setting]


@dataclass(frozen=True)
class EffectiveConfig:
    """config.json's ``effective_config``: what brokers, topics and clients ran with."""

    brokers: list[Setting]
    topics: list[TopicConfig]  # the scenario's own topic first, then any further topics
    clients: list[ClientConfig]


@dataclass(frozen=True)
class ScenarioConfig:
    """config.json. Sections other than the scenario header are free-form JSON values:
    the runner's layout of producers, topology etc. evolves, and the report shows what
    is there rather than what it expected. The effective configuration is the exception:
    its layout is the runner's promise of which value is a default, so it is typed."""

    title: str
    description: str
    expected: str
    kafka_version: str | None
    schedule: list[ScheduleEntry]
    sections: dict[str, Any]  # "topology", "broker_settings", "topic", "producer", ... in file order
    effective: EffectiveConfig | None = None  # None: not recorded (older runs) or unreadable


@dataclass(frozen=True)
class HistoryInfo:
    """The history manifest header and the files a reviewer may want to open raw."""

    status: str
    started: float | None
    finished: float | None
    files: list[str]  # relative to the scenario directory, e.g. "history/sends/part-0000.parquet"


# ----------------------------------------------------------------------------- scenario


@dataclass
class Scenario:
    id: str
    page: str | None  # file name of its page; None when the id cannot be a file name
    config: ScenarioConfig | None = None
    verdict: Verdict | None = None
    assertions: Assertions | None = None
    history: HistoryInfo | None = None
    events: list[ClusterEvent] = field(default_factory=list)
    faults: list[FaultWindow] = field(default_factory=list)
    fault_actions: list[FaultAction] = field(default_factory=list)
    fault_actions_source: str = ""  # "history" | "schedule.json": where fault_actions came from
    has_schedule_file: bool = False
    schedule_entries: list[ScheduleEntry] = field(default_factory=list)  # from schedule.json
    ack_buckets: list[AckBucket] | None = None  # None: the history's sends were not read
    # Per partition, the longest it went without an acknowledgement while sends were
    # made (harness.report.load.ack_stalls); None: the sends were not read.
    ack_stalls: dict[int, float] | None = None
    # Seconds from the first leader change after the first fault to the first
    # acknowledgement on that partition (harness.report.load.first_ack_after_leader).
    first_ack_after_leader_s: float | None = None
    # The timeline's further panels, read from the history (None: not read).
    latency: list[LatencyBucket] | None = None
    partition_health: list[PartitionHealth] | None = None
    client_errors: list[ClientError] | None = None
    groups: list[GroupActivity] | None = None
    transactions: list[TransactionSpan] | None = None
    # The offset map's data, per (topic, partition): read for partitions the verdict
    # places a send-side finding in (None: not read).
    acked_offsets: dict[tuple[str, int], AckedOffsets] | None = None
    leader_spans: dict[tuple[str, int], list[LeaderSpan]] | None = None
    # The migration's phases (the history's migration table); empty for a run that
    # migrated nothing.
    migration: list[MigrationPhase] = field(default_factory=list)
    metadata: MetadataComparison | None = None  # metadata.json; None: no migration compared it
    diagnostics: list[str] = field(default_factory=list)  # relative to the run directory
    node_logs: list[str] = field(default_factory=list)  # each node's log around the faults, likewise
    problems: list[str] = field(default_factory=list)

    @property
    def bucket_seconds(self) -> float:
        """The width of the verdict's buckets, which acknowledgements are counted by too
        (1 s without a verdict)."""
        return self.verdict.bucket_seconds if self.verdict else 1.0

    def phase_sends(self, phase: MigrationPhase) -> tuple[int, int] | None:
        """(sends, of them failed or in doubt) made during ``phase``, by the verdict's
        buckets whose start falls in it (to a bucket's width); None without a verdict."""
        if self.verdict is None:
            return None
        inside = [b for b in self.verdict.buckets if phase.start <= b.start < phase.end]
        return sum(b.acked + b.failed + b.unknown for b in inside), sum(b.failed + b.unknown for b in inside)

    @property
    def zk_gaps(self) -> list[ZkGap]:
        """Unreadable stretches, paired from the sampler's events in time order."""
        gaps: list[ZkGap] = []
        open_: ClusterEvent | None = None
        for e in self.events:
            if e.kind == ZK_UNREADABLE and open_ is None:
                open_ = e
            elif e.kind == ZK_READABLE and open_ is not None:
                gaps.append(ZkGap(open_.ts, e.ts, open_.detail))
                open_ = None
        if open_ is not None:
            gaps.append(ZkGap(open_.ts, None, open_.detail))
        return gaps

    @property
    def metadata_store(self) -> str:
        """What the run's cluster state was read from, as the page names it (config.json's
        ``metadata.mode``; a run that does not say was a ZooKeeper-mode run)."""
        section = self.config.sections.get("metadata") if self.config else None
        mode = section.get("mode") if isinstance(section, dict) else None
        return METADATA_STORES.get(str(mode), METADATA_STORES["zookeeper"])

    @property
    def planned(self) -> list[ScheduleEntry]:
        """The schedule that was planned: config.json's, else schedule.json's."""
        if self.config and self.config.schedule:
            return self.config.schedule
        return self.schedule_entries

    @property
    def schedule_origin(self) -> float | None:
        """When the schedule's clock read 0, in epoch seconds: the first recorded inject
        less the planned start of the first planned entry of its fault (the schedule
        starts once the workload has warmed up, so its clock runs behind the page's).
        None without a planned and an injected fault to pair."""
        injects = [a for a in self.fault_actions if a.action == "inject"]
        if not injects or not self.planned:
            return None
        first = min(injects, key=lambda a: a.ts)
        starts = [e.start_s for e in self.planned if e.fault == first.fault]
        return first.ts - min(starts) if starts else None

    @property
    def title(self) -> str:
        return self.config.title if self.config and self.config.title else self.id

    @property
    def outcome(self) -> Outcome:
        return combine(
            [
                self.verdict.passed if self.verdict else None,
                self.assertions.passed if self.assertions else None,
            ]
        )

    @property
    def reasons(self) -> list[str]:
        """Why the outcome is what it is, one sentence each: shown next to the badge."""
        why: list[str] = []
        if self.verdict is None:
            why.append("no reconciliation verdict (verdict.json missing or unreadable)")
        elif not self.verdict.passed:
            failed = [r.reason for r in self.verdict.rules if not r.passed]
            why.append("verdict failed: " + ("; ".join(failed) if failed else "see verdict.json"))
        if self.assertions is None:
            why.append("no cluster assertions (assertions.json missing or unreadable)")
        elif not self.assertions.passed:
            failed = [c.name for c in self.assertions.checks if c.passed is False]
            why.append("cluster checks failed: " + (", ".join(failed) if failed else "see assertions.json"))
        return why

    @property
    def duration(self) -> float | None:
        h = self.history
        if h and h.started is not None and h.finished is not None:
            return max(0.0, h.finished - h.started)
        return None


# ---------------------------------------------------------------------------------- run


TEST_OUTCOMES = tuple(TestOutcome)


@dataclass(frozen=True)
class SessionTest:
    """One pytest test or scenario-file run of the session, as run.json lists it."""

    id: str
    kind: str  # test | scenario-file
    outcome: str  # one of TEST_OUTCOMES
    phase: str | None  # setup | call | teardown: where it failed or errored
    error: str
    duration_s: float
    scenario: str | None  # the scenario folder it ran, if any
    diagnostics: str | None = None  # folder of container logs and znodes.json, relative to the run

    @property
    def judgement(self) -> bool | None:
        """True passed, False failed or errored; skipped tests are not judged at all."""
        return {"passed": True, "failed": False, "error": False}.get(self.outcome)

    @property
    def bad(self) -> bool:
        return self.judgement is False

    @property
    def summary(self) -> str:
        """One line to show before the full error is opened: pytest's first run of
        "E   ..." lines, the exception and its whole message (a message of several lines,
        such as one failed rule per line, joined by "; " so that none is dropped) up to
        pytest's own explanation ("assert ...", "+ where ..."); else the last line."""
        lines = [line.strip() for line in self.error.splitlines() if line.strip()]
        message: list[str] = []
        for line in lines:
            if not line.startswith("E "):
                if message:
                    break
                continue
            text = line[1:].strip()
            if message and (text == "assert" or text.startswith(("assert ", "+ ", "where "))):
                break
            message.append(text)
        return "; ".join(message) if message else (lines[-1] if lines else "")


@dataclass(frozen=True)
class Escalation:
    """The session restoring cluster health after a test left it unhealthy."""

    ts: float
    after: str
    problems: list[str]
    actions: list[str]
    healthy: bool


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    kafka_version: str | None
    started: float | None
    finished: float | None
    status: str
    scenario_ids: list[str]
    progress: tuple[int, int | None] | None = None  # (tests done, of how many) while running

    @property
    def status_text(self) -> str:
        """The status as the index says it: a run still going says how far it got."""
        if self.status != RunStatus.RUNNING.value or self.progress is None:
            return self.status
        done, total = self.progress
        return f"running: {done} of {total} tests done" if total else f"running: {done} tests done"

    @property
    def complete(self) -> bool:
        return self.status == RUN_COMPLETE

    @property
    def duration(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return max(0.0, self.finished - self.started)


@dataclass(frozen=True)
class CoverageCell:
    """One fault kind against one target role an exploration drew."""

    kind: str
    role: str
    entries: int
    seconds: float


@dataclass(frozen=True)
class ExploredRound:
    scenario: str
    outcome: str
    faults: list[str]  # "kill controller at 3 s for 8 s", one per entry
    violated: list[str]  # the rules and checks it broke; none on a failed round: not judged as drawn
    shrunk: str | None = None  # the file `kafka-chaos shrink` wrote beside the round, relative to the run


@dataclass(frozen=True)
class Exploration:
    """explore.json: what ``kafka-chaos explore`` drew and found."""

    seed: int
    rounds: list[ExploredRound]
    coverage: list[CoverageCell]
    kinds_not_exercised: list[str]


@dataclass(frozen=True)
class ShrinkResult:
    """shrink.json: what ``kafka-chaos shrink`` did. Its candidates fail by design (each
    one kept is a smaller schedule that still breaks what the round broke), so a shrink
    run's headline is this, not the candidates' combined verdict."""

    round_id: str
    target: list[str]  # what the round violated, which each kept candidate must violate too
    faults_before: int
    faults_after: int | None  # None: the round violated nothing, so nothing was shrunk
    shrunk_faults: list[str]  # the kept schedule, in words
    runs: int
    stopped_early: bool  # the time budget ended the search: not shown minimal
    written: str | None  # the shrunk scenario file
    flaky: list[str]  # candidates that failed in some runs but fewer than needed

    @property
    def headline(self) -> str:
        if self.faults_after is None:
            return "nothing to shrink"
        how = "shrunk as far as the budget allowed" if self.stopped_early else "shrunk"
        return f"{how} {self.faults_before} -> {self.faults_after}"

    @property
    def succeeded(self) -> bool:
        return self.written is not None


@dataclass
class Run:
    info: RunInfo
    scenarios: list[Scenario]
    problems: list[str] = field(default_factory=list)
    tests: list[SessionTest] = field(default_factory=list)
    escalations: list[Escalation] = field(default_factory=list)
    unreadable_tests: int = 0  # run.json test entries that could not be read
    exploration: Exploration | None = None  # only an explore run has one
    shrink: ShrinkResult | None = None  # only a shrink run has one

    @property
    def outcome(self) -> Outcome:
        """PASSED only when everything that ran passed: every scenario and every test.

        A failed or errored test fails the run like a failed scenario; skipped tests are
        not judged (nor is a run of nothing). A test entry that could not be read may
        have been a failure, so it keeps the run from passing. An incomplete run can
        fail but never pass: what it did not reach is unknown.
        """
        judgements: list[bool | None] = [
            {Outcome.PASSED: True, Outcome.FAILED: False}.get(s.outcome) for s in self.scenarios
        ]
        judgements += [t.judgement for t in self.tests if t.judgement is not None]
        judgements += [None] * self.unreadable_tests
        outcome = combine(judgements)
        if outcome is Outcome.PASSED and not self.info.complete:
            return Outcome.NOT_JUDGED
        return outcome

    @property
    def headline(self) -> str:
        """The index's first word(s): the outcome, or what a shrink did (its candidates
        fail by design); an interrupted shrink is not judged like any other run."""
        if self.shrink is not None and self.info.complete:
            return self.shrink.headline
        return self.outcome.value

    @property
    def succeeded(self) -> bool:
        """Whether the run did what it was for, as the command's exit says: it passed,
        or a shrink wrote its smaller failing schedule."""
        if self.shrink is not None and self.info.complete:
            return self.shrink.succeeded
        return self.outcome is Outcome.PASSED

    def counts(self) -> dict[Outcome, int]:
        return {o: sum(s.outcome is o for s in self.scenarios) for o in Outcome}

    def test_counts(self) -> dict[str, int]:
        """Tests per outcome, every outcome present (zeros included) in a fixed order."""
        return {o: sum(t.outcome == o for t in self.tests) for o in TEST_OUTCOMES}

    def scenario_page(self, scenario_id: str | None) -> str | None:
        """The page of a scenario this run has, for linking a test to it; None otherwise."""
        for s in self.scenarios:
            if scenario_id is not None and s.id == scenario_id:
                return s.page
        return None
