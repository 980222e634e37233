"""A scenario's further topics and pipeline members as specs (no broker): what they refuse,
how "$topic:<name>" reads, which groups the final drain looks up, and how they are spelt."""

from __future__ import annotations

import pytest

from harness.scenario.runner import NamedTopic, ScenarioSpec, TopicSpec, substitute, topic_named
from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.pipeline import PipelineSpec

OUT = NamedTopic("out", TopicSpec(partitions=3))


def _spec(**changes: object) -> ScenarioSpec:
    fields: dict[str, object] = {
        "id": "p", "title": "p", "producers": (ProducerSpec("pa", "a"),),
        "consumers": (ConsumerSpec("reader", "c", topic="out"),
                      ConsumerSpec("g-a", "a", group="g", commit="sync")),
        "topics": (OUT,), "pipelines": (PipelineSpec("p-a", "a", "etl", "out"),),
    }
    fields.update(changes)
    return ScenarioSpec(**fields)  # type: ignore[arg-type]


def test_a_further_topic_is_named_after_the_scenarios_and_written_with_its_name() -> None:
    assert topic_named("s1-abc", None) == "s1-abc"
    assert topic_named("s1-abc", "out") == "s1-abc-out"
    schedule = [{"target": {"leader_of": ["$topic:out", 0]}}, {"target": {"leader_of": ["$topic", 1]}}]
    assert substitute(schedule, "s1-abc") == [{"target": {"leader_of": ["s1-abc-out", 0]}},
                                              {"target": {"leader_of": ["s1-abc", 1]}}]


def test_the_final_drain_looks_up_every_group_on_the_topic_it_read() -> None:
    assert _spec().groups() == (("g", None), ("etl", None))
    reader_group = (ConsumerSpec("r", "c", topic="out", group="readers", commit="sync"),)
    assert _spec(consumers=reader_group).groups() == (("readers", "out"), ("etl", None))
    assert _spec(pipelines=()).groups() == (("g", None),)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"consumers": (ConsumerSpec("r", "c", topic="nowhere"),)}, "topic 'nowhere' is none of"),
        ({"pipelines": (PipelineSpec("p-a", "a", "etl", "elsewhere"),)}, "output 'elsewhere' is none of"),
        ({"pipelines": (PipelineSpec("pa", "a", "etl", "out"),)},
         r"pipelines\[1\].name = \"pa\": producers\[1\] has that name already"),
        ({"pipelines": (PipelineSpec("p-a", "a", "etl", "out"),) * 2},
         r"pipelines\[2\].name = \"p-a\": pipelines\[1\] has that name"),
        ({"topics": (OUT, OUT)}, "given twice"),
    ],
)
def test_a_spec_naming_what_it_does_not_have_is_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _spec(**changes)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"guarantee": "twice"}, "guarantee must be one of"),
        ({"restart": "reboot"}, "restart must be one of"),
        ({"batch": 0}, "batch must be at least 1"),
        ({"restart_every_s": 0.0}, "restart_every_s must be positive"),
        ({"guarantee": "at_least_once", "abort_ratio": 0.2}, "need guarantee exactly_once"),
        ({"guarantee": "at_most_once", "transactional_id": "x"}, "need guarantee exactly_once"),
        ({"consumer_settings": {"enable.auto.commit": True}}, "drop 'enable.auto.commit'"),
        ({"producer_settings": {"transactional.id": "x"}}, "with 'transactional_id'"),
    ],
)
def test_a_pipeline_member_refuses_what_its_guarantee_decides(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        PipelineSpec("p-a", "a", "etl", "out", **fields)  # type: ignore[arg-type]


def test_a_topic_name_is_one_word() -> None:
    with pytest.raises(ValueError, match="letters, digits and '_' only"):
        NamedTopic("out-1")


def test_the_spec_spells_its_topics_and_pipelines() -> None:
    spelt = _spec().to_dict()
    assert spelt["topics"] == [{"name": "out", "partitions": 3, "replication_factor": 3, "config": {}}]
    assert spelt["pipelines"] == [{"name": "p-a", "zone": "a", "group": "etl", "output": "out",
                                   "guarantee": "exactly_once", "batch": 50, "restart": "clean",
                                   "abort_ratio": 0.0, "consumer_settings": {}, "producer_settings": {}}]
    assert spelt["consumers"][0]["topic"] == "out"
    assert ConsumerSpec.from_dict(spelt["consumers"][0]) == ConsumerSpec("reader", "c", topic="out")
    assert "topics" not in _spec(topics=(), consumers=(), pipelines=()).to_dict()


def test_a_pinned_topic_records_the_size_its_assignment_gives() -> None:
    pinned = TopicSpec(assignment={0: (0, 1, 2)}).to_dict("t")
    assert (pinned["partitions"], pinned["replication_factor"]) == (1, 3)
    assert TopicSpec(partitions=4, replication_factor=2).to_dict("t")["partitions"] == 4
