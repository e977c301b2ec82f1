"""The gates' reads against the session's real cluster: a reassignment in flight (kept in flight by a replication
throttle, as a large move under `apply --throttle` is) is listed until it ends, so node work waits for it
instead of planning from replica lists that hold both its old and new replicas."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from kraftform.definitions.server_configs import THROTTLE_RATES
from kraftform.definitions.topic_configs import THROTTLED_REPLICAS
from kraftform.kafka import gates
from kraftform.kafka.admin import Requests, kafka_python_admin
from kraftform.kafka.kafka_python import TopicPartition
from kraftform.runtime.nodes.deployment import admin_config
from kraftform.waiting import until

from ..conftest import LiveCluster, unique

pytestmark = pytest.mark.integration


def _set(admin: AdminClient, kind: ResourceType, name: str, keys: tuple[str, ...], value: str | None) -> None:
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    resource = ConfigResource(kind, name, incremental_configs=[ConfigEntry(k, value, incremental_operation=op)
                                                                for k in keys])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_a_reassignment_in_flight_is_listed_until_it_ends(local_cluster: LiveCluster) -> None:
    connection = admin_config(local_cluster.state_dir)
    admin = AdminClient(connection.librdkafka())
    topic = unique("gates.moving")
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1]])])[topic].result(30)
    producer = Producer({**connection.librdkafka(), "linger.ms": 50})
    for _ in range(2000):
        producer.produce(topic, b"x" * 10_000)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert gates.reassigning(connection) == []
    try:
        for broker in ("1", "2"):  # 20 MB at 10 KB/s: the copy takes half an hour
            _set(admin, ResourceType.BROKER, broker, THROTTLE_RATES, "10240")
        _set(admin, ResourceType.TOPIC, topic, THROTTLED_REPLICAS, "*")
        with kafka_python_admin(connection, Requests()) as client:
            assert not any(client.alter_partition_reassignments({TopicPartition(topic, 0): [2]}).values())
            assert f"{topic}-0" in gates.reassigning(connection)
            client.alter_partition_reassignments({TopicPartition(topic, 0): None})  # cancelled: it ends
        until("the cancelled reassignment to end", 60, lambda: f"{topic}-0" not in gates.reassigning(connection))
    finally:
        for broker in ("1", "2"):
            _set(admin, ResourceType.BROKER, broker, THROTTLE_RATES, None)
        admin.delete_topics([topic])[topic].result(30)
