"""A small, hand-made run directory in the exact layout the scenario runner writes.

The report is tested against data whose truth is known by construction, so that a test
can say "this scenario must show 30 lost messages and FAILED" without a cluster or
Spark. A tiny simulator plays three producers against a topic whose partitions follow a
scripted fate over time (acknowledged, acknowledged-then-truncated, in doubt, failed,
written twice), and records what the harness would have recorded: the history tables
(via harness.history.HistoryWriter), the verdict (via spark_jobs.findings, so its JSON
shape is the real one), cluster events, assertions and the configuration.

Three scenarios cover the three outcomes:

* ``s5-unclean-election`` passes with anomalies: unclean election loses 30 acknowledged
  messages, and the scenario requires the checker to catch that.
* ``s3-kill-leader`` fails: a retried send left 2 duplicates where none are allowed.
* ``s7-link-cut`` is not judged: its verdict.json is missing.

run.json also lists the session's pytest tests (one fabric test failed, one errored at
setup, one skipped) and one escalation, s3 has a failed heal and diagnostics (container
logs, znodes.json), and s5 a stretch in which ZooKeeper could not be read.

Run ``python -m tests.report.sample_run DIR`` to write one and render it for a look.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.history import ANOMALY_KINDS, Expectations, HistoryWriter
from harness.history.verdict import Bucket, Example, Findings, PartitionFindings
from harness.scenario.run_config import layered_settings
from harness.workload.clients import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS
from spark_jobs import fates

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
RUN_ID = "20231114-221300-demo"
KAFKA_VERSION = "3.7.2"
TOPIC = "orders"
PRODUCERS = (("pa", "a"), ("pb", "b"), ("pc", "c"))
RATE = 5  # sends per second per producer
PARTITIONS = 3
EXAMPLES = 5  # kept per kind per partition, as reconcile does by default

Fate = Literal["acked", "lost", "unknown", "failed", "dup"]
FateFn = Callable[[int, float], Fate]  # (partition, seconds since T0) -> fate


@dataclass
class _Partition:
    log: list[str] = field(default_factory=list)  # final log, message id by offset
    doomed: list[str] = field(default_factory=list)  # on a leader that will be truncated


@dataclass
class Simulation:
    """What the harness recorded, and the truth the verdict is built from."""

    sends: list[dict[str, Any]] = field(default_factory=list)
    polls: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[int, list[str]] = field(default_factory=dict)
    lost: list[dict[str, Any]] = field(default_factory=list)  # send rows that were lost
    dups: list[dict[str, Any]] = field(default_factory=list)


def simulate(duration_s: int, fate: FateFn, ack_delay: Callable[[float], float] | None = None) -> Simulation:
    """Three producers, round-robin over the partitions; one consumer polls every record
    the leader of the moment served (including those later truncated away)."""
    parts = {p: _Partition() for p in range(PARTITIONS)}
    sim = Simulation()
    for i in range(duration_s * RATE):
        for j, (producer, zone) in enumerate(PRODUCERS):
            t = i / RATE + j * 0.05
            p = (i + j) % PARTITIONS
            mid = f"{producer}-{i}"
            f = fate(p, t)
            part = parts[p]
            row: dict[str, Any] = {
                "message_id": mid,
                "producer_id": producer,
                "seq": i,
                "topic": TOPIC,
                "partition": p,
                "key": None,
                "zone": zone,
                "send_ts": T0 + t,
                "ack_ts": None,
                "outcome": "acked",
                "offset": None,
                "error": None,
            }
            if f in ("unknown", "failed"):
                row["outcome"] = f
                row["error"] = "REQUEST_TIMED_OUT" if f == "unknown" else "NOT_LEADER_OR_FOLLOWER"
                sim.sends.append(row)
                continue
            if f == "lost":
                offset = len(part.log) + len(part.doomed)
                part.doomed.append(mid)
                sim.lost.append(row)
            else:
                part.doomed.clear()  # a new leader took over: the old leader's tail is gone
                copies = 2 if f == "dup" else 1
                part.log.extend([mid] * copies)
                offset = len(part.log) - 1
                if f == "dup":
                    sim.dups.append(row)
                    sim.polls.append(_poll(p, offset - 1, mid, t))
            row["offset"] = offset
            row["ack_ts"] = T0 + (ack_delay(t) if ack_delay and f == "lost" else t + 0.004)
            sim.sends.append(row)
            sim.polls.append(_poll(p, offset, mid, t))
    sim.logs = {p: part.log for p, part in parts.items()}
    return sim


def _poll(partition: int, offset: int, mid: str, t: float) -> dict[str, Any]:
    return {
        "consumer_id": "cb",
        "zone": "b",
        "topic": TOPIC,
        "partition": partition,
        "offset": offset,
        "message_id": mid,
        "poll_ts": T0 + t + 0.02,
    }


# ------------------------------------------------------------------------------ verdict


def _holder(log: list[str], offset: int) -> str | None:
    return log[offset] if 0 <= offset < len(log) else None


def findings(sim: Simulation) -> Findings:
    """The verdict reconcile would reach on this simulation (see docs/HISTORY.md): a lost
    message is also truncated once for its poll and once for its acknowledged offset
    if the final log gives that offset to another message."""
    parts = {p: PartitionFindings(TOPIC, p) for p in range(PARTITIONS)}
    for p, log in sim.logs.items():
        parts[p].log = {"start": 0, "end": len(log) - 1, "records": len(log), "dense": True}
    for row in sim.sends:
        parts[row["partition"]].sends[row["outcome"]] += 1

    def add(kind: str, row: Mapping[str, Any], offset: int, detail: str) -> None:
        pf = parts[row["partition"]]
        holder = _holder(sim.logs[row["partition"]], offset)
        pf.counts[kind] += 1
        examples = pf.examples.setdefault(kind, [])
        if len(examples) < EXAMPLES:
            examples.append(
                Example(
                    kind,
                    row["message_id"],
                    row["producer_id"],
                    TOPIC,
                    row["partition"],
                    offset,
                    row["ack_ts"],
                    holder,
                    detail.format(holder=holder or "nothing"),
                )
            )

    for row in sim.lost:
        off, log = row["offset"], sim.logs[row["partition"]]
        add(
            "lost",
            row,
            off,
            f"acknowledged at offset {off}; absent from the final log (final log holds {{holder}})",
        )
        add("truncated", row, off, f"read or acknowledged at offset {off}; final log holds {{holder}}")
        if off < len(log):
            parts[row["partition"]].counts["truncated"] += 1  # the acknowledged offset diverged too
    for row in sim.dups:
        add(
            "duplicate", row, row["offset"], f"2 copies on the final log; last copy at offset {row['offset']}"
        )

    overall: dict[float, list[int]] = {}
    per_part: dict[tuple[str, int], dict[float, list[int]]] = {}
    index = {"acked": 0, "failed": 1, "unknown": 2}
    for row in sim.sends:
        start = float(math.floor(row["send_ts"]))
        overall.setdefault(start, [0, 0, 0])[index[row["outcome"]]] += 1
        per_part.setdefault((TOPIC, row["partition"]), {}).setdefault(start, [0, 0, 0])[
            index[row["outcome"]]
        ] += 1
    for tp, bs in per_part.items():
        parts[tp[1]].outage = [Bucket(s, c[0], c[1], c[2]) for s, c in sorted(bs.items()) if c[1] or c[2]]
    # Every lost message was read where the log no longer gives it, so it is truncated too.
    fated = [("lost", row) for row in sim.lost] + [("truncated", row) for row in sim.lost]
    fated += [("duplicate", row) for row in sim.dups]
    located = [
        fates.Located(kind, (hash(row["producer_id"]), row["seq"]), TOPIC, row["partition"], row["offset"],
                      row["send_ts"], row["ack_ts"])
        for kind, row in fated
    ]  # fmt: skip
    for (_, p), placed in fates.offset_ranges(located).items():
        parts[p].ranges = {kind: listed for kind, (listed, _) in placed.items()}
    fated_buckets = fates.bucket_fates(located, 1.0)
    ordered = [parts[p] for p in sorted(parts)]
    totals = {k: sum(p.sends[k] for p in ordered) for k in ("acked", "failed", "unknown")}
    totals["sends"] = sum(totals.values())
    totals["final_log_records"] = sum(len(log) for log in sim.logs.values())
    totals.update({k: sum(p.counts[k] for p in ordered) for k in ANOMALY_KINDS})
    return Findings(
        run_id=RUN_ID,
        history="history",
        bucket_seconds=1.0,
        partitions=ordered,
        availability=[Bucket(s, c[0], c[1], c[2], *fated_buckets.get(s, ({}, {})))
                      for s, c in sorted(overall.items())],
        totals=totals,
        located={"lost": len(sim.lost), "truncated": len(sim.lost), "duplicate": len(sim.dups),
                 "aborted_read": 0},
    )


# ---------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class SampleScenario:
    id: str
    title: str
    description: str
    expected: str
    duration_s: int
    fate: FateFn
    expectations: dict[str, Any]
    schedule: list[dict[str, Any]]
    faults: list[tuple[float, str, str, str]]  # (t, fault, action, target node)
    events: list[tuple[float, str, int | None, str]]  # (t, kind, partition, detail)
    checks: list[tuple[str, bool, str]]
    windows: list[tuple[str, float]]
    topic_config: dict[str, Any]
    producer_settings: dict[str, Any]
    broker_settings: dict[str, Any] = field(default_factory=dict)  # the scenario's [brokers] settings
    ack_delay: Callable[[float], float] | None = None
    write_verdict: bool = True
    fault_outcomes: dict[int, str] = field(default_factory=dict)  # index in faults -> outcome text
    diagnostics: tuple[str, ...] = ()  # container names whose logs were collected


def _s5_fate(p: int, t: float) -> Fate:
    if p != 0 or t < 8:
        return "acked"
    if t < 14:
        return "lost"  # acknowledged by broker 0 alone: ISR shrank to [0]
    if t < 16:
        return "unknown"
    return "failed" if t < 26.2 else "acked"


def _s3_fate(p: int, t: float) -> Fate:
    if p != 0:
        return "acked"
    if 9.5 <= t < 10:
        return "dup"  # two sends (t=9.6, 9.9) timed out on the dying leader, were retried, written twice
    if 10 <= t < 12:
        return "unknown"
    return "failed" if 12 <= t < 16.1 else "acked"


HEAL_ERROR = (
    "error: ChaosError: docker start kafka-0 did not return within 30 s\n"
    "  container state: exited (137) <oom?> & restarting"
)


def _kill(target: Any, start: float, duration: float) -> dict[str, Any]:
    return {"start_s": start, "fault": "kill", "target": target, "duration_s": duration}


SCENARIOS = (
    SampleScenario(
        id="s5-unclean-election",
        title="S5 unclean leader election enabled: the stale follower is elected",
        description="RF 2, min.insync.replicas=1, acks=all. Stop the follower of orders-0, "
        "then kill its leader, then start the stale follower first.",
        expected="The stale follower becomes leader; the old leader truncates when it returns; messages "
        "acknowledged while the follower was down are lost, and the checker reports them as lost.",
        duration_s=40,
        fate=_s5_fate,
        expectations={"lost": "at_least_one", "truncated": "any"},
        schedule=[_kill({"broker": 1}, 8, 16), _kill({"broker": 0}, 14, 16)],
        faults=[
            (8, "kill", "inject", "kafka-1"),
            (14, "kill", "inject", "kafka-0"),
            (24, "kill", "heal", "kafka-1"),
            (30, "kill", "heal", "kafka-0"),
        ],
        events=[
            (0.0, "controller", None, "controller is broker 2 (epoch 1)"),
            (8.0, "broker_down", None, "broker 1 left /brokers/ids"),
            (13.1, "isr", 0, "isr [0, 1] -> [0]"),
            (13.1, "isr", 2, "isr [2, 1] -> [2]"),
            (20.0, "broker_down", None, "broker 0 left /brokers/ids (session expired)"),
            (20.1, "leader", 0, "leader 0 -> -1 (epoch 2)"),
            (20.4, "zk_unreadable", None, "ZooKeeper state unreadable: ConnectionLoss: "),
            (23.9, "zk_readable", None, "ZooKeeper state readable again after 3.5 s"),
            (26.0, "broker_up", None, "broker 1 registered"),
            (26.2, "leader", 0, "leader -1 -> 1 (epoch 3), unclean"),
            (32.0, "broker_up", None, "broker 0 registered"),
            (33.0, "isr", 0, "isr [1] -> [1, 0]"),
            (34.5, "isr", 2, "isr [2] -> [2, 1]"),
        ],
        checks=[
            ("orders-0 offline while no replica was live", True, "leader -1 from +20.1 s to +26.2 s"),
            (
                "stale follower elected uncleanly",
                True,
                "leader -1 -> 1 at epoch 3; broker 1 was not in the ISR",
            ),
            ("old leader truncated and rejoined the ISR", True, "isr [1, 0] at +33.0 s"),
            # the scenario's [bounds], as the checks they stand for word them
            (
                "no partition without an acknowledgement for more than 20 s",
                True,
                "p0: 12.20 s; p1: 0.60 s; p2: 0.60 s (window 27.0 s)",
            ),
            ("leader-epoch changes on partition 0 at least 1", True, "2; bound at least 1"),
        ],
        windows=[("unavailability orders-0 (leader killed, follower down)", 12.2)],
        topic_config={"min.insync.replicas": 1, "unclean.leader.election.enable": True},
        producer_settings={"acks": "all", "enable.idempotence": False, "retries": 2147483647},
        ack_delay=lambda t: max(t + 0.004, 13.11),
        broker_settings={"log.flush.interval.messages": 1},
    ),
    SampleScenario(
        id="s3-kill-leader",
        title="S3 kill -9 of a partition leader",
        description="RF 3, acks=all, idempotence off. kill -9 the leader of orders-0 under load.",
        expected="Nothing moves until ZooKeeper expires the broker's session; then the controller elects "
        "the first live replica in the ISR. No acknowledged loss.",
        duration_s=30,
        fate=_s3_fate,
        expectations={},
        schedule=[_kill({"leader_of": [TOPIC, 0]}, 10, 15)],
        faults=[(10, "kill", "inject", "kafka-0"), (25, "kill", "heal", "kafka-0")],
        fault_outcomes={1: HEAL_ERROR},
        diagnostics=("kafka-0", "kafka-1", "kafka-2", "zk-a", "zk-b", "zk-c", "toxiproxy"),
        events=[
            (0.0, "controller", None, "controller is broker 1 (epoch 4)"),
            (16.0, "broker_down", None, "broker 0 left /brokers/ids (session expired)"),
            (16.1, "leader", 0, "leader 0 -> 1 (epoch 5)"),
            (16.1, "isr", 0, "isr [0, 1, 2] -> [1, 2]"),
            (27.0, "broker_up", None, "broker 0 registered"),
            (28.2, "isr", 0, "isr [1, 2] -> [1, 2, 0]"),
        ],
        checks=[
            ("no leader change before session expiry", True, "first change at +16.1 s, kill at +10.0 s"),
            ("new leader elected from the ISR", True, "leader 1 was in isr [0, 1, 2]"),
        ],
        windows=[("unavailability orders-0 (kill -9)", 6.1)],
        topic_config={"min.insync.replicas": 2},
        producer_settings={
            "acks": "all",
            "enable.idempotence": False,
            "max.in.flight.requests.per.connection": 5,
        },
    ),
    SampleScenario(
        id="s7-link-cut",
        title="S7 one broker-to-broker link cut, idempotent producer",
        description="Cut the link between broker 1 and broker 0 (the leader of orders-0).",
        expected="Leader and controller do not change; broker 1 leaves the ISR and rejoins after the link "
        "is restored; no duplicates with enable.idempotence=true.",
        duration_s=25,
        fate=lambda p, t: "acked",
        expectations={"unseen": "any"},
        schedule=[
            {"start_s": 5, "fault": "cut", "links": {"between": ["kafka-1", "kafka-0"]}, "duration_s": 15}
        ],
        faults=[(5, "cut", "inject", "kafka-1<->kafka-0"), (20, "cut", "heal", "kafka-1<->kafka-0")],
        events=[(10.0, "isr", 0, "isr [0, 1, 2] -> [0, 2]"), (21.3, "isr", 0, "isr [0, 2] -> [0, 2, 1]")],
        checks=[("leader and controller unchanged", True, "leader 0, controller 2 throughout")],
        windows=[("broker 1 out of the ISR of orders-0", 11.3)],
        topic_config={"min.insync.replicas": 2},
        producer_settings={"acks": "all", "enable.idempotence": True},
        write_verdict=False,  # as if reconciliation crashed: the report must not call it passed
    ),
)


TOPOLOGY_BROKER_SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "5000",
    "unclean.leader.election.enable": "false",
    "min.insync.replicas": "1",
}


def _effective(s: SampleScenario) -> dict[str, Any]:
    """effective_config as ScenarioRun writes it, built with the runner's own merge and
    the real client defaults."""
    scenario = {k: str(v) for k, v in s.broker_settings.items()}

    def harness(zone: str) -> dict[str, Any]:
        return {"bootstrap.servers": f"127.0.0.1:4{ord(zone)}01", "client.id": None}

    clients = [
        {"role": "producer", "name": p, "zone": z, "settings": layered_settings(
            [("default", PRODUCER_DEFAULTS), ("scenario", s.producer_settings), ("harness", harness(z))])}
        for p, z in PRODUCERS
    ]
    clients.append({"role": "consumer", "name": "cb", "zone": "b", "settings": layered_settings(
        [("default", CONSUMER_DEFAULTS), ("harness", {"group.id": None}),
         ("scenario", {"auto.offset.reset": "earliest"}), ("harness", harness("b"))])})
    return {
        "brokers": layered_settings([("topology", TOPOLOGY_BROKER_SETTINGS), ("scenario", scenario)]),
        "topic": {"name": TOPIC, "partitions": PARTITIONS, "replication_factor": 3,
                  "settings": layered_settings([("broker", {"min.insync.replicas": "1"}),
                                                ("scenario", s.topic_config)])},
        "clients": clients,
    }


def _config(s: SampleScenario) -> dict[str, Any]:
    return {
        "scenario": {"id": s.id, "title": s.title, "description": s.description, "expected": s.expected},
        "kafka_version": KAFKA_VERSION,
        "topology": {
            "name": "three_az",
            "zones": ["a", "b", "c"],
            "brokers": [{"id": i, "zone": z} for i, z in enumerate("abc")],
            "zookeepers": [{"name": f"zk-{z}", "sid": i + 1, "zone": z} for i, z in enumerate("abc")],
        },
        "broker_settings": {**TOPOLOGY_BROKER_SETTINGS, **{k: str(v) for k, v in s.broker_settings.items()}},
        "topic": {"name": TOPIC, "partitions": PARTITIONS, "replication_factor": 3, "config": s.topic_config},
        "producer": [
            {"name": p, "zone": z, "rate_per_s": RATE, "settings": s.producer_settings} for p, z in PRODUCERS
        ],
        "consumer": [{"name": "cb", "zone": "b", "settings": {"auto.offset.reset": "earliest"}}],
        "schedule": s.schedule,
        "expectations": s.expectations,
        "effective_config": _effective(s),
        "test_timeouts": {"zookeeper.session.timeout.ms": 6000, "replica.lag.time.max.ms": 5000},
    }


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def write_scenario(run_dir: Path, s: SampleScenario) -> Path:
    sdir = run_dir / s.id
    sdir.mkdir(parents=True)
    _write_json(sdir / "config.json", _config(s))
    fault_rows = [
        {
            "ts": T0 + t,
            "mono": 5000.0 + t,
            "fault": fault,
            "action": action,
            "targets": json.dumps([target]),
            "outcome": s.fault_outcomes.get(i, "ok"),
        }
        for i, (t, fault, action, target) in enumerate(s.faults)
    ]
    # As ScenarioRun.run_schedule saves it after the run: the plan and what happened.
    _write_json(sdir / "schedule.json", {"version": 1, "entries": s.schedule, "recorded": fault_rows})
    _write_diagnostics(sdir, s.diagnostics)
    sim = simulate(s.duration_s, s.fate, s.ack_delay)
    meta = {"id": s.id, "title": s.title, "topic": TOPIC, "expectations": s.expectations}
    with HistoryWriter(sdir / "history", RUN_ID, meta) as writer:
        for row in sim.sends:
            writer.append("sends", row)
        for row in sim.polls:
            writer.append("polls", row)
        for p, log in sim.logs.items():
            for offset, mid in enumerate(log):
                writer.append(
                    "final_log", {"topic": TOPIC, "partition": p, "offset": offset, "message_id": mid}
                )
        for row in fault_rows:
            writer.append("faults", row)
    # The writer stamps wall-clock times; pin them so the sample is reproducible.
    manifest = json.loads((sdir / "history" / "manifest.json").read_text())
    manifest.update(started=T0, finished=T0 + s.duration_s + 5)
    _write_json(sdir / "history" / "manifest.json", manifest)
    if s.write_verdict:
        verdict = findings(sim).judge(Expectations.from_dict(s.expectations))
        verdict.write(sdir / "verdict.json")
    _write_json(
        sdir / "cluster_events.json",
        [
            {"ts": T0 + t, "kind": kind, "topic": None if p is None else TOPIC, "partition": p, "detail": d}
            for t, kind, p, d in s.events
        ],
    )
    _write_json(
        sdir / "assertions.json",
        {
            "passed": all(ok for _, ok, _ in s.checks),
            "checks": [{"name": n, "passed": ok, "detail": d} for n, ok, d in s.checks],
            "windows": [{"name": n, "seconds": sec} for n, sec in s.windows],
        },
    )
    return sdir


def _write_diagnostics(sdir: Path, containers: tuple[str, ...]) -> None:
    """What the runner collects after a scenario: one log per container, the znodes."""
    if not containers:
        return
    logs = sdir / "diagnostics" / "logs"
    logs.mkdir(parents=True)
    for name in containers:
        (logs / f"{name}.log").write_text(f"[{name}] started\n[{name}] INFO sample log line\n")
    _write_json(
        sdir / "diagnostics" / "znodes.json",
        {"/controller": {"brokerid": 1}, "/brokers/ids": ["1", "2"]},
    )


FABRIC_TEST = "tests/chaos/test_fabric.py::test_zone_cut_isolates_the_zone[c]"
FABRIC_ERROR = (
    "def test_zone_cut_isolates_the_zone(cluster, zone):\n"
    "        cut_zone(cluster, zone)\n"
    ">       assert not reachable(cluster, 'client-c', 'kafka-0')\n"
    "E       AssertionError: <script>console.error(\"traceback\")</script> kafka-0 & zk-a still "
    "reachable from client-c\n"
    "\n"
    "tests/chaos/test_fabric.py:88: AssertionError"
)
SETUP_ERROR = "ChaosError: cluster not healthy after 120 s: kafka-2 not in /brokers/ids"


def sample_tests() -> list[dict[str, Any]]:
    """run.json "tests": the three scenarios' tests, then fault, fabric and cleanup tests."""

    def test(tid: str, outcome: str, duration: float, **extra: Any) -> dict[str, Any]:
        base = {"id": tid, "kind": "test", "outcome": outcome, "phase": None, "error": "",
                "duration_s": duration, "scenario": None}
        return base | extra

    return [
        test("tests/chaos/scenarios/test_s5_unclean_election.py::test_s5", "passed", 52.1,
             scenario="s5-unclean-election"),
        test("tests/chaos/scenarios/test_s3_kill_leader.py::test_s3", "failed", 41.7, phase="call",
             error="AssertionError: duplicate: 2 found, none allowed", scenario="s3-kill-leader"),
        test("file:tests/scenarios/link_cut.toml", "error", 30.2, kind="scenario-file", phase="teardown",
             error="SparkError: reconciliation crashed", scenario="s7-link-cut"),
        test(FABRIC_TEST, "failed", 12.4, phase="call", error=FABRIC_ERROR),
        test("tests/chaos/test_faults.py::test_pause_freezes_the_broker", "error", 120.3, phase="setup",
             error=SETUP_ERROR),
        test("tests/chaos/test_faults.py::test_five_brokers", "skipped", 0.0, phase="setup",
             error="Skipped: needs brokers_per_zone=2"),
        test("tests/chaos/test_cleanup.py::test_no_containers_left", "passed", 3.2),
    ]


def sample_escalations() -> list[dict[str, Any]]:
    return [
        {
            "ts": T0 + 100,
            "after": FABRIC_TEST,
            "problems": ["kafka-2 not in /brokers/ids", "orders-1 has no leader"],
            "actions": ["restarted kafka-2"],
            "healthy": True,
        }
    ]


def build_sample_run(root: Path, status: str = "complete") -> Path:
    """Write reports-like ``root/<RUN_ID>/`` with the three sample scenarios; returns it."""
    run_dir = Path(root) / RUN_ID
    run_dir.mkdir(parents=True)
    for s in SCENARIOS:
        write_scenario(run_dir, s)
    _write_json(
        run_dir / "run.json",
        {
            "run_id": RUN_ID,
            "kafka_version": KAFKA_VERSION,
            "started": T0 - 10,
            "finished": T0 + 120 if status == "complete" else None,
            "status": status,
            "scenarios": [s.id for s in SCENARIOS],
            "tests": sample_tests(),
            "escalations": sample_escalations(),
        },
    )
    return run_dir


if __name__ == "__main__":
    from harness.report import render_run

    print(render_run(build_sample_run(Path(sys.argv[1]))))
