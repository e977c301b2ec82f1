"""A consumer group's committed offsets, read and moved for `kraftform groups reset` (planned in `plan.offsets`).

Read: the group's members (DescribeConsumerGroups), its committed offsets (OffsetFetch from a consumer that never
joins it, as `kraftform status` reads them), each partition's earliest and latest offsets and, for a time, the
first offset at or after it (ListOffsets). Written: AlterConsumerGroupOffsets, which Kafka refuses while the
group has members; then read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kraftform.cluster.connection import Connection
from kraftform.errors import KafkaRequestFailed, UsageError
from kraftform.kafka.admin import Admin
from kraftform.kafka.status import committed_offsets
from kraftform.plan.changes import GroupOffset
from kraftform.plan.offsets import Partition, ResetTo

TIMEOUT_S = 15.0


@dataclass(frozen=True)
class GroupView:
    """What a reset is planned against."""

    members: int
    current: Mapping[Partition, int | None]
    targets: Mapping[Partition, int]
    ends: Mapping[Partition, tuple[int, int]]


def _list_offsets(admin: Admin, partitions: Sequence[Partition], spec: OffsetSpec, what: str) -> dict[Partition, int]:
    futures = admin.client.list_offsets({TopicPartition(t, p): spec for t, p in partitions},
                                        request_timeout=TIMEOUT_S)
    return {(tp.topic, tp.partition): admin.wait(f, what, TIMEOUT_S).offset for tp, f in futures.items()}


def read_group(connection: Connection, group: str, to: ResetTo, topics: Sequence[str] = ()) -> GroupView:
    """The group as a reset to `to` sees it: on every partition of `topics`, else on the partitions the group has
    committed offsets on (with `to` given as offsets: those partitions)."""
    admin = Admin(connection)
    metadata = admin.metadata()
    existing = {name: sorted(t.partitions) for name, t in metadata.topics.items() if not name.startswith("__")}
    missing = sorted(t for t in {*topics, *(t for t, _ in to.offsets)} if t not in existing)
    if missing:
        raise UsageError(f"no topic {', '.join(missing)} on {connection.bootstrap}")
    every = [TopicPartition(t, p) for t in sorted(existing) for p in existing[t]]
    committed = committed_offsets(connection, group, every) or {}
    if to.offsets:
        wanted = sorted(to.offsets)
        absent = [f"{t}:{p}" for t, p in wanted if p not in existing[t]]
        if absent:
            raise UsageError(f"no partition {', '.join(absent)} on {connection.bootstrap}")
    elif topics:
        wanted = [(t, p) for t in sorted(set(topics)) for p in existing[t]]
    else:
        wanted = sorted(committed)
        if not wanted:
            raise UsageError(f"group {group!r} has no committed offsets on {connection.bootstrap}: name the topics "
                             f"to set them on with --topic")
    future = admin.client.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group]
    members = len(admin.wait(future, f"describe group {group!r}", TIMEOUT_S).members or [])
    earliest = _list_offsets(admin, wanted, OffsetSpec.earliest(), "list the earliest offsets")  # type: ignore[no-untyped-call]
    latest = _list_offsets(admin, wanted, OffsetSpec.latest(), "list the latest offsets")  # type: ignore[no-untyped-call]
    if to.kind == "earliest":
        targets = earliest
    elif to.kind == "latest":
        targets = latest
    elif to.kind == "datetime":
        assert to.at_ms is not None
        found = _list_offsets(admin, wanted, OffsetSpec.for_timestamp(to.at_ms), f"find the offsets at {to.text}")
        # No record at or after the time: the end, where the next record will be.
        targets = {p: latest[p] if offset < 0 else offset for p, offset in found.items()}
    else:
        targets = dict(to.offsets)
    return GroupView(members, {p: committed.get(p) for p in wanted}, targets,
                     {p: (earliest[p], latest[p]) for p in wanted})


def move_offsets(connection: Connection, group: str, moves: Sequence[GroupOffset]) -> None:
    """Commit `moves` for `group` (AlterConsumerGroupOffsets) and read them back."""
    admin = Admin(connection)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(m.topic, m.partition, m.offset) for m in moves])
    future = admin.client.alter_consumer_group_offsets([request], request_timeout=TIMEOUT_S)[group]
    result = admin.wait(future, f"move the offsets of group {group!r}", TIMEOUT_S)
    failed = [f"{tp.topic}-{tp.partition}: {tp.error.str()}" for tp in result.topic_partitions or []
              if tp.error is not None]
    if failed:
        raise KafkaRequestFailed(f"group {group!r}: offsets not moved on {', '.join(failed)}")
    now = committed_offsets(connection, group, [TopicPartition(m.topic, m.partition) for m in moves]) or {}
    wrong = [f"{m.topic}-{m.partition} at {now.get((m.topic, m.partition))}, not {m.offset}" for m in moves
             if now.get((m.topic, m.partition)) != m.offset]
    if wrong:
        raise KafkaRequestFailed(f"group {group!r}: read back after the move: {', '.join(wrong)}")
