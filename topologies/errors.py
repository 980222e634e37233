"""The one error topologies raise.

Topologies are pure data and import nothing of the project, so their error is not a
``harness.errors.ChaosError``; the CLI and the pytest plugin catch both (see
``harness.errors.USER_ERRORS``) and print the sentence instead of a traceback.
"""


class TopologyError(ValueError):
    """A topology declaration is malformed or inconsistent."""
