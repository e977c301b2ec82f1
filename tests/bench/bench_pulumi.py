"""Benchmark, not a test: the Pulumi topic provider creating N topics, against `kraftform apply` of the same.

    python tests/bench/bench_pulumi.py [--topics 1000] [--state-dir DIR]

Starts a secure 3+3 local cluster (or reuses --state-dir), then:
1. creates N topics through Pulumi's provider host, started as the engine's launcher starts it
   (tests/integration/pulumi/engine.py) and called concurrently as the engine calls it (the dynamic provider
   host serves 4 calls at a time: `max_workers=4` in pulumi/dynamic/__main__.py); wall time;
2. creates another N topics by calling the same provider in this process with the same concurrency, counting
   every Admin request each call sends (the provider host's requests cannot be seen from outside);
3. creates another N topics with `kraftform apply`, wall time and the requests it reports.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from kraftform.kafka import admin as admin_module
from kraftform.kafka.connect import read_connection
from kraftform.pulumi.providers import TopicProvider

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tests.bench.bench_reconcile import CLUSTER  # noqa: E402
from tests.bench.clusters import bench_cluster  # noqa: E402
from tests.integration.pulumi.engine import ProviderHost  # noqa: E402

CONCURRENCY = 4  # what the dynamic provider host serves at once


def props(state_dir: Path, name: str) -> dict[str, Any]:
    c = read_connection(state_dir / "admin.properties")
    return {"connection": {"bootstrap": c.bootstrap, "protocol": c.protocol, "mechanism": c.mechanism,
                           "username": c.username, "password": c.password, "ca_path": c.ca_path},
            "name": name, "partitions": 1, "replication_factor": 3, "config": {"retention.ms": "86400000"}}


def through_host(state_dir: Path, names: list[str]) -> float:
    host = ProviderHost(REPO, Path(tempfile.mkdtemp(prefix="kfbench-host-")))
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(lambda n: host.create(TopicProvider(), n, props(state_dir, n)), names))
        return time.monotonic() - started
    finally:
        host.close()


def counted_in_process(state_dir: Path, names: list[str]) -> tuple[float, Counter[str]]:
    """The same calls in this process, every Admin's request counter kept (benchmark instrumentation only)."""
    counters: list[Counter[str]] = []
    original = admin_module.Admin.__init__

    def keep(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        counters.append(self.requests)

    admin_module.Admin.__init__ = keep  # type: ignore[method-assign]
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(lambda n: TopicProvider().create(props(state_dir, n)), names))
        took = time.monotonic() - started
    finally:
        admin_module.Admin.__init__ = original  # type: ignore[method-assign]
    return took, sum(counters, Counter())


def with_apply(state_dir: Path, names: list[str], work: Path) -> tuple[float, str]:
    specs = work / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    cluster = {"cluster": {"name": CLUSTER.name, "brokers": 3, "racks": list(CLUSTER.racks),
                           "managed_scope": {"topic_prefixes": ["apply."]}}}
    (specs / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    (specs / "topics.yaml").write_text(yaml.safe_dump({"topics": [
        {"name": n, "partitions": 1, "replication_factor": 3, "config": {"retention.ms": "1d"}} for n in names]}))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kraftform", "apply", str(specs), "--auto-approve",
                           "--command-config", str(state_dir / "admin.properties")],
                          capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"kraftform apply failed:\n{done.stderr[-3000:]}")
    observed = re.search(r"with (\d+) Admin requests", done.stderr)
    return took, observed.group(0) if observed else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--state-dir", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kfbench-pulumi-"))
    state_dir = args.state_dir or work / "cluster"
    n = args.topics
    with bench_cluster(CLUSTER, state_dir):
        host_s = through_host(state_dir, [f"host.t{i:05d}" for i in range(n)])
        print(f"provider host: {n} topics in {host_s:.1f} s ({CONCURRENCY} calls at a time)", flush=True)
        direct_s, requests = counted_in_process(state_dir, [f"direct.t{i:05d}" for i in range(n)])
        print(f"provider in process: {n} topics in {direct_s:.1f} s, {sum(requests.values())} Admin requests "
              f"({sum(requests.values()) / n:.1f} per topic): {dict(sorted(requests.items()))}", flush=True)
        apply_s, apply_requests = with_apply(state_dir, [f"apply.t{i:05d}" for i in range(n)], work)
        print(f"kraftform apply: {n} topics in {apply_s:.1f} s (its first read: {apply_requests})", flush=True)
        total = sum(requests.values())
        print(f"\n| topics | provider host s | in-process s | Admin requests | per topic | kraftform apply s "
              f"| host / apply |\n| --- | --- | --- | --- | --- | --- | --- |\n| {n} | {host_s:.1f} | {direct_s:.1f} "
              f"| {total} | {total / n:.1f} | {apply_s:.1f} | {host_s / apply_s:.1f}x |")


if __name__ == "__main__":
    main()
