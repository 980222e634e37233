"""The project never makes a librdkafka call known to abort the process under faults.

librdkafka's coordinator-targeted Admin API operations share one request path that, when
the coordinator's connection drops at the wrong moment, frees an object it still uses and
trips ``rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0'`` (librdkafka
pull request 5397, open). The assertion calls ``abort()`` on a librdkafka thread: the
whole pytest session dies (exit 134), not one test. The chaos suite met it four times,
always at a broker kill after an earlier test had asked an AdminClient to describe a
consumer group. Dropped connections are what this suite makes, so those calls stay out
of it; a group coordinator is asked for through a consumer instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("harness", "faults", "topologies", "spark_jobs", "tests/chaos", "benchmarks")

# confluent_kafka.admin.AdminClient methods that go through rd_kafka_admin_coord_request.
COORDINATOR_ADMIN_CALLS = frozenset({
    "describe_consumer_groups",
    "list_consumer_group_offsets",
    "alter_consumer_group_offsets",
    "delete_consumer_groups",
})


def hazardous_calls(source: str, filename: str) -> list[str]:
    """``file:line name`` for every call of a coordinator-targeted Admin method."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in COORDINATOR_ADMIN_CALLS):
            found.append(f"{filename}:{node.lineno} {node.func.attr}")
    return found


def project_sources() -> list[Path]:
    return [path for folder in SCANNED for path in sorted((ROOT / folder).rglob("*.py"))]


def test_no_coordinator_targeted_admin_call_anywhere_in_the_project() -> None:
    sources = project_sources()
    assert len(sources) > 50, "the scan found too few files to mean anything"
    found = [hit for path in sources
             for hit in hazardous_calls(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == [], f"librdkafka PR 5397 can abort the run on these: {found}"


def test_the_scan_finds_such_a_call() -> None:
    planted = "def probe(cluster):\n    cluster.admin.describe_consumer_groups(['g'])['g'].result(10)\n"
    assert hazardous_calls(planted, "planted.py") == ["planted.py:2 describe_consumer_groups"]
