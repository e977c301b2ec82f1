"""Benchmark, not a test: the Spark consumers' throughput and end-to-end latency, profile by profile, beside
what a plain Kafka client does on the same cluster in the same run.

    python tests/bench/bench_spark.py [--records 200000] [--rates 100,500] [--seconds 30] [--state-dir DIR]
                                      [--sections throughput,latency,sustained] [--window 45]
                                      [--profiles latency,balanced,throughput] [--set PROFILE.SECTION.KEY=VALUE]

Starts a secure 3-broker local cluster (or reuses the one in --state-dir) and one local[2] Spark session. The
machine's load is printed before the run and beside each figure; the first figure waits until the start-up's
load has passed (marked BUSY when it does not: another job is running).

Throughput: --records JSON records of about 1 KB on a 6-partition topic, read from the start with a projection
(`SELECT user_id, url, amount ... WHERE amount >= 0`) into Spark's noop sink, the rows counted; each pass a new
checkpoint, after a warm-up pass (JIT). Each Spark profile twice: parsing only the 3 fields the query reads (what
the job does) and every field of the value (what it did before). Beside it: Spark with its defaults on the same
query, Spark reading the value as a string (no parsing), a confluent-kafka consumer doing the same parsing and
projection in Python, the same consumer without parsing, and Kafka's own ConsumerPerformance (Java). Each Spark
pass prints the share of its wall time spent starting the query (make --records long enough to keep it small).

Latency: records produced at each of --rates for --seconds, each carrying its send time; a Kafka-to-Kafka
projection; a reader on the output topic takes receive time minus send time, and splits it at the output
record's CreateTime (stamped when the relay wrote it). Beside it: the Kafka-only floor (produce, then consume,
no Spark).

Sustained: for each of --live (Spark's defaults and the profiles), the highest input rate of 1 KB records at
which a Kafka-to-Kafka relay on a 2-partition topic (so the latency profile runs in Real-time Mode) keeps its lag
from growing: doubling from --from-rate (2,000/s), then halving the gap between the last rate kept up with and
the first that was not until it is under 30%, each rate held --window seconds. Then the end-to-end latency at 50%
and 90% of that rate, and the Kafka-only floor at those rates. The producer is Python on the same two cores:
where it cannot reach a rate, the search says so and stops.

Formats (`--sections formats`): the same --records records, as JSON on bench.in and as Avro in the Confluent wire
format on bench.avro (6 partitions each; the schema registered in a registry kraftform runs beside the cluster,
the records serialized with fastavro after the 5-byte header), read with the same projection by the throughput
profile: Avro (spark-avro's from_avro, the reader schema cut to the fields read), JSON (from_json, the same cut),
and each topic's values unparsed; passes alternate, twice each, after a warm-up of each.

Floor (`--sections floor`): the Kafka-only floor at each of --rates with the sustained section's producer and
reader (lz4 batches on a 2-partition topic), no Spark.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import random
import re
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Consumer, Producer

from kraftform.cluster.connection import Connection, read_connection
from kraftform.declared import load_specs
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.runtime import get_runtime
from kraftform.runtime.nodes.deployment import STATE_FILE, write_private
from kraftform.runtime.nodes.tools import CONSUMER_PERFORMANCE, MEASURING_JAVA_OPTIONS, kafka_tool_command
from kraftform.spark.avro import encoder
from kraftform.spark.checkpoint import prepare
from kraftform.spark.job import placement, spark_session, start_query
from kraftform.spark.settings import job_settings
from kraftform.specset.model import ClusterDefaults, ClusterSpec, ConsumerSpec, ManagedScope, Security, SpecSet
from kraftform.verification.performance import wait_quiet
from kraftform.verification.toolout import consumer_summary

CLUSTER = ClusterSpec(name="kfspark", brokers=3, kafka_version="4.3.1", controllers=3, racks=("a", "b", "c"),
                      defaults=ClusterDefaults(1, 3, 2), security=Security(),
                      managed_scope=ManagedScope(("bench.",)))
SCHEMA = ("user_id STRING, url STRING, device STRING, amount DOUBLE, event_time TIMESTAMP, payload STRING, "
          "sent_ms BIGINT")
PROJECTION = "SELECT user_id, url, amount FROM input WHERE amount >= 0"
RELAY = ("SELECT user_id AS key, to_json(named_struct('sent_ms', sent_ms, 'user_id', user_id, 'amount', amount)) "
         "AS value FROM input")
USER = "bench-job"
#: The profiles whose sustainable input rate is searched (`untuned`: Spark's defaults, declared below).
LIVE_PROFILES = ("untuned", "throughput", "balanced", "latency")
LIVE_PARTITIONS = 2
#: The Kafka-only floor at a live relay's rates (as many partitions as its input).
LIVE_FLOOR = "bench.live.floor"
#: The send time inside a record, found without parsing the whole record (json.loads of 1 KB at 100,000 records/s
#: would make the reader, not the path, the figure).
SENT_MS = re.compile(rb'"sent_ms":\s*(\d+)')


#: The bench's JSON records as an Avro record (the formats section).
AVRO_SCHEMA = {"type": "record", "name": "Event", "namespace": "bench", "fields": [
    {"name": "user_id", "type": "string"}, {"name": "url", "type": "string"}, {"name": "device", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "payload", "type": "string"}, {"name": "sent_ms", "type": "long"}]}


def write_specs(root: Path, secret: Path, overrides: tuple[str, ...] | list[str] = (), registry_port: int = 0
                ) -> None:
    """The bench's specs; `overrides` are `PROFILE.SECTION.KEY=VALUE` settings layered on the built-in profiles
    (`latency.producer.linger.ms=1`), so a setting can be tried without editing kraftform. With `registry_port`,
    a registry beside the cluster and an Avro twin of bench.in (the formats section)."""
    root.mkdir(parents=True, exist_ok=True)
    topics = [{"name": "bench.in", "partitions": 6}, {"name": "bench.lat", "partitions": 2},
              {"name": "bench.floor", "partitions": 2}]
    outputs = {v: f"bench.out.{v}" for v in ("latency", "throughput", "balanced")}
    topics += [{"name": t, "partitions": 2} for t in outputs.values()]
    # As many input partitions as the session has task slots, so the latency profile runs in Real-time Mode.
    topics += [{"name": t, "partitions": LIVE_PARTITIONS} for t in ("bench.live", LIVE_FLOOR)]
    topics += [{"name": f"bench.live.out.{v}", "partitions": LIVE_PARTITIONS} for v in LIVE_PROFILES]
    acls = [{"principal": f"User:{USER}", "resource": {"type": "topic", "name": "bench.", "pattern": "prefixed"},
             "operations": ["read", "write", "describe"]},
            {"principal": f"User:{USER}", "resource": {"type": "group", "name": "bench", "pattern": "prefixed"},
             "operations": ["read"]}]
    base = {"user": USER, "value": {"format": "json", "schema": SCHEMA}, "starting_offsets": "earliest"}
    consumers = [{**base, "name": "tput", "topics": ["bench.in"], "profile": "throughput", "query": PROJECTION,
                  "group_id_prefix": "bench-tput", "sink": {"type": "noop"}},
                 {**base, "name": "untuned", "topics": ["bench.in"], "profile": "untuned", "query": PROJECTION,
                  "group_id_prefix": "bench-untuned", "sink": {"type": "noop"}},
                 # Spark's own transport ceiling: the records' bytes as strings, no JSON parsing.
                 {**base, "name": "raw", "topics": ["bench.in"], "profile": "throughput", "value": {"format": "string"},
                  "query": "SELECT key, value FROM input", "group_id_prefix": "bench-raw", "sink": {"type": "noop"}}]
    consumers += [{**base, "name": f"lat-{profile}", "topics": ["bench.lat"], "profile": profile, "query": RELAY,
                   "starting_offsets": "latest", "group_id_prefix": f"bench-{profile}",
                   "sink": {"type": "kafka", "topic": topic}} for profile, topic in outputs.items()]
    consumers += [{**base, "name": f"live-{profile}", "topics": ["bench.live"], "profile": profile, "query": RELAY,
                   "starting_offsets": "latest", "group_id_prefix": f"bench-live-{profile}",
                   "sink": {"type": "kafka", "topic": f"bench.live.out.{profile}"}} for profile in LIVE_PROFILES]
    docs: dict[str, dict[str, Any]] = {
        "cluster.yaml": {"cluster": {"name": CLUSTER.name, "brokers": 3, "racks": list(CLUSTER.racks),
                                     "defaults": {"replication_factor": 3, "min_insync_replicas": 2},
                                     "managed_scope": {"topic_prefixes": ["bench."]}}},
        "topics.yaml": {"topics": topics},
        "users.yaml": {"users": [{"name": USER, "password": {"file": str(secret)}}]},
        "acls.yaml": {"acls": acls},
        # Spark as it comes: no fetch tuning, no split of the input, no trigger.
        "profiles.yaml": {"profiles": [{"name": "untuned", "spark": {}}, *profile_overrides(overrides)]},
        "consumers.yaml": {"consumers": consumers},
    }
    if registry_port:
        (root / "schemas").mkdir(exist_ok=True)
        (root / "schemas" / "event.avsc").write_text(json.dumps(AVRO_SCHEMA))
        docs["cluster.yaml"]["registry"] = {"port": registry_port}
        topics.append({"name": "bench.avro", "partitions": 6, "schemas": {"value": "schemas/event.avsc"}})
        consumers += [{**base, "name": "avro", "topics": ["bench.avro"], "profile": "throughput",
                       "value": {"format": "avro"}, "query": PROJECTION, "group_id_prefix": "bench-avro",
                       "sink": {"type": "noop"}},
                      {**base, "name": "raw-avro", "topics": ["bench.avro"], "profile": "throughput",
                       "value": {"format": "string"}, "query": "SELECT key, value FROM input",
                       "group_id_prefix": "bench-raw-avro", "sink": {"type": "noop"}}]
    for name, data in docs.items():
        (root / name).write_text(yaml.safe_dump(data, sort_keys=False))


def profile_overrides(overrides: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    profiles: dict[str, dict[str, dict[str, str]]] = {}
    for item in overrides:
        name, _, value = item.partition("=")
        profile, section, key = name.split(".", 2)
        profiles.setdefault(profile, {}).setdefault(section, {})[key] = value
    return [{"name": name, **sections} for name, sections in profiles.items()]


def consumer_of(specs: SpecSet, name: str) -> ConsumerSpec:
    return next(c for c in specs.consumers if c.name == name)


def produce_records(admin: Connection, topic: str, count: int, avro_id: int | None = None) -> float:
    """About 1 KB JSON records as fast as the producer goes; returns seconds. With `avro_id`, the same records
    in Avro, in the Confluent wire format with that schema id."""
    producer = Producer({**admin.librdkafka(), "linger.ms": 20, "batch.size": 1_000_000, "compression.type": "lz4"})
    rng = random.Random(1)
    to_avro = encoder(json.dumps(AVRO_SCHEMA), avro_id or 0)
    event_time = datetime.datetime(2026, 11, 23, 10, tzinfo=datetime.UTC)
    started = time.monotonic()
    for i in range(count):
        value = {"user_id": f"user-{rng.randrange(5000)}", "url": f"/p/{rng.randrange(100)}", "device": "mobile",
                 "amount": round(rng.random() * 100, 2), "event_time": "2026-11-23T10:00:00.000Z",
                 "payload": "x" * 850, "sent_ms": 0}
        data = json.dumps(value).encode() if avro_id is None else to_avro({**value, "event_time": event_time})
        while True:
            try:
                producer.produce(topic, data, key=str(i).encode())
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return time.monotonic() - started


def spark_pass(spark: Any, specs: SpecSet, name: str, connection: Connection, work: Path, every_field: bool = False,
               writers: Mapping[str, str] | None = None) -> tuple[int, float, float]:
    """One availableNow pass from the start of the topic: rows, seconds from query start to its end, and
    seconds the micro-batches themselves took (without starting the query). `every_field`: parse the whole
    value, as kraftform did before it parsed only the fields the query reads."""
    consumer = consumer_of(specs, name)
    settings = job_settings(consumer, specs)
    if writers:
        settings = dataclasses.replace(settings, avro_writers=writers)
    if every_field:
        settings = dataclasses.replace(settings, facts=dataclasses.replace(settings.facts, reads=None))
    where = placement(consumer, work / f"{name}-{time.monotonic_ns()}")
    meta = prepare(where.checkpoint, consumer, settings.facts, False)
    started = time.monotonic()
    query = start_query(spark, consumer, settings, connection, where, meta, lambda _l: None, available_now=True)
    query.awaitTermination()
    took = time.monotonic() - started
    progress = [json.loads(p.json) for p in query.recentProgress]
    rows = sum(p["numInputRows"] for p in progress)
    batches = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
    return rows, took, batches


def python_pass(connection: Connection, topic: str, count: int, parse: bool) -> float:
    consumer = Consumer({**connection.librdkafka(), "group.id": f"bench-py-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.min.bytes": 100000, "fetch.wait.max.ms": 500})
    consumer.subscribe([topic])
    seen = 0
    projected = 0
    started = None
    while seen < count:
        messages = consumer.consume(10_000, timeout=1.0)
        if messages and started is None:
            started = time.monotonic()
        for message in messages:
            if message.error():
                continue
            seen += 1
            if parse:
                record = json.loads(message.value() or b"{}")
                if record["amount"] >= 0:
                    projected += bool((record["user_id"], record["url"], record["amount"]))
    took = time.monotonic() - (started or time.monotonic())
    consumer.close()
    return took


def consumer_performance(connection: Connection, topic: str, count: int, work: Path) -> tuple[float, float]:
    """Kafka's own ConsumerPerformance (kafka-consumer-perf-test.sh, the pinned Kafka's Java client with its
    defaults) reading `count` records of `topic` from the start: records/s of the whole run and of its fetch
    phase (without the JVM's start and the group join)."""
    config = work / "consumer-performance.properties"
    write_private(config, connection.java_properties("bench_spark: ConsumerPerformance"))
    command = kafka_tool_command(CONSUMER_PERFORMANCE, [
        "--bootstrap-server", connection.bootstrap, "--topic", topic, "--num-records", str(count),
        "--group", f"bench-perf-{time.monotonic_ns()}", "--timeout", "60000", "--command-config", str(config)],
        java_options=MEASURING_JAVA_OPTIONS)
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
    run = consumer_summary(done.stdout)
    return run.records_per_s, run.fetch_records_per_s


@dataclasses.dataclass
class Latencies:
    #: (seconds into the run the record was sent, latency in ms)
    samples: list[tuple[float, float]]
    #: Per record, ms from its send to the write of its output record (that record's CreateTime, stamped by the
    #: relay's producer): where the time went, before the relay's write or after it (the output topic's hop).
    written: list[float] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        if not self.samples:
            return "no records"
        ordered = sorted(ms for _, ms in self.samples)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        # Where the slowest 1% was sent: a few seconds means a pause (a checkpoint, a GC), spread means load.
        tail = sorted({int(at) for at, ms in self.samples if ms >= p99})
        split = f"; written p50 {statistics.median(self.written):.1f} ms after the send" if self.written else ""
        return (f"p50 {statistics.median(ordered):7.1f} ms   p99 {p99:8.1f} ms   max {ordered[-1]:8.1f} ms   "
                f"({len(ordered)} records; slowest 1% sent in second(s) {_spans(tail)}{split})")


def _record(message: Any, origin_s: float, latencies: Latencies) -> None:
    """One output record as the reader got it: its latency from the send time inside it, and when it was
    written (its CreateTime)."""
    now = time.time() * 1000
    found = SENT_MS.search(message.value() or b"")
    if found is None:
        return
    sent_ms = int(found.group(1))
    latencies.samples.append((sent_ms / 1000 - origin_s, now - sent_ms))
    kind, stamp = message.timestamp()
    if kind == 1:  # TIMESTAMP_CREATE_TYPE
        latencies.written.append(stamp - sent_ms)


def _spans(seconds: list[int]) -> str:
    spans: list[list[int]] = []
    for s in seconds:
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def measure_latency(connection: Connection, admin: Connection, source: str, sink: str, rate: float,
                    seconds: float, settle: float) -> Latencies:
    """Produce to `source` at `rate` with the send time inside; read `sink` and subtract."""
    latencies = Latencies([])
    stop = threading.Event()
    origin = time.time()
    ready = threading.Event()

    def read() -> None:
        reader = Consumer({**admin.librdkafka(), "group.id": f"bench-reader-{time.monotonic_ns()}",
                           "auto.offset.reset": "latest", "enable.auto.commit": False,
                           "fetch.wait.max.ms": 5, "fetch.min.bytes": 1})
        reader.subscribe([sink], on_assign=lambda *_a: ready.set())
        while not stop.is_set():
            message = reader.poll(0.05)
            if message is not None and not message.error():
                _record(message, origin, latencies)
        reader.close()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    ready.wait(30)
    time.sleep(2)
    producer = Producer({**admin.librdkafka(), "linger.ms": 0, "acks": "1"})
    started = time.monotonic()
    origin = time.time()
    sent = 0
    while time.monotonic() - started < seconds:
        value = {"user_id": f"user-{sent % 50}", "url": "/", "device": "mobile", "amount": 1.0,
                 "event_time": "2026-11-23T10:00:00.000Z", "payload": "", "sent_ms": int(time.time() * 1000)}
        try:
            producer.produce(source, json.dumps(value).encode(), key=str(sent).encode())
        except BufferError:  # more than librdkafka queues: the rate is beyond this producer, wait for room
            producer.poll(0.05)
            continue
        sent += 1
        producer.poll(0)
        pause = started + sent / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    producer.flush(30)
    time.sleep(settle)
    stop.set()
    thread.join(10)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rates", default="100,500",
                        help="input rates (records/s) at which latency (and floor) is measured, comma-separated")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--sections", default="throughput,latency,sustained",
                        help="which measurements to run, comma-separated (default: the first three; also floor)")
    parser.add_argument("--profiles", default="latency,balanced,throughput",
                        help="the profiles whose latency at --rates is measured (latency section)")
    parser.add_argument("--set", action="append", default=[], metavar="PROFILE.SECTION.KEY=VALUE",
                        help="a setting layered on a profile for this run, e.g. latency.producer.linger.ms=1")
    parser.add_argument("--live", default=",".join(LIVE_PROFILES),
                        help="the profiles whose sustainable rate is searched (sustained section)")
    parser.add_argument("--from-rate", type=float, default=2000.0,
                        help="the input rate the search starts from (sustained section)")
    parser.add_argument("--registry-port", type=int, default=18181,
                        help="the port of the registry started beside the cluster (formats section)")
    parser.add_argument("--window", type=float, default=45.0,
                        help="seconds each input rate is held while the lag is watched (sustained; at least 3 "
                             "trigger intervals: the throughput profile's is 10 s)")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    rates = [float(r) for r in args.rates.split(",")]
    print(f"machine load before the run: {os.getloadavg()[0]:.1f}", flush=True)

    work = Path(tempfile.mkdtemp(prefix="kraftform-bench-spark-"))
    state = args.state_dir or work / "cluster"
    runtime = get_runtime("local", state)
    if not (state / STATE_FILE).is_file():
        print("starting a secure 3-broker cluster ...", flush=True)
        runtime.up(CLUSTER, timeout=300)
    admin = read_connection(state / "admin.properties")
    secret = work / "password"
    secret.write_text("bench-password-1")
    specs_dir = work / "specs"
    write_specs(specs_dir, secret, args.set, registry_port=args.registry_port if "formats" in sections else 0)
    specs = load_specs(specs_dir)
    apply_cluster(admin, specs, plan_cluster(admin, specs), ApplyOptions(allow_destructive=True), lambda _m: None)
    job = Connection(admin.bootstrap, "SASL_SSL", "SCRAM-SHA-512", USER, "bench-password-1", admin.ca_path)
    writers = registered_writers(specs, state) if "formats" in sections else {}

    spark = spark_session(job_settings(consumer_of(specs, "tput"), specs), work)
    print(settle(), flush=True)
    if "throughput" in sections:
        throughput(spark, specs, admin, job, work, args.records)
    if "latency" in sections:
        for rate in rates:
            latency(spark, specs, admin, job, work, rate, args.seconds, args.profiles.split(","))
    if "sustained" in sections:
        sustained(spark, specs, admin, job, work, args.window, args.live.split(","), args.from_rate)
    if "floor" in sections:
        floors(admin, rates, args.window)
    if "formats" in sections:
        formats(spark, specs, admin, job, work, args.records, writers)
    spark.stop()
    print(f"\nwork directory: {work}; cluster state: {state} (`kraftform cluster down --state-dir {state} --purge`)")


def registered_writers(specs: SpecSet, state: Path) -> dict[str, str]:
    """The registry beside the cluster started (as `kraftform registry up` does), the Avro subject registered as
    `kraftform apply` does; its versions by id, as `kraftform consumers run` reads them."""
    from kraftform.declared import consumer_gate
    from kraftform.plan.live import ownership_of
    from kraftform.registry.reconcile import apply_subjects, plan_subjects
    from kraftform.runtime.registry.running import avro_writers, runtime_registry

    assert specs.registry is not None
    registry = runtime_registry(state, specs.registry)
    if not registry.running():
        print("starting the schema registry ...", flush=True)
        registry.up(lambda _line: None)
    rest = registry.client()
    owns = ownership_of(specs).topic
    apply_subjects(rest, plan_subjects(rest, specs.subjects, owns, consumer_gate(specs)), False, lambda _line: None)
    return avro_writers(specs, state, consumer_of(specs, "avro"))


def formats(spark: Any, specs: SpecSet, admin: Connection, job: Connection, work: Path, records: int,
            writers: Mapping[str, str]) -> None:
    [schema_id] = (int(i) for i in writers)
    for topic, avro_id in (("bench.in", None), ("bench.avro", schema_id)):
        print(f"producing {records} records of ~1 KB to {topic} ({'Avro' if avro_id else 'JSON'}) ...", flush=True)
        took = produce_records(admin, topic, records, avro_id)
        print(f"  {records / took:,.0f} records/s produced", flush=True)
    passes = (("Avro, from_avro, fields read", "avro"), ("JSON, from_json, fields read", "tput"),
              ("Avro bytes unparsed", "raw-avro"), ("JSON text unparsed", "raw"))
    for _label, name in passes:
        spark_pass(spark, specs, name, job, work, writers=writers)  # warm-up (JIT)
    print("\nformats (records/s, 1 KB records, projection of 3 fields, noop sink, throughput profile; local[2]): by "
          "wall time from the query's start, and by the time its micro-batches took")
    rates: dict[str, list[float]] = {}
    for round_ in (1, 2):
        for label, name in passes:
            rows, took, batches = spark_pass(spark, specs, name, job, work, writers=writers)
            rates.setdefault(name, []).append(rows / batches)
            print(f"  {label:32s} ({round_}) {rows / took:10,.0f}  {rows / batches:10,.0f}   ({rows} rows in "
                  f"{took:.1f} s, batches {batches:.1f} s; {load()})", flush=True)
    best = {name: max(values) for name, values in rates.items()}
    print(f"  Avro at {best['avro'] / best['raw-avro']:.0%} of its unparsed rate, JSON at "
          f"{best['tput'] / best['raw']:.0%} of its own (best of two, by batch time)", flush=True)


def load() -> str:
    """The machine's load over the last minute beside each figure (the bench's own cluster, Spark and clients
    included: on two cores they alone load it above 2)."""
    return f"load {os.getloadavg()[0]:.1f}"


def settle(below: float = 1.0, timeout: float = 300) -> str:
    """Wait until the cluster's and Spark's start-up (JIT, first connections) has left the machine: the 1-minute
    load at most `below`, for at most `timeout` s. Measured at once, the first figures carry a start's load; a
    load that does not fall is another job's, and the figures are then a busy machine's."""
    waited = wait_quiet(timeout, below)
    quiet = os.getloadavg()[0] <= below
    return (f"waited {waited:.0f} s for the start-up's load to pass ({load()})" +
            ("" if quiet else f" -- BUSY: the load stayed above {below} (another job is running); these figures "
                              f"are a busy machine's"))


def throughput(spark: Any, specs: SpecSet, admin: Connection, job: Connection, work: Path, records: int) -> None:
    print(f"producing {records} records of ~1 KB to bench.in (6 partitions) ...", flush=True)
    took = produce_records(admin, "bench.in", records)
    print(f"  {records / took:,.0f} records/s produced", flush=True)
    rows, took, _ = spark_pass(spark, specs, "tput", job, work)
    print(f"warm-up pass: {rows} rows in {took:.1f} s", flush=True)

    print("\nthroughput (records/s, 1 KB JSON, projection, noop sink; local[2]): by wall time from the query's start,"
          " and by the time its micro-batches took")
    for label, name, every_field in (
            ("Spark, throughput profile", "tput", False), ("Spark, throughput, every field parsed", "tput", True),
            ("Spark, untuned defaults", "untuned", False), ("Spark, untuned, every field parsed", "untuned", True),
            ("Spark, throughput (again)", "tput", False), ("Spark, throughput, every field (2)", "tput", True),
            ("Spark, untuned (again)", "untuned", False), ("Spark, no parsing (transport ceiling)", "raw", False)):
        rows, took, batches = spark_pass(spark, specs, name, job, work, every_field)
        print(f"  {label:40s} {rows / took:10,.0f}  {rows / batches:10,.0f}   ({rows} rows in {took:.1f} s, "
              f"batches {batches:.1f} s: start-up {(took - batches) / took:.0%} of the run; {load()})", flush=True)
    for label, parse in (("Python consumer, json.loads + projection", True), ("Python consumer, no parsing", False)):
        took = python_pass(job, "bench.in", records, parse)
        print(f"  {label:40s} {records / took:10,.0f}   ({records} records in {took:.1f} s; {load()})", flush=True)
    whole, fetching = consumer_performance(job, "bench.in", records, work)
    print(f"  {'Kafka ConsumerPerformance (Java, no parsing)':40s} {whole:10,.0f}  {fetching:10,.0f}   (whole run, "
          f"and its fetch phase without the JVM start and group join; {load()})", flush=True)


def latency(spark: Any, specs: SpecSet, admin: Connection, job: Connection, work: Path, rate: float,
            seconds: float, profiles: list[str]) -> None:
    print(f"\nend-to-end latency at {rate:.0f} records/s for {seconds:.0f} s (Kafka to Kafka, projection)")
    floor = measure_latency(job, admin, "bench.floor", "bench.floor", rate, seconds, settle=2)
    print(f"  {'Kafka only (produce -> consume)':40s} {floor.summary()} ({load()})", flush=True)
    for profile in profiles:
        consumer = consumer_of(specs, f"lat-{profile}")
        settings = job_settings(consumer, specs)
        where = placement(consumer, work / f"lat-{profile}-{rate:.0f}")
        query = start_query(spark, consumer, settings, job, where,
                            prepare(where.checkpoint, consumer, settings.facts, False), lambda _l: None)
        time.sleep(10)  # the query is planned and reading before the clock starts
        measured = measure_latency(job, admin, "bench.lat", f"bench.out.{profile}", rate, seconds,
                                   settle=15 if profile == "throughput" else 5)
        query.stop()
        print(f"  {f'Spark, {profile} profile ({settings.trigger.kind})':40s} {measured.summary()} ({load()})",
              flush=True)


class RateProducer:
    """Produces ~1 KB JSON records (the send time inside) to `topic` at `rate` per second on a thread of its own,
    until stopped; records what rate it reached (a Python producer on the same cores may fall short)."""

    def __init__(self, admin: Connection, topic: str, rate: float) -> None:
        self.rate, self.topic, self.sent = rate, topic, 0
        self.producer = Producer({**admin.librdkafka(), "linger.ms": 5, "batch.size": 1_000_000,
                                  "compression.type": "lz4", "acks": "1"})
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = self.ended = 0.0

    def _run(self) -> None:
        head = b'{"user_id": "user-%d", "url": "/p/7", "device": "mobile", "amount": 12.5, ' \
               b'"event_time": "2026-11-23T10:00:00.000Z", "payload": "' + b"x" * 850 + b'", "sent_ms": %d}'
        self.started = time.monotonic()
        while not self.stopping.is_set():
            due = int((time.monotonic() - self.started) * self.rate) - self.sent
            now_ms = int(time.time() * 1000)
            for _ in range(min(due, 5000)):
                try:
                    self.producer.produce(self.topic, head % (self.sent % 5000, now_ms))
                    self.sent += 1
                except BufferError:
                    self.producer.poll(0.01)
                    break
            self.producer.poll(0)
            if due <= 0:
                time.sleep(0.002)
        self.ended = time.monotonic()
        self.producer.flush(60)

    def __enter__(self) -> RateProducer:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stopping.set()
        self.thread.join(90)

    @property
    def achieved(self) -> float:
        return self.sent / max(1e-9, (self.ended or time.monotonic()) - self.started)


def _read_into(admin: Connection, topic: str, origin: float, latencies: Latencies, stop: threading.Event) -> None:
    """Read `topic` from its end until `stop`, each record's latency into `latencies`."""
    out = Consumer({**admin.librdkafka(), "group.id": f"bench-lat-{time.monotonic_ns()}",
                    "auto.offset.reset": "latest", "enable.auto.commit": False, "fetch.wait.max.ms": 5})
    out.subscribe([topic])
    while not stop.is_set():
        for message in out.consume(1000, timeout=0.05):
            if not message.error():
                _record(message, origin, latencies)
    out.close()


def _high_watermarks(reader: Consumer, topic: str, partitions: int) -> int:
    from confluent_kafka import TopicPartition

    return sum(reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
               for p in range(partitions))


@dataclasses.dataclass
class Trial:
    rate: float
    achieved: float
    #: Growth of the lag's troughs over the window, records per second.
    slope: float
    final_lag: int
    latencies: Latencies | None
    #: The query's trigger interval (0: as fast as possible, or Real-time Mode) and the durations of the batches
    #: that started in the window, ms.
    interval_ms: int = 0
    took_ms: tuple[int, ...] = ()

    @property
    def batches(self) -> str:
        """The window's batches: how many, and their mean and longest durations."""
        if not self.took_ms:
            return "no batch ended in the window"
        return (f"{len(self.took_ms)} batches in the window, mean {statistics.mean(self.took_ms) / 1000:.1f} s, "
                f"longest {max(self.took_ms) / 1000:.1f} s")

    @property
    def kept_up(self) -> bool:
        """The producer held the rate, and the query kept up with it. With a trigger interval, as Spark judges it:
        every batch of the window ended within the interval, so the next one started on time with no more input
        than the last (a longer batch is Spark's "falling behind"). The lag's troughs cannot judge it: they move
        by the rate times the spread of batch durations (1 s at 80,000/s: 80,000 records). As fast as possible
        and in Real-time Mode: the lag did not grow by more than 3% of the rate per second."""
        if self.achieved < 0.95 * self.rate:
            return False
        if self.interval_ms:
            return len(self.took_ms) >= 2 and max(self.took_ms) < self.interval_ms
        return self.slope <= 0.03 * self.rate


def live_trial(spark: Any, specs: SpecSet, admin: Connection, job: Connection, work: Path, profile: str,
               rate: float, window: float, measure_latency_too: bool = False) -> Trial:
    """One profile's relay query (Kafka to Kafka) on a live input at `rate`: the lag (input records not yet in
    the output) sampled every second over `window` seconds after 5 s of warm-up."""
    consumer = consumer_of(specs, f"live-{profile}")
    settings = job_settings(consumer, specs)
    where = placement(consumer, work / f"live-{profile}-{time.monotonic_ns()}")
    query = start_query(spark, consumer, settings, job, where, prepare(where.checkpoint, consumer, settings.facts,
                                                                          False), lambda _l: None)
    time.sleep(12)  # planned, subscribed at the end of the input
    reader = Consumer({**admin.librdkafka(), "group.id": f"bench-hw-{time.monotonic_ns()}"})
    output = f"bench.live.out.{profile}"
    latencies = Latencies([])
    stop = threading.Event()
    origin = time.time()

    thread = threading.Thread(target=_read_into, args=(admin, output, origin, latencies, stop), daemon=True)
    if measure_latency_too:
        thread.start()
        time.sleep(3)
    def written() -> tuple[int, int]:
        return (_high_watermarks(reader, "bench.live", LIVE_PARTITIONS),
                _high_watermarks(reader, output, LIVE_PARTITIONS))

    in0, out0 = written()
    samples: list[tuple[float, int]] = []
    with RateProducer(admin, "bench.live", rate) as producer:
        time.sleep(5)
        begin, window_start = time.monotonic(), time.time()
        while time.monotonic() - begin < window:
            into, out = written()
            lag = (into - in0) - (out - out0)
            samples.append((time.monotonic() - begin, lag))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - begin) % 1.0))
    progress = [json.loads(p.json) for p in query.recentProgress]
    took = tuple(p["durationMs"].get("triggerExecution", 0) for p in progress
                 if p.get("durationMs") and _started(p) >= window_start)
    query.stop()
    stop.set()
    if measure_latency_too:
        thread.join(10)
    reader.close()
    # A micro-batch query's lag is a saw-tooth (it grows until a batch ends): compare the troughs of the first and
    # last thirds of the window, each longer than a trigger interval, so that growth is what the query lost.
    third = window / 3
    first = min(lag for t, lag in samples if t < third)
    last = min(lag for t, lag in samples if t >= 2 * third)
    interval = settings.trigger.interval_ms if settings.trigger.kind == "processing_time" else 0
    return Trial(rate, producer.achieved, (last - first) / (2 * third), samples[-1][1],
                 latencies if measure_latency_too else None, interval_ms=interval, took_ms=took)


def _started(progress: dict[str, Any]) -> float:
    """A batch's start (its progress' `timestamp`, UTC), seconds since the epoch."""
    return datetime.datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()


def sustained(spark: Any, specs: SpecSet, admin: Connection, job: Connection, work: Path, window: float,
              profiles: list[str], from_rate: float) -> None:
    """Each profile's highest input rate with its lag bounded (doubling from `from_rate`, then halving the gap between
    the last rate kept up with and the first that was not until it is under 30%), then its end-to-end latency at
    50% and 90% of that rate, beside the Kafka-only floor at the same rates."""
    print(f"\nsustainable input rate (1 KB JSON, relay to Kafka; lag watched {window:.0f} s per rate, kept up: "
          f"growth under 3% of the rate per second)", flush=True)
    found: dict[str, float] = {}
    for profile in profiles:
        kept, failed, rate = 0.0, 0.0, from_rate
        while True:
            trial = live_trial(spark, specs, admin, job, work, profile, rate, window)
            print(f"  {profile:10s} {rate:9,.0f}/s: {'kept up' if trial.kept_up else 'fell behind':11s} lag growth "
                  f"{trial.slope:9,.0f}/s, last lag {trial.final_lag:9,}, producer reached {trial.achieved:9,.0f}/s; "
                  f"{trial.batches} ({load()})", flush=True)
            if trial.kept_up:
                kept = rate
            elif trial.achieved < 0.95 * rate:
                print(f"  {profile:10s} the producer could not reach {rate:,.0f}/s beside Spark: the search "
                      f"stops there", flush=True)
                break
            else:
                failed = rate
            if failed and kept and rate != (kept + failed) / 2 and failed / kept > 1.3:
                rate = (kept + failed) / 2
            elif failed or not trial.kept_up:
                break
            else:
                rate *= 2
        found[profile] = kept
        print(f"  {profile:10s} sustains {kept:,.0f} records/s", flush=True)
    print("\nend-to-end latency at 50% and 90% of each profile's sustainable rate (relay to Kafka)", flush=True)
    for profile, rate in found.items():
        for share in (0.5, 0.9):
            if rate <= 0:
                continue
            trial = live_trial(spark, specs, admin, job, work, profile, rate * share, window, True)
            assert trial.latencies is not None
            print(f"  {profile:10s} at {rate * share:9,.0f}/s: {trial.latencies.summary()} ({load()})", flush=True)
    floors(admin, sorted({r * share for r in found.values() if r > 0 for share in (0.5, 0.9)}), window)


def floors(admin: Connection, rates: list[float], window: float) -> None:
    """The Kafka-only floor at a relay's rates: the same producer as the relay's input (lz4 batches) into a topic
    of as many partitions, read by the same reader, no Spark."""
    for rate in rates:
        latencies = Latencies([])
        stop = threading.Event()
        origin = time.time()
        thread = threading.Thread(target=_read_into, args=(admin, LIVE_FLOOR, origin, latencies, stop), daemon=True)
        thread.start()
        time.sleep(3)
        with RateProducer(admin, LIVE_FLOOR, rate) as producer:
            time.sleep(5 + window)
        time.sleep(2)
        stop.set()
        thread.join(10)
        print(f"  {'Kafka only':10s} at {rate:9,.0f}/s: {latencies.summary()}, producer reached "
              f"{producer.achieved:,.0f}/s ({load()})", flush=True)


if __name__ == "__main__":
    main()
