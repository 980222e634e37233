"""The one error topologies raise.

Topologies are pure data and import nothing of the project, so their error is not a
``harness.errors.ChaosError``; the CLI and the pytest plugin catch both (see
``harness.errors.USER_ERRORS``) and print the sentence instead of a traceback.
"""


class TopologyError(ValueError):
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
