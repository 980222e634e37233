"""User-facing errors.

Every failure a user can cause or fix (no engine, bad topology, unknown version, port in
use) is raised as a :class:`ChaosError` carrying one clear sentence. The CLI and the
pytest plugin print that sentence instead of a traceback and exit non-zero.
"""


from topologies.errors import TopologyError


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


USER_ERRORS: tuple[type[Exception], ...] = (ChaosError, TopologyError)
"""Everything printed to the user as one sentence: the harness's errors and a bad topology."""

__all__ = ["USER_ERRORS", "ChaosError", "ClusterUnhealthy", "EngineUnavailable", "ImageBuildError",
           "PortInUse", "TopologyError", "UnsupportedVersion"]
