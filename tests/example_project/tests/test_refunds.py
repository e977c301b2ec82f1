"""Refunds in Avro: the declared schema, registered in the test cluster's registry by kraftform's pytest plugin,
serialized and read back by confluent-kafka's own Avro serializer and deserializer, and read by the declared
Spark pipeline."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kraftform.testing import EphemeralCluster

TOPIC = "shop.refunds"


def test_a_refund_written_with_the_declared_schema_reads_back(kafka_cluster: EphemeralCluster,
                                                               schema_registry: Any) -> None:
    registry = SchemaRegistryClient(schema_registry.client_conf("refunds-service"))
    declared = registry.get_latest_version(f"{TOPIC}-value")
    assert (declared.version, registry.get_compatibility(f"{TOPIC}-value")) == (1, "FULL")
    serializer = AvroSerializer(registry, declared.schema.schema_str,
                                conf={"auto.register.schemas": False, "use.latest.version": True})
    context = SerializationContext(TOPIC, MessageField.VALUE)
    refund = {"order_id": f"o-{uuid.uuid4().hex[:6]}", "cents": 1250, "reason": None}
    producer = Producer(kafka_cluster.client())
    producer.produce(TOPIC, serializer(refund, context))
    assert producer.flush(20) == 0
    consumer = Consumer(kafka_cluster.client(**{"group.id": f"shop-{uuid.uuid4().hex[:6]}",
                                                "auto.offset.reset": "earliest"}))
    consumer.subscribe([TOPIC])
    try:
        message = consumer.poll(30)
        assert message is not None and message.error() is None
        value = message.value()
        assert value is not None
        assert AvroDeserializer(registry)(value, context) == refund
    finally:
        consumer.close()


def test_the_refund_pipeline_reads_refunds_in_avro(kafka_consumer: Any) -> None:
    rows = kafka_consumer("refund-reasons", [{"order_id": "r-1", "cents": 500, "reason": "damaged"},
                                             {"order_id": "r-2", "cents": 20, "reason": None}])
    assert sorted((r["order_id"], r["cents"], r["reason"]) for r in rows if r["order_id"].startswith("r-")) == [
        ("r-1", 500, "damaged"), ("r-2", 20, "unknown")]
