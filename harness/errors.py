"""User-facing errors: the one root, and the errors of the running harness.

Every failure a user can cause or fix (no engine, a bad topology, scenario file, check
or history, an unknown version, a port in use) is raised as a :class:`ChaosError`
carrying one clear sentence. The CLI and the pytest plugin print that sentence instead of
a traceback and exit non-zero. This module is the bottom of the import stairs, so every
layer (topologies included) can raise under the root; errors that also are a
``ValueError`` keep it as a second base.
"""


class ChaosError(Exception):
    """A failure with a one-line explanation meant for the user."""


class EngineUnavailable(ChaosError):
    """No Docker engine answers and none can be started here."""


class ImageBuildError(ChaosError):
    """A local image could not be built (missing tool, missing artifact, failed build)."""


class UnsupportedVersion(ChaosError):
    """The requested Kafka version is not one the harness supports."""



class PortInUse(ChaosError):
    """A port the run needs on 127.0.0.1 is already taken."""


class ClusterUnhealthy(ChaosError):
    """The cluster did not reach (or return to) full health in time."""


def describe_error(err: BaseException) -> str:
    """``Type: text``, or the type alone when the exception carries no text.

    Some libraries raise without a message (kazoo fails every request in flight with a
    bare ``ConnectionLoss()`` when its connection drops); ``str(err)`` alone would then
    leave an empty error in a report, which tells the reader nothing.
    """
    text = str(err).strip()
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


USER_ERRORS: tuple[type[Exception], ...] = (ChaosError,)
"""Everything printed to the user as one sentence: the one root."""

__all__ = ["USER_ERRORS", "ChaosError", "ClusterUnhealthy", "EngineUnavailable", "ImageBuildError",
           "PortInUse", "UnsupportedVersion", "describe_error"]
