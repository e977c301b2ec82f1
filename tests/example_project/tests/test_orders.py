"""A user's own tests, against a secure cluster made from the project's specs by kraftform's pytest plugin."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kraftform.testing import EphemeralCluster


def _produce(conf: dict[str, Any], topic: str, values: list[str]) -> list[KafkaError | None]:
    errors: list[KafkaError | None] = []
    producer = Producer({**conf, "acks": "all", "message.timeout.ms": 10000})
    for value in values:
        producer.produce(topic, value.encode(), on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(20)
    return errors


def test_the_declared_user_writes_and_reads_its_topic(kafka_cluster: EphemeralCluster) -> None:
    sent = [f"order-{uuid.uuid4().hex[:6]}" for _ in range(5)]
    assert _produce(kafka_cluster.client("orders-service"), "shop.orders", sent) == [None] * 5
    consumer = Consumer(kafka_cluster.client("orders-service", **{
        "group.id": f"shop-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"}))
    consumer.subscribe(["shop.orders"])
    seen: list[str] = []
    for _ in range(60):
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen.append((message.value() or b"").decode())
        if set(sent) <= set(seen):
            break
    consumer.close()
    assert set(sent) <= set(seen)


def test_a_user_without_a_grant_is_refused(kafka_cluster: EphemeralCluster) -> None:
    errors = _produce(kafka_cluster.client("auditor"), "shop.orders", ["not allowed"])
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_the_cluster_is_only_reachable_over_sasl_ssl(kafka_cluster: EphemeralCluster) -> None:
    plaintext = {"bootstrap.servers": kafka_cluster.bootstrap, "security.protocol": "PLAINTEXT",
                 "socket.timeout.ms": 3000}
    with pytest.raises(KafkaException):
        Consumer({**plaintext, "group.id": "x"}).list_topics(timeout=3)


def test_where_the_cluster_is(kafka_cluster: EphemeralCluster) -> None:
    """Written for the test that runs two sessions at once: which cluster each one got."""
    report = os.environ.get("SHOP_CLUSTER_REPORT")
    if report:
        Path(report).write_text(json.dumps({"name": kafka_cluster.name, "bootstrap": kafka_cluster.bootstrap,
                                            "state": str(kafka_cluster.state_dir)}))
    assert kafka_cluster.name != "shop"


def test_every_order_is_archived_by_the_declared_sink(kafka_cluster: EphemeralCluster, kafka_connect: Any) -> None:
    """Connect's sink has committed past every order in the topic: its offsets reach each partition's end."""
    assert kafka_connect.connector("orders-archive").state == "running"
    assert _produce(kafka_cluster.client("orders-service"), "shop.orders", ["order-archived"] * 20) == [None] * 20
    consumer = Consumer(kafka_cluster.client("orders-service", **{"group.id": f"shop-{uuid.uuid4().hex[:6]}"}))
    ends = {p: consumer.get_watermark_offsets(TopicPartition("shop.orders", p), timeout=10)[1] for p in range(3)}
    consumer.close()
    archived: dict[int, int] = {}
    for _ in range(120):
        archived = {json.loads(p)["kafka_partition"]: json.loads(o)["kafka_offset"]
                    for p, o in kafka_connect.offsets("orders-archive").items()}
        if all(archived.get(p, 0) >= end for p, end in ends.items()):
            break
        time.sleep(1)
    assert all(archived.get(p, 0) >= end for p, end in ends.items()), (archived, ends)
