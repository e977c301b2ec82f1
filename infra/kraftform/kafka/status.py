"""One look at a cluster for `kraftform status` and the lag exporter: brokers, the quorum, the declared topics'
partitions and min.insync.replicas, declared consumers' positions and the end offsets they are measured against,
and declared share groups' delivery state.

A handful of requests whatever the cluster's size: one Metadata, DescribeConfigs in
batches, one DescribeQuorum, one ListOffsets, one OffsetFetch per declared consumer group (from a
consumer that does not join it), one DescribeShareGroupOffsets per declared share group.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigResource, OffsetSpec, ResourceType

from kraftform.cluster.connection import Connection
from kraftform.errors import ConnectionFailed, KraftformError
from kraftform.kafka.admin import Admin, batches
from kraftform.kafka.gates import read_quorum
from kraftform.kafka.kafka_python import KafkaError as PyKafkaError
from kraftform.kafka.observe import CONFIG_BATCH
from kraftform.kafka.share_groups import share_group_offsets
from kraftform.monitoring.status import ConsumerPosition, Observed, Partition, lag_limit
from kraftform.specset.model import SpecSet, named_groups

MIN_ISR = "min.insync.replicas"
T = TypeVar("T")


def declared_share_groups(specs: SpecSet) -> tuple[str, ...]:
    return tuple(sorted(g.name for g in specs.groups if g.type == "share"))


def declared_groups(specs: SpecSet) -> tuple[str, ...]:
    """Consumer groups the specs name: every literal group an ACL grants (a prefix names no group), but share
    groups (`declared_share_groups`) and the Connect clusters' worker groups (they commit no offsets: their
    connectors' are `kraftform connect status`'s)."""
    workers = {k.name for k in specs.connect}
    return tuple(sorted(named_groups(specs.acls) - set(declared_share_groups(specs)) - workers))


#: Seconds each request may take: a probe answers within seconds even when a broker has just died and a request
#: that went to it must be given up.
REQUEST_S = 3.0
#: How long to wait for a request's answer: longer than librdkafka's own request timeout, so librdkafka settles
#: every request before its client goes.
WAIT_S = REQUEST_S + 5.0


@contextlib.contextmanager
def _settling(futures: Iterable[concurrent.futures.Future[Any]]) -> Iterator[None]:
    """However the waiting ends (an answer, or a cause known early: a refused connection), leave only once
    librdkafka has settled every request (it does within REQUEST_S)."""
    try:
        yield
    finally:
        concurrent.futures.wait(list(futures), timeout=WAIT_S)


def _min_isr(admin: Admin, topics: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for batch in batches(list(topics), CONFIG_BATCH):
        futures = admin.client.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in batch],
                                                request_timeout=REQUEST_S)
        with _settling(futures.values()):
            for resource, future in futures.items():
                entry = admin.wait(future, f"describe configs of topic {resource.name!r}", WAIT_S).get(MIN_ISR)
                if entry is not None and entry.value is not None:
                    found[resource.name] = int(entry.value)
    return found


def committed_offsets(connection: Connection, group: str,
                     partitions: Sequence[TopicPartition]) -> dict[tuple[str, int], int] | None:
    """The group's committed offsets on `partitions`, read by a consumer that never joins the group (its
    OffsetFetch goes through the consumer's coordinator path). Not the Admin API's ListConsumerGroupOffsets:
    librdkafka frees that request's state when its coordinator connection drops and then reads it again,
    aborting the process (librdkafka issue 4605, pull request 5397): the exporter, after a broker restart."""
    if not partitions:
        return None
    consumer = Consumer({**connection.librdkafka(), "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed(list(partitions), timeout=REQUEST_S)
    except KafkaException as exc:
        raise ConnectionFailed(f"cannot fetch the offsets of group {group!r} on {connection.bootstrap}: "
                               f"{exc.args[0].str()}") from None
    finally:
        consumer.close()
    positions = {(tp.topic, tp.partition): tp.offset for tp in committed if tp.error is None and tp.offset >= 0}
    return positions or None


def _end_offsets(admin: Admin, wanted: Sequence[TopicPartition]) -> dict[tuple[str, int], int]:
    if not wanted:
        return {}
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    futures = admin.client.list_offsets(dict.fromkeys(wanted, latest), request_timeout=REQUEST_S)
    with _settling(futures.values()):
        return {(tp.topic, tp.partition): admin.wait(f, "list offsets", WAIT_S).offset
                for tp, f in futures.items()}


def unreachable_brokers(brokers: Mapping[int, tuple[str, int]], timeout: float = 1.0) -> dict[int, str]:
    """The brokers whose listener refuses or ignores a TCP connection, tried all at once."""
    import socket
    from concurrent.futures import ThreadPoolExecutor

    def refuses(address: tuple[str, int]) -> bool:
        try:
            with socket.create_connection(address, timeout):
                return False
        except OSError:
            return True

    if not brokers:
        return {}
    with ThreadPoolExecutor(len(brokers)) as pool:
        down = dict(zip(brokers, pool.map(refuses, brokers.values()), strict=True))
    return {b: f"{host}:{port}" for b, (host, port) in brokers.items() if down[b]}


def observe_status(connection: Connection, specs: SpecSet,
                   spark_positions: Mapping[str, Mapping[tuple[str, int], int] | None]) -> Observed:
    """Everything `monitoring.status.assess` judges. An unreachable cluster or a refused login raises (the
    Admin client names the cause within seconds); a part that cannot be read (the quorum, a topic's configs,
    offsets on a partition whose leader just died) is reported as such, never waited on for long.
    `spark_positions`: each Spark consumer's checkpointed offsets (None: not started)."""
    admin = Admin(connection)
    # One Metadata read: the brokers it lists are the registered, unfenced ones (DescribeCluster could go to a
    # broker that has just died and wait for it).
    metadata = admin.metadata(timeout=10.0)
    unread: list[str] = []

    def attempt(what: str, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except (KraftformError, KafkaException, PyKafkaError, OSError) as exc:
            unread.append(f"{what}: {str(exc)[:300]}")
            return None

    declared = [t.name for t in specs.topics]
    partitions = tuple(Partition(name, p.id, tuple(p.replicas), tuple(p.isrs), p.leader)
                       for name in declared if name in metadata.topics
                       for p in metadata.topics[name].partitions.values())
    existing = [t for t in declared if t in metadata.topics]
    min_isr = attempt("min.insync.replicas of the declared topics", lambda: _min_isr(admin, existing)) or {}
    down = unreachable_brokers({b.id: (str(b.host), int(b.port)) for b in metadata.brokers.values()})
    # The quorum is asked through brokers that answer: a bootstrap list naming a host cut off would have
    # kafka-python wait out its request timeout on it.
    answering = ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values() if b.id not in down)
    quorum = attempt("the controller quorum", lambda: read_quorum(
        dataclasses.replace(connection, bootstrap=answering or connection.bootstrap)))
    consumers = [ConsumerPosition(c.name, "spark", tuple(c.topics), spark_positions.get(c.name),
                                  lag_limit(c.profile)) for c in specs.consumers]
    every_partition = [TopicPartition(name, p) for name, topic in sorted(metadata.topics.items())
                       if not name.startswith("__") for p in topic.partitions]
    for group in declared_groups(specs):
        positions = attempt(f"the offsets of consumer group {group}",
                            partial(committed_offsets, connection, group, every_partition))
        topics = tuple(sorted({t for t, _ in positions})) if positions else ()
        consumers.append(ConsumerPosition(group, "group", topics, positions, lag_limit(None)))
    for group in declared_share_groups(specs):
        state = attempt(f"the delivery state of share group {group}", partial(share_group_offsets, connection, group))
        topics = tuple(sorted({t for t, _ in state.start})) if state else ()
        consumers.append(ConsumerPosition(group, "share", topics, state.start if state else None, lag_limit(None),
                                          state.lag if state else None))
    wanted = [TopicPartition(t, p) for t in sorted({t for c in consumers for t in c.topics})
              if t in metadata.topics for p in metadata.topics[t].partitions]
    ends = attempt("the end offsets of the consumers' topics", lambda: _end_offsets(admin, wanted)) or {}
    return Observed(tuple(sorted(metadata.brokers)), quorum.leader if quorum else -1,
                    dict(quorum.behind_ms) if quorum else {}, partitions, min_isr, tuple(consumers), ends,
                    tuple(unread), down)
