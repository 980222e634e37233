"""M10 The migration of a cluster whose ``/migration`` znode is there without data.

Kafka's zookeeper-security-migration tool, run without ``--enable.path.check`` (as an
operator does when turning ZooKeeper ACLs on or off), creates every secure root path it
finds missing, and ``/migration`` is one of them: a znode with no data. A KRaft
controller's migration driver reads the migration's state from that znode. Up to 3.9.1
it cannot read an empty one and tries again for ever, so no controller ever takes the
lead of the migration (KAFKA-19480); 3.9.2 replaces the empty znode and migrates.

Both sides are asserted. On 3.9.1 the provision phase fails, naming the empty znode, while
the cluster goes on in ZooKeeper mode and loses nothing; deleting the znode, the
workaround Kafka's documentation gives, then lets a controller take the lead (so the
cluster can be healed and judged). On 3.9.2 the whole walk completes.

The harness creates the znode itself: the tool refuses to run without ZooKeeper SASL or
TLS, which these clusters do not use, and what it leaves is the same, a znode without
data.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.driver import STEP_TIMEOUT_S
from harness.cluster.migration.plan import FoundZnode, MigrationSpec, Phase
from harness.cluster.migration.znodes import MIGRATION_ZNODE
from harness.cluster.waiting import wait_until
from harness.scenario.chaos_run import ChaosRun
from harness.scenario.runner import MIRROR_CHECK, ScenarioRun, ScenarioSpec, walk_check
from harness.scenario.spec_runner import run_spec
from tests.chaos.migration._shared import DUAL_WRITE_HOLD_S, migration_spec
from tests.chaos.migration.conftest import MIGRATION_RELEASE

pytestmark = [pytest.mark.chaos, pytest.mark.metadata("zookeeper")]

AFFECTED = MIGRATION_RELEASE  # 3.9.1
FIXED_IN = "3.9.2"
# The workload's warm-up comes first.
WALK_BEGINS_WITHIN_S = 300.0


def m10_spec() -> ScenarioSpec:
    return migration_spec(
        id="m10-empty-migration-znode",
        title="M10 the migration of a cluster whose /migration znode is there without data",
        description="M1's cluster and workload; before the KRaft controllers start, /migration is created "
                    "without data, as Kafka's zookeeper-security-migration tool leaves it when run without "
                    "--enable.path.check. Then Kafka's migration steps, as in M1.",
        expected="Up to 3.9.1 no controller can read the znode, so none takes the lead and the provision "
                 "phase fails (KAFKA-19480), while nothing acknowledged is lost; from 3.9.2 the controller "
                 "replaces the znode and the migration completes as M1's does.",
        migration=MigrationSpec(hold_s=DUAL_WRITE_HOLD_S, migration_znode=FoundZnode.EMPTY),
    )


def _on(version: str) -> ScenarioSpec:
    """M10 on ``version``: its own id, so that both sides keep their reports."""
    spec = m10_spec()
    return replace(spec, id=f"{spec.id}-on-{version.replace('.', '-')}", title=f"{spec.title}, on {version}")


@pytest.fixture
def on_release(request: pytest.FixtureRequest, chaos_run: ChaosRun) -> Iterator[str]:
    """This test's migrating cluster on the release it names, then the package's again."""
    version: str = request.param
    chaos_run.use_topology(chaos_run.migrating_topology(), kafka_version=version)
    try:
        yield version
    finally:
        chaos_run.use_topology(chaos_run.migrating_topology(), kafka_version=MIGRATION_RELEASE)


@pytest.mark.parametrize("on_release", [AFFECTED], indirect=True)
def test_m10_on_3_9_1_an_empty_migration_znode_keeps_every_controller_from_leading_the_migration(
    on_release: str, scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    spec = _on(on_release)
    assert spec.migration is not None
    walked = walk_check(spec.migration.steps(cluster.topology))
    mode = cluster.metadata.migration()
    freed_after: list[float] = []

    def work_around() -> None:
        """Once the walk has given up, Kafka's workaround: delete the znode; the driver,
        still trying, then writes it anew. Before the run heals, which needs a led quorum."""
        wait_until(lambda: mode.phase is Phase.PROVISION, WALK_BEGINS_WITHIN_S, "the migration to begin")
        wait_until(lambda: mode.phase is None, 2 * STEP_TIMEOUT_S, "the walk to end")
        cluster.zookeeper.delete_znode(MIGRATION_ZNODE)
        freed_after.append(wait_until(lambda: mode.record() is not None, STEP_TIMEOUT_S,
                                      f"a controller to take the lead once {MIGRATION_ZNODE} is deleted"))

    def start(control: ScenarioSpec) -> ScenarioRun:
        run = scenario(control)
        threading.Thread(target=work_around, name="m10-workaround", daemon=True).start()
        return run

    run = run_spec(replace(spec, must_fail=(walked, MIRROR_CHECK)), start)
    assert run.passed, run.failures()
    walk = next(c for c in run.checks if c.name.startswith(walked))
    assert "provision failed" in walk.detail, walk.detail
    assert f"{MIGRATION_ZNODE} exists and holds no data" in walk.detail, walk.detail
    assert freed_after, "the workaround never freed the migration"


@pytest.mark.parametrize("on_release", [FIXED_IN], indirect=True)
def test_m10_on_3_9_2_the_empty_znode_is_replaced_and_the_migration_completes(
    on_release: str, scenario: Callable[[ScenarioSpec], ScenarioRun], cluster: Cluster
) -> None:
    run = run_spec(_on(on_release), scenario)
    assert run.passed, run.failures()
    assert cluster.metadata.migration().brokers_on_kraft
