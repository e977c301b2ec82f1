"""Benchmark, not a test: how long acks=all writes pause when one of three hosts is lost, per profile.

    python tests/bench/bench_host_loss.py [--scenarios kill,cut,loss] [--window 60]

A secure 3-controller, 3-broker cluster over the test harness's three hosts (tests/integration/hosts/harness.py,
one rack each). Each profile gets a topic of 6 partitions, 3 replicas, min.insync.replicas 2, and a
confluent-kafka producer with the profile's producer settings (acks=all and idempotence for all four here: the
question is how long an acknowledged write waits, not whether acks=1 loses it), writing 50 records a second to
every partition. Then, for each scenario, host b (leader of about a third of the partitions) is lost for
`--window` seconds and given back:

- kill: every process of the host SIGKILLed (a machine losing power);
- cut: the host's link down (a partition: its broker still runs and believes it leads);
- loss: 20% of the packets the host receives dropped (iptables' statistic match; the kernel has no netem here).

Before each scenario every partition is led by its preferred replica again (a third of them on host b). Per
profile and scenario it prints whether the quorum's leader was on the lost host, the longest pause of
acknowledgements of partitions led elsewhere and of those host b led, the seconds until every partition's first
pause ended (each acknowledges writes again), how many pauses (a gap over a second) the partitions saw, and the
deliveries that failed. Needs root.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from confluent_kafka import ElectionType, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from kraftform.cluster.containers import LOCAL_IMAGE
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.engines.images import build_kafka
from kraftform.runtime.nodes.deployment import admin_config, load
from kraftform.specset.profiles import BUILTIN_PROFILES
from tests.integration.hosts import harness

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cluster" / "cluster.yaml"
PARTITIONS = 6
#: A gap between two acknowledgements of one partition that counts as a pause: at 50 writes a second each
#: partition is acknowledged every 20 ms, linger and a round trip included well under this.
PAUSE_S = 1.0
RATE_PER_PARTITION = 50
#: What every producer here sets whatever its profile says: the writes whose pause is measured are acknowledged
#: by every in-sync replica and written once.
DURABLE = {"acks": "all", "enable.idempotence": "true"}


@dataclass
class Acks:
    """Per partition, the monotonic times of its acknowledgements; failures by kind."""

    times: dict[int, list[float]] = field(default_factory=lambda: {p: [] for p in range(PARTITIONS)})
    failed: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def delivered(self, error: KafkaError | None, message: object) -> None:
        now = time.monotonic()
        with self.lock:
            if error is not None:
                self.failed[error.name()] = self.failed.get(error.name(), 0) + 1
            else:
                self.times[message.partition()].append(now)  # type: ignore[attr-defined]

    def pauses(self, partition: int, start: float, end: float) -> list[tuple[float, float]]:
        """Each gap between acknowledgements over `PAUSE_S` that ends after `start`, as (its length, when it
        ended relative to `start`); a partition still silent at `end` ends its last gap at infinity."""
        with self.lock:
            times = [t for t in self.times[partition] if t >= start - 5]
        found = [(after - before, after - start) for before, after in itertools.pairwise(times)
                 if after >= start and after - before > PAUSE_S]
        if not times or end - times[-1] > PAUSE_S:
            found.append((end - max(times[-1] if times else start, start), float("inf")))
        return found


class Writer:
    """One profile's producer writing to every partition of its topic at a steady rate until stopped."""

    def __init__(self, conf: dict[str, str], topic: str) -> None:
        self.producer = Producer(conf)
        self.topic, self.acks, self.stopping = topic, Acks(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        interval, value = 1.0 / RATE_PER_PARTITION, 0
        next_at = time.monotonic()
        while not self.stopping.is_set():
            for partition in range(PARTITIONS):
                with contextlib.suppress(BufferError):  # the client's queue full: the pause being measured
                    self.producer.produce(self.topic, str(value).encode(), partition=partition,
                                          on_delivery=self.acks.delivered)
                value += 1
            next_at += interval
            while time.monotonic() < next_at:
                self.producer.poll(max(0.0, next_at - time.monotonic()))

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)
        self.producer.flush(30)


def kraftform(*args: str) -> None:
    done = subprocess.run([shutil.which("kraftform") or "kraftform", *args], capture_output=True, text=True,
                          timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"kraftform {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")


def specs_for(work: Path, hosts: list[harness.Host]) -> Path:
    specs = work / "specs"
    specs.mkdir(parents=True)
    doc = yaml.safe_load(FIXTURE.read_text())
    doc["cluster"]["name"] = "kfpause"
    doc["cluster"]["racks"] = [f"rack-{h.name}" for h in hosts]
    doc["cluster"]["hosts"] = [{"name": h.name, "docker": h.docker_host, "address": h.address,
                                "racks": [f"rack-{h.name}"]} for h in hosts]
    doc["cluster"]["security"]["external_listener"] = {"enabled": True, "base_port": 39092}
    (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))
    return specs


def lose(scenario: str, host: harness.Host) -> None:
    if scenario == "kill":
        harness.kill(host)
    elif scenario == "cut":
        harness.cut(host)
    else:
        subprocess.run(["ip", "netns", "exec", host.netns, "iptables", "-I", "INPUT", "-m", "statistic",
                        "--mode", "random", "--probability", "0.2", "-j", "DROP"], check=True)


def restore(scenario: str, host: harness.Host) -> None:
    if scenario == "kill":
        harness.start_engine(host)  # the nodes' restart policy starts them with it
    elif scenario == "cut":
        harness.cut(host, connected=True)
    else:
        subprocess.run(["ip", "netns", "exec", host.netns, "iptables", "-D", "INPUT", "-m", "statistic",
                        "--mode", "random", "--probability", "0.2", "-j", "DROP"], check=True)


def leaders(admin: AdminClient, topic: str) -> dict[int, int]:
    described = admin.list_topics(topic, timeout=30).topics[topic]
    return {p: meta.leader for p, meta in described.partitions.items()}


def preferred_leaders(admin: AdminClient, topics: list[str]) -> None:
    """Each partition led by its first replica again (a host back after a loss leads nothing until Kafka's own
    check, 5 minutes later): every scenario loses a host that leads its share."""
    partitions = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
    with contextlib.suppress(KafkaException):  # "election not needed" for partitions already there
        admin.elect_leaders(ElectionType.PREFERRED, partitions).result(timeout=60)
    time.sleep(2)  # the clients' metadata follows


def quorum_leader(state: Path) -> int:
    done = subprocess.run([shutil.which("kraftform") or "kraftform", "status", "--state-dir", str(state)],
                          capture_output=True, text=True, timeout=300, check=False)
    found = re.search(r"active controller \(quorum leader\) (\d+)", done.stdout)
    return int(found.group(1)) if found else -1


def settled(admin: AdminClient, topics: list[str], timeout: float = 300) -> None:
    """Every partition's replicas back in sync: the next scenario starts from a whole cluster."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(KafkaException):  # the cluster is coming back: ask again
            metadata = admin.list_topics(timeout=10)
            if all(len(p.isrs) == 3 for t in topics for p in metadata.topics[t].partitions.values()):
                return
        time.sleep(2)
    raise SystemExit(f"the cluster did not settle in {timeout:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="kill,cut,loss")
    parser.add_argument("--window", type=float, default=60.0)
    args = parser.parse_args()
    build_kafka(docker_client(), [])
    made = harness.up(["a", "b", "c"], [LOCAL_IMAGE])
    lost = made[1]
    rows: list[tuple[str, str, str, float, float, float, int, int]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-pause-") as tmp:
            work = Path(tmp)
            specs, state = specs_for(work, made), work / "state"
            kraftform("cluster", "up", str(specs), "--runtime", "docker", "--state-dir", str(state))
            conf = admin_config(state).librdkafka()
            admin = AdminClient(conf)
            on_lost = {n.node_id for n in load(state).nodes if n.host == lost.name}
            topics = {name: f"pause.{name}" for name in BUILTIN_PROFILES}
            for done in admin.create_topics([NewTopic(t, PARTITIONS, 3, config={"min.insync.replicas": "2"})
                                             for t in topics.values()]).values():
                done.result(timeout=60)
            for scenario in args.scenarios.split(","):
                kraftform("apply", str(specs), "--state-dir", str(state), "--auto-approve")  # converged
                settled(admin, list(topics.values()))
                preferred_leaders(admin, list(topics.values()))
                led = {name: {p for p, b in leaders(admin, t).items() if b in on_lost} for name, t in topics.items()}
                quorum = quorum_leader(state)
                writers = {name: Writer({**conf, **BUILTIN_PROFILES[name].producer, **DURABLE}, t)
                           for name, t in topics.items()}
                time.sleep(15)  # writing steadily
                where = "on it" if quorum in on_lost else f"{quorum}, elsewhere"
                print(f"{scenario}: host {lost.name} (nodes {sorted(on_lost)}; quorum leader {where}) lost for "
                      f"{args.window:.0f} s (load {os.getloadavg()[0]:.2f})", flush=True)
                start = time.monotonic()
                lose(scenario, lost)
                time.sleep(args.window)
                end = time.monotonic()
                restore(scenario, lost)
                for name, writer in writers.items():
                    writer.stop()
                    pauses = {p: writer.acks.pauses(p, start, end) for p in range(PARTITIONS)}
                    others = max((g for p in pauses if p not in led[name] for g, _ in pauses[p]), default=0.0)
                    failover = max((g for p in led[name] for g, _ in pauses[p]), default=0.0)
                    writable = max((pauses[p][0][1] for p in pauses if pauses[p]), default=0.0)
                    count = sum(len(found) for found in pauses.values())
                    failed = sum(writer.acks.failed.values())
                    rows.append((scenario, name, "yes" if quorum in on_lost else "no", others, failover, writable,
                                 count, failed))
                    print(f"  {name}: others {others:.1f} s, led by {lost.name} ({len(led[name])}) {failover:.1f} s, "
                          f"all writable after {writable:.1f} s, {count} pauses, failed {failed} "
                          f"{writer.acks.failed or ''}", flush=True)
            kraftform("cluster", "down", "--purge", "--state-dir", str(state))
    finally:
        harness.down()
    print("\n| scenario | profile | quorum leader on the host | longest pause, partitions led elsewhere (s) | "
          "longest pause, partitions the host led (s) | every partition writable after (s) | pauses over "
          f"{PAUSE_S:.0f} s | failed deliveries |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for scenario, name, quorum_there, others, failover, writable, count, failed in rows:
        print(f"| {scenario} | {name} | {quorum_there} | {others:.1f} | {failover:.1f} | {writable:.1f} | {count} | "
              f"{failed} |")


if __name__ == "__main__":
    main()
