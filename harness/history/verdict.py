"""The verdict's one data model: what the reconciliation found, judged against a
scenario's rules, and the verdict.json both are written to and read back from.

Plain Python, no Spark: the judge (``spark_jobs/reconcile.py``) fills these in from a
handful of collected rows and writes them; the HTML report and the chaos tests read them
back with :meth:`Verdict.from_dict`, so writer and reader cannot disagree on a field.
The JSON shape is documented in docs/HISTORY.md; bump ``VERDICT_SCHEMA_VERSION`` when
it changes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.files import write_json
from harness.history import kinds as registry
from harness.history.fields import (
    Malformed,
    as_bool,
    as_int,
    as_list,
    as_num,
    as_obj,
    as_opt_int,
    as_opt_num,
    as_opt_str,
)
from harness.history.kinds import Family
from harness.history.rules import ANOMALY_KINDS, Expectations, RuleResult, parse_rule
from harness.history.schema import HistoryError

VERDICT_SCHEMA_VERSION = 2
VERDICT_FILE = "verdict.json"  # its name in a scenario's folder
READABLE_VERDICT_VERSIONS = (1, 2)  # version 1 lacks the fates: buckets' and ranges


@dataclass(frozen=True)
class Example:
    """One finding, at the position where it really happened (topic, partition, offset:
    possibly another partition than the one it is listed and counted under), with what
    the final log holds there."""

    kind: str
    message_id: str | None
    producer_id: str | None
    topic: str
    partition: int
    offset: int | None
    ack_ts: float | None
    final_message_id: str | None  # what the final log holds at (topic, partition, offset)
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "producer_id": self.producer_id,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "ack_ts": self.ack_ts,
            "final_message_id": self.final_message_id,
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, kind: str, raw: object) -> Example:
        e = as_obj(raw, f"{kind} example")
        return cls(
            kind=kind,
            message_id=as_opt_str(e.get("message_id")),
            producer_id=as_opt_str(e.get("producer_id")),
            topic=str(e.get("topic", "")),
            partition=as_int(e.get("partition", -1), "example partition"),
            offset=as_opt_int(e.get("offset"), "example offset"),
            ack_ts=as_opt_num(e.get("ack_ts"), "example ack_ts"),
            final_message_id=as_opt_str(e.get("final_message_id")),
            detail=str(e.get("detail", "")),
        )


@dataclass(frozen=True)
class Range:
    """Consecutive offsets of one partition where one kind struck (docs/HISTORY.md, fates),
    with when the first and last of their sends were acknowledged (None: none was)."""

    first: int
    last: int
    count: int
    ack_from: float | None
    ack_to: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "count": self.count,
                "ack_from": self.ack_from, "ack_to": self.ack_to}  # fmt: skip

    @classmethod
    def from_dict(cls, raw: object) -> Range:
        r = as_obj(raw, "range")
        return cls(
            first=as_int(r["first"], "range first"),
            last=as_int(r["last"], "range last"),
            count=as_int(r["count"], "range count"),
            ack_from=as_opt_num(r.get("ack_from"), "range ack_from"),
            ack_to=as_opt_num(r.get("ack_to"), "range ack_to"),
        )


@dataclass
class PartitionFindings:
    """Counts and examples for one topic-partition.

    ``log`` describes the final log (first and last offset, record count, and whether it
    is dense, i.e. has no offset gaps; acknowledged-offset divergence assumes density).
    ``outage`` holds its send-time buckets with a failed or in-doubt send, by start.
    """

    topic: str
    partition: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALY_KINDS, 0))
    examples: dict[str, list[Example]] = field(default_factory=dict)
    sends: dict[str, int] = field(default_factory=lambda: {"acked": 0, "failed": 0, "unknown": 0})
    log: dict[str, Any] = field(default_factory=dict)
    outage: list[Bucket] = field(default_factory=list)
    # kind -> where in this partition the sends it found sit, as offset ranges (fates)
    ranges: dict[str, list[Range]] = field(default_factory=dict)

    @property
    def anomalies(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "counts": dict(self.counts),
            "examples": {k: [e.to_dict() for e in v] for k, v in self.examples.items() if v},
            "sends": dict(self.sends),
            "log": dict(self.log),
            "ranges": {k: [r.to_dict() for r in v] for k, v in self.ranges.items() if v},
        }


@dataclass(frozen=True)
class Bucket:
    """Send outcomes in one time bucket, by send_ts: the raw material of outage plots."""

    start: float
    acked: int
    failed: int
    unknown: int
    # sends of the bucket by judged fate (docs/HISTORY.md, fates): kind -> sends, nonzero
    # only; and the same sends by their own outcome (which of acked, failed, unknown they
    # were counted under above)
    fates: dict[str, int] = field(default_factory=dict)
    fated: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "acked": self.acked,
            "failed": self.failed,
            "unknown": self.unknown,
            **({"fates": dict(self.fates), "fated": dict(self.fated)} if self.fates else {}),
        }

    @classmethod
    def from_dict(cls, raw: object) -> Bucket:
        b = as_obj(raw, "bucket")
        return cls(
            start=as_num(b["start"], "bucket start"),
            acked=as_int(b.get("acked", 0), "bucket acked"),
            failed=as_int(b.get("failed", 0), "bucket failed"),
            unknown=as_int(b.get("unknown", 0), "bucket unknown"),
            fates=_counts(b.get("fates", {}), "bucket fates"),
            fated=_counts(b.get("fated", {}), "bucket fated"),
        )


@dataclass
class Findings:
    """Everything the reconciliation measured, independent of any acceptance rule."""

    run_id: str
    history: str
    bucket_seconds: float
    partitions: list[PartitionFindings]
    availability: list[Bucket]
    totals: dict[str, int]
    timings: dict[str, float] = field(default_factory=dict)
    kinds: tuple[str, ...] = ANOMALY_KINDS  # the kinds judged, in report order
    # per send-side kind, how many of the messages it found were located (given a send
    # time and a position); fewer than found only past the judge's limit (docs/HISTORY.md)
    located: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Total per anomaly kind over all partitions."""
        return {k: sum(p.counts.get(k, 0) for p in self.partitions) for k in self.kinds}

    def partition(self, topic: str, number: int) -> PartitionFindings | None:
        return next((p for p in self.partitions if (p.topic, p.partition) == (topic, number)), None)

    def judge(self, expectations: Expectations) -> Verdict:
        rules = expectations.judge(self.counts())
        return Verdict(self, expectations, rules, all(r.passed for r in rules))

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "history": self.history,
            "kinds": list(self.kinds),
            "counts": self.counts(),
            "totals": dict(self.totals),
            "partitions": [p.to_dict() for p in self.partitions],
            "availability": {
                "bucket_seconds": self.bucket_seconds,
                "buckets": [b.to_dict() for b in self.availability],
                "partitions": [
                    {"topic": p.topic, "partition": p.partition, "buckets": [b.to_dict() for b in p.outage]}
                    for p in sorted(self.partitions, key=lambda p: (p.topic, p.partition))
                    if p.outage
                ],
            },
            "timings": dict(self.timings),
            "fates": {"located": dict(self.located)},
        }


@dataclass
class Verdict:
    """Findings judged against the scenario's declared rules; passes only if all do."""

    findings: Findings
    expectations: Expectations
    rules: list[RuleResult]
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": VERDICT_SCHEMA_VERSION,
            "passed": self.passed,
            "expectations": self.expectations.to_dict(),
            "rules": {r.kind: r.to_dict() for r in self.rules},
            **self.findings.to_dict(),
        }

    @property
    def families_judged(self) -> set[Family]:
        return judged_families(self.findings.timings)

    def shown_rules(self) -> list[RuleResult]:
        """The rules a page lists: every rule of a family that was judged, and any other
        that says something (failed, counted, or asked for more than none)."""
        judged = self.families_judged
        families = {k.name: k.family for k in registry.KINDS}  # a kind it does not know is shown
        return [r for r in self.rules
                if families.get(r.kind, Family.MESSAGES) in judged or not r.passed or r.count or r.rule != 0]

    def families_not_judged(self) -> list[Family]:
        return [f for f in Family if f not in self.families_judged]

    # What the report reads, named as it shows them.
    @property
    def kinds(self) -> tuple[str, ...]:
        return self.findings.kinds

    @property
    def counts(self) -> dict[str, int]:
        return self.findings.counts()

    @property
    def totals(self) -> dict[str, int]:
        return self.findings.totals

    @property
    def bucket_seconds(self) -> float:
        return self.findings.bucket_seconds

    @property
    def buckets(self) -> list[Bucket]:
        return self.findings.availability

    @property
    def partitions(self) -> list[PartitionFindings]:
        return self.findings.partitions

    @property
    def anomalies(self) -> dict[str, int]:
        """Only the kinds that were seen, in report order: what the index table lists."""
        return {k: c for k, c in self.counts.items() if c}

    @property
    def examples(self) -> dict[str, list[Example]]:
        """kind -> its examples over all partitions, in partition order."""
        out: dict[str, list[Example]] = {}
        for p in self.partitions:
            for kind, shown in p.examples.items():
                out.setdefault(kind, []).extend(shown)
        return {k: out[k] for k in [*self.kinds, *out] if k in out}

    def ranges_of(self, kind: str) -> list[tuple[str, int, Range]]:
        """Where ``kind`` struck, as (topic, partition, offset range), partition by partition."""
        return [(p.topic, p.partition, r) for p in self.partitions for r in p.ranges.get(kind, [])]

    @classmethod
    def from_dict(cls, data: object) -> Verdict:
        """A verdict.json read back; Malformed naming the first field that is not as the
        writer writes it. The file's ``passed`` is kept as written: whether it agrees with
        its rules is for the reader to judge (:attr:`consistent`)."""
        raw = as_obj(data, "verdict")
        kinds = tuple(str(k) for k in as_list(raw.get("kinds") or list(ANOMALY_KINDS), "kinds"))
        availability = as_obj(raw.get("availability", {}), "availability")
        outages = {
            (str(a.get("topic")), as_int(a.get("partition"), "partition")): [
                Bucket.from_dict(b) for b in as_list(a.get("buckets", []), "availability partition buckets")
            ]
            for a in (
                as_obj(x, "availability partition")
                for x in as_list(availability.get("partitions", []), "availability partitions")
            )
        }
        partitions = [_partition(item, outages) for item in as_list(raw.get("partitions", []), "partitions")]
        findings = Findings(
            run_id=str(raw.get("run_id", "")),
            history=str(raw.get("history", "")),
            bucket_seconds=as_num(availability.get("bucket_seconds", 1.0), "bucket_seconds") or 1.0,
            partitions=partitions,
            availability=sorted(
                (Bucket.from_dict(b) for b in as_list(availability.get("buckets", []), "buckets")),
                key=lambda b: b.start,
            ),
            totals=_counts(raw.get("totals", {}), "totals"),
            timings=_timings(raw.get("timings", {})),
            kinds=kinds,
            located=_counts(as_obj(raw.get("fates", {}), "fates").get("located", {}), "fates located"),
        )
        try:
            expectations = Expectations.from_dict(as_obj(raw.get("expectations", {}), "expectations"))
        except HistoryError as exc:
            raise Malformed(str(exc)) from exc
        rules_raw = as_obj(raw.get("rules", {}), "rules")
        rules = [_rule(kind, rules_raw[kind]) for kind in [*kinds, *(k for k in rules_raw if k not in kinds)]
                 if kind in rules_raw]  # fmt: skip
        return cls(findings, expectations, rules, as_bool(raw["passed"], "passed"))

    @property
    def consistent(self) -> bool:
        """False for a verdict that says passed while one of its rules failed."""
        return not self.passed or all(r.passed for r in self.rules)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: the report must never read half a verdict."""
        write_json(Path(path), self.to_dict())


def judged_families(timings: Mapping[str, float]) -> set[Family]:
    """The families a verdict judged, from its ``timings``: the message pass always runs;
    each other pass times itself, and takes 0 when its history held none of its data
    (docs/HISTORY.md, verdict.json)."""
    return {Family.MESSAGES} | {f for f in Family if timings.get(f"{f.value}_s", 0) > 0}


def _timings(raw: object) -> dict[str, float]:
    return {str(k): as_num(v, f"timing {k}") for k, v in as_obj(raw, "timings").items()}


def _counts(raw: object, what: str) -> dict[str, int]:
    return {str(k): as_int(v, f"{what} {k}") for k, v in as_obj(raw, what).items()}


def _rule(kind: str, raw: object) -> RuleResult:
    r = as_obj(raw, f"rule {kind}")
    try:
        rule = parse_rule(kind, r.get("rule"))
    except HistoryError as exc:
        raise Malformed(str(exc)) from exc
    return RuleResult(
        kind=kind,
        rule=rule,
        count=as_int(r.get("count", 0), f"rule {kind} count"),
        passed=as_bool(r.get("passed"), f"rule {kind} passed"),
        reason=str(r.get("reason", "")),
    )


def _partition(item: object, outages: dict[tuple[str, int], list[Bucket]]) -> PartitionFindings:
    p = as_obj(item, "partition")
    topic, number = str(p.get("topic", "")), as_int(p.get("partition", -1), "partition")
    return PartitionFindings(
        topic=topic,
        partition=number,
        counts=_counts(p.get("counts", {}), "partition counts"),
        examples={
            str(kind): [Example.from_dict(str(kind), e) for e in as_list(shown, "examples")]
            for kind, shown in as_obj(p.get("examples", {}), "examples").items()
        },
        sends=_counts(p.get("sends", {}), "partition sends"),
        log=dict(as_obj(p.get("log", {}), "partition log")),
        outage=outages.get((topic, number), []),
        ranges={
            str(kind): [Range.from_dict(r) for r in as_list(found, "ranges")]
            for kind, found in as_obj(p.get("ranges", {}), "ranges").items()
        },
    )
