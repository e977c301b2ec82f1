"""The health gates a roll passes, node by node, as Strimzi's KafkaRoller does on Kubernetes.

Before a node stops: a broker may go only if no partition it is in the ISR of would fall below its topic's
min.insync.replicas (acks=all producers would be refused), a controller only if the voters that stay caught up
are still a majority. After it starts again: it is registered (a broker) or caught up with the quorum leader
(a controller), no partition is under-replicated, and a majority of voters is caught up. Each check answers with
the reason it does not pass, naming the topic or node, or None.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kraftform.cluster.connection import Connection
from kraftform.cluster.topology import Node
from kraftform.kafka.admin import Requests, batches, kafka_python_admin, translated
from kraftform.monitoring.status import Partition

#: Kafka's controller.quorum.fetch.timeout.ms default: a voter whose last catch-up is older than this, by the
#: leader's clock, is behind (the rule Strimzi's quorum check uses).
QUORUM_FETCH_TIMEOUT_MS = 2000
TIMEOUT = 10.0


@dataclass(frozen=True)
class Quorum:
    leader: int
    #: voter id -> how far its last catch-up is behind the leader's, in ms.
    behind_ms: Mapping[int, int]
    #: voter id -> when it last fetched from the leader (the leader's clock, ms since the epoch).
    fetched_at: Mapping[int, int] = field(default_factory=dict)
    #: voter id -> the directory id of its metadata log (its identity as a voter, KIP-853; "" in a static quorum).
    directories: Mapping[int, str] = field(default_factory=dict)

    def caught_up(self, timeout_ms: int = QUORUM_FETCH_TIMEOUT_MS) -> frozenset[int]:
        return frozenset(v for v, ms in self.behind_ms.items() if ms <= timeout_ms)

    @property
    def majority(self) -> int:
        return len(self.behind_ms) // 2 + 1


def parse_quorum(response: Mapping[str, Any]) -> Quorum:
    """kafka-python's DescribeQuorum response -> who leads and how far each voter is behind."""
    partition = response["topics"][0]["partitions"][0]
    voters = partition["current_voters"]
    leader = partition["leader_id"]
    stamps = {v["replica_id"]: v["last_caught_up_timestamp"] for v in voters}
    newest = stamps.get(leader, max(stamps.values(), default=0))
    return Quorum(leader, {v: (newest - ts if ts >= 0 else 2**31) for v, ts in stamps.items()},
                  {v["replica_id"]: v["last_fetch_timestamp"] for v in voters},
                  {v["replica_id"]: kafka_uuid(v.get("replica_directory_id")) for v in voters})


def kafka_uuid(value: object) -> str:
    """A Uuid as Kafka's tools take it (16 bytes, URL-safe base64 without padding), from kafka-python's form (a
    UUID string with dashes); "" for none."""
    if not value:
        return ""
    return base64.urlsafe_b64encode(uuid.UUID(str(value)).bytes).decode().rstrip("=")


@translated("make an Admin client")
def client(connection: Connection) -> AdminClient:
    """A confluent-kafka Admin client for the gates' reads (one per operation: it does not pickle)."""
    return AdminClient(connection.librdkafka())


@translated("read the controller quorum")
def read_quorum(connection: Connection) -> Quorum:
    with kafka_python_admin(connection, Requests()) as client:
        return parse_quorum(client.describe_metadata_quorum())


@translated("read the partitions' replicas and ISRs")
def read_partitions(admin: AdminClient) -> list[Partition]:
    metadata = admin.list_topics(timeout=TIMEOUT)
    return [Partition(str(t.topic), p.id, tuple(p.replicas), tuple(p.isrs), p.leader)
            for t in metadata.topics.values() for p in t.partitions.values()]


@translated("read the topics' min.insync.replicas")
def min_insync(admin: AdminClient, topics: Iterable[str]) -> dict[str, int]:
    """Each topic's effective min.insync.replicas (its own, or the cluster's default). A topic deleted since the
    metadata was read is left out; any other error is raised: a gate that cannot read a minimum does not pass."""
    found: dict[str, int] = {}
    for batch in batches(sorted(set(topics)), 100):
        futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in batch],
                                         request_timeout=TIMEOUT)
        for resource, future in futures.items():
            try:
                entry = future.result(timeout=TIMEOUT).get("min.insync.replicas")
            except KafkaException as exc:
                if exc.args and isinstance(exc.args[0], KafkaError) and \
                        exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue  # deleted since the metadata was read
                raise
            found[resource.name] = int(entry.value) if entry is not None and entry.value is not None else 1
    return found


def blocking(partitions: Sequence[Partition], minimum: Mapping[str, int], broker: int) -> list[str]:
    """The partitions that would fall below min.insync.replicas if `broker` stopped: it is in their ISR and the
    ISR is already at (or below) the minimum. As Strimzi's KafkaAvailability, a partition whose minimum is not
    below its replica count is left out: any restart of any of its brokers takes it below, so waiting would
    block every roll for good (a topic with one replica, or min.insync.replicas equal to its replicas). Pure."""
    return sorted(f"{p.topic}-{p.partition} (ISR {','.join(map(str, p.isr))}, min.insync.replicas "
                  f"{minimum.get(p.topic, 1)})"
                  for p in partitions if broker in p.isr and len(p.isr) <= minimum.get(p.topic, 1) < len(p.replicas))


@translated("check whether a node may stop")
def why_not_stop(connection: Connection, node: Node) -> str | None:
    """Why `node` may not stop now, or None."""
    if node.is_controller:
        quorum = read_quorum(connection)
        staying = quorum.caught_up() - {node.node_id}
        if len(staying) < quorum.majority:
            return (f"only {len(staying)} other controller voter(s) are caught up with the quorum leader "
                    f"{quorum.leader}; stopping {node.name} would leave no majority ({quorum.majority})")
    if node.is_broker:
        admin = client(connection)
        partitions = read_partitions(admin)
        hosted = [p for p in partitions if node.node_id in p.isr]
        found = blocking(hosted, min_insync(admin, {p.topic for p in hosted}), node.node_id)
        if found:
            return (f"{len(found)} partition(s) would fall below min.insync.replicas without broker "
                    f"{node.node_id}: {', '.join(found[:5])}{' ...' if len(found) > 5 else ''}")
    return None


@translated("check whether the cluster is whole again")
def why_not_ready(connection: Connection, node: Node, since_ms: int = 0) -> str | None:
    """Why the cluster is not yet whole again after `node` started (at `since_ms`, wall clock), or None. A
    controller's catch-up must be newer than its start: the leader's view of a voter that just stopped stays
    fresh for a moment."""
    admin = client(connection)
    if node.is_broker:
        registered = {n.id for n in admin.describe_cluster(request_timeout=TIMEOUT).result(timeout=TIMEOUT).nodes}
        if node.node_id not in registered:
            return f"broker {node.node_id} ({node.name}) is not registered yet"
    quorum = read_quorum(connection)
    if node.is_controller and node.node_id != quorum.leader and (
            node.node_id not in quorum.caught_up() or quorum.fetched_at.get(node.node_id, 0) < since_ms):
        return f"controller {node.node_id} ({node.name}) has not caught up with the quorum leader {quorum.leader}"
    if len(quorum.caught_up()) < quorum.majority:
        return f"only {len(quorum.caught_up())} controller voter(s) are caught up (a majority is {quorum.majority})"
    under = [p for p in read_partitions(admin) if len(p.isr) < len(p.replicas)]
    if under:
        shown = ", ".join(f"{p.topic}-{p.partition}" for p in under[:5])
        return f"{len(under)} partition(s) under-replicated: {shown}{' ...' if len(under) > 5 else ''}"
    return None


@translated("list the reassignments in flight")
def reassigning(connection: Connection) -> list[str]:
    """The partitions a reassignment is still moving ("topic-partition"): their replica lists hold the old and
    the new replicas until it ends, so nothing may plan moves from them."""
    with kafka_python_admin(connection, Requests()) as py_client:
        moving = py_client.list_partition_reassignments()
    return sorted(f"{tp.topic}-{tp.partition}" for tp in moving)


@translated("read the brokers' log directories")
def partition_sizes(connection: Connection) -> dict[tuple[str, int], int]:
    """Bytes of each partition (its largest replica), from every broker's log directories."""
    sizes: dict[tuple[str, int], int] = {}
    with kafka_python_admin(connection, Requests()) as client:
        for broker in client.describe_log_dirs():
            for log_dir in broker["log_dirs"]:
                for topic in log_dir["topics"]:
                    for p in topic["partitions"]:
                        key = (topic["name"], p["partition_index"])
                        sizes[key] = max(sizes.get(key, 0), int(p["partition_size"]))
    return sizes


@translated("read the brokers' racks")
def broker_racks(admin: AdminClient) -> dict[int, str | None]:
    """Each registered broker's rack (None where it has none)."""
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
    return {n.id: n.rack for n in cluster.nodes}


@translated("elect preferred leaders")
def elect_preferred(admin: AdminClient) -> tuple[int, dict[str, str]]:
    """Leadership back to each partition's first replica where another leads: (partitions asked, the failed
    ones by name with Kafka's error). confluent-kafka 2.16 refuses keyword arguments here."""
    partitions = [TopicPartition(p.topic, p.partition) for p in read_partitions(admin)
                  if p.replicas and p.leader != p.replicas[0]]
    if not partitions:
        return 0, {}
    results = admin.elect_leaders(ElectionType.PREFERRED, partitions).result(timeout=60)
    return len(partitions), {f"{tp.topic}-{tp.partition}": error.name() for tp, error in results.items()
                             if error is not None and error.name() != "ELECTION_NOT_NEEDED"}
