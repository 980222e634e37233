"""pytest glue for tests that inject faults, and the small workload they need.

Load it from a test module with ``pytest_plugins = ["tests.support.fault_fixtures"]``. The
``fault_log`` fixture depends on the harness's ``cluster`` fixture (which restores
health before the test) and calls :func:`faults.heal.heal_all` after the test, passed
or failed, so the next test never inherits a cut link, a stopped broker or a running
schedule; heal_all raises if the cluster does not get back to full health, which turns
a test that leaves damage behind into an error.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from faults.events import EventLog
from faults.heal import heal_all
from harness.cluster.lifecycle import Cluster


@pytest.fixture
def fault_log(cluster: Cluster) -> Iterator[EventLog]:
    log = EventLog()
    yield log
    took = heal_all(cluster, log)
    print(f"[faults] healed in {took:.1f} s after {len(log)} event(s)")
