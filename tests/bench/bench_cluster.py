"""Benchmark, not a test: seconds from `cluster up` to healthy, and resident memory of the whole cluster.

    python tests/bench/bench_cluster.py [--runs N] [--setups plaintext-1,local-3+3,...]

Compares a secure 3-controller, 3-broker cluster on the local and Docker runtimes with a single
PLAINTEXT combined node started from the same jars (the usual test-container setup). "Healthy" is the
same check for all three: every broker registered, and one record produced with acks=all and read back.
Targets (docs/benchmarks.md): secure cluster healthy within 1.5x the single plaintext broker's time,
and under 3 GB resident for all six nodes together. The test clusters of `kraftform.testing` (`test-fast`,
`test-faithful`, from tests/example_project/specs) are timed to the moment a test gets them: healthy, and the
specs' topics, users and ACLs applied.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kraftform.artifacts import ensure_kafka
from kraftform.cluster.connection import Connection
from kraftform.cluster.render import new_cluster_id
from kraftform.kafka.health import wait_healthy
from kraftform.runtime import get_runtime
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.engines.images import build_kafka
from kraftform.runtime.nodes.local import java_binary
from kraftform.specset.model import ClusterSpec, ExternalListener, Security

CLUSTER = ClusterSpec(name="kfbench", brokers=3, kafka_version="4.3.1", controllers=3, racks=("a", "b", "c"),
                      security=Security(external_listener=ExternalListener(True, "localhost", 39092)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_plaintext(work: Path) -> tuple[float, int]:
    """One combined PLAINTEXT node: format, start, healthy. Returns (seconds, resident bytes)."""
    home = ensure_kafka()
    port, controller = _free_port(), _free_port()
    props = work / "server.properties"
    props.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{controller}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={work / 'data'}", "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1", "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0", ""]))
    classpath = str(home / "libs" / "*")
    started = time.monotonic()
    subprocess.run([java_binary(), "-cp", classpath, "kafka.tools.StorageTool", "format", "--cluster-id",
                    new_cluster_id(), "--config", str(props)], check=True, capture_output=True)
    log = open(work / "kafka.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([java_binary(), "-Xms384m", "-Xmx384m", "-cp", classpath, "kafka.Kafka", str(props)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(Connection(f"127.0.0.1:{port}"), {1: "broker"}, 240)
        seconds = time.monotonic() - started
        rss = _rss(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        log.close()
    return seconds, rss


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def bench_secure(runtime_name: str, work: Path) -> tuple[float, int]:
    spec = dataclasses.replace(CLUSTER, name=f"kfbench-{runtime_name}")
    runtime = get_runtime(runtime_name, work / runtime_name)
    started = time.monotonic()
    try:
        runtime.up(spec, timeout=300)
        seconds = time.monotonic() - started
        time.sleep(5)  # let the JVMs settle before reading memory
        return seconds, runtime.resident_bytes()
    finally:
        runtime.down(purge=True)


def bench_test_cluster(topology: str, work: Path) -> tuple[float, int]:
    from kraftform.runtime import runtime_of
    from kraftform.testing.cluster import ephemeral_cluster

    started = time.monotonic()
    with ephemeral_cluster(EXAMPLE_PROJECT / "specs", topology,  # type: ignore[arg-type]
                           base_dir=work / "tests") as cluster:
        seconds = time.monotonic() - started
        time.sleep(5)
        return seconds, runtime_of(cluster.state_dir).resident_bytes()


EXAMPLE_PROJECT = Path(__file__).resolve().parents[1] / "example_project"
SETUPS: dict[str, Callable[[Path], tuple[float, int]]] = {
    "plaintext-1": bench_plaintext,
    "local-3+3": lambda w: bench_secure("local", w),
    "docker-3+3": lambda w: bench_secure("docker", w),
    "test-fast": lambda w: bench_test_cluster("fast", w),
    "test-faithful": lambda w: bench_test_cluster("faithful", w),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--setups", default=",".join(SETUPS), help=f"comma-separated, of {', '.join(SETUPS)}")
    args = parser.parse_args()
    chosen = ["plaintext-1", *(s for s in args.setups.split(",") if s != "plaintext-1")]
    ensure_kafka()
    if "docker-3+3" in chosen:
        build_kafka(docker_client(), [])
    results: dict[str, list[tuple[float, int]]] = {name: [] for name in chosen}
    for _ in range(args.runs):
        work = Path(tempfile.mkdtemp(prefix="kraftform-bench-"))
        try:
            for name in chosen:  # side by side in each run: the machine's state is the same for all
                results[name].append(SETUPS[name](work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(s for s, _ in results["plaintext-1"])
    print(f"{'setup':<12} {'runs':>4} {'median s':>9} {'min s':>7} {'max s':>7} {'x plain':>8} {'RSS MiB':>8}")
    for name, rows in results.items():
        secs = [s for s, _ in rows]
        rss = statistics.median(r for _, r in rows) / 2**20
        print(f"{name:<12} {len(rows):>4} {statistics.median(secs):>9.1f} {min(secs):>7.1f} {max(secs):>7.1f} "
              f"{statistics.median(secs) / base:>8.2f} {rss:>8.0f}")


if __name__ == "__main__":
    main()
