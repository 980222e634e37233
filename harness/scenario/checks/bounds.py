"""The ``[bounds]`` table of a scenario file, read as the checks it stands for.

Bounds were the first way a scenario put limits on how a run behaved (failed sends, the
longest stretch without an acknowledgement, elections, ISR recovery). Checks say the same
things and more, so a scenario has one assertion vocabulary: each bound key is an alias
for one check, named as the bound always was, and files that use ``[bounds]`` keep their
meaning and their pages.

====================  ==================================================================
``[bounds]`` key      the check it is
====================  ==================================================================
max_failed = N        ``sends = "failed"``, ``count = { max = N }``, ``summed = true``
max_in_doubt = N      ``sends = "in_doubt"``, ``count = { max = N }``, ``summed = true``
max_unavailable_s     ``unavailable_s = { max = .. }`` over the partitions without their own
unavailable_s         ``unavailable_s = { max = .. }``, ``partitions = [p]`` for each one
controller_changes    ``controller_changes`` (the same count)
leader_epoch_changes  ``leader_epoch_changes``, per partition with ``partitions = [p]``
isr_full_after_heal_s ``isr_full_after_heal_s`` (the same seconds)
====================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.fields import Fields
from harness.scenario.checks.base import Check, CountRange, SecondsRange
from harness.scenario.checks.evidence import CheckSpecError
from harness.scenario.checks.metadata import ControllerChanges, IsrFullAfterHeal, LeaderEpochChanges
from harness.scenario.checks.sends import Sends, Unavailable
from harness.scenario.checks.tables import count_range

BOUND_KEYS = ("max_failed", "max_in_doubt", "max_unavailable_s", "unavailable_s",
              "controller_changes", "leader_epoch_changes", "isr_full_after_heal_s")
WHERE = "[bounds]"


def bounds_as_checks(raw: Any, partitions: int) -> list[Check]:
    """The checks a ``[bounds]`` table stands for, in the order of :data:`BOUND_KEYS`;
    ``partitions`` is the scenario topic's partition count, which the bounds' partition
    numbers are checked against. Every problem is one CheckSpecError naming the key."""
    try:
        return _checks(raw, partitions)
    except CheckSpecError as err:
        text = str(err)
        raise CheckSpecError(text if text.startswith(WHERE) else f"{WHERE} {text}") from err


def _checks(raw: Any, partitions: int) -> list[Check]:
    if not isinstance(raw, Mapping):
        raise CheckSpecError(f"{WHERE} must be a table")
    unknown = sorted(set(raw) - set(BOUND_KEYS))
    if unknown:
        raise CheckSpecError(f"{WHERE} unknown key(s) {', '.join(unknown)}; known: {', '.join(BOUND_KEYS)}")
    table = Fields(raw, WHERE, CheckSpecError)
    checks: list[Check] = []
    for key, outcome, words in (("max_failed", "failed", "failed"), ("max_in_doubt", "in_doubt", "in doubt")):
        if key in raw:
            most = _count(raw[key], key)
            checks.append(Sends(outcome, CountRange(None, most), summed=True,
                                label=f"at most {most} sends {words}"))
    own = _per_partition(raw.get("unavailable_s", {}), "unavailable_s", partitions)
    if "max_unavailable_s" in raw:
        limit = _seconds(table, "max_unavailable_s")
        rest = tuple(p for p in range(partitions) if p not in own)
        if own and not rest:
            raise CheckSpecError(f"{WHERE} max_unavailable_s: every partition has its own unavailable_s")
        checks.append(Unavailable(SecondsRange(None, limit), rest if own else None,
                                  label=f"no partition without an acknowledgement for more than {limit:g} s"))
    checks += [Unavailable(SecondsRange(None, limit), (p,),
                           label=f"partition {p} without an acknowledgement for at most {limit:g} s")
               for p, limit in sorted(own.items())]
    if "controller_changes" in raw:
        checks.append(ControllerChanges(count_range(raw["controller_changes"], WHERE, "controller_changes")))
    checks += _leader_epoch_checks(raw.get("leader_epoch_changes"), partitions)
    if "isr_full_after_heal_s" in raw:
        checks.append(IsrFullAfterHeal(_seconds(table, "isr_full_after_heal_s")))
    return checks


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckSpecError(f"{WHERE} {key} must be a non-negative integer, not {value!r}")
    return value


def _seconds(table: Fields, key: str) -> float:
    value = table.table[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise CheckSpecError(f"{table.what} {key} must be a non-negative number of seconds, not {value!r}")
    return float(value)


def _partition(key: Any, what: str, partitions: int) -> int:
    """TOML keys are strings: ``"1" = 5`` names partition 1."""
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        number = key
    elif isinstance(key, str) and key.isdigit():
        number = int(key)
    else:
        raise CheckSpecError(f"{WHERE} {what}: key {key!r} is not a partition number "
                             "(write \"0\", \"1\", ...)")
    if number >= partitions:
        raise CheckSpecError(f"{WHERE} names partition(s) {number}; the topic has partitions 0 to "
                             f"{partitions - 1}")
    return number


def _per_partition(raw: Any, what: str, partitions: int) -> dict[int, float]:
    """``{ "1" = 5 }``: seconds per partition."""
    if not isinstance(raw, Mapping):
        raise CheckSpecError(f"{WHERE} {what} must be a table of partition = seconds, e.g. {{ \"1\" = 5 }}")
    table = Fields({str(k): v for k, v in raw.items()}, f"{WHERE} {what} partition", CheckSpecError)
    return {_partition(key, what, partitions): _seconds(table, str(key)) for key in raw}


def _leader_epoch_checks(raw: Any, partitions: int) -> list[Check]:
    """A range for the whole topic (``{ min = 1 }`` or an integer), or ranges per
    partition (``{ "0" = { min = 1 }, "2" = 0 }``)."""
    key = "leader_epoch_changes"
    if raw is None:
        return []
    if not isinstance(raw, Mapping) or set(raw) <= {"min", "max"}:
        return [LeaderEpochChanges(count_range(raw, WHERE, key))]
    if any(k in ("min", "max") for k in raw):
        raise CheckSpecError(f"{WHERE} {key}: either {{ min, max }} for the whole topic or partition "
                             "numbers as keys, not both")
    return [LeaderEpochChanges(count_range(value, WHERE, f"{key} partition {p}"), (p,))
            for p, value in sorted((_partition(k, key, partitions), v) for k, v in raw.items())]
