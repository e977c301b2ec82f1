"""The topic set's check and diff: pure, what `pulumi preview` shows before anything reaches Kafka."""

from __future__ import annotations

from typing import Any

from kraftform.pulumi.topics import TopicSetProvider, topic_inputs
from kraftform.specset.model import TopicSpec

CONNECTION = {"bootstrap": "localhost:9092"}


def props(topics: dict[str, Any], protect: bool = False) -> dict[str, Any]:
    return {"connection": CONNECTION, "protect": protect, "topics": topics}


def topic(partitions: int = 3, **config: str) -> dict[str, Any]:
    return {"partitions": partitions, "replication_factor": 3, "config": config}


def test_the_inputs_are_the_specs_topics_by_name() -> None:
    specs = [TopicSpec("a.b", 6, 3, {"retention.ms": "1000"}), TopicSpec("c", 1, 1)]
    assert topic_inputs(specs) == {
        "a.b": {"partitions": 6, "replication_factor": 3, "config": {"retention.ms": "1000"}},
        "c": {"partitions": 1, "replication_factor": 1, "config": {}}}


def test_configs_are_normalized_and_a_bad_key_names_its_topic() -> None:
    result = TopicSetProvider().check({}, props({"a.b": topic(3, **{"retention.ms": "1d"}),
                                                    "c": topic(3, **{"retention.mss": "1"})}))
    assert result.inputs["topics"]["a.b"]["config"] == {"retention.ms": "86400000"}
    [failure] = result.failures
    assert failure.property == "" and failure.reason.startswith("topic c: config retention.mss:")
    assert "retention.ms" in failure.reason


def test_a_partition_decrease_is_refused_in_check_with_whole_numbers() -> None:
    olds = props({"a.b": {**topic(9), "partitions": 9.0}})  # the engine sends numbers as floats
    result = TopicSetProvider().check(olds, props({"a.b": topic(4)}))
    [failure] = result.failures
    assert failure.property == ""
    assert "topic a.b: partitions 9 -> 4 refused" in failure.reason and "keep 9 in the specs" in failure.reason


def test_a_removed_topic_is_refused_while_the_stack_protects_its_topics() -> None:
    olds = props({"a.b": topic(), "c": topic()}, True)
    result = TopicSetProvider().check(olds, props({"a.b": topic()}, True))
    [failure] = result.failures
    assert failure.property == "" and failure.reason.startswith("topic c was removed") and \
        "kraftform:protect" in failure.reason
    # Turning protection off is a run of its own: the removal in the same run is still refused.
    assert TopicSetProvider().check(olds, props({"a.b": topic()})).failures
    assert TopicSetProvider().check(props({"a.b": topic(), "c": topic()}),
                                    props({"a.b": topic()})).failures == []


def test_the_diff_compares_what_kafka_sees() -> None:
    provider = TopicSetProvider()
    same = props({"a.b": topic(3, **{"retention.ms": "1000"})})
    as_stored = props({"a.b": {"partitions": 3.0, "replication_factor": 3.0, "config": {"retention.ms": "1000"}}})
    assert not provider.diff("topics", as_stored, same).changes
    grown = provider.diff("topics", as_stored, props({"a.b": topic(4, **{"retention.ms": "1000"})}))
    assert grown.changes and grown.replaces == []
    assert provider.diff("topics", same, props({"a.b": topic(3, **{"retention.ms": "1000"}), "c": topic()})).changes
    assert provider.diff("topics", same, {**same, "protect": True}).changes
