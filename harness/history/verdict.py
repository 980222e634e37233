"""What the reconciliation found, and the verdict against a scenario's rules.

Plain Python, no Spark: the Spark job fills these in from a handful of collected rows,
and the HTML report and the chaos tests read them back from verdict.json. The JSON shape
is documented in docs/HISTORY.md; bump ``VERDICT_SCHEMA_VERSION`` when it changes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.history import ANOMALY_KINDS, Expectations, RuleResult

VERDICT_SCHEMA_VERSION = 1


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


@dataclass
class PartitionFindings:
    """Counts and examples for one topic-partition.

    ``log`` describes the final log (first and last offset, record count, and whether it
    is dense, i.e. has no offset gaps; acknowledged-offset divergence assumes density).
    """

    topic: str
    partition: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALY_KINDS, 0))
    examples: dict[str, list[Example]] = field(default_factory=dict)
    sends: dict[str, int] = field(default_factory=lambda: {"acked": 0, "failed": 0, "unknown": 0})
    log: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "counts": dict(self.counts),
            "examples": {k: [e.to_dict() for e in v] for k, v in self.examples.items() if v},
            "sends": dict(self.sends),
            "log": dict(self.log),
        }


@dataclass(frozen=True)
class Bucket:
    """Send outcomes in one time bucket, by send_ts: the raw material of outage plots."""

    start: float
    acked: int
    failed: int
    unknown: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "acked": self.acked,
            "failed": self.failed,
            "unknown": self.unknown,
        }


@dataclass
class Findings:
    """Everything the reconciliation measured, independent of any acceptance rule."""

    run_id: str
    history: str
    bucket_seconds: float
    partitions: list[PartitionFindings]
    availability: list[Bucket]
    # per partition, only buckets with a failed or unknown send: the outage windows
    partition_availability: dict[tuple[str, int], list[Bucket]]
    totals: dict[str, int]
    timings: dict[str, float] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Total per anomaly kind over all partitions."""
        return {k: sum(p.counts.get(k, 0) for p in self.partitions) for k in ANOMALY_KINDS}

    def partition(self, topic: str, number: int) -> PartitionFindings | None:
        return next((p for p in self.partitions if (p.topic, p.partition) == (topic, number)), None)

    def judge(self, expectations: Expectations) -> Verdict:
        rules = expectations.judge(self.counts())
        return Verdict(self, expectations, rules, all(r.passed for r in rules))

    def to_dict(self) -> dict[str, Any]:
        by_part = self.partition_availability
        return {
            "run_id": self.run_id,
            "history": self.history,
            "kinds": list(ANOMALY_KINDS),
            "counts": self.counts(),
            "totals": dict(self.totals),
            "partitions": [p.to_dict() for p in self.partitions],
            "availability": {
                "bucket_seconds": self.bucket_seconds,
                "buckets": [b.to_dict() for b in self.availability],
                "partitions": [
                    {"topic": t, "partition": n, "buckets": [b.to_dict() for b in bs]}
                    for (t, n), bs in sorted(by_part.items())
                ],
            },
            "timings": dict(self.timings),
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

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: the report must never read half a verdict."""
        target = Path(path)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=False))
        tmp.replace(target)
