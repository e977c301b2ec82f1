"""A share group's delivery state from DescribeShareGroupOffsets answers: Kafka's lag where the broker reports it
(version 1), none from a version-0 broker, no state for a group no member has fetched through, errors by name.
The real broker's answers are read in tests/integration/kafka/test_groups.py."""

from __future__ import annotations

from typing import Any

import pytest

from kraftform.errors import KafkaRequestFailed
from kraftform.kafka.share_groups import DescribeShareGroupOffsetsResponse as Response
from kraftform.kafka.share_groups import ShareGroupOffsets, parse_response

GROUP = Response.DescribeShareGroupOffsetsResponseGroup
TOPIC = GROUP.DescribeShareGroupOffsetsResponseTopic
PARTITION = TOPIC.DescribeShareGroupOffsetsResponsePartition


def _answer(version: int, partitions: list[dict[str, Any]], error_code: int = 0) -> Any:
    """The response as it comes off the wire at `version`: encoded, then decoded."""
    topics = [TOPIC(topic_name="orders", topic_id="c2b7d0a4-3a5e-4bd8-9f0a-000000000001",
                    partitions=[PARTITION(**{"leader_epoch": 0, "error_code": 0, "error_message": None, **p})
                                for p in partitions])] if partitions else []
    sent = Response(throttle_time_ms=0, groups=[GROUP(group_id="workers", topics=topics, error_code=error_code,
                                                      error_message=None)])
    return Response.decode(sent.encode(version=version), version=version)


def test_kafkas_lag_is_read_from_version_1_and_none_is_claimed_from_version_0() -> None:
    rows = [{"partition_index": 0, "start_offset": 4, "lag": 3}, {"partition_index": 1, "start_offset": 0, "lag": 0}]
    assert parse_response("workers", _answer(1, rows)) == ShareGroupOffsets(
        {("orders", 0): 4, ("orders", 1): 0}, {("orders", 0): 3, ("orders", 1): 0})
    assert parse_response("workers", _answer(0, rows)) == ShareGroupOffsets({("orders", 0): 4, ("orders", 1): 0}, None)


def test_a_group_without_state_is_not_started_and_errors_carry_kafkas_name() -> None:
    assert parse_response("workers", _answer(1, [])) is None
    assert parse_response("workers", _answer(1, [], error_code=69)) is None  # GROUP_ID_NOT_FOUND
    with pytest.raises(KafkaRequestFailed, match="GroupAuthorizationFailedError"):
        parse_response("workers", _answer(1, [], error_code=30))
    with pytest.raises(KafkaRequestFailed, match=r"orders\[0\] failed: NotLeaderForPartitionError"):
        parse_response("workers", _answer(1, [{"partition_index": 0, "start_offset": 0, "lag": 0, "error_code": 6}]))
