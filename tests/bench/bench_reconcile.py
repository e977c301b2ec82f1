"""Benchmark, not a test: reading and reconciling thousands of topics on a real secure cluster.

    python tests/bench/bench_reconcile.py [--sizes 1000 5000] [--state-dir DIR]

Starts a secure 3-controller, 3-broker local cluster (or reuses the one in --state-dir), then for each size
N writes specs with N topics (1 partition, RF 3) and one ACL binding per topic, and measures:
- `kraftform apply` creating the topics and ACLs (the first size: 1,000 topics from nothing);
- a no-op `kraftform plan` as a user runs it (a new process: wall time, peak resident memory, Admin
  requests as the command reports them on stderr);
- the same read done the way one-topic-at-a-time tools do it: one DescribeConfigs request per topic.
Loopback round trips are short; across a network each of the one-per-topic requests adds a round trip,
which is what the request counts show. Target (issue 4): a no-op plan of 5,000 topics under 10 s and
500 MB on two cores.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from confluent_kafka.admin import ConfigResource, ResourceType

from kraftform.cluster.connection import read_connection
from kraftform.kafka.admin import Admin, Requests, kafka_python_admin
from kraftform.kafka.health import poll_health
from kraftform.runtime.nodes.deployment import admin_config
from kraftform.specset.model import ClusterDefaults, ClusterSpec, ManagedScope, Security
from kraftform.waiting import until

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from tests.bench.clusters import bench_cluster

CLUSTER = ClusterSpec(name="kfbench", brokers=3, kafka_version="4.3.1", controllers=3, racks=("a", "b", "c"),
                      defaults=ClusterDefaults(1, 3, 2), security=Security(),
                      managed_scope=ManagedScope(("bench.",)),
                      # 384 MiB brokers ran out of heap at 15,000 replicas (5,000 topics, RF 3).
                      broker_heap_bytes=1024 * 1024 * 1024, controller_heap_bytes=256 * 1024 * 1024)
PRINCIPALS = 50

# Runs a command and prints its peak resident set (ru_maxrss of the only child of a fresh process).
PEAK_RSS = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(done.returncode)")


def write_specs(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    cluster = {"cluster": {"name": CLUSTER.name, "brokers": 3, "racks": list(CLUSTER.racks),
                           "defaults": {"replication_factor": 3, "min_insync_replicas": 2},
                           "managed_scope": {"topic_prefixes": ["bench."]}}}
    (root / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    names = [f"bench.t{i:05d}" for i in range(count)]
    (root / "topics.yaml").write_text(yaml.safe_dump({"topics": [
        {"name": n, "partitions": 1, "config": {"retention.ms": "1d"}} for n in names]}))
    (root / "users.yaml").write_text(yaml.safe_dump({"principals": [
        {"name": f"User:CN=app-{p}"} for p in range(PRINCIPALS)]}))
    (root / "acls.yaml").write_text(yaml.safe_dump({"acls": [
        {"principal": f"User:CN=app-{i % PRINCIPALS}", "resource": {"type": "topic", "name": n},
         "operations": ["read"]} for i, n in enumerate(names)]}))


def kraftform(state_dir: Path, *args: str) -> tuple[float, int, str, int]:
    """Run the CLI as users do; (seconds, exit code, stderr, peak resident KiB)."""
    command = [sys.executable, "-c", PEAK_RSS, sys.executable, "-m", "kraftform", *args,
               "--command-config", str(state_dir / "admin.properties")]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    lines = done.stderr.strip().splitlines()
    if done.returncode not in (0, 2):
        errors = [line for line in lines if "error" in line.lower()]
        raise SystemExit(f"kraftform {' '.join(args)} failed:\n" + "\n".join(errors or lines[-40:]))
    return seconds, done.returncode, "\n".join(lines[:-1]), int(lines[-1])


def one_per_topic(state_dir: Path) -> tuple[float, int]:
    """Metadata, then DescribeConfigs topic by topic, each awaited: (seconds, requests)."""
    admin = Admin(read_connection(state_dir / "admin.properties"))
    started = time.monotonic()
    topics = sorted(admin.metadata().topics)
    for name in topics:
        admin.client.describe_configs([ConfigResource(ResourceType.TOPIC, name)])[
            ConfigResource(ResourceType.TOPIC, name)].result()
    return time.monotonic() - started, 1 + len(topics)


def replicas_on_disk(state_dir: Path, prefix: str = "bench.") -> int:
    """Replicas of the benchmark's topics in the brokers' log directories (DescribeLogDirs to each broker):
    a topic is in the metadata before its brokers have created its logs."""
    with kafka_python_admin(read_connection(state_dir / "admin.properties"), Requests()) as client:
        return sum(len(t["partitions"]) for broker in client.describe_log_dirs() for d in broker["log_dirs"]
                   for t in d["topics"] if t["name"].startswith(prefix))


def wait_for_replicas(state_dir: Path, prefix: str, expected: int) -> float:
    """Seconds until `expected` replicas of the topics named `prefix`... are on the brokers' disks."""
    started = time.monotonic()
    until(f"{expected} replicas of {prefix}* on the brokers' disks", 600.0,
          lambda: replicas_on_disk(state_dir, prefix) == expected, interval=1.0)
    return time.monotonic() - started


def reads(state_dir: Path, specs: Path) -> tuple[float, int, float, int, float, int]:
    """(plan s, plan requests, observe s, plan peak KiB, one-per-topic s, its requests)"""
    plan_s, code, plan_log, plan_kib = kraftform(state_dir, "plan", str(specs))
    assert code == 0, f"plan after apply is not empty:\n{plan_log}"
    observed = re.search(r"with (\d+) Admin requests .* in ([\d.]+) s", plan_log)
    assert observed, plan_log
    naive_s, naive_requests = one_per_topic(state_dir)
    return plan_s, int(observed.group(1)), float(observed.group(2)), plan_kib, naive_s, naive_requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--state-dir", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kfbench-"))
    state_dir = args.state_dir or work / "cluster"
    rows = []
    with bench_cluster(CLUSTER, state_dir):
        for size in args.sizes:
            specs = work / f"specs-{size}"
            write_specs(specs, size)
            apply_s, _, apply_log, _apply_kib = kraftform(state_dir, "apply", str(specs), "--auto-approve")
            for line in apply_log.splitlines():  # the time of each step, as apply reports it
                if ": done in " in line or line.startswith(("observed", "Applied", "waited")):
                    print(f"{size} topics: apply {line.strip()}", flush=True)
            # Read a settled cluster: brokers go on creating replicas after the metadata shows the topics.
            settle = time.monotonic()
            wait_for_replicas(state_dir, "bench.", size * 3)
            poll_health(admin_config(state_dir), lambda h: h.ok, timeout=600)
            print(f"{size} topics: all {size * 3} replicas on the brokers' disks {time.monotonic() - settle:.1f} s "
                  f"after the apply returned", flush=True)
            plan_s, requests, observe_s, kib, naive_s, naive_requests = reads(state_dir, specs)
            rows.append((size, apply_s, plan_s, requests, observe_s, kib, naive_s, naive_requests))
            print(f"{size} topics: apply {apply_s:.1f} s; no-op plan {plan_s:.2f} s, {requests} "
                      f"requests, observe {observe_s:.2f} s, peak {kib // 1024} MiB; one DescribeConfigs per "
                      f"topic {naive_s:.2f} s, {naive_requests} requests", flush=True)
    print("\n| topics (+ ACLs) | apply s | no-op plan s | plan requests | observe s "
          "| plan peak MiB | one-per-topic read s | its requests | read time ratio | request ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for size, apply_s, plan_s, requests, observe_s, kib, naive_s, naive_requests in rows:
        print(f"| {size} | {apply_s:.1f} | {plan_s:.2f} | {requests} | {observe_s:.2f} | {kib / 1024:.0f} "
              f"| {naive_s:.2f} | {naive_requests} | {naive_s / observe_s:.1f}x | {naive_requests / requests:.0f}x |")


if __name__ == "__main__":
    main()
