"""verdict.json (written by the judge) read back into the one verdict model,
:class:`harness.history.verdict.Verdict`. A verdict that says passed while one of its rules
failed is shown as failed, with a problem saying so.
"""

from __future__ import annotations

from typing import Any

from harness.history.fields import as_obj
from harness.history.verdict import READABLE_VERDICT_VERSIONS, VERDICT_SCHEMA_VERSION, Verdict


def parse_verdict(data: Any, problems: list[str]) -> Verdict:
    version = as_obj(data, "verdict").get("schema_version")
    if version not in READABLE_VERDICT_VERSIONS:
        problems.append(
            f"verdict.json has schema_version {version!r}; this report reads {VERDICT_SCHEMA_VERSION}"
        )
    verdict = Verdict.from_dict(data)
    if not verdict.consistent:
        problems.append("verdict.json says passed although a rule failed; shown as failed")
        verdict.passed = False
    return verdict
