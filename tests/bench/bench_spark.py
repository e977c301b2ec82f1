"""Benchmark, not a test: the Spark consumers' throughput and end-to-end latency, profile by profile, beside
what a plain Kafka client does on the same cluster in the same run.

    python tests/bench/bench_spark.py [--records 200000] [--rate 500] [--seconds 30] [--state-dir DIR]
                                      [--sections throughput,latency,sustained] [--window 45]

Starts a secure 3-broker local cluster (or reuses the one in --state-dir) and one local[2] Spark session. The
machine's load is printed before the run (marked BUSY when another job was running) and beside each figure.

Throughput: --records JSON records of about 1 KB on a 6-partition topic, read from the start with a projection
(`SELECT user_id, url, amount ... WHERE amount >= 0`) into Spark's noop sink, the rows counted; each pass a new
checkpoint, after a warm-up pass (JIT). Each Spark profile twice: parsing only the 3 fields the query reads (what
the job does) and every field of the value (what it did before). Beside it: Spark with its defaults on the same
query, a confluent-kafka consumer doing the same parsing and projection in Python, and the same consumer without
parsing (the transport ceiling).

Latency: records produced at --rate for --seconds, each carrying its send time; a Kafka-to-Kafka projection;
a reader on the output topic takes receive time minus send time. Beside it: the Kafka-only floor (produce,
then consume, no Spark).

Sustained: for each profile (and Spark's defaults), the highest input rate of 1 KB records at which a
Kafka-to-Kafka relay keeps its lag from growing (doubling from 2,000/s, then halving the last step), each rate
held --window seconds; then the end-to-end latency at 50% and 90% of that rate, and the Kafka-only floor at 50%.
The producer is Python on the same two cores: where it cannot reach a rate, the search says so and stops.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Consumer, Producer

from kraftform.cluster.connection import Connection, read_connection
from kraftform.declared import load_specs
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.runtime import get_runtime
from kraftform.runtime.deployment import STATE_FILE
from kraftform.spark.checkpoint import prepare
from kraftform.spark.job import placement, spark_session, start_query
from kraftform.spark.settings import job_settings
from kraftform.specset.model import ClusterDefaults, ClusterSpec, ConsumerSpec, ManagedScope, Security, SpecSet

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


def write_specs(root: Path, secret: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    topics = [{"name": "bench.in", "partitions": 6}, {"name": "bench.lat", "partitions": 2},
              {"name": "bench.floor", "partitions": 2}]
    outputs = {v: f"bench.out.{v}" for v in ("latency", "throughput", "balanced")}
    topics += [{"name": t, "partitions": 2} for t in outputs.values()]
    topics += [{"name": "bench.live", "partitions": 6}]
    topics += [{"name": f"bench.live.out.{v}", "partitions": 6} for v in LIVE_PROFILES]
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
    docs = {
        "cluster.yaml": {"cluster": {"name": CLUSTER.name, "brokers": 3, "racks": list(CLUSTER.racks),
                                     "defaults": {"replication_factor": 3, "min_insync_replicas": 2},
                                     "managed_scope": {"topic_prefixes": ["bench."]}}},
        "topics.yaml": {"topics": topics},
        "users.yaml": {"users": [{"name": USER, "password": {"file": str(secret)}}]},
        "acls.yaml": {"acls": acls},
        # Spark as it comes: no fetch tuning, no split of the input, no trigger.
        "profiles.yaml": {"profiles": [{"name": "untuned", "spark": {}}]},
        "consumers.yaml": {"consumers": consumers},
    }
    for name, data in docs.items():
        (root / name).write_text(yaml.safe_dump(data, sort_keys=False))


def consumer_of(specs: SpecSet, name: str) -> ConsumerSpec:
    return next(c for c in specs.consumers if c.name == name)


def produce_records(admin: Connection, topic: str, count: int) -> float:
    """About 1 KB JSON records as fast as the producer goes; returns seconds."""
    producer = Producer({**admin.librdkafka(), "linger.ms": 20, "batch.size": 1_000_000, "compression.type": "lz4"})
    rng = random.Random(1)
    started = time.monotonic()
    for i in range(count):
        value = {"user_id": f"user-{rng.randrange(5000)}", "url": f"/p/{rng.randrange(100)}", "device": "mobile",
                 "amount": round(rng.random() * 100, 2), "event_time": "2026-11-23T10:00:00.000Z",
                 "payload": "x" * 850, "sent_ms": 0}
        while True:
            try:
                producer.produce(topic, json.dumps(value).encode(), key=str(i).encode())
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return time.monotonic() - started


def spark_pass(spark: Any, specs: SpecSet, name: str, connection: Connection, work: Path, every_field: bool = False
               ) -> tuple[int, float, float]:
    """One availableNow pass from the start of the topic: rows, seconds from query start to its end, and
    seconds the micro-batches themselves took (without starting the query). `every_field`: parse the whole
    value, as kraftform did before it parsed only the fields the query reads."""
    consumer = consumer_of(specs, name)
    settings = job_settings(consumer, specs)
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


@dataclasses.dataclass
class Latencies:
    #: (seconds into the run the record was sent, latency in ms)
    samples: list[tuple[float, float]]

    def summary(self) -> str:
        if not self.samples:
            return "no records"
        ordered = sorted(ms for _, ms in self.samples)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        # Where the slowest 1% was sent: a few seconds means a pause (a checkpoint, a GC), spread means load.
        tail = sorted({int(at) for at, ms in self.samples if ms >= p99})
        return (f"p50 {statistics.median(ordered):7.1f} ms   p99 {p99:8.1f} ms   max {ordered[-1]:8.1f} ms   "
                f"({len(ordered)} records; slowest 1% sent in second(s) {_spans(tail)})")


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
    latencies: list[tuple[float, float]] = []
    stop = threading.Event()
    origin = time.time() * 1000
    ready = threading.Event()

    def read() -> None:
        reader = Consumer({**admin.librdkafka(), "group.id": f"bench-reader-{time.monotonic_ns()}",
                           "auto.offset.reset": "latest", "enable.auto.commit": False,
                           "fetch.wait.max.ms": 5, "fetch.min.bytes": 1})
        reader.subscribe([sink], on_assign=lambda *_a: ready.set())
        while not stop.is_set():
            message = reader.poll(0.05)
            if message is None or message.error():
                continue
            now = time.time() * 1000
            sent_ms = json.loads(message.value() or b"{}")["sent_ms"]
            latencies.append(((sent_ms - origin) / 1000, now - sent_ms))
        reader.close()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    ready.wait(30)
    time.sleep(2)
    producer = Producer({**admin.librdkafka(), "linger.ms": 0, "acks": "1"})
    started = time.monotonic()
    origin = time.time() * 1000
    sent = 0
    while time.monotonic() - started < seconds:
        value = {"user_id": f"user-{sent % 50}", "url": "/", "device": "mobile", "amount": 1.0,
                 "event_time": "2026-11-23T10:00:00.000Z", "payload": "", "sent_ms": int(time.time() * 1000)}
        producer.produce(source, json.dumps(value).encode(), key=str(sent).encode())
        sent += 1
        producer.poll(0)
        pause = started + sent / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    producer.flush(30)
    time.sleep(settle)
    stop.set()
    thread.join(10)
    return Latencies(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--sections", default="throughput,latency,sustained",
                        help="which measurements to run, comma-separated (default: all three)")
    parser.add_argument("--window", type=float, default=45.0,
                        help="seconds each input rate is held while the lag is watched (sustained; at least 3 "
                             "trigger intervals: the throughput profile's is 10 s)")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    print(busy_before(), flush=True)

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
    write_specs(specs_dir, secret)
    specs = load_specs(specs_dir)
    apply_cluster(admin, specs, plan_cluster(admin, specs), ApplyOptions(allow_destructive=True), lambda _m: None)
    job = Connection(admin.bootstrap, "SASL_SSL", "SCRAM-SHA-512", USER, "bench-password-1", admin.ca_path)

    spark = spark_session(job_settings(consumer_of(specs, "tput"), specs), work)
    if "throughput" in sections:
        throughput(spark, specs, admin, job, work, args.records)
    if "latency" in sections:
        latency(spark, specs, admin, job, work, args.rate, args.seconds)
    if "sustained" in sections:
        sustained(spark, specs, admin, job, work, args.window)
    spark.stop()
    print(f"\nwork directory: {work}; cluster state: {state} (`kraftform cluster down --state-dir {state} --purge`)")


def load() -> str:
    """The machine's load over the last minute beside each figure (the bench's own cluster, Spark and clients
    included: on two cores they alone load it above 2)."""
    return f"load {os.getloadavg()[0]:.1f}"


def busy_before() -> str:
    """Whether something else was running when the bench started: its figures are then a busy machine's."""
    one = os.getloadavg()[0]
    return f"machine load before the run: {one:.1f}" + (
        " -- BUSY: another job was running; these figures are a busy machine's" if one > 0.5 else " (quiet)")


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
              f"batches {batches:.1f} s; {load()})", flush=True)
    for label, parse in (("Python consumer, json.loads + projection", True), ("Python consumer, no parsing", False)):
        took = python_pass(job, "bench.in", records, parse)
        print(f"  {label:40s} {records / took:10,.0f}   ({records} records in {took:.1f} s; {load()})", flush=True)


def latency(spark: Any, specs: SpecSet, admin: Connection, job: Connection, work: Path, rate: float,
            seconds: float) -> None:
    print(f"\nend-to-end latency at {rate:.0f} records/s for {seconds:.0f} s (Kafka to Kafka, projection)")
    floor = measure_latency(job, admin, "bench.floor", "bench.floor", rate, seconds, settle=2)
    print(f"  {'Kafka only (produce -> consume)':40s} {floor.summary()} ({load()})", flush=True)
    for profile in ("latency", "balanced", "throughput"):
        consumer = consumer_of(specs, f"lat-{profile}")
        settings = job_settings(consumer, specs)
        where = placement(consumer, work / f"lat-{profile}")
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

    @property
    def kept_up(self) -> bool:
        """The lag did not grow (by more than 3% of the input rate per second) and the producer held the rate."""
        return self.slope <= 0.03 * self.rate and self.achieved >= 0.95 * self.rate


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
    latencies: list[tuple[float, float]] = []
    stop = threading.Event()
    origin = time.time()

    def read() -> None:
        out = Consumer({**admin.librdkafka(), "group.id": f"bench-lat-{time.monotonic_ns()}",
                        "auto.offset.reset": "latest", "enable.auto.commit": False, "fetch.wait.max.ms": 5})
        out.subscribe([output])
        while not stop.is_set():
            for message in out.consume(1000, timeout=0.05):
                if not message.error():
                    now = time.time() * 1000
                    sent_ms = json.loads(message.value() or b"{}")["sent_ms"]
                    latencies.append((sent_ms / 1000 - origin, now - sent_ms))
        out.close()

    thread = threading.Thread(target=read, daemon=True)
    if measure_latency_too:
        thread.start()
        time.sleep(3)
    in0, out0 = _high_watermarks(reader, "bench.live", 6), _high_watermarks(reader, output, 6)
    samples: list[tuple[float, int]] = []
    with RateProducer(admin, "bench.live", rate) as producer:
        time.sleep(5)
        begin = time.monotonic()
        while time.monotonic() - begin < window:
            lag = (_high_watermarks(reader, "bench.live", 6) - in0) - (_high_watermarks(reader, output, 6) - out0)
            samples.append((time.monotonic() - begin, lag))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - begin) % 1.0))
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
    return Trial(rate, producer.achieved, (last - first) / (2 * third), samples[-1][1],
                 Latencies(latencies) if measure_latency_too else None)


def sustained(spark: Any, specs: SpecSet, admin: Connection, job: Connection, work: Path, window: float) -> None:
    """Each profile's highest input rate with its lag bounded (doubling from 2,000/s, then one step between the
    last rate kept up with and the first that was not), then its end-to-end latency at 50% and 90% of that rate,
    beside the Kafka-only floor at the same rates."""
    print(f"\nsustainable input rate (1 KB JSON, relay to Kafka; lag watched {window:.0f} s per rate, kept up: "
          f"growth under 3% of the rate per second)", flush=True)
    found: dict[str, float] = {}
    for profile in LIVE_PROFILES:
        kept, failed, rate = 0.0, 0.0, 2000.0
        while True:
            trial = live_trial(spark, specs, admin, job, work, profile, rate, window)
            print(f"  {profile:10s} {rate:9,.0f}/s: {'kept up' if trial.kept_up else 'fell behind':11s} lag growth "
                  f"{trial.slope:9,.0f}/s, last lag {trial.final_lag:9,}, producer reached {trial.achieved:9,.0f}/s "
                  f"({load()})", flush=True)
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
    for rate in sorted({r * share for r in found.values() if r > 0 for share in (0.5,)}):
        floor = measure_latency(job, admin, "bench.floor", "bench.floor", rate, window, settle=2)
        print(f"  {'Kafka only':10s} at {rate:9,.0f}/s: {floor.summary()} ({load()})", flush=True)


if __name__ == "__main__":
    main()
