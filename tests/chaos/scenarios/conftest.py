"""What the process-fault scenarios (S1-S3, S5, S6) need beyond the harness's fixtures:
brokers to hit that are *not* the controller (:func:`spare_brokers`), so that what is
measured is a partition's failover and not a controller election on top of it, which
would add a second session timeout and make the figures depend on which broker won the
controller race at cluster start."""

from __future__ import annotations

import pytest

from harness.cluster.lifecycle import Cluster


@pytest.fixture
def spare_brokers(cluster: Cluster) -> tuple[int, ...]:
    """The broker ids that are not the controller, in id order (two on the default cluster)."""
    state = cluster.state([])
    spare = tuple(b.broker_id for b in cluster.topology.brokers if b.broker_id != state.controller)
    assert len(spare) >= 2, f"need two brokers besides controller {state.controller}, have {spare}"
    return spare
