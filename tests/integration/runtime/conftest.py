"""A real cluster of a test's own, from the fixture's cluster section with changes: for tests that change the cluster's
shape or stop its nodes, which the session's shared clusters must not see."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kraftform.cluster.render import TOOL_JAVA_OPTIONS
from kraftform.declared import load_specs
from kraftform.runtime import Runtime, get_runtime
from kraftform.runtime.nodes.deployment import STATE_FILE, admin_config, load
from kraftform.runtime.nodes.rolling import Nodes
from kraftform.runtime.nodes.tools import VERIFIABLE_PRODUCER, kafka_tool_command
from kraftform.testing.cluster import free_base_port
from kraftform.verification.secretscan import CommandLineSampler
from kraftform.verification.toolout import ProducerLog, events

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "cluster" / "cluster.yaml"
#: The test producer's client log: warnings, and its network client's disconnects and timeouts, with their times
#: (log4j2 prints only errors without a configuration): what a pause through a node's or host's loss is read from.
PRODUCER_LOG4J2 = """status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d{HH:mm:ss.SSS}] %p %m (%c{1})%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = err
logger.network.name = org.apache.kafka.clients.NetworkClient
logger.network.level = INFO
logger.metadata.name = org.apache.kafka.clients.Metadata
logger.metadata.level = INFO
"""


@dataclass
class Day2:
    specs: Path
    state: Path
    runtime: Runtime

    def edit(self, **changes: object) -> None:
        """Change the cluster section of the specs, as a user edits cluster.yaml."""
        doc = yaml.safe_load((self.specs / "cluster.yaml").read_text())
        for key, value in changes.items():
            if value is None:
                doc["cluster"].pop(key, None)
            else:
                doc["cluster"][key] = value
        (self.specs / "cluster.yaml").write_text(yaml.safe_dump(doc))

    def kraftform(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [shutil.which("kraftform") or "kraftform", *args, str(self.specs), "--state-dir", str(self.state)]
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
        except subprocess.TimeoutExpired as exc:  # what it said so far, whole: the repr cuts it to a few bytes
            said = b"".join(part if isinstance(part, bytes) else str(part).encode() for part in (exc.stdout, exc.stderr)
                            if part)
            raise AssertionError(f"{' '.join(argv[:2])} still running after 900 s:\n{said.decode(errors='replace')}") \
                from None

    def pids(self) -> dict[str, str]:
        """Each node's process id (local) or container id and start time (Docker): a restart changes it."""
        nodes = cast(Nodes, self.runtime)
        return {n.name: nodes.process_id(n.name) for n in load(self.state).nodes}

    @property
    def admin(self) -> AdminClient:
        return AdminClient(admin_config(self.state).librdkafka())

    def placement(self) -> tuple[Counter[int], Counter[int], int]:
        """Replicas and leaders per broker, and offline partitions, over every topic."""
        replicas: Counter[int] = Counter()
        leaders: Counter[int] = Counter()
        offline = 0
        admin = self.admin
        for topic in admin.list_topics(timeout=10).topics.values():
            for p in topic.partitions.values():
                replicas.update(p.replicas)
                leaders[p.leader] += 1
                offline += p.leader < 0
        return replicas, leaders, offline


def clear_leftovers(client: Any, cluster_name: str) -> None:
    """Remove what a killed earlier test run left of a cluster of this name (containers, volumes, network).

    The name belongs to the test suite alone; a run cut off before its teardown (a killed CI job, a
    restarted machine) leaves data volumes that the runtime rightly refuses to adopt.
    """
    label = f"dev.kraftform.cluster={cluster_name}"
    for container in client.containers.list(all=True, filters={"label": label}):
        container.remove(force=True)
    for volume in client.volumes.list(filters={"label": label}):
        volume.remove(force=True)
    for network in client.networks.list(filters={"label": label}):
        network.remove()


def fixture_specs(specs: Path, **cluster: Any) -> dict[str, Any]:
    """The test fixture's cluster section with `cluster`'s fields over it, written to `specs`/cluster.yaml, its
    published ports its own: free now and below the kernel's client ports (a fixed 39092 once met a client
    connection on 39494, one of its metrics ports). Returns the document written."""
    specs.mkdir()
    doc = yaml.safe_load(FIXTURE.read_text())
    doc["cluster"] |= cluster
    (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))
    doc["cluster"]["security"]["external_listener"]["base_port"] = free_base_port(load_specs(specs).cluster)
    (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))
    return dict(doc)


@contextlib.contextmanager
def own_cluster(base: Path, runtime_name: str, quick_start: bool = True, **cluster: Any) -> Iterator[Day2]:
    """A cluster of the test fixture's shape with `cluster`'s fields over it, in specs and a state directory of its
    own under `base`; purged at the end. Its nodes start as test clusters' do (`quick_start`: the client compiler,
    no metrics agent), and so do those its rolls and resizes start (`deployment.as_started`), unless the test's
    subject is what a full start has (the metrics)."""
    specs = base / "specs"
    doc = fixture_specs(specs, **cluster)
    if runtime_name == "docker":
        from kraftform.runtime.engines.engine import docker_client
        from kraftform.runtime.engines.images import build_kafka

        client = docker_client()
        build_kafka(client, [])
        clear_leftovers(client, doc["cluster"]["name"])
    runtime = get_runtime(runtime_name, base / "state")
    try:
        runtime.up(dataclasses.replace(load_specs(specs).cluster, quick_start=quick_start), timeout=300)
        yield Day2(specs, base / "state", runtime)
    finally:
        # The nodes' logs outlive the purge, in pytest's kept temporary directories: what a failure looks into.
        for log in (base / "state" / "nodes").glob("*/kafka.log"):
            shutil.copy(log, base / f"{log.parent.name}.log")
        if runtime_name == "docker":
            label = f"dev.kraftform.cluster={doc['cluster']['name']}"
            for container in client.containers.list(all=True, filters={"label": label}):
                (base / f"{container.name}.log").write_bytes(container.logs())
        if (base / "state" / STATE_FILE).is_file():
            runtime.down(purge=True)


class Producer:
    """Kafka's VerifiableProducer with acks=all, idempotent, writing sequence numbers throughout a change."""

    def __init__(self, day2: Day2, topic: str) -> None:
        deployment = load(day2.state)
        config = day2.state / "producer.properties"
        idempotent = "enable.idempotence=true\nretries=2147483647\n"
        config.write_text((day2.state / "admin.properties").read_text() + idempotent)
        log4j2 = day2.state / "producer-log4j2.properties"
        log4j2.write_text(PRODUCER_LOG4J2)
        self.log = ProducerLog()
        self.process = subprocess.Popen(kafka_tool_command(VERIFIABLE_PRODUCER, [
            "--bootstrap-server", deployment.bootstrap, "--topic", topic, "--max-messages", "1000000",
            "--throughput", "200", "--acks", "-1", "--command-config", str(config)],
            java_options=(*TOOL_JAVA_OPTIONS, f"-Dlog4j2.configurationFile={log4j2}")),
            stdout=subprocess.PIPE, stderr=(day2.state / "producer.stderr").open("w"), text=True)
        self.stderr = day2.state / "producer.stderr"
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            for event in events([line]):
                self.log.add(event)

    def stop(self) -> set[int]:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.thread.join(timeout=30)
        return set(self.log.acked)


def read_values(day2: Day2, topic: str, partitions: int) -> set[int]:
    consumer = Consumer({**admin_config(day2.state).librdkafka(), "group.id": f"day2-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": "false"})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: set[int] = set()
    positions = dict.fromkeys(range(partitions), 0)
    try:
        while any(positions[p] < ends[p] for p in positions):
            message = consumer.poll(5.0)
            if message is None or message.error():
                continue
            seen.add(int(message.value() or b"-1"))
            positions[message.partition() or 0] = (message.offset() or 0) + 1
    finally:
        consumer.close()
    return seen


def roll_killed_and_resumed(day2: Day2) -> None:
    """`kraftform apply` of a setting read at start SIGKILLed once it has marked the node it is restarting: the next
    plan names that node, the next apply checks it first, then rolls the rest, no node's command line holding the
    admin's password; nothing is left to do after it."""
    day2.edit(broker_config={"num.replica.fetchers": "2", "log.retention.check.interval.ms": "900000"})
    process = subprocess.Popen([shutil.which("kraftform") or "kraftform", "apply", str(day2.specs), "--state-dir",
                                str(day2.state), "--auto-approve"], stdout=subprocess.DEVNULL,
                               stderr=(day2.state / "killed-apply.stderr").open("w"))
    marked: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while not marked and time.monotonic() < deadline and process.poll() is None:
            extra = json.loads((day2.state / "cluster.json").read_text())["extra"]
            marked += [extra["rolling"]] if extra.get("rolling") else []
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait(timeout=30)
    assert marked, (day2.state / "killed-apply.stderr").read_text()
    planned = day2.kraftform("plan")
    assert planned.returncode == 2 and f"{marked[0]} roll: interrupted -> checked" in planned.stdout, planned.stdout
    with CommandLineSampler(0.02) as sampler:  # the roll's node starts: no password on a command line
        applied = day2.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f"{marked[0]}: an earlier roll was interrupted while restarting it; checking it first" in applied.stderr
    assert any("kafka.Kafka" in line for line in sampler.seen), "no node's command line sampled in the roll"
    password = admin_config(day2.state).password or ""
    assert password
    assert [line for line in sampler.seen if password in line] == [], "a command line held the admin's password"
    assert day2.kraftform("plan").returncode == 0
    deployment = load(day2.state)
    assert "rolling" not in deployment.extra and not deployment.previous
    assert {r.properties["log.retention.check.interval.ms"] for r in deployment.nodes if "broker" in r.roles
            and r.properties} == {"900000"}
