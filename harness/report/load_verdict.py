"""verdict.json (written by the judge, ``spark_jobs/findings.py``) read into the report's
``Verdict``: rules, counts, examples, availability buckets and per-partition summaries.
A verdict that says passed while one of its rules failed is shown as failed, with a
problem saying so.
"""

from __future__ import annotations

from typing import Any

from harness.history import ANOMALY_KINDS
from harness.report.fields import as_bool, as_int, as_list, as_num, as_obj, as_opt_int, as_opt_num, as_opt_str
from harness.report.model import Bucket, Example, PartitionSummary, RuleResult, Verdict

VERDICT_SCHEMA_VERSION = 1  # the verdict.json version this loader was written against


def _bucket(raw: Any) -> Bucket:
    b = as_obj(raw, "bucket")
    return Bucket(
        start=as_num(b["start"], "bucket start"),
        acked=as_int(b.get("acked", 0), "bucket acked"),
        failed=as_int(b.get("failed", 0), "bucket failed"),
        unknown=as_int(b.get("unknown", 0), "bucket unknown"),
    )


def _example(kind: str, raw: Any) -> Example:
    e = as_obj(raw, f"{kind} example")
    return Example(
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


def _counts(raw: Any, what: str) -> dict[str, int]:
    return {str(k): as_int(v, f"{what} {k}") for k, v in as_obj(raw, what).items()}


def parse_verdict(data: Any, problems: list[str]) -> Verdict:
    raw = as_obj(data, "verdict")
    version = raw.get("schema_version")
    if version != VERDICT_SCHEMA_VERSION:
        problems.append(
            f"verdict.json has schema_version {version!r}; this report reads {VERDICT_SCHEMA_VERSION}"
        )
    passed = as_bool(raw["passed"], "passed")
    kinds = [str(k) for k in as_list(raw.get("kinds") or list(ANOMALY_KINDS), "kinds")]
    rules_raw = as_obj(raw.get("rules", {}), "rules")
    rules = []
    for kind in [*kinds, *(k for k in rules_raw if k not in kinds)]:
        if kind in rules_raw:
            r = as_obj(rules_raw[kind], f"rule {kind}")
            rules.append(
                RuleResult(
                    kind=kind,
                    rule=str(r.get("rule")),
                    count=as_int(r.get("count", 0), f"rule {kind} count"),
                    passed=as_bool(r.get("passed"), f"rule {kind} passed"),
                    reason=str(r.get("reason", "")),
                )
            )
    if passed and any(not r.passed for r in rules):
        problems.append("verdict.json says passed although a rule failed; shown as failed")
        passed = False
    availability = as_obj(raw.get("availability", {}), "availability")
    outages = {
        (str(p.get("topic")), as_int(p.get("partition"), "partition")): [
            _bucket(b) for b in as_list(p.get("buckets", []), "availability partition buckets")
        ]
        for p in (
            as_obj(x, "availability partition")
            for x in as_list(availability.get("partitions", []), "availability partitions")
        )
    }
    partitions = []
    examples: dict[str, list[Example]] = {}
    for item in as_list(raw.get("partitions", []), "partitions"):
        p = as_obj(item, "partition")
        topic, number = str(p.get("topic", "")), as_int(p.get("partition", -1), "partition")
        for kind, exs in as_obj(p.get("examples", {}), "examples").items():
            found = (_example(str(kind), e) for e in as_list(exs, "examples"))
            examples.setdefault(str(kind), []).extend(found)
        partitions.append(
            PartitionSummary(
                topic=topic,
                partition=number,
                counts=_counts(p.get("counts", {}), "partition counts"),
                sends=_counts(p.get("sends", {}), "partition sends"),
                log=dict(as_obj(p.get("log", {}), "partition log")),
                outage=outages.get((topic, number), []),
            )
        )
    return Verdict(
        passed=passed,
        kinds=kinds,
        counts=_counts(raw.get("counts", {}), "counts"),
        rules=rules,
        examples={k: examples[k] for k in [*kinds, *examples] if k in examples},
        totals=_counts(raw.get("totals", {}), "totals"),
        bucket_seconds=as_num(availability.get("bucket_seconds", 1.0), "bucket_seconds") or 1.0,
        buckets=sorted(
            (_bucket(b) for b in as_list(availability.get("buckets", []), "buckets")), key=lambda b: b.start
        ),
        partitions=partitions,
    )
