"""An Avro consumer end to end: records written in the Confluent wire format by confluent-kafka's AvroSerializer,
under two versions of the topic's declared schema, read by `kraftform consumers run` (spark-avro's from_avro
after the 5-byte header, each record resolved from its writer's version to the declared one) into a Parquet
sink, exactly once across a SIGTERM and a restart from the checkpoint. (A record the job cannot decode stopping it:
`tests/integration/spark/test_avro_decoding.py`, in the shared Spark session.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kraftform.cluster.connection import read_connection

from .conftest import Registry

pytestmark = pytest.mark.integration

TOPIC = "payments.avro"
CONSUMER = "avro-payments"
PAYMENT: dict[str, Any] = {
    "type": "record", "name": "Payment", "namespace": "shop",
    "fields": [{"name": "payment_id", "type": "string"}, {"name": "amount", "type": "double"},
               {"name": "note", "type": "string"},
               {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
#: Version 2: a field with a default, what BACKWARD allows; version-1 records read with it get the default.
PAYMENT_V2 = {**PAYMENT, "fields": [*PAYMENT["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}
PER_VERSION = 3_000
PER_BATCH = 1_000
FED = 500


def _write_specs(registry: Registry, password_file: Path, schema: dict[str, Any], level: str = "BACKWARD") -> None:
    (registry.specs / "schemas" / "payment.avsc").write_text(json.dumps(schema, indent=2))
    user = "avro-job"
    currency = "currency, " if any(f["name"] == "currency" for f in schema["fields"]) else ""
    (registry.specs / "payments.yaml").write_text(yaml.safe_dump({
        "topics": [{"name": TOPIC, "partitions": 3,
                    "schemas": {"value": {"file": "schemas/payment.avsc", "compatibility": level}}}],
        "users": [{"name": user, "password": {"file": str(password_file)}}],
        "acls": [{"principal": f"User:{user}", "resource": {"type": "topic", "name": TOPIC},
                  "operations": ["read", "describe"]},
                 {"principal": f"User:{user}", "resource": {"type": "group", "name": CONSUMER, "pattern": "prefixed"},
                  "operations": ["read"]}],
        "consumers": [{
            "name": CONSUMER, "topics": [TOPIC], "user": user, "starting_offsets": "earliest",
            "value": {"format": "avro"}, "trigger": "1s", "max_offsets_per_trigger": PER_BATCH,
            # The SQL reads the field version 2 adds once the schema has it, as its author would edit both.
            "query": f"SELECT payment_id, amount * 100 AS cents, {currency}event_time, partition, offset\n"
                     f"FROM input",
            "sink": {"type": "parquet", "path": "payments"}}]}))


def _produce(registry: Registry, tmp_path: Path, first: int, count: int, currency: str | None) -> None:
    """Records serialized as a producer does: its own certificate reads the latest declared version."""
    client = registry.client()
    conf = {"url": client.url, "ssl.ca.location": client.ca_path,
            "ssl.certificate.location": str(tmp_path / "shop.pem"), "ssl.key.location": str(tmp_path / "shop.key")}
    serializer = AvroSerializer(SchemaRegistryClient(conf), None,
                                conf={"auto.register.schemas": False, "use.latest.version": True})
    producer = Producer({**read_connection(registry.state / "admin.properties").librdkafka(), "acks": "all",
                         "linger.ms": 20})
    for i in range(first, first + count):
        record: dict[str, Any] = {"payment_id": f"p-{i}", "amount": i / 100, "note": "x" * 40,
                                  "event_time": 1_700_000_000_000 + i}
        if currency is not None:
            record["currency"] = currency
        producer.produce(TOPIC, serializer(record, SerializationContext(TOPIC, MessageField.VALUE)),
                         key=f"p-{i}")
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def _run(registry: Registry, data: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kraftform", "consumers", "run", CONSUMER, str(registry.specs), "--state-dir",
         str(registry.state), "--data-dir", str(data), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_a_spark_consumer_reads_two_versions_of_avro_exactly_once_across_a_sigterm(
        registry: Registry, tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("avro-job-secret")
    assert registry.kraftform("registry certificate", "--name", "shop", "--out", str(tmp_path)).returncode == 0
    _write_specs(registry, password, PAYMENT)
    applied = registry.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    _produce(registry, tmp_path, 0, PER_VERSION, None)
    _write_specs(registry, password, PAYMENT_V2)
    applied = registry.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    _produce(registry, tmp_path, PER_VERSION, PER_VERSION, "USD")
    versions = registry.client().versions(f"{TOPIC}-value")
    assert len(versions) == 2
    # `consumers feed` writes the declared version too, records shaped by its fields
    fed = registry.kraftform(f"consumers feed {CONSUMER}", "--count", str(FED), "--rate", "5000")
    assert fed.returncode == 0 and f"produced {FED} records" in fed.stdout, fed.stdout + fed.stderr

    data = tmp_path / "data"
    seen: list[str] = []
    first = _run(registry, data)
    assert first.stdout is not None
    deadline = time.monotonic() + 300
    while not any(line.startswith("batch 1:") or " batch 1:" in line for line in seen):
        line = first.stdout.readline()
        assert line and time.monotonic() < deadline, "".join(seen[-40:])
        seen.append(line)
    os.kill(first.pid, signal.SIGTERM)  # as `docker stop` does: to the process alone
    rest, _ = first.communicate(timeout=120)
    seen.append(rest)
    assert first.returncode == 0, "".join(seen[-40:])
    assert "stopped (interrupted)" in "".join(seen)

    second = _run(registry, data, "--available-now")
    out, _ = second.communicate(timeout=600)
    assert second.returncode == 0, out[-4000:]

    rows = ds.dataset(data / "payments", format="parquet").to_table().to_pylist()
    counts = Counter(r["payment_id"] for r in rows)
    assert len(counts) == 2 * PER_VERSION + FED and set(counts.values()) == {1}, \
        f"{len(rows)} rows, {len(counts)} ids, duplicated: {[k for k, n in counts.items() if n > 1][:5]}"
    by_id = {r["payment_id"]: r for r in rows}
    assert {by_id[f"p-{i}"]["currency"] for i in range(PER_VERSION)} == {"EUR"}  # v1 records: the default
    assert {by_id[f"p-{i}"]["currency"] for i in range(PER_VERSION, 2 * PER_VERSION)} == {"USD"}
    assert by_id["p-1234"]["cents"] == pytest.approx(1234.0)
    assert {r["currency"] for r in rows if not r["payment_id"].startswith("p-")} <= {"EUR", "USD", "GBP", "JPY"}
    assert by_id["p-42"]["event_time"].timestamp() == pytest.approx(1_700_000_000.042)

    # The registry's check turned off, `amount` made a string: the registry would take it, the consumer's SQL
    # reads `amount`, so plan and apply refuse it, naming the consumer and its SQL line; nothing is registered.
    fields = [f if f["name"] != "amount" else {"name": "amount", "type": "string"} for f in PAYMENT_V2["fields"]]
    _write_specs(registry, password, {**PAYMENT_V2, "fields": fields}, level="NONE")
    says = "consumer 'avro-payments' reads field 'amount' (SQL line 1 of its query at "
    planned = registry.kraftform("plan")
    assert says in planned.stdout and "it is DOUBLE in version 2, STRING as declared" in planned.stdout, \
        planned.stdout + planned.stderr
    refused = registry.kraftform("apply", "--auto-approve", "--allow-destructive")
    assert refused.returncode == 1 and says in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert registry.client().versions(f"{TOPIC}-value") == versions
    _write_specs(registry, password, PAYMENT_V2)
