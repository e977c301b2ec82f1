"""Benchmark, not a test: change data capture through Kafka Connect, beside Kafka's own producer on the same cluster.

    python tests/bench/bench_connect.py [--rows 100000] [--topology fast|faithful]

A secure test cluster (`ephemeral_cluster`, the tests' fixture specs), a Connect worker started as `kraftform
connect up` starts it, PostgreSQL started as kraftform's runtime starts it (Debian's package). Declared: Debezium's
PostgreSQL connector capturing `public.orders` into `cdc.public.orders` (3 partitions) and Kafka's FileStream sink
writing that topic to a file. Measured:

- apply to first record: from `apply` sending the connectors (the table holding one row) to that row's snapshot
  record read from the topic by a consumer started beforehand;
- capture: --rows rows inserted in one transaction (`INSERT ... SELECT generate_series`), then the time until the
  topic holds a change record for each (end offsets), counted from the insert's start and from its commit;
- sink: the time until the FileStream sink's file holds a line for each, from the insert's start;
- beside them: Kafka's ProducerPerformance writing as many records of the capture records' mean size to a topic of
  the same partitions, as the admin, acks=all.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from confluent_kafka import Consumer, TopicPartition

from kraftform.connect.reconcile import apply_connect, plan_connect
from kraftform.kafka.observe import acl_bindings
from kraftform.runtime.connect.clusters import start_declared
from kraftform.runtime.connect.jvm_workers import ConnectWorkers
from kraftform.runtime.nodes.tools import PRODUCER_PERFORMANCE, run_kafka_tool
from kraftform.runtime.postgres import LocalPostgres
from kraftform.testing.cluster import ephemeral_cluster
from kraftform.verification.toolout import producer_summary

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from tests.integration.connect.conftest import DEBEZIUM, FILE_SINK, POSTGRES_CONNECTOR

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cluster"
CDC, BASELINE, PARTITIONS = "cdc.public.orders", "perf.baseline", 3
PG_ENV, USER_ENV = "KRAFTFORM_BENCH_PG_PASSWORD", "KRAFTFORM_BENCH_CONNECT_PASSWORD"


def _specs(root: Path, sink_file: Path) -> None:
    shutil.copy(FIXTURE / "cluster.yaml", root / "cluster.yaml")
    (root / "kafka.yaml").write_text(yaml.safe_dump({
        "topics": [{"name": CDC, "partitions": PARTITIONS}, {"name": BASELINE, "partitions": PARTITIONS}],
        "users": [{"name": "bench-connect", "password": {"env": USER_ENV}}]}))
    (root / "connect.yaml").write_text(yaml.safe_dump({"connect": [{
        "name": "bench-connect", "user": "bench-connect", "internal_topics": {"offsets_partitions": 3},
        "config": {"offset.flush.interval.ms": 1000}, "plugins": [dict(DEBEZIUM)],
        "connectors": [
            {"name": "orders-cdc", "class": POSTGRES_CONNECTOR, "type": "source", "topics": [CDC],
             "config": {"database.hostname": "127.0.0.1", "database.port": 0, "database.user": "cdc",
                        "database.password": {"env": PG_ENV}, "database.dbname": "orders", "topic.prefix": "cdc",
                        "table.include.list": "public.orders", "plugin.name": "pgoutput",
                        "slot.name": "kraftform_bench", "publication.autocreate.mode": "filtered",
                        # Spread over the partitions by key (the row's id), as a production capture topic is.
                        "max.batch.size": 8192, "max.queue.size": 32768}},
            {"name": "orders-archive", "class": FILE_SINK, "type": "sink", "topics": [CDC],
             "config": {"file": str(sink_file)}}]}]}))


def _end_offsets(client: dict[str, str], topic: str) -> int:
    consumer = Consumer({**client, "group.id": f"bench-{secrets.token_hex(3)}"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS))
    finally:
        consumer.close()


def _mean_value_size(client: dict[str, str], topic: str, sample: int = 2000) -> int:
    consumer = Consumer({**client, "group.id": f"bench-{secrets.token_hex(3)}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    sizes: list[int] = []
    deadline = time.monotonic() + 60
    while len(sizes) < sample and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and not message.error() and message.value():
            sizes.append(len(message.value() or b""))
    consumer.close()
    return sum(sizes) // max(1, len(sizes))


def _lines(path: Path) -> int:
    if not path.is_file():
        return 0
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--topology", choices=("fast", "faithful"), default="fast")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kraftform-bench-connect-"))
    root, sink_file = work / "specs", work / "archive.txt"
    root.mkdir()
    _specs(root, sink_file)
    os.environ[PG_ENV] = secrets.token_urlsafe(16)
    pg = LocalPostgres(os.environ[PG_ENV]).up()
    try:
        pg.capture_database("orders", "cdc", "CREATE TABLE orders (id bigserial PRIMARY KEY, item text NOT NULL, "
                                             "qty int NOT NULL, note text NOT NULL)")
        spec_text = (root / "connect.yaml").read_text().replace("database.port: 0", f"database.port: {pg.port}")
        (root / "connect.yaml").write_text(spec_text)
        pg.psql("INSERT INTO orders (item, qty, note) VALUES ('first', 1, 'the row apply captures first')",
                database="orders")
        with ephemeral_cluster(root, args.topology, "local", base_dir=work / "clusters") as cluster:
            os.environ[USER_ENV] = cluster.passwords["bench-connect"]
            client = cluster.client()
            (spec,) = cluster.specs.connect
            started = time.monotonic()
            start_declared(cluster.state_dir, cluster.specs, spec, {**os.environ, **cluster.env()}, print)
            print(f"worker up in {time.monotonic() - started:.1f} s")
            rest = ConnectWorkers(cluster.state_dir, spec).rest()

            first: list[float] = []
            reader = Consumer({**client, "group.id": "bench-first", "auto.offset.reset": "earliest"})
            reader.subscribe([CDC])
            reader.poll(1.0)  # joined before apply starts

            def watch() -> None:
                while not first:
                    message = reader.poll(0.2)
                    if message is not None and not message.error():
                        first.append(time.monotonic())

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            t0 = time.monotonic()
            apply_connect(rest, spec, plan_connect(rest, spec, acl_bindings(cluster.admin)), print)
            watcher.join(120)
            reader.close()
            to_first = first[0] - t0 if first else float("nan")

            before = _end_offsets(client, CDC)
            t_insert = time.monotonic()
            pg.psql(f"INSERT INTO orders (item, qty, note) SELECT 'item-' || g, g, repeat('x', 100) "
                    f"FROM generate_series(1, {args.rows}) g", database="orders")
            t_commit = time.monotonic()
            want = before + args.rows
            captured = sunk = None
            deadline = time.monotonic() + 900
            while (captured is None or sunk is None) and time.monotonic() < deadline:
                now = time.monotonic()
                if captured is None and _end_offsets(client, CDC) >= want:
                    captured = now
                if sunk is None and _lines(sink_file) >= want:
                    sunk = now
                time.sleep(0.2)
            size = _mean_value_size(client, CDC)
            baseline = producer_summary(run_kafka_tool(PRODUCER_PERFORMANCE, [
                "--topic", BASELINE, "--num-records", str(args.rows), "--record-size", str(size), "--throughput",
                "-1", "--producer-props", "acks=all", "--command-config", str(cluster.properties())], timeout=600))
            ConnectWorkers(cluster.state_dir, spec).down(purge=True)
    finally:
        pg.down()
        shutil.rmtree(work, ignore_errors=True)

    def rate(end: float | None, start: float) -> str:
        return "did not finish" if end is None else f"{args.rows / (end - start):,.0f} records/s ({end - start:.1f} s)"

    print(f"\n{args.rows:,} rows, capture records of {size} bytes on average, {PARTITIONS} partitions, "
          f"{args.topology} cluster, {os.cpu_count()} cores")
    print("| measure | figure |\n| --- | --- |")
    print(f"| apply to first record | {to_first:.1f} s |")
    print(f"| insert of {args.rows:,} rows (one transaction) | {t_commit - t_insert:.1f} s |")
    print(f"| captured into Kafka, from the insert's start | {rate(captured, t_insert)} |")
    print(f"| captured into Kafka, from the commit | {rate(captured, t_commit)} |")
    print(f"| written by the FileStream sink, from the insert's start | {rate(sunk, t_insert)} |")
    print(f"| Kafka's ProducerPerformance, {size}-byte records, acks=all | {baseline.records_per_s:,.0f} records/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
