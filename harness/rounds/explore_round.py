"""One round of an exploration as a scenario: the safety configuration's topic and
clients under a drawn schedule, judged by what that configuration promises.

A round is an ordinary :class:`ScenarioSpec`, so it runs through the one scenario runner,
its page shows what every scenario page shows, and the ``scenario.toml`` each run writes
is the round's replay (``kafka-chaos replay reports/<run>/<round>``). What a round adds:
- expectations from :mod:`harness.explore.invariants` (0 where the configuration
  promises it, ``any`` elsewhere), merged over every producer: a kind is promised only if
  every producer's settings promise it; rules the configuration's file declares in
  ``[expectations]`` replace those (a claim to test, such as acks=1 losing nothing);
- the cluster's own rules (:class:`~harness.scenario.checks.ClusterRules`);
- liveness: acknowledgements again within ``LIVENESS_S`` of the last heal, and every ISR
  full within ``ISR_FULL_S`` of it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from harness.explore.invariants import Invariant, implied
from harness.history import ANOMALY_KINDS, Rule
from harness.scenario.checks import ClusterRules, CountRange, IsrFullAfterHeal, Sends, heal
from harness.scenario.runner import ScenarioRun, ScenarioSpec

# Kafka's own clients retry for their delivery timeout; the harness's producers time out
# after 15 s (message.timeout.ms), so a minute is ample for acknowledgements to resume
# once every fault is healed, even on a loaded machine.
LIVENESS_S = 60.0
# Followers catch up within replica.lag.time.max.ms once they fetch again; a broker that
# was down also waits for its session's expiry and a JVM start.
ISR_FULL_S = 120.0
LIVENESS = f"acknowledgements resume within {LIVENESS_S:g} s of the last heal"
CLUSTER_RULES = "the metadata keeps the cluster's rules"
# Check names older rounds were recorded under, and what they are called now.
RENAMED_CHECKS = {"ZooKeeper's view keeps the cluster's rules": CLUSTER_RULES}
# Checks that say a round could not test what was drawn rather than that Kafka broke a
# promise: a fault that could not strike (a role whose broker was already down), a client
# that died, a workload that never flowed.
SCHEDULE_RAN = "fault schedule ran"
OPERATIONAL = ("at least ", "workload flowing before the faults", SCHEDULE_RAN,
               "faults injected and healed without error", "every client ran until the workload stopped")


def round_seed(seed: int, number: int) -> int:
    """Round ``number``'s own seed, drawn from the exploration's: stable across machines
    and Python versions (no ``hash()``, which is salted per process)."""
    digest = hashlib.sha256(f"kafka-chaos explore {seed} {number}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def promised(base: ScenarioSpec, broker_settings: Mapping[str, Any]) -> list[Invariant]:
    """What the base configuration promises, every producer considered: one invariant
    per anomaly kind, 0 only where every producer's settings promise it."""
    topic = base.topic
    brokers = {**broker_settings, **base.broker_settings}
    per_producer = [implied(p.settings, topic.config, brokers, topic.replicas) for p in base.producers]
    merged = []
    for kind_rules in zip(*per_producer, strict=True):
        loosest = next((inv for inv in kind_rules if inv.rule != 0), kind_rules[0])
        merged.append(loosest)
    return merged


def last_to_heal(schedule: Sequence[Mapping[str, Any]]) -> int:
    """The 1-based number of the entry healed last (by planned end)."""
    ends = [float(e["start_s"]) + float(e.get("duration_s", 0.0)) for e in schedule]
    return max(range(len(ends)), key=lambda i: ends[i]) + 1


def liveness(schedule: Sequence[Mapping[str, Any]]) -> Sends:
    """Acknowledgements within LIVENESS_S of the heal of the entry healed last."""
    return Sends("acked", CountRange(at_least=1), start=heal(last_to_heal(schedule)), for_s=LIVENESS_S,
                 timed_by="ack", label=LIVENESS)


def with_schedule(spec: ScenarioSpec, schedule: Sequence[Mapping[str, Any]]) -> ScenarioSpec:
    """A round with another schedule (a shrinking candidate): the same judgement, its
    liveness check measured from the new schedule's last heal."""
    checks = tuple(liveness(schedule) if c.name == LIVENESS else c for c in spec.checks
                   if schedule or c.name != LIVENESS)  # no heal to measure from without a fault
    return dataclasses.replace(spec, schedule=tuple(dict(e) for e in schedule), checks=checks)


def violations(run: ScenarioRun) -> set[str]:
    """What a finished round broke: failed rules (``rule <kind>``) and failed checks,
    leaving out the checks that only say the round could not test anything (too few
    acknowledgements, a workload not flowing before the faults). Liveness is measured
    from the drawn schedule's last heal: when the schedule did not run as drawn (a heal
    late or never run), that moment is not the drawn one, so a failed liveness check says
    nothing about Kafka and the round is one not judged as drawn; the data rules stand."""
    found = {f"rule {r.kind}" for r in (run.verdict.rules if run.verdict is not None else []) if not r.passed}
    checks = [(c.name, c.passed) for c in run.checks]
    return found | checks_violated(checks)


def checks_violated(checks: Sequence[tuple[str, bool]]) -> set[str]:
    """The failed checks (name, passed) that are violations; see :func:`violations`.
    Names recorded under an older label (:data:`RENAMED_CHECKS`) read as today's, so a
    recorded round and its replay name the same violation alike."""
    checks = [(RENAMED_CHECKS.get(name, name), passed) for name, passed in checks]
    schedule_as_drawn = all(passed for name, passed in checks if name.startswith(SCHEDULE_RAN))
    return {name for name, passed in checks
            if not passed and not name.startswith(OPERATIONAL)
            and (schedule_as_drawn or name != LIVENESS)}


def round_spec(base: ScenarioSpec, schedule: Sequence[Mapping[str, Any]], seed: int, number: int,
               broker_settings: Mapping[str, Any]) -> ScenarioSpec:
    """Round ``number`` (drawn with ``seed``) of an exploration of ``base``: its topic,
    clients and settings, the drawn ``schedule``, and the judgement described above.
    ``broker_settings`` are the cluster's (the topology's), which the base may add to."""
    if not schedule:
        raise ValueError("a round needs at least one fault")
    if not base.producers:
        raise ValueError("an exploration needs a producer")
    invariants = promised(base, broker_settings)
    # What the configuration promises, then what its file claims on top: a file may hold
    # a weaker configuration to a stronger rule (acks=1 claimed to lose nothing) to see
    # the explorer catch the difference.
    rules: dict[str, Rule] = {inv.kind: inv.rule for inv in invariants}
    rules.update(base.expectations)
    claimed = [f"{kind} = {rule} (claimed by the configuration's file)"
               for kind, rule in base.expectations.items()]
    kinds = ", ".join(sorted({str(e["fault"]) for e in schedule}))
    return dataclasses.replace(
        base,
        id=f"explore-{seed}-r{number}",
        title=f"Exploration round {number} (seed {seed}): {len(schedule)} fault(s), {kinds}",
        description=f"{base.title}, under a drawn schedule of {len(schedule)} fault(s): {kinds}.",
        expected="Whatever the faults, what the configuration promises: "
                 + "; ".join([*(f"{inv.kind} = 0 ({inv.reason})" for inv in invariants
                                if inv.rule == 0 and inv.kind not in base.expectations), *claimed]),
        expectations={kind: rules[kind] for kind in ANOMALY_KINDS},
        schedule=tuple(dict(entry) for entry in schedule),
        checks=(ClusterRules(label=CLUSTER_RULES), liveness(schedule), IsrFullAfterHeal(ISR_FULL_S)),
        probes=(),
        must_fail=(),
    )
