"""The one error topologies raise.

Topologies are pure data and import nothing of the project but its error root, so a bad
topology is a ``harness.errors.ChaosError`` like every other mistake a user can make: the
CLI and the pytest plugin print its sentence instead of a traceback.
"""

from harness.errors import ChaosError


class TopologyError(ChaosError, ValueError):
    """A topology declaration is malformed or inconsistent."""


def problem_line(key: str, value: object, why: str) -> str:
    """One problem of a declaration file, as every checker of one spells it: the key path,
    the value found there as the file would write it (JSON being TOML's inline form, near
    enough), and why it cannot be run."""
    import json

    try:
        shown = json.dumps(value, default=str)
    except (TypeError, ValueError):
        shown = repr(value)
    return f"{key} = {shown}: {why}"
