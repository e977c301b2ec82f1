"""Is a cluster healthy? Every broker registered, and a record produced and read back over SASL_SSL.

A port that accepts connections proves little (a broker accepts TLS long before it has joined the
quorum); a round trip through a replicated topic proves the listeners, SCRAM, the authorizer, the
controller quorum and replication all work.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kraftform.cluster.connection import Connection
from kraftform.errors import ClusterUnhealthy, ConnectionFailed, KraftformError
from kraftform.waiting import NotYet, poll

HEALTH_TOPIC = "kraftform.health"


@dataclass(frozen=True)
class ClusterHealth:
    brokers: tuple[int, ...]
    controller_id: int | None
    under_replicated: int
    offline: int

    @property
    def ok(self) -> bool:
        return self.offline == 0 and self.under_replicated == 0


def describe_health(connection: Connection, timeout: float = 10.0) -> ClusterHealth:
    """Brokers, the active controller and partition health, from one metadata read."""
    admin = AdminClient(connection.librdkafka())
    cluster = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout)
    metadata = admin.list_topics(timeout=timeout)
    under = offline = 0
    for topic in metadata.topics.values():
        for partition in topic.partitions.values():
            if partition.leader < 0:
                offline += 1
            elif len(partition.isrs) < len(partition.replicas):
                under += 1
    controller = cluster.controller.id if cluster.controller is not None else None
    return ClusterHealth(tuple(sorted(n.id for n in cluster.nodes)), controller, under, offline)


def _ensure_health_topic(admin: AdminClient, replication: int, timeout: float) -> None:
    futures = admin.create_topics([NewTopic(HEALTH_TOPIC, 1, replication)], request_timeout=timeout)
    try:
        futures[HEALTH_TOPIC].result(timeout=timeout)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def round_trip(connection: Connection, replication: int, timeout: float = 30.0) -> float:
    """Produce one record with acks=all and read it back; returns the seconds it took."""
    started = time.monotonic()
    conf = connection.librdkafka()
    _ensure_health_topic(AdminClient(conf), replication, timeout)
    marker = uuid.uuid4().hex.encode()
    producer = Producer({**conf, "acks": "all", "enable.idempotence": "true"})
    delivered: list[object] = []
    producer.produce(HEALTH_TOPIC, value=marker, on_delivery=lambda err, msg: delivered.append(err or msg))
    producer.flush(timeout)
    if not delivered or isinstance(delivered[0], Exception) or not hasattr(delivered[0], "offset"):
        raise ClusterUnhealthy(f"health check: produce to {HEALTH_TOPIC} failed: {delivered[:1]}")
    offset = delivered[0].offset()
    consumer = Consumer({**conf, "group.id": f"kraftform-health-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": "false"})
    try:
        consumer.assign([TopicPartition(HEALTH_TOPIC, 0, offset)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            if message.value() == marker:
                return time.monotonic() - started
    finally:
        consumer.close()
    raise ClusterUnhealthy(f"health check: the record produced to {HEALTH_TOPIC} was not read back")


def poll_health(connection: Connection, until: Callable[[ClusterHealth], bool],
                timeout: float = 120.0) -> ClusterHealth:
    """Describe the cluster until `until` holds; a request that lands on a dead broker is retried.
    Returns the last description (the caller asserts on it) or raises if none ever succeeded."""
    seen: list[ClusterHealth] = []

    def attempt() -> ClusterHealth:
        seen.append(describe_health(connection, timeout=5.0))
        if not until(seen[-1]):
            raise NotYet(str(seen[-1]))
        return seen[-1]

    try:
        return poll("the cluster's health", timeout, attempt, interval=1.0, retry_on=(KafkaException, TimeoutError),
                    error=ConnectionFailed)
    except ConnectionFailed:
        if not seen:
            raise
        return seen[-1]


#: How long a broker may stay unregistered after another one registered before it is restarted (once): a broker
#: started while the controllers were still electing a leader can keep a stale controller and never register
#: ("Unable to register the broker because the RPC got timed out before it could be sent" every few seconds,
#: seen with Kafka 4.3.1 on a busy machine), where a restart registers it at once.
STUCK_S = 90.0
#: The same when no broker has registered at all: every broker can be stuck so (seen with Kafka 4.4.0 in Docker, all
#: three brokers for 5 minutes, the controllers' quorum long formed); a healthy start registers within a minute.
NONE_REGISTERED_S = 120.0


def wait_healthy(connection: Connection, brokers: Mapping[int, str], timeout: float = 180.0,
                 last_error: Callable[[str], str] | None = None,
                 restart: Callable[[str], None] | None = None) -> ClusterHealth:
    """Poll until every broker in `brokers` (id: node name) is registered and a round trip succeeds. A broker
    still unregistered STUCK_S after another one registered, or NONE_REGISTERED_S into the wait when none has, is
    restarted once with `restart(its name)`. On
    timeout the error names each broker that never registered, with `last_error(its name)`: why it did not (its
    log's last error) is what a user needs next, not a count."""
    missing: list[int] = []
    restarted: set[int] = set()
    first_registered: list[float] = []
    began = time.monotonic()

    def attempt() -> ClusterHealth:
        health = describe_health(connection, timeout=5.0)
        missing[:] = sorted(set(brokers) - set(health.brokers))
        if len(missing) < len(brokers) and not first_registered:
            first_registered.append(time.monotonic())
        stuck_after = first_registered[0] + STUCK_S if first_registered else began + NONE_REGISTERED_S
        if missing and restart is not None and time.monotonic() > stuck_after:
            for broker in set(missing) - restarted:
                restarted.add(broker)
                restart(brokers[broker])
        if missing:
            why = (f"unregistered {STUCK_S:.0f} s after another broker registered" if first_registered else
                   f"no broker registered in {NONE_REGISTERED_S:.0f} s")
            raise NotYet(f"{len(brokers) - len(missing)} of {len(brokers)} brokers registered, not "
                         + ", ".join(brokers[b] for b in missing)
                         + (f" (restarted once, {why})" if restarted & set(missing) else ""))
        round_trip(connection, min(3, len(brokers)), timeout=20.0)
        return describe_health(connection, timeout=5.0)

    try:
        return poll(f"a healthy cluster ({len(brokers)} brokers, a record written and read back)", timeout,
                    attempt, interval=0.25, retry_on=(KafkaException, KraftformError, TimeoutError))
    except ClusterUnhealthy as exc:
        if not missing or last_error is None:
            raise
        causes = "; ".join(f"{brokers[b]}'s last error: {last_error(brokers[b])}" for b in missing)
        raise ClusterUnhealthy(f"{exc}; {causes}") from None
