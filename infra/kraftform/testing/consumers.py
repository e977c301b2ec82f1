"""A declared Spark consumer run against a test cluster on records a test produces: what its sink received.

The consumer runs as in production (`spark.job.start_query`: its profile's settings, its SQL and transform, its
sink with the sink's guarantee, logged in as its own user under the specs' ACLs), with Spark's availableNow
trigger, so the run ends once it has read what the topics held. One Spark session serves a whole test run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from kraftform.errors import UsageError
from kraftform.kafka.clients import end_offsets, produce_paced
from kraftform.registry.reconcile import declared_schema_id, writer_schemas
from kraftform.registry.rest import RegistryRest
from kraftform.spark import avro
from kraftform.specset.model import ConsumerSpec
from kraftform.testing.cluster import EphemeralCluster

Record = tuple[str, str | None, Any]  # topic, key, value (a str, or anything json.dumps takes)


def declared_consumer(cluster: EphemeralCluster, name: str) -> ConsumerSpec:
    found = next((c for c in cluster.specs.consumers if c.name == name), None)
    if found is None:
        raise UsageError(f"no consumer {name!r} in the specs (declared: "
                         f"{', '.join(c.name for c in cluster.specs.consumers) or 'none'})")
    return found


def session(cluster: EphemeralCluster, work_dir: Path) -> Any:
    """The Spark session consumers run in (pyspark is kraftform's `spark` extra)."""
    try:
        from kraftform.spark.job import spark_session
        from kraftform.spark.settings import job_settings
    except ImportError as exc:
        raise UsageError(f"running a consumer needs pyspark: pip install 'kraftform[spark]' ({exc})") from None
    if not cluster.specs.consumers:
        raise UsageError("the specs declare no consumer")
    return spark_session(job_settings(cluster.specs.consumers[0], cluster.specs), work_dir)


def run_consumer(cluster: EphemeralCluster, spark: Any, name: str, records: Iterable[Record | Any],
                 work_dir: Path, registry: Callable[[], RegistryRest] | None = None) -> list[dict[str, Any]]:
    """Produce `records` (bare values go to the consumer's first topic), run consumer `name` until it has read
    them, and return what its sink received: a Kafka sink's records committed by this run ({key, value}, JSON
    values decoded), a Parquet sink's rows (all of them); a console or noop sink has none. An Avro consumer's
    dict values are written as a producer writes them (the declared schema, in the Confluent wire format with
    its id from `registry`, the test registry kraftform's client). A second run of the same consumer in the same
    `work_dir` continues from its checkpoint, as in production."""
    from kraftform.spark.checkpoint import prepare
    from kraftform.spark.job import placement, run_until_stopped, start_query
    from kraftform.spark.settings import job_settings

    consumer = declared_consumer(cluster, name)
    produced = [r if isinstance(r, tuple) and len(r) == 3 else (consumer.topics[0], None, r) for r in records]
    settings = job_settings(consumer, cluster.specs)
    to_avro: Callable[[Any], bytes] | None = None
    if consumer.value.format == "avro":
        if registry is None:
            raise UsageError(f"consumer {name!r} reads Avro: its records need the test's schema registry")
        rest = registry()
        settings = replace(settings, avro_writers=writer_schemas(rest, cluster.specs, consumer))
        assert consumer.value.schema is not None  # an Avro consumer's is its topics' declared schema
        to_avro = avro.encoder(consumer.value.schema, declared_schema_id(rest, cluster.specs, consumer))

    def encode(value: Any) -> str | bytes:
        if isinstance(value, (str, bytes)):
            return value
        return to_avro(value) if to_avro is not None else json.dumps(value)

    produce_paced(cluster.admin, ((t, k, encode(v)) for t, k, v in produced), rate=1e9, count=None,
                  settings={"acks": "all"})
    where = placement(consumer, work_dir)
    sink_topic = consumer.sink.topic if consumer.sink.type == "kafka" else None
    before = end_offsets(cluster.admin, [sink_topic]) if sink_topic else {}
    meta = prepare(where.checkpoint, consumer, settings.facts, allow_reset=False)
    query = start_query(spark, consumer, settings, cluster.connection(consumer.user), where, meta,
                        lambda _line: None, True)
    run_until_stopped(query, consumer, lambda _line: None, lambda: False)
    if sink_topic:
        return _read_topic(cluster, sink_topic, before)
    if consumer.sink.type == "parquet" and where.output is not None:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise UsageError("reading a Parquet sink needs pyarrow (pip install pyarrow)") from None
        return list(pq.read_table(where.output).to_pylist()) if where.output.exists() else []
    return []


def _decoded(value: bytes | None) -> Any:
    text = (value or b"").decode()
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read_topic(cluster: EphemeralCluster, topic: str, since: dict[tuple[str, int], int],
                idle_s: float = 3.0) -> list[dict[str, Any]]:
    """The committed records of `topic` after `since`, as a read_committed reader sees them."""
    import time

    from confluent_kafka import TopicPartition

    reader = Consumer({**cluster.client(), "group.id": f"kraftform-test-{uuid.uuid4().hex[:8]}",
                       "enable.auto.commit": False, "isolation.level": "read_committed"})
    reader.assign([TopicPartition(t, p, offset) for (t, p), offset in sorted(since.items())])
    rows: list[dict[str, Any]] = []
    quiet_since = time.monotonic()
    try:
        while time.monotonic() - quiet_since < idle_s:
            message = reader.poll(0.5)
            if message is None or message.error():
                continue
            rows.append({"key": (message.key() or b"").decode() or None, "value": _decoded(message.value())})
            quiet_since = time.monotonic()
    finally:
        reader.close()
    return rows
