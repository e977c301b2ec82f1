"""Benchmark, not a test: a secure 3-controller, 3-broker cluster on three hosts against the same on one engine.

    python tests/bench/bench_hosts.py [--runs N]

The hosts are the test harness's (tests/integration/hosts/harness.py: each a network namespace with its own
Docker engine, on one machine, so the figures are what kraftform adds by spreading the nodes, not what a network
between machines costs). For each layout, each run: `cluster up --runtime docker` until every broker is
registered (seconds), then a roll of the three brokers (`resources.broker_heap` changed, `kraftform apply
--state-dir`: seconds for the whole roll), then `cluster down --purge`. Prints a table with the machine's load
average beside each figure. Needs root (the harness makes namespaces and engines).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from tests.integration.hosts import harness

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cluster" / "cluster.yaml"


def kraftform(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("kraftform") or "kraftform", *args], capture_output=True, text=True,
                          timeout=1800, check=False)


def specs_for(work: Path, hosts: list[harness.Host] | None) -> Path:
    specs = work / "specs"
    specs.mkdir(parents=True)
    doc = yaml.safe_load(FIXTURE.read_text())
    doc["cluster"]["name"] = "kfbenchh"
    listener: dict[str, object] = {"enabled": True, "base_port": 39092}
    if hosts:
        doc["cluster"]["racks"] = [f"rack-{h.name}" for h in hosts]
        doc["cluster"]["hosts"] = [{"name": h.name, "docker": h.docker_host, "address": h.address,
                                    "racks": [f"rack-{h.name}"]} for h in hosts]
    else:
        listener["host"] = "localhost"
    doc["cluster"]["security"]["external_listener"] = listener
    (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))
    return specs


def checked(done: subprocess.CompletedProcess[str]) -> None:
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, done.args))}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")


def one_run(hosts: list[harness.Host] | None) -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp:
        work = Path(tmp)
        specs, state = specs_for(work, hosts), work / "state"
        started = time.monotonic()
        checked(kraftform("cluster", "up", str(specs), "--runtime", "docker", "--state-dir", str(state)))
        up = time.monotonic() - started
        doc = yaml.safe_load((specs / "cluster.yaml").read_text())
        doc["cluster"]["resources"] = {"broker_heap": "400MiB"}
        (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))
        started = time.monotonic()
        checked(kraftform("apply", str(specs), "--state-dir", str(state), "--auto-approve"))
        roll = time.monotonic() - started
        load = f"{os.getloadavg()[0]:.2f}"
        checked(kraftform("cluster", "down", "--purge", "--state-dir", str(state)))
        return up, roll, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    made = harness.up(["a", "b", "c"], ["kraftform/kafka:4.4.0"])
    rows = []
    try:
        for label, hosts in (("one engine", None), ("three hosts", made)):
            for run in range(1, args.runs + 1):
                up, roll, load = one_run(hosts)
                rows.append((label, run, up, roll, load))
                print(f"{label} run {run}: up {up:.1f} s, roll {roll:.1f} s (load {load})", flush=True)
    finally:
        harness.down()
    print("\n| layout | run | cluster up (s) | roll of 3 brokers (s) | load average |")
    print("| --- | --- | --- | --- | --- |")
    for label, run, up, roll, load in rows:
        print(f"| {label} | {run} | {up:.1f} | {roll:.1f} | {load} |")
    for label in ("one engine", "three hosts"):
        ups = [r[2] for r in rows if r[0] == label]
        rolls = [r[3] for r in rows if r[0] == label]
        print(f"{label}: median up {statistics.median(ups):.1f} s, median roll {statistics.median(rolls):.1f} s")


if __name__ == "__main__":
    main()
