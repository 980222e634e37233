"""A scenario's checks: predicates over what the run recorded, declared with the spec.

A scenario says what must happen as data, not as code woven between its faults: "within
30 s of entry 1's inject, partition 1 is offline with only broker 2 in its ISR", "from
entry 1's inject to its heal, partition 0 keeps broker 0 as leader", "between them,
every send to partition 1 failed". Each :class:`Check` reads the run's evidence after
the workload stopped - the cluster-state timeline of the run's one sampler, the moments
the schedule's entries were injected and healed, the history's sends - and becomes one
named line of the scenario's page with what was seen beside what was expected.

Conditions on the cluster state are the schedule's own (:mod:`faults.conditions`), so a
trigger ("inject when broker 1 leaves the ISR") and a check ("broker 1 left the ISR
within 12 s") are spelled alike. Moments are :class:`Anchor` s - entry N's inject or
heal, by the 1-based numbers a scenario file gives its ``[[schedule]]`` entries - and
every window starts when its action *began* (the fault is in force from then).

In a scenario file (``$topic`` is the scenario's topic)::

    [[checks]]
    eventually = { offline = { topic = "$topic", partition = 1 } }
    after = { inject = 1 }
    within_s = 30

    [[checks]]
    throughout = { leader_is = { broker = 0, topic = "$topic", partition = 0 } }
    from = { inject = 1 }
    until = { heal = 1 }

    [[checks]]
    sends = "not_acked"          # acked | failed | in_doubt | not_acked
    partitions = [1]
    from = { inject = 1 }
    until = { heal = 1 }
    count = { min = 1 }          # per partition named (or per partition sent to)

    [[checks]]
    unavailable_s = { max = 6 }  # longest stretch without an acknowledgement
    partitions = [0, 2]
    from = { inject = 1 }

Everything here is pure: :class:`Evidence` is plain data, so every check is unit-tested
on made-up timelines (tests/unit/test_checks.py). One module per job: ``evidence`` (what
checks read), ``base`` (the interface and the windows every kind shares), one module per
kind of evidence (``cluster``, ``sends``, ``consumers``, ``transactions``), and
``parse`` (scenario-file tables to checks). Scenarios import from here.
"""

from __future__ import annotations

from harness.scenario.checks.base import (
    Check,
    CountRange,
    SecondsRange,
    error_names,
    evaluate_checks,
    tally_outcomes,
)
from harness.scenario.checks.bounds import BOUND_KEYS, bounds_as_checks
from harness.scenario.checks.cluster import ClusterRules, Eventually, Throughout
from harness.scenario.checks.consumers import COMMIT_OUTCOMES, CommitGap, Commits, CommitsKept, Polls
from harness.scenario.checks.evidence import (
    ACTIONS,
    Anchor,
    CheckResult,
    CheckSpecError,
    Evidence,
    IsrAfterHeal,
    Lookup,
    Moment,
    Observed,
    ProbeResult,
    Produced,
    heal,
    inject,
)
from harness.scenario.checks.metadata import (
    ControllerChanges,
    IsrFullAfterHeal,
    LeaderEpochChanges,
    isr_bound_s,
)
from harness.scenario.checks.parse import check_anchors, parse_check
from harness.scenario.checks.sends import SEND_OUTCOMES, Attempts, Seen, Sends, Unavailable
from harness.scenario.checks.transactions import (
    TRANSACTION_OUTCOMES,
    NeverVisible,
    TransactionGap,
    TransactionOutcomes,
    transaction_known_at,
)

__all__ = [
    "ACTIONS",
    "BOUND_KEYS",
    "COMMIT_OUTCOMES",
    "SEND_OUTCOMES",
    "TRANSACTION_OUTCOMES",
    "Anchor",
    "Attempts",
    "Check",
    "CheckResult",
    "CheckSpecError",
    "ClusterRules",
    "CommitGap",
    "Commits",
    "CommitsKept",
    "ControllerChanges",
    "CountRange",
    "Eventually",
    "Evidence",
    "IsrAfterHeal",
    "IsrFullAfterHeal",
    "LeaderEpochChanges",
    "Lookup",
    "Moment",
    "NeverVisible",
    "Observed",
    "Polls",
    "ProbeResult",
    "Produced",
    "SecondsRange",
    "Seen",
    "Sends",
    "Throughout",
    "TransactionGap",
    "TransactionOutcomes",
    "Unavailable",
    "bounds_as_checks",
    "check_anchors",
    "error_names",
    "evaluate_checks",
    "heal",
    "inject",
    "isr_bound_s",
    "parse_check",
    "tally_outcomes",
    "transaction_known_at",
]
