"""Benchmark, not a test: the Pulumi topic set creating N topics, against `kraftform apply` of the same.

    python tests/bench/bench_pulumi.py [--topics 1000] [--state-dir DIR]

Starts a secure 3+3 local cluster (or reuses --state-dir), then:
1. creates N topics through Pulumi's provider host, started as the engine's launcher starts it
   (tests/integration/pulumi/engine.py), with the engine's calls: Check, Create; then the next `pulumi up`
   with the same specs (Check, Diff: no change) and one with a topic more (Check, Diff, Update); wall times;
2. creates another N topics by calling the same provider in this process, counting every Admin request each
   call sends (the provider host's requests cannot be seen from outside);
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pulumi.runtime import proto

from kraftform.cluster.connection import read_connection
from kraftform.kafka import admin as admin_module
from kraftform.pulumi.topics import TopicSetProvider

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tests.bench.bench_reconcile import CLUSTER, wait_for_replicas  # noqa: E402
from tests.bench.clusters import bench_cluster  # noqa: E402
from tests.integration.pulumi.engine import ProviderHost  # noqa: E402


def topic() -> dict[str, Any]:
    return {"partitions": 1, "replication_factor": 3, "config": {"retention.ms": "86400000"}}


def props(state_dir: Path, names: list[str]) -> dict[str, Any]:
    c = read_connection(state_dir / "admin.properties")
    return {"connection": {"bootstrap": c.bootstrap, "protocol": c.protocol, "mechanism": c.mechanism,
                           "username": c.username, "password": c.password, "ca_path": c.ca_path},
            "protect": False, "topics": {n: topic() for n in names}}


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.monotonic()
    result = work()
    return time.monotonic() - started, result


def through_host(state_dir: Path, names: list[str]) -> tuple[float, float, float]:
    """Seconds for the first `pulumi up` (Check, Create), a no-op one (Check, Diff) and one adding a topic
    (once the first up's replicas are on disk)."""
    host = ProviderHost(REPO, Path(tempfile.mkdtemp(prefix="kfbench-host-")))
    provider, wanted = TopicSetProvider(), props(state_dir, names)
    try:
        def first() -> tuple[str, dict[str, Any], dict[str, Any]]:
            inputs, failures = host.check(provider, "topics", {}, wanted)
            assert failures == [], failures
            return (*host.create(provider, "topics", inputs), inputs)

        create_s, (id_, outputs, inputs) = timed(first)

        def again() -> Any:
            same, _ = host.check(provider, "topics", inputs, wanted)
            return host.diff(provider, "topics", id_, outputs, same).changes

        noop_s, changes = timed(again)
        assert changes == proto.DiffResponse.DIFF_NONE

        wait_for_replicas(state_dir, names[0].split(".")[0] + ".", len(names) * 3)

        def one_more() -> Any:
            more, _ = host.check(provider, "topics", inputs, {**wanted, "topics": {
                **wanted["topics"], f"{names[0]}.more": topic()}})
            assert host.diff(provider, "topics", id_, outputs, more).changes == proto.DiffResponse.DIFF_SOME
            return host.update(provider, "topics", id_, outputs, more)

        grow_s, _ = timed(one_more)
        return create_s, noop_s, grow_s
    finally:
        host.close()


def counted_in_process(state_dir: Path, names: list[str]) -> tuple[float, Counter[str]]:
    """The same Create in this process, every Admin's request counter kept (benchmark instrumentation only)."""
    counters: list[Counter[str]] = []
    original = admin_module.Admin.__init__

    def keep(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        counters.append(self.requests)

    admin_module.Admin.__init__ = keep  # type: ignore[method-assign]
    try:
        took, _ = timed(lambda: TopicSetProvider().create(props(state_dir, names)))
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
        # Each phase starts on a quiet cluster: brokers create a phase's replicas after its apply returns.
        host_s, noop_s, grow_s = through_host(state_dir, [f"host.t{i:05d}" for i in range(n)])
        print(f"provider host: {n} topics created in {host_s:.1f} s; the next `pulumi up` with the same specs "
              f"(Check, Diff) {noop_s:.2f} s; one topic more (Check, Diff, Update) {grow_s:.1f} s", flush=True)
        wait_for_replicas(state_dir, "host.", (n + 1) * 3)
        direct_s, requests = counted_in_process(state_dir, [f"direct.t{i:05d}" for i in range(n)])
        wait_for_replicas(state_dir, "direct.", n * 3)
        total = sum(requests.values())
        print(f"provider in process: {n} topics in {direct_s:.1f} s, {total} Admin requests: "
              f"{dict(sorted(requests.items()))}", flush=True)
        apply_s, apply_requests = with_apply(state_dir, [f"apply.t{i:05d}" for i in range(n)], work)
        print(f"kraftform apply: {n} topics in {apply_s:.1f} s (its first read: {apply_requests})", flush=True)
        print(f"\n| topics | provider host s | no-op up s | +1 topic s | in-process s | Admin requests "
              f"| kraftform apply s | host / apply |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n"
              f"| {n} | {host_s:.1f} | {noop_s:.2f} | {grow_s:.1f} | {direct_s:.1f} | {total} | {apply_s:.1f} "
              f"| {host_s / apply_s:.1f}x |")


if __name__ == "__main__":
    main()
