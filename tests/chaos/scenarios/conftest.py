"""What the process-fault scenarios (S1-S3, S5, S6) need beyond the harness's fixtures.

* Brokers to hit that are *not* the controller (:func:`spare_brokers`), so that what is
  measured is a partition's failover and not a controller election on top of it, which
  would add a second session timeout and make the figures depend on which broker won
  the controller race at cluster start.
* Waiting on ZooKeeper instead of sleeping (:func:`await_partition`, :func:`warm_up`):
  each step starts from the state the previous one was seen to reach, which is what
  makes the verdicts repeat from run to run.
* Unavailability measured twice: in ZooKeeper (:func:`offline_span`) and as the clients
  lived it, the longest stretch without an acknowledged write on a partition, read back
  from the closed history (:class:`~tests.chaos.scenarios._client_log.ClientLog`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from harness.cluster.lifecycle import Cluster
from harness.cluster.sampler import ZkSampler
from harness.cluster.zkstate import PartitionState
from harness.compose.scenario import ScenarioRun


@pytest.fixture
def spare_brokers(cluster: Cluster) -> tuple[int, ...]:
    """The broker ids that are not the controller, in id order (two on the default cluster)."""
    state = cluster.state([])
    spare = tuple(b.broker_id for b in cluster.topology.brokers if b.broker_id != state.controller)
    assert len(spare) >= 2, f"need two brokers besides controller {state.controller}, have {spare}"
    return spare


def await_partition(recorder: ZkSampler, topic: str, partition: int,
                    predicate: Callable[[PartitionState], bool], timeout_s: float, after: float,
                    what: str) -> tuple[float, PartitionState]:
    """The first sampled (monotonic time, state) at or after ``after`` where ``predicate``
    holds for the partition; fails the test naming ``what`` and the last state seen.

    Scenarios wait on ZooKeeper rather than on sleeps: a fixed sleep long enough for a
    loaded machine would make every run slow, one short enough for an idle one flaky.
    """
    found = recorder.wait_for(lambda s: predicate(s.partitions[(topic, partition)]), timeout_s, after)
    if found is None:
        samples = recorder.samples
        last = samples[-1][1].partitions.get((topic, partition)) if samples else None
        pytest.fail(f"{what}: not seen in ZooKeeper within {timeout_s:.0f} s (last state {last})")
    return found[0], found[1].partitions[(topic, partition)]


def offline_span(recorder: ZkSampler, topic: str, partition: int,
                 after: float) -> tuple[float, float] | None:
    """(start, end) monotonic times of the first stretch after ``after`` during which
    ZooKeeper showed the partition without a leader (leader -1); end is the first sample
    with a leader again. None if it never went offline, or never came back."""
    start = None
    for taken, state in recorder.between(after):
        leader = state.partitions[(topic, partition)].leader
        if start is None and leader == -1:
            start = taken
        elif start is not None and leader != -1:
            return start, taken
    return None


def brief(state: PartitionState) -> str:
    """One partition state as a report line: leader, epoch, ISR, replicas."""
    return (f"{state.topic}-{state.partition} leader {state.leader} epoch {state.leader_epoch} "
            f"isr {list(state.isr)} replicas {list(state.replicas)}")


def warm_up(run: ScenarioRun, acked: int = 100, timeout_s: float = 60.0) -> float:
    """Wait until the producers have ``acked`` acknowledgements; return the seconds waited.

    A fault must strike a workload that is already flowing: on the first test of a
    session a cold JVM can take seconds to start a new partition's follower fetching,
    and with acks=all nothing is acknowledged until it does. A fixed settle time would
    then let the fault hit before any write was replicated, and the scenario would pass
    without testing anything.
    """
    assert run.workload is not None, "the scenario's workload is not running"
    started = time.monotonic()
    while run.workload.outcomes()["acked"] < acked:
        if time.monotonic() - started > timeout_s:
            pytest.fail(f"workload not flowing: {run.workload.outcomes()} after {timeout_s:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - started


def registration_closed_zxid(cluster: Cluster) -> int:
    """The zxid of the last change to /brokers/ids' children: right after one broker
    deregistered (its ZooKeeper session closed, deleting its ephemeral znode) and before
    any other broker comes or goes, the zxid of that deletion."""
    _, stat = cluster.zk.client.get_children("/brokers/ids", include_data=True)
    return int(stat.pzxid)


def partition_state_zxid(cluster: Cluster, topic: str, partition: int) -> int:
    """The zxid of the last write to a partition's leader-and-ISR znode. ZooKeeper orders
    every write, so comparing zxids says which change happened first, with no clock."""
    _, stat = cluster.zk.client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return int(stat.mzxid)
