"""A migration walked beside a scenario's workload, and the checks that judge it.

Kept apart from the runner because it is one job with its own vocabulary: the driver
walks the ZooKeeper-to-KRaft phases (``harness.cluster.migration``) while the scenario's
schedule runs its faults; then three checks say whether every phase completed, whether
dual-write mirrored a change into ZooKeeper, and whether the metadata read before the
walk is the metadata the cluster holds after it.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING

from harness.cluster.migration.driver import MIRROR_TIMEOUT_S, STEP_TIMEOUT_S, MigrationDriver
from harness.cluster.migration.plan import MigrationSpec, Phase, Step, phases_of
from harness.cluster.migration.readers import MetadataUnread, kraft_snapshot, step, zookeeper_snapshot
from harness.cluster.migration.snapshot import MetadataSnapshot, differences, with_topic_config
from harness.cluster.waiting import wait_until
from harness.errors import ChaosError, describe_error
from harness.files import write_json

if TYPE_CHECKING:
    from faults.schedule import Schedule
    from harness.cluster.metadata.migration import MigrationMode
    from harness.scenario.runner import ScenarioRun

METADATA_CHECK = "metadata carried over: topics, ids, partitions, replicas, configs, group offsets"
"""The migration's metadata check, by the name a control run's ``must_fail`` gives it."""
MIRROR_CHECK = "dual-write mirrored a config set through KRaft into ZooKeeper"
"""Dual-write's check: its detail says when ZooKeeper showed the change ("after 1.2 s")."""


def walk_check(steps: tuple[Step, ...]) -> str:
    """The name of the check that a migration of ``steps`` walked every phase (what a
    control run's ``must_fail`` gives it)."""
    return f"migration walked: {', '.join(str(p) for p in phases_of(steps))}"


def walk_migration(run: ScenarioRun, migration: MigrationSpec, schedule: Schedule | None,
                   schedule_grace_s: float) -> bool:
    """Walk ``migration`` on the run's cluster beside its workload, with ``schedule``'s
    faults (anchored to its phases or not) run alongside. Two checks: every phase
    completed (each phase is a row of the history's ``migration`` table, a failed one
    too), and the metadata read from ZooKeeper before it is the metadata the cluster
    holds after it (``metadata.json``: both readings and every difference, by path)."""
    cluster = run.cluster
    before = zookeeper_snapshot(cluster.zookeeper.observer, cluster.admin, cluster.observer_bootstrap())
    driver = MigrationDriver(cluster, migration.steps(cluster.topology), migration.hold_s,
                             progress=cluster.progress, mirror_topic=run.topic,
                             change_at_s=migration.change_at_s, migration_znode=migration.migration_znode)
    driver.prepare()
    failure: list[BaseException] = []
    walk_failed = threading.Event()

    def walk() -> None:
        try:
            driver.run()
        except BaseException as err:  # recorded in the phase's row and in the check
            failure.append(err)
            walk_failed.set()

    walker = threading.Thread(target=walk, name="migration-driver", daemon=True)
    walker.start()
    if schedule is not None and schedule.entries:
        run.run_schedule(schedule, timeout_s=schedule_grace_s, abandon=walk_failed)
    walker.join(len(driver.steps) * STEP_TIMEOUT_S + migration.hold_s)
    for record in list(driver.records):
        run.writer.append("migration", record.row())
    phases = [f"{r.phase} {r.outcome} in {r.end_mono - r.mono:.1f} s" for r in driver.records]
    if walker.is_alive():
        failure.append(ChaosError("the migration driver had not finished within its steps' bounds"))
    detail = "; ".join(phases) + (f"; {describe_error(failure[0])}" if failure else "")
    walked = run.check(walk_check(driver.steps), not failure, detail)
    mirrored = _check_mirrored(run, driver)
    if driver.mirrored is not None:
        before = with_topic_config(before, *driver.mirrored)
    return _compare_metadata(run, before, driver.mode) and walked and mirrored


def _check_mirrored(run: ScenarioRun, driver: MigrationDriver) -> bool:
    """Dual-write's promise, when the walk reached dual-write: a config set through
    KRaft is in ZooKeeper within its bound."""
    if Phase.DUAL_WRITE not in phases_of(driver.steps):
        return True
    if driver.mirrored is None:
        held = next((r for r in driver.records if r.phase == Phase.DUAL_WRITE and r.detail), None)
        why = held.detail if held is not None else "the walk never held in dual-write"
        return run.check(MIRROR_CHECK, False, f"no change was made: {why}")
    topic, key, value = driver.mirrored
    path = f"/config/topics/{topic}"
    seen = f"in {path} after {driver.mirror_s:.1f} s" if driver.mirror_s is not None else \
        f"not in {path} within {MIRROR_TIMEOUT_S:.0f} s"
    return run.check(MIRROR_CHECK, driver.mirror_s is not None, f"{key}={value} on {topic}: {seen}")


def _compare_metadata(run: ScenarioRun, before: MetadataSnapshot, mode: MigrationMode) -> bool:
    """The metadata after the migration against ``before`` (which includes the change made
    in dual-write, which must be carried over too): read from KRaft once every broker is
    a KRaft broker, else (a rollback, or a walk that stopped) from ZooKeeper."""
    cluster = run.cluster
    brokers = [b.broker_id for b in cluster.topology.brokers]
    read: list[MetadataSnapshot] = []

    def reading() -> bool:
        cluster._admin = None  # a fresh client each try: the last may hold a dead connection
        admin, observer, bootstrap = cluster.admin, cluster.zookeeper.observer, cluster.observer_bootstrap()
        read.append(kraft_snapshot(admin, bootstrap, brokers) if mode.brokers_on_kraft else
                    step("the znodes", partial(zookeeper_snapshot, observer, admin, bootstrap)))
        return True

    # Just after the last roll a broker may still be reconnecting to the controllers: a
    # request may time out until its session is renewed, twice over.
    bound = 2 * cluster.metadata.registration_timeout_s + 60.0
    try:
        wait_until(reading, bound, "the metadata after the migration", transient=(MetadataUnread,))
    except Exception as err:
        return run.check(METADATA_CHECK, False, "the metadata after the migration unreadable: "
                         + describe_error(err))
    after = read[-1]
    found = differences(before, after)
    write_json(run.dir / "metadata.json", {
        "before": {"source": before.source, "paths": before.flat()},
        "after": {"source": after.source, "paths": after.flat()},
        "differences": [{"path": d.path, "before": d.before, "after": d.after} for d in found]})
    shown = "; ".join(d.describe() for d in found[:5])
    shown += f"; {len(found) - 5} more" if len(found) > 5 else ""
    return run.check(METADATA_CHECK, not found, f"{len(before.flat())} paths read from {before.source} "
                     f"before, {len(after.flat())} from {after.source} after; "
                     + (f"{len(found)} differ: {shown}" if found else "none differs"))
