"""Network faults on a real cluster: refuse versus blackhole, zone and controller isolation,
and a degraded fetch link."""

from __future__ import annotations

import time

import pytest

from faults import (
    BrokerId,
    Degrade,
    EventLog,
    FollowerOf,
    LeaderOf,
    Links,
    ZoneClients,
    cut_link,
    isolate_controller,
    isolate_zone,
)
from faults.toxics import latency
from faults.waiting import wait_until
from harness.cluster.broker_metadata import broker_view
from harness.cluster.fabric import LinkKind
from harness.cluster.lifecycle import Cluster
from harness.cluster.sampler import StateSampler
from tests.support.trickle import Trickle, unique_topic

pytestmark = pytest.mark.chaos
pytest_plugins = ["tests.support.fault_fixtures"]

PROBE_TIMEOUT_S = 3.0


def _probe(address: str) -> tuple[str, float]:
    """Ask a broker for metadata through one link: how the attempt ended, and when."""
    started = time.monotonic()
    try:
        broker_view(address, topics=[], timeout_s=PROBE_TIMEOUT_S)
        how = "answered"
    except TimeoutError:
        how = "timed out"
    except OSError as err:
        how = f"reset ({type(err).__name__})"
    return how, time.monotonic() - started


@pytest.mark.parametrize("mode", [
    pytest.param("refuse", marks=pytest.mark.core(strikes=("cut",))), "blackhole"])
def test_refuse_resets_at_once_and_blackhole_hangs_until_the_timeout(
    cluster: Cluster, fault_log: EventLog, mode: str
) -> None:
    # The zone-a clients' link to broker 0 is published on the host, so this test can be
    # the client on exactly that one link.
    cut = cut_link(ZoneClients("a"), BrokerId(0), mode)
    (link,) = cut.inject(cluster, fault_log)
    assert link == "client-a->kafka-0"
    address = f"127.0.0.1:{cluster.host_ports[link]}"
    how, took = _probe(address)
    other, _ = _probe(f"127.0.0.1:{cluster.host_ports['client-a->kafka-1']}")
    cut.heal(cluster, fault_log)
    healed, _ = _probe(address)
    print(f"\n{mode} on {link}: the attempt {how} after {took:.2f} s; after heal it {healed}")
    if mode == "refuse":
        assert how.startswith("reset") and took < 1.0
    else:
        assert how == "timed out" and took >= PROBE_TIMEOUT_S * 0.95
    assert other == "answered", "a link that was not cut must keep working"
    assert healed == "answered"


@pytest.mark.metadata("zookeeper")
@pytest.mark.core(strikes=("isolate",))
def test_isolating_a_zone_loses_its_zookeeper_quorum_while_the_others_keep_theirs(
    cluster: Cluster, fault_log: EventLog
) -> None:
    cut = isolate_zone("a", "blackhole")
    links = cut.inject(cluster, fault_log)
    assert {"client-a->kafka-1", "kafka-0->zk-b", "zk-b->zk-a:quorum"} <= set(links)
    assert "client-a->kafka-0" not in links
    started = fault_log.events[-1].mono

    def split() -> bool:
        modes = cluster.quorum_roles()
        return modes["zk-a"] is None and {modes["zk-b"], modes["zk-c"]} == {"leader", "follower"}

    took = wait_until(split, 30, "zk-a losing quorum while zk-b and zk-c keep it")
    # The minority stays without quorum, not just for an instant.
    time.sleep(2)
    assert split()
    print(
        f"\nzone a isolated ({len(links)} links blackholed): zk-a stopped serving after "
        f"{time.monotonic() - started - 2:.2f} s (waited {took:.2f} s); {cluster.quorum_roles()}"
    )


def test_isolating_the_controller_elects_a_new_one_with_a_higher_epoch(
    cluster: Cluster, fault_log: EventLog
) -> None:
    before = cluster.state(topics=[])
    cut = isolate_controller(with_zone=False, mode="blackhole")
    links = cut.inject(cluster, fault_log)
    assert before.controller is not None
    old = cluster.topology.node_of_id(before.controller)
    assert links and all(old in link.split("->") for link in links), links
    started = fault_log.events[-1].mono

    def replaced() -> bool:
        state = cluster.state(topics=[])
        return state.controller not in (None, before.controller) and (state.controller_epoch or 0) > (
            before.controller_epoch or 0
        )

    took = wait_until(replaced, 60, "a new controller being elected")
    after = cluster.state(topics=[])
    print(
        f"\ncontroller {before.controller} isolated: controller {after.controller} with epoch "
        f"{before.controller_epoch} -> {after.controller_epoch} after {time.monotonic() - started:.2f} s "
        f"(polled {took:.2f} s)"
    )


@pytest.mark.core(strikes=("latency",))
def test_latency_of_twice_the_lag_time_on_a_fetch_link_drops_the_follower_until_removed(
    cluster: Cluster, fault_log: EventLog
) -> None:
    topic = unique_topic("latency")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    lag_ms = int(cluster.broker_settings()["replica.lag.time.max.ms"])
    before = cluster.state([topic]).topic(topic)[0]
    slow = Degrade(
        Links(FollowerOf(topic, 0), LeaderOf(topic, 0), LinkKind.REPLICATION), latency(2 * lag_ms, 100)
    )
    with Trickle(cluster, topic), StateSampler.for_cluster(cluster, [topic]) as recorder:
        (link,) = slow.inject(cluster, fault_log)
        injected = fault_log.events[-1].mono
        follower = int(link.split("->")[0].removeprefix("kafka-"))
        out = recorder.wait_for(
            lambda s: follower not in s.partitions[(topic, 0)].isr, lag_ms / 1000 * 3, injected
        )
        assert out is not None, f"broker {follower} stayed in the ISR behind {2 * lag_ms} ms of latency"
        assert follower in out[1].live_brokers, "the follower must drop out by lag, not by losing ZooKeeper"
        slow.heal(cluster, fault_log)
        healed = fault_log.events[-1].mono
        back = recorder.wait_for(lambda s: follower in s.partitions[(topic, 0)].isr, 30, healed)
        assert back is not None, f"broker {follower} did not rejoin the ISR after the toxic was removed"
    assert out[1].partitions[(topic, 0)].leader == before.leader, (
        "latency on a fetch link must not move leaders"
    )
    print(
        f"\n{2 * lag_ms} ms latency on {link}: follower left the ISR after {out[0] - injected:.2f} s "
        f"(lag time {lag_ms} ms), rejoined {back[0] - healed:.2f} s after removal"
    )
