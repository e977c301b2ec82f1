"""Benchmark, not a test: a user's first impression of `kraftform plan` and `apply`, phase by phase.

    python tests/bench/bench_plan.py [--topics 1000] [--rounds 5] [--state-dir DIR]

On a secure 3-controller, 3-broker local cluster holding `--topics` managed topics with one ACL each (applied by
kraftform, timed) and as many topics and ACLs outside the managed scope (made by another tool, here the Admin API),
prints the median over `--rounds` of a no-op `kraftform plan` as a user runs it (a new process), split into its
phases: importing the CLI, loading the specs (from the validated-specs cache, and validated afresh with
KRAFTFORM_SPEC_CACHE=0), reading the cluster and planning. The anchor is Terraform with Mongey's provider on the
same workload (DESIGN.md: a no-op plan 6.51 s, an apply 233 s, measured 2026-11-25): goals 0.65 s and 2.3 s.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kraftform.kafka.admin import Admin, batches
from kraftform.runtime.nodes.deployment import admin_config

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from kraftform.verification.performance import wait_quiet
from tests.bench.bench_reconcile import CLUSTER, wait_for_replicas, write_specs
from tests.bench.clusters import bench_cluster

TERRAFORM_PLAN_S, TERRAFORM_APPLY_S = 6.51, 233.0


def other_tools_topics(state_dir: Path, count: int) -> None:
    """`count` topics and ACLs outside kraftform's scope, as another team's tool would leave them."""
    admin = Admin(admin_config(state_dir))
    names = [f"other.t{i:05d}" for i in range(count)]
    for batch in batches(names, 500):
        for future in admin.client.create_topics([NewTopic(n, 1, 3) for n in batch]).values():
            try:
                future.result(timeout=120)
            except Exception as exc:  # already there from an earlier run on this cluster
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
    acls = [AclBinding(ResourceType.TOPIC, n, ResourcePatternType.LITERAL, "User:CN=other", "*", AclOperation.READ,
                       AclPermissionType.ALLOW) for n in names]
    for batch in batches(acls, 500):
        for future in admin.client.create_acls(batch).values():
            future.result(timeout=120)


def run(state_dir: Path, *args: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kraftform", *args, "--command-config",
                           str(state_dir / "admin.properties")], capture_output=True, text=True, check=False,
                          env={**os.environ, "KRAFTFORM_TIMINGS": "1", **(env or {})}, timeout=900)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 2):
        raise SystemExit(f"kraftform {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return seconds, done.stderr


def phases(stderr: str) -> dict[str, float]:
    found = re.search(r"timings: specs ([\d.]+) s, cluster and plan ([\d.]+) s, render ([\d.]+) s", stderr)
    observed = re.search(r"Admin requests .* in ([\d.]+) s", stderr)
    assert found and observed, stderr[-2000:]
    return {"specs": float(found[1]), "cluster and plan": float(found[2]), "observe": float(observed[1]),
            "render": float(found[3])}


def imports_s() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import kraftform.cli"], check=True, timeout=120)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--state-dir", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kfbench-plan-"))
    specs = work / "specs"
    write_specs(specs, args.topics)
    with bench_cluster(CLUSTER, args.state_dir or work / "cluster") as state_dir:
        other_tools_topics(state_dir, args.topics)
        # The other tool's topics settled (every replica on the brokers' disks, the load back down) before the
        # first figure: what a user's cluster looks like between deployments.
        wait_for_replicas(state_dir, "other.", args.topics * 3)
        print(f"waited {wait_quiet(600, 1.5):.0f} s for the load to settle (1-minute load {os.getloadavg()[0]:.1f})",
              flush=True)
        load_before = os.getloadavg()[0]
        apply_s, log = run(state_dir, "apply", str(specs), "--auto-approve")
        print(f"apply started at load {load_before:.1f}", flush=True)
        for line in log.splitlines():
            if ": done in " in line or "again" in line or line.startswith(
                    ("observed", "waited", "waiting", "Applied", "read back", "timings")):
                print(f"apply: {line.strip()}", flush=True)
        print(f"apply of {args.topics} topics and ACLs: {apply_s:.2f} s (Terraform's: {TERRAFORM_APPLY_S:.0f} s, "
              f"{TERRAFORM_APPLY_S / apply_s:.0f}x)", flush=True)
        wait_for_replicas(state_dir, "bench.", args.topics * 3)
        print(f"waited {wait_quiet(600, 1.5):.0f} s for the load to settle again", flush=True)
        results: dict[str, list[tuple[float, dict[str, float]]]] = {"cached specs": [], "specs validated": []}
        run(state_dir, "plan", str(specs))  # warms the cache and the page cache
        for _ in range(args.rounds):
            for label, env in (("cached specs", {}), ("specs validated", {"KRAFTFORM_SPEC_CACHE": "0"})):
                seconds, stderr = run(state_dir, "plan", str(specs), env=env)
                results[label].append((seconds, phases(stderr)))
        imports = statistics.median(imports_s() for _ in range(args.rounds))
    print(f"\nno-op plan, {args.topics} managed topics and ACLs beside {args.topics} unmanaged ones, medians of "
          f"{args.rounds} (python -c 'import kraftform.cli': {imports:.2f} s)")
    print("| plan | wall s | specs s | observe s | cluster and plan s | vs Terraform's 6.51 s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, rounds in results.items():
        wall = statistics.median(s for s, _ in rounds)
        median = {k: statistics.median(p[k] for _, p in rounds) for k in rounds[0][1]}
        print(f"| {label} | {wall:.2f} | {median['specs']:.3f} | {median['observe']:.2f} | "
              f"{median['cluster and plan']:.2f} | {TERRAFORM_PLAN_S / wall:.1f}x |")


if __name__ == "__main__":
    main()
