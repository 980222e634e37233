"""The errors a fault can raise, each carrying one sentence a user can act on.

They subclass :class:`harness.errors.ChaosError` so that the CLI and the pytest plugin
print them as they print every other user-facing failure. Bad input (an unknown fault,
a target that does not exist, a schedule that does not parse) is always raised before
anything is injected: a chaos run that half-starts on a typo leaves a damaged cluster
and a history nobody can interpret.
"""

from harness.errors import ChaosError


class FaultError(ChaosError):
    """A fault could not be built, aimed or carried out."""


class FaultSpecError(FaultError):
    """A fault description is malformed: unknown fault, unknown or missing parameter."""


class TargetError(FaultError):
    """A target names nothing in this cluster (unknown zone, broker, topic, no leader now)."""


class ScheduleError(FaultError):
    """A fault schedule file does not parse or describes an impossible run."""


class FaultTimeout(FaultError):
    """The cluster did not show the effect a fault waits for within its time limit."""
