"""Probes: taken when their moment has come, a silent broker recorded with its error,
written and read as data, refused when they name what the scenario lacks."""

from __future__ import annotations

import time

import pytest
import tomli_w

from harness.cluster.broker_metadata import BrokerView, PartitionView
from harness.scenario.checks import CheckSpecError, ProbeResult, heal, inject
from harness.scenario.file_format import ScenarioFileError, parse_scenario
from harness.scenario.probes import Probe, ProbeTaker, view_as_state

PART = PartitionView(partition=0, error_code=0, leader=0, replicas=(0, 1), isr=(0, 1))
VIEW = BrokerView(brokers=(2, 0, 1), controller=2, topics={"t": (PART,)})


def test_a_brokers_view_becomes_a_cluster_state_the_conditions_can_read() -> None:
    state = view_as_state(VIEW)
    assert state.live_brokers == (0, 1, 2) and state.controller == 2
    assert state.partitions[("t", 0)].leader == 0 and state.partitions[("t", 0)].isr == (0, 1)


def test_probes_are_taken_once_their_moment_has_come_and_a_silent_broker_is_recorded() -> None:
    moments: dict[tuple[int, str], tuple[float, float]] = {}
    asked: list[int] = []

    def look(probe: Probe) -> ProbeResult:
        asked.append(probe.broker)
        if probe.broker == 1:
            raise ConnectionRefusedError("refused")
        return ProbeResult(probe.name, time.time(), view_as_state(VIEW))

    probes = [Probe("early", 0, inject(1)), Probe("silent", 1, inject(1), after_s=0.1),
              Probe("never", 0, heal(2))]
    taker = ProbeTaker(probes, lambda: moments, look).start()
    time.sleep(0.2)
    assert asked == [], "nothing is taken before its moment"
    moments[(1, "inject")] = (time.time(), time.monotonic())
    taker.finish(timeout_s=5)
    assert sorted(taker.results) == ["early", "silent"]
    assert taker.results["early"].state is not None
    assert taker.results["silent"].state is None
    assert taker.results["silent"].error == "ConnectionRefusedError: refused"


SCENARIO = {"id": "p",
            "schedule": [{"start_s": 1, "duration_s": 5, "fault": "kill", "target": {"broker": 0}}],
            "probes": [{"name": "b1", "broker": 1, "at": {"inject": 1}, "after_s": 3.0}],
            "checks": [{"probe": "b1", "holds": {"controller_is": 2}}]}


def test_probes_and_probe_checks_read_back_from_a_scenario_file() -> None:
    spec = parse_scenario(tomli_w.dumps(SCENARIO), "p")
    assert spec.probes == (Probe("b1", 1, inject(1), 3.0),)
    assert parse_scenario(tomli_w.dumps(spec.to_dict()), "again") == spec


@pytest.mark.parametrize(("change", "message"), [
    ({"checks": [{"probe": "b9", "answers": False}]}, "reads probe 'b9', which [[probes]] does not name"),
    ({"probes": [{"name": "b1", "broker": 1, "at": {"heal": 2}}]},
     "entry 2's heal - the schedule has 1 entry"),
    ({"probes": [{"name": "b1", "broker": 1, "at": {"inject": 1}}] * 2}, "the name 'b1' is used twice"),
    ({"probes": [{"name": "b1", "broker": 1}]}, "'at' names the moment"),
])
def test_probes_naming_what_the_scenario_lacks_are_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioFileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(tomli_w.dumps({**SCENARIO, **change}), "p")


def test_a_probe_name_must_be_a_plain_word() -> None:
    with pytest.raises(CheckSpecError, match="a probe's name"):
        Probe("b 1", 1, inject(1))


def test_a_lookup_probe_reads_back_as_written() -> None:
    raw = {"name": "after-kill", "look": "lookup", "zone": "c", "partition": 0, "since_s": 2.0,
           "at": {"inject": 1}, "after_s": 9.0}
    probe = Probe.parse(raw, "probe 1")
    assert (probe.look, probe.zone, probe.since_s) == ("lookup", "c", 2.0)
    assert probe.to_spec() == raw
    with pytest.raises(CheckSpecError, match="look is one of metadata, lookup"):
        Probe.parse({**raw, "look": "guess", "broker": 0}, "probe 1")



def test_produce_and_read_probes_read_back_as_written() -> None:
    produce = {"name": "via-b1", "at": {"inject": 3}, "after_s": 1.0, "look": "produce", "broker": 1,
               "zone": "b", "partition": 0, "count": 20, "timeout_s": 15.0}
    read = {"name": "read-back", "at": {"inject": 1}, "after_s": 14.0, "look": "read", "zone": "b",
            "partition": 0, "timeout_s": 20.0}
    for raw in (produce, read):
        assert Probe.parse(raw, "probe 1").to_spec() == raw
