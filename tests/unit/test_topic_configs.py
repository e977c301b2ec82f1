from __future__ import annotations

import pytest

from kraftform.definitions.topic_configs import TOPIC_CONFIG_KEYS, kafka_default, normalize_topic_config


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("retention.ms", 7, "7"), ("retention.ms", "7", "7"), ("retention.ms", "7d", "604800000"),
    ("retention.ms", -1, "-1"), ("segment.bytes", "512MiB", "536870912"), ("min.insync.replicas", "2", "2"),
    ("cleanup.policy", "delete,compact", "compact,delete"), ("cleanup.policy", ["compact"], "compact"),
    ("cleanup.policy", ["delete", "compact", "delete"], "compact,delete"),
    ("unclean.leader.election.enable", False, "false"), ("preallocate", "TRUE", "true"),
    ("min.cleanable.dirty.ratio", 0.5, "0.5"), ("min.cleanable.dirty.ratio", "0.50", "0.5"),
    ("min.cleanable.dirty.ratio", 1, "1.0"), ("compression.type", "zstd", "zstd"),
    ("message.timestamp.type", "LogAppendTime", "LogAppendTime"), ("max.message.bytes", 1048588.0, "1048588"),
])
def test_values_normalize_to_kafkas_string_form(key: str, value: object, expected: str) -> None:
    assert normalize_topic_config(key, value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("key", "value", "message"), [
    ("retention.mss", 1, "did you mean 'retention.ms'"),
    ("totally.unknown", 1, "unknown topic config 'totally.unknown'$"),
    ("min.insync.replicas", 0, "at least 1"),
    ("segment.bytes", 2**31, "at most 2147483647"),
    ("retention.ms", 2**63, "at most"),
    ("retention.ms", True, "integer"),
    ("retention.ms", 1.5, "integer"),
    ("min.insync.replicas", "7d", "integer"),
    ("cleanup.policy", "shred", "compact, delete"),
    ("cleanup.policy", [], "at least one"),
    ("compression.type", "brotli", "one of"),
    ("preallocate", 1, "true or false"),
    ("min.cleanable.dirty.ratio", float("nan"), "finite"),
    ("min.cleanable.dirty.ratio", "half", "number"),
])
def test_bad_values_are_explained(key: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        normalize_topic_config(key, value)  # type: ignore[arg-type]


def test_defaults_are_themselves_normal() -> None:
    for name, key in TOPIC_CONFIG_KEYS.items():
        if key.type != "list" or key.choices:
            assert normalize_topic_config(name, key.default) == key.default, name
    assert kafka_default("retention.ms") == "604800000"
    assert kafka_default("nope") is None
