"""K4 Unclean leader election on KRaft: S5's sequence on a KRaft cluster.

A KRaft controller elects leaders as a ZooKeeper-mode one does, and
``unclean.leader.election.enable`` decides the same trade: off, the partition waits
offline for the leader that had the acknowledged writes; on, the stale follower leads and
those writes are reported lost. S5's spec runs unchanged; only the cluster differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from harness.cluster.lifecycle import Cluster
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec
from tests.chaos.scenarios.test_s05_unclean_election import s5_spec

pytestmark = pytest.mark.chaos


@pytest.mark.parametrize("unclean", [False, True], ids=["unclean-off", "unclean-on"])
def test_k4_unclean_election_on_kraft_waits_or_loses_as_configured(
    scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster, unclean: bool
) -> None:
    spec = s5_spec(1, 2, unclean, cluster.session_timeout_s)
    spec = dataclasses.replace(spec, id="k4-unclean-election", title=spec.title.replace("S5", "K4 (KRaft)"))
    run = run_spec(spec, scenario)
    assert run.passed, run.failures()
