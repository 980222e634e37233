"""The plugin's options and the run they choose, made once when pytest configures.

The cluster options themselves are declared in :mod:`harness.entry.cluster_options`, shared
with the ``kafka-chaos`` command; this module adds the plugin's own (``--tier``,
``--keep-cluster``), declares its markers and turns the options into the session's
:class:`~harness.scenario.chaos_run.ChaosRun` - a release or topology that does not exist
is a usage error before collection. Under pytest-xdist every worker's run shares the
controller's run id, so all of them report into one folder.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster.resources import new_run_id
from harness.cluster.versions import release
from harness.entry.cluster_options import add_pytest_options
from harness.entry.console import LiveLines
from harness.entry.plugin_outcomes import Recorder
from harness.entry.plugin_state import CHAOS_RUN_KEY, LIVE_KEY, chaos_run_of
from harness.entry.tiers import CORE_MARKER_HELP, METADATA_MARKER_HELP, TIERS
from harness.errors import USER_ERRORS
from harness.scenario.chaos_run import ChaosRun, unwind_on_sigterm
from harness.workload.client_settings import ClientChoice


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos")
    add_pytest_options(group)
    group.addoption(
        "--tier",
        choices=TIERS,
        default="auto",
        help="chaos tests to run: 'core' (the tier the README's test command runs), 'all', or "
        "'auto' (default): core when the command names no paths and no -m or -k, else all",
    )
    group.addoption(
        "--keep-cluster",
        action="store_true",
        default=False,
        help="leave the cluster running after the session, for inspection "
        "(remove it later with 'kafka-chaos clean --all')",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "chaos: runs against a real Kafka cluster in Docker (needs a Docker engine)"
    )
    config.addinivalue_line("markers", CORE_MARKER_HELP)
    config.addinivalue_line("markers", METADATA_MARKER_HELP)
    # SIGTERM (a CI runner cancelling the job) must unwind like Ctrl-C, so that fixture
    # finalizers remove the run's containers instead of leaving them behind.
    unwind_on_sigterm()
    from faults.heal import heal_all

    live = LiveLines()  # the terminal as it is now, before pytest captures a test's output
    config.stash[LIVE_KEY] = live

    # Under pytest-xdist each worker runs its own cluster; all share the controller's run id,
    # so their scenario pages land in one run folder and one report.
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["kafka_chaos_run_id"] if workerinput else config.getoption("--run-id")
    try:
        release(config.getoption("--kafka-version"))
        config.stash[CHAOS_RUN_KEY] = ChaosRun(
            run_id or new_run_id(),
            config.getoption("--kafka-version"),
            config.getoption("--topology"),
            healer=heal_all,
            keep=bool(config.getoption("--keep-cluster")),
            progress=live,
            worker=workerinput["workerid"] if workerinput else None,
            metadata=config.getoption("--metadata"),
            client=ClientChoice.parse(config.getoption("--client")),
        )
    except USER_ERRORS as err:
        raise pytest.UsageError(str(err)) from err
    config.pluginmanager.register(Recorder(config.stash[CHAOS_RUN_KEY], config), "kafka-chaos-recorder")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: hand each worker the run id it reports into."""
    node.workerinput["kafka_chaos_run_id"] = chaos_run_of(node.config).run_id
