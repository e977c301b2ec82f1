"""Share groups' delivery state (KIP-932) as Kafka reports it: per partition, the share-partition start offset (every
record before it is acknowledged or archived) and the lag (records from there to the end not yet acknowledged,
in-flight ones included).

Neither client library has DescribeShareGroupOffsets: it goes through kafka-python's connection to the group's
coordinator, from the message definitions in `kafka/messages/`. Version 1 (Kafka 4.2+) carries Kafka's own lag;
from a version-0 broker there is none and `lag` is None (the caller measures from the start offsets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kraftform.cluster.connection import Connection
from kraftform.errors import KafkaRequestFailed
from kraftform.kafka.admin import Requests, kafka_python_admin
from kraftform.kafka.kafka_python import ApiMessage, for_code, quiet

MESSAGES = "kraftform.kafka.messages"
#: What a group that does not exist yet gets (Kafka 4.3 answers such a group with no topics instead).
NO_STATE = ("GroupIdNotFoundError",)


with quiet():  # kafka-python reads the message definitions when the class is made
    class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=MESSAGES):  # type: ignore[call-arg,misc]
        pass

    class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=MESSAGES):  # type: ignore[call-arg,misc]
        pass


@dataclass(frozen=True)
class ShareGroupOffsets:
    """One share group's delivery state per (topic, partition)."""

    start: Mapping[tuple[str, int], int]
    #: Kafka's count of records not yet acknowledged; None from a broker that does not report it (version 0).
    lag: Mapping[tuple[str, int], int] | None


def share_group_offsets(connection: Connection, group: str) -> ShareGroupOffsets | None:
    """The group's delivery state on every partition it has state for; None if it has none yet (no member has
    fetched through it)."""
    with kafka_python_admin(connection, Requests()) as client:
        manager = client._manager
        coordinator = manager.run(client._find_coordinator_id, group)
        request = DescribeShareGroupOffsetsRequest(groups=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
        response = manager.run(manager.send, request, coordinator)
    return parse_response(group, response)


def parse_response(group: str, response: Any) -> ShareGroupOffsets | None:
    """The answer for `group`, errors raised with Kafka's name for them."""
    (answer,) = [g for g in response.groups if g.group_id == group]
    if answer.error_code:
        error = for_code(answer.error_code)
        if error.__name__ in NO_STATE:
            return None
        raise KafkaRequestFailed(f"DescribeShareGroupOffsets for share group {group!r} failed: {error.__name__}"
                                 + (f": {answer.error_message}" if answer.error_message else ""))
    start: dict[tuple[str, int], int] = {}
    lag: dict[tuple[str, int], int] = {}
    for topic in answer.topics:
        for p in topic.partitions:
            if p.error_code:
                raise KafkaRequestFailed(f"DescribeShareGroupOffsets for share group {group!r} on "
                                         f"{topic.topic_name}[{p.partition_index}] failed: "
                                         f"{for_code(p.error_code).__name__}")
            start[(topic.topic_name, p.partition_index)] = p.start_offset
            lag[(topic.topic_name, p.partition_index)] = getattr(p, "lag", -1)
    if not start:
        return None  # no member has ever fetched: Kafka holds no state for it
    return ShareGroupOffsets(start, None if any(v < 0 for v in lag.values()) else lag)
