"""The streaming job: one consumer's query in a Spark session, from its Kafka topics to its sink.

pyspark is imported here only, when a job runs. The connector's jars come from Maven Central
(`artifacts.connector_jars`). Each consumer gets a session of its own (`newSession`: its own `input`
view and SQL settings) over one SparkContext, so tests and a process running several consumers share the JVM.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftform.cluster.connection import SASL_SSL, Connection
from kraftform.errors import KraftformError, UsageError
from kraftform.spark import avro
from kraftform.spark.checkpoint import CheckpointMeta
from kraftform.spark.query import INPUT_VIEW, METADATA_COLUMNS
from kraftform.spark.settings import JobSettings
from kraftform.spark.sinks import ParquetBatchSink, TransactionalKafkaSink
from kraftform.specset.model import ConsumerSpec
from kraftform.versions import SPARK_VERSION

Log = Callable[[str], None]
#: How often a running query's heartbeat file is touched.
HEARTBEAT_S = 5.0


def kafka_client_options(connection: Connection) -> dict[str, str]:
    """The `kafka.*` options that log the Spark source and sink in as the consumer's user over SASL_SSL, with
    the cluster's CA as a PEM truststore. They hold the password: never print them (the session's redaction
    settings keep them out of plans, logs and the UI)."""
    if connection.protocol != SASL_SSL or not connection.logs_in:
        raise UsageError("a consumer logs in over SASL_SSL with its own SCRAM user")
    return connection.spark_options()


def spark_session(settings: JobSettings, work_dir: Path) -> Any:
    """A local Spark session with the connector and the consumer's settings; its event log goes to
    `work_dir/events` (uncompressed, so what it holds can be read and checked)."""
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError:
        raise UsageError("pyspark is not installed: pip install 'kraftform[spark]' (bash scripts/setup does)") \
            from None
    if pyspark.__version__ != SPARK_VERSION:
        raise UsageError(f"pyspark {pyspark.__version__} is installed, the Kafka connector is pinned at "
                         f"{SPARK_VERSION}: they must match (pip install 'kraftform[spark]')")
    from kraftform.artifacts import connector_jars

    jars = connector_jars(Path(pyspark.__file__).parent / "jars")
    if settings.master.startswith("local"):
        # The machine's hostname may resolve to a loopback address Spark would not bind: name it.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        driver_host, bind = "127.0.0.1", "127.0.0.1"
    else:
        # Executors elsewhere connect back to the driver: by this host's name (a container's is its name on
        # the cluster's network), on every interface.
        driver_host, bind = socket.gethostname(), "0.0.0.0"
    events = work_dir / "events"
    events.mkdir(parents=True, exist_ok=True)
    builder = (SparkSession.builder.master(settings.master).appName(f"kraftform-{settings.consumer}")
               .config("spark.jars", ",".join(map(str, jars)))
               .config("spark.driver.host", driver_host).config("spark.driver.bindAddress", bind)
               .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", str(events))
               .config("spark.eventLog.compress", "false"))
    for key, value in settings.spark_conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _input_frame(spark: Any, consumer: ConsumerSpec, settings: JobSettings, client: Mapping[str, str]) -> Any:
    from pyspark.sql import functions as F

    reader = spark.readStream.format("kafka")
    for key, value in {**settings.source_options, **client}.items():
        reader = reader.option(key, value)
    raw = reader.load()
    metadata = [F.col("key").cast("string").alias("key"), *[F.col(c) for c in METADATA_COLUMNS if c != "key"
                                                            and (c != "headers" or settings.facts.uses_headers)]]
    kept = [c for c in METADATA_COLUMNS if c != "headers" or settings.facts.uses_headers]
    if consumer.value.format == "json" and consumer.value.schema:
        schema = parsed_schema(consumer.value.schema, settings.facts.reads)
        fields = F.from_json(F.col("value").cast("string"), schema) if schema.fields else F.struct()
        parsed = raw.select(fields.alias("__value"), *metadata).select("__value.*", *kept)
    elif consumer.value.format == "avro" and consumer.value.schema:
        decoded = avro_decoded(consumer, settings)
        parsed = raw.select(decoded.alias("__value"), *metadata).select("__value.*", *kept)
    else:
        parsed = raw.select(F.col("value").cast("string").alias("value"), *metadata)
    if consumer.watermark is not None:
        parsed = parsed.withWatermark(consumer.watermark.column, f"{consumer.watermark.delay_ms} milliseconds")
    return parsed


def avro_decoded(consumer: ConsumerSpec, settings: JobSettings) -> Any:
    """The value in the Confluent wire format (a 0 byte, the writer schema's id in 4 bytes, the Avro body)
    decoded with spark-avro's `from_avro`: each known writer schema's records resolved to the declared schema, cut
    to the fields the query reads. A record of another id (a version registered after the job started) or not in
    that format stops the query with the reason rather than become a row of nulls: exactly once, a restart
    (which reads the registry again) picks it up where the checkpoint left off."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    if not settings.avro_writers:
        raise UsageError(f"consumer {consumer.name!r} reads Avro and its job knows no writer schema: start it "
                         f"through kraftform (which reads them from the registry)")
    assert consumer.value.schema is not None
    reader = avro.reader_schema(consumer.value.schema, settings.facts.reads)
    value = F.col("value")
    # Each known header (0, then the id) is compared as 5 bytes: no per-record hex or number parsing. The value is
    # decoded whole, its header a field the reader skips (`avro.framed`): no copy of each body.
    header = F.substring(value, 1, 5)
    decoded = F.when(value.isNull(), F.lit(None))
    for writer_id, writer in sorted(settings.avro_writers.items()):
        decoded = decoded.when(header == F.lit(b"\0" + int(writer_id).to_bytes(4, "big")),
                               from_avro(value, avro.framed(writer), {"avroSchema": reader, "mode": "FAILFAST"}))
    where = [F.lit(f"consumer {consumer.name}: the record of topic "), F.col("topic"), F.lit(" at offset "),
             F.col("offset").cast("string")]
    schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10)
    known = ", ".join(sorted(settings.avro_writers, key=int))
    return decoded.when(
        (F.length(value) < 5) | (F.substring(value, 1, 1) != F.lit(b"\0")),
        F.raise_error(F.concat(*where, F.lit(" is not in the Confluent wire format (a 0 byte, then the schema "
                                             "id)")))
    ).otherwise(F.raise_error(F.concat(
        *where, F.lit(" was written with schema id "), schema_id,
        F.lit(f", registered after the job started (it knows {known}): start the consumer again through "
              f"kraftform, which reads the registry again"))))


def parsed_schema(ddl: str, reads: Sequence[str] | None) -> Any:
    """The value's schema as Spark parses it: only the fields the query reads (`QueryFacts.reads`; None: all).
    Spark's optimizer does not prune from_json's schema to the fields a query uses (its plan keeps every field),
    and parsing is most of a JSON consumer's work: a projection of 3 fields of 7 parses 3."""
    from pyspark.sql.types import StructType

    full = StructType.fromDDL(ddl)
    assert isinstance(full, StructType)
    if reads is None:
        return full
    wanted = {name.lower() for name in reads}
    return StructType([f for f in full.fields if f.name.lower() in wanted])


def _transform(name: str) -> Callable[[Any], Any]:
    module_name, _, function = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"transform {name!r}: cannot import {module_name!r} ({exc}); it must be importable by "
                         f"the job (PYTHONPATH)") from None
    fn = getattr(module, function, None)
    if not callable(fn):
        raise UsageError(f"transform {name!r}: {module_name} has no function {function!r}")
    return fn  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Placement:
    """Where a run keeps its files: the checkpoint and a Parquet sink's directory."""

    checkpoint: Path
    output: Path | None


def placement(consumer: ConsumerSpec, data_dir: Path) -> Placement:
    def under(path: str) -> Path:
        return Path(path) if Path(path).is_absolute() else data_dir / path

    return Placement(under(consumer.checkpoint or f"checkpoints/{consumer.name}"),
                     under(consumer.sink.path) if consumer.sink.type == "parquet" and consumer.sink.path else None)


def start_query(spark: Any, consumer: ConsumerSpec, settings: JobSettings, connection: Connection,
                where: Placement, meta: CheckpointMeta, log: Log, available_now: bool = False) -> Any:
    """Build the query in a session of its own and start it; returns the StreamingQuery."""
    session = spark.newSession()
    for key, value in settings.spark_conf.items():
        if key.startswith("spark.sql."):
            session.conf.set(key, value)
    client = kafka_client_options(connection)
    frame = _input_frame(session, consumer, settings, client)
    frame.createOrReplaceTempView(INPUT_VIEW)
    result = session.sql(consumer.query) if consumer.query else frame
    if consumer.transform:
        result = _transform(consumer.transform)(result)
    writer = (result.writeStream.queryName(consumer.name.replace("-", "_"))
              .option("checkpointLocation", str(where.checkpoint)).outputMode(settings.output_mode))
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif settings.trigger.kind == "realtime":
        writer = writer.trigger(realTime=f"{settings.trigger.interval_ms // 1000} seconds")
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger.interval_ms} milliseconds")
    sink = consumer.sink
    if sink.type == "kafka" and settings.exactly_once:
        assert sink.topic is not None
        writer = writer.foreachBatch(TransactionalKafkaSink(
            connection, sink.topic, settings.transactional_id, (settings.transactional_id, consumer.topics[0]),
            meta.run_id, settings.producer, log, partitions=consumer.cores))
    elif sink.type == "kafka":
        writer = writer.format("kafka").option("topic", sink.topic)
        for key, value in {**client, **{f"kafka.{k}": v for k, v in settings.producer.items()}}.items():
            writer = writer.option(key, value)
    elif sink.type == "parquet":
        assert where.output is not None
        writer = writer.foreachBatch(ParquetBatchSink(where.output, meta.run_id, log))
    elif sink.type == "noop":
        writer = writer.format("noop")
    else:
        writer = writer.format("console").option("truncate", "false")
    return writer.start()


def progress_line(progress: Mapping[str, Any]) -> str:
    """One line per micro-batch: rows, rate, duration and the lag per partition behind the topics' ends."""
    rows = int(progress.get("numInputRows", 0))
    rate = float(progress.get("processedRowsPerSecond") or 0.0)
    took = int((progress.get("durationMs") or {}).get("triggerExecution", 0))
    lag: dict[str, int] = {}
    for source in progress.get("sources", []):
        end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        for topic, partitions in latest.items():
            for partition, offset in partitions.items():
                lag[f"{topic}[{partition}]"] = max(0, int(offset) - int(end.get(topic, {}).get(partition, 0)))
    behind = {k: v for k, v in lag.items() if v}
    shown = ", ".join(f"{k}={v}" for k, v in sorted(behind.items(), key=lambda kv: -kv[1])[:6])
    more = f" (+{len(behind) - 6} more)" if len(behind) > 6 else ""
    lag_text = (f"lag {sum(lag.values())}: {shown}{more}" if behind else
                f"lag 0 on {len(lag)} partitions") if lag else "lag unknown"
    return f"batch {progress.get('batchId')}: {rows} rows in {took} ms ({rate:,.0f} rows/s), {lag_text}"


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("{") else {}
    return value if isinstance(value, dict) else {}


def spark_error(exc: BaseException) -> bool:
    """Whether `exc` is Spark's (an analysis error, a failed query, a JVM exception) rather than a bug here."""
    return any(cls.__name__ in ("CapturedException", "PySparkException", "Py4JJavaError")
               or "StreamingQueryException" in cls.__name__ for cls in type(exc).__mro__)


def explain_failure(exc: BaseException, consumer: ConsumerSpec) -> KraftformError:
    """A failed query's cause in a user's words; the Java stack trace is not the only explanation."""
    text = str(exc)
    for marker, meaning in (
            ("TopicAuthorizationException", f"user {consumer.user!r} is not allowed to read or write a topic of "
                                            f"consumer {consumer.name!r}"),
            ("GroupAuthorizationException", f"user {consumer.user!r} is not allowed to use consumer groups "
                                            f"{consumer.group_id_prefix}*"),
            ("SaslAuthenticationException", f"user {consumer.user!r} cannot log in (wrong password?)"),
            ("UnknownTopicOrPartitionException", "a topic does not exist yet: apply the specs first"),
            ("OffsetOutOfRange", "the checkpoint points at offsets the topic no longer has (retention); "
                                 "failOnDataLoss stops the job rather than skip them")):
        if marker in text:
            return KraftformError(f"consumer {consumer.name!r} failed: {meaning} ({marker})")
    raised = re.search(r"\[USER_RAISED_EXCEPTION\] (.+?)(?: SQLSTATE: \w+)?$", text, re.MULTILINE)
    if raised:  # the job's own raise_error (an Avro record it cannot decode): its words, once
        return KraftformError(raised.group(1).strip()[:1000])
    lines = text.splitlines()
    if "Traceback (most recent call last)" in text:  # a Python sink or transform failed: its own last line
        python = lines[next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line):]
        python = python[:next((i for i, line in enumerate(python) if line.startswith("\tat ")), len(python))]
        cause = next((line for line in reversed(python) if line.strip()), "")
        return KraftformError(f"consumer {consumer.name!r} failed: {cause.strip()[:500]}")
    first = next((line for line in lines if line.strip()), type(exc).__name__)
    return KraftformError(f"consumer {consumer.name!r} failed: {first[:500]}")


def run_until_stopped(query: Any, consumer: ConsumerSpec, log: Log, should_stop: Callable[[], bool],
                      poll_s: float = 0.5, heartbeat: Path | None = None) -> None:
    """Print a progress line per finished micro-batch until the query ends or `should_stop()`; a failed query
    raises its cause as a KraftformError. While the query runs and has finished a micro-batch, `heartbeat` is
    touched every few seconds: a container's health check reads its age."""
    last_batch = None
    beat = 0.0
    try:
        while query.isActive and not should_stop():
            query.awaitTermination(poll_s)
            progress = query.lastProgress
            if progress is not None:
                data = json.loads(progress.json) if hasattr(progress, "json") else dict(progress)
                if data.get("batchId") != last_batch:
                    last_batch = data.get("batchId")
                    log(progress_line(data))
                if heartbeat is not None and time.monotonic() - beat > HEARTBEAT_S and query.isActive:
                    heartbeat.parent.mkdir(parents=True, exist_ok=True)
                    heartbeat.write_text(f"{last_batch}\n")
                    beat = time.monotonic()
    except Exception as exc:
        if spark_error(exc):
            raise explain_failure(exc, consumer) from None
        raise
    finally:
        if query.isActive:
            query.stop()
    error = query.exception()
    if error is not None:
        raise explain_failure(error, consumer)

