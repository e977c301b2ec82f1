"""Benchmark, not a test: day-2 changes on a real secure cluster under load.

    python tests/bench/bench_roll.py [--rate 500] [--data-mib 256] [--throttle 20MiB/s] [--state-dir DIR]

Starts a secure 3-controller, 3-broker local cluster on 3 racks (or reuses the one in --state-dir), then:
1. steady state: Kafka's ProducerPerformance (acks=all, idempotent) at --rate records/s for 60 s, its latency
   percentiles after a 10 s warm-up (a new JVM's first seconds measure the JIT, not the cluster);
2. a read-only broker setting changed in the specs and `kraftform apply --state-dir` rolling the three brokers,
   the same producer running throughout: per-node and total roll time (from apply's own progress lines), the
   producer's percentiles and its maximum (the longest a send waited: one node's failover at most);
3. --data-mib of records written to 6 topics, then `brokers: 4` applied with --throttle: the time from apply to a
   balanced 4-broker cluster and the bytes moved per second against the throttle.
Prints one table per part, with the machine's load average beside each figure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kraftform.declared import load_specs
from kraftform.runtime.nodes.deployment import admin_config, load
from kraftform.runtime.nodes.tools import PRODUCER_PERFORMANCE, kafka_tool_command
from kraftform.verification.toolout import ProducerRun, producer_summary

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from tests.bench.clusters import bench_cluster

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cluster" / "cluster.yaml"


def kraftform(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("kraftform") or "kraftform", *args], capture_output=True, text=True,
                          timeout=3600, check=False)


def load_average() -> str:
    return f"{os.getloadavg()[0]:.2f}"


class Load:
    """ProducerPerformance at a fixed rate for `seconds`, in the background."""

    def __init__(self, state: Path, topic: str, rate: int, seconds: int) -> None:
        deployment = load(state)
        config = state / "bench-producer.properties"
        config.write_text((state / "admin.properties").read_text() + "enable.idempotence=true\nacks=all\n")
        self.out: list[str] = []
        self.process = subprocess.Popen(kafka_tool_command(PRODUCER_PERFORMANCE, [
            "--bootstrap-server", deployment.bootstrap, "--topic", topic, "--num-records", str(rate * seconds),
            "--throughput", str(rate), "--record-size", "512", "--warmup-records", str(rate * 10),
            "--command-config", str(config)]),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.thread = threading.Thread(target=lambda: self.out.extend(self.process.stdout or []), daemon=True)
        self.thread.start()

    def result(self) -> ProducerRun:
        self.process.wait(timeout=3600)
        self.thread.join(timeout=30)
        return producer_summary("".join(self.out))


def edit(specs: Path, **changes: object) -> None:
    doc = yaml.safe_load((specs / "cluster.yaml").read_text())
    doc["cluster"].update(changes)
    (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))


def row(label: str, run: ProducerRun, load_avg: str) -> str:
    return (f"| {label} | {run.records_per_s:,.0f} | {run.p50_ms:.0f} | {run.p99_ms:.0f} | {run.max_ms:,.0f} | "
            f"{load_avg} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--data-mib", type=int, default=256)
    parser.add_argument("--throttle", default="20MiB/s")
    parser.add_argument("--state-dir", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kraftform-bench-roll-"))
    specs = work / "specs"
    specs.mkdir()
    doc = yaml.safe_load(FIXTURE.read_text())
    doc["cluster"]["name"] = "kfbenchroll"
    (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))
    with bench_cluster(load_specs(specs).cluster, args.state_dir or work / "state") as state:
        admin = AdminClient(admin_config(state).librdkafka())
        admin.create_topics([NewTopic("bench.roll", 6, 3, config={"min.insync.replicas": "2"})])["bench.roll"].result()

        steady = Load(state, "bench.roll", args.rate, 60)
        steady_run, steady_load = steady.result(), load_average()

        edit(specs, broker_config={"log.retention.check.interval.ms": "600000"})
        during = Load(state, "bench.roll", args.rate, 150)
        time.sleep(10)
        started = time.monotonic()
        rolled = kraftform("apply", str(specs), "--state-dir", str(state), "--auto-approve")
        roll_s = time.monotonic() - started
        roll_load = load_average()
        roll_run = during.result()
        if rolled.returncode != 0:
            print(rolled.stdout + rolled.stderr)
            return 1
        per_node = re.findall(r"\] (\S+): back in ([\d.]+) s", rolled.stderr)

        print(f"\nRolling restart of 3 brokers under {args.rate} records/s (acks=all, idempotent, 512 B):\n")
        print("| producer | records/s | p50 ms | p99 ms | max ms | load avg |")
        print("| --- | --- | --- | --- | --- | --- |")
        print(row("steady state (60 s)", steady_run, steady_load))
        print(row("during the roll (150 s run)", roll_run, roll_load))
        print("\n| node | back in (s) |\n| --- | --- |")
        for name, seconds in per_node:
            print(f"| {name} | {seconds} |")
        print(f"| total apply (gates included) | {roll_s:.1f} |")

        producer = Producer({**admin_config(state).librdkafka(), "linger.ms": 50, "compression.type": "none"})
        topics = [f"bench.data.{i}" for i in range(6)]
        for future in admin.create_topics([NewTopic(t, 6, 3) for t in topics]).values():
            future.result()
        payload = os.urandom(1000)
        for i in range(args.data_mib * 1024):
            producer.produce(topics[i % 6], payload)
            if i % 20_000 == 0:
                producer.flush()
        producer.flush()
        edit(specs, brokers=4)
        started = time.monotonic()
        grown = kraftform("apply", str(specs), "--state-dir", str(state), "--auto-approve", "--throttle",
                          args.throttle)
        grow_s = time.monotonic() - started
        if grown.returncode != 0:
            print(grown.stdout + grown.stderr)
            return 1
        copied = re.search(r"partitions: ([\d.]+) MiB copied in ([\d.]+) s \(([\d.]+) MiB/s", grown.stderr)
        print(f"\n3 -> 4 brokers with {args.data_mib} MiB in 6 topics, --throttle {args.throttle} "
              f"(load avg {load_average()}):\n")
        print("| measure | value |\n| --- | --- |")
        if copied:
            print(f"| copied | {copied.group(1)} MiB in {copied.group(2)} s |")
            print(f"| rate against the throttle | {copied.group(3)} MiB/s against {args.throttle} |")
        print(f"| apply to a balanced 4-broker cluster | {grow_s:.1f} s |")
        if args.state_dir is None:
            edit(specs, brokers=3)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
