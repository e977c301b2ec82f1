"""A cluster on three hosts (the harness's: each its own network namespace and Docker engine, reached by its socket,
by tcp:// with a client certificate (b) and by ssh:// (c)), a rack each: each host runs a controller and a broker,
reached at the host's address; a host lost (its engine and every process on it SIGKILLed) and a host cut off (its
link down) each leave the cluster taking acks=all writes with nothing acknowledged lost, `status` naming the host
and exiting 2 and the host's alert firing on a real Prometheus (`kraftform monitoring up`, scraping each node at its
host's address); the host back, the alert resolves, `apply` converges and the plan is empty. A consumer runs its
executors on two hosts' Spark workers.

The tests run in order on one cluster, each leaving it healthy and matching its specs for the next.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import yaml
from confluent_kafka import KafkaException
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient, NewTopic

from kraftform.cluster.containers import LABEL_HOST
from kraftform.declared import load_specs
from kraftform.kafka.health import wait_healthy
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.engines.images import build_spark
from kraftform.runtime.nodes.deployment import admin_config, load
from kraftform.runtime.nodes.docker_engine import DockerRuntime
from kraftform.runtime.observation.monitoring import running

from ..runtime.conftest import Day2, Producer, fixture_specs, read_values, roll_killed_and_resumed
from . import harness

pytestmark = [pytest.mark.integration, pytest.mark.hosts]

#: How long each loss lasts at least: past the broker's session timeout (9 s), so the host's broker is fenced.
LOST_S = 15.0
#: Prometheus' scrape interval and the cap on every rule's `for:` (`monitoring up --max-for`): the host's alert fires
#: as in production, without its 30 s.
SCRAPE_S, MAX_FOR_S = 2, 4
#: Writes acknowledged while a host is lost, after its alert fired: a second of the producer's 200 a second.
WRITTEN_WHILE_LOST = 200
#: The longest pause of acknowledgements a host's loss may cause when every replica was in sync at the loss, the
#: sum of the timeouts in its way when the lost host held the quorum's leader: a new quorum leader (Kafka's 2 s
#: fetch and 1 s election timeouts), the lost broker fenced (its 9 s session), the client's request in flight to a
#: cut-off leader (30 s, `request.timeout.ms`) and its connection attempt to it before the new metadata arrives
#: (10 s, `socket.connection.setup.timeout.ms`): 52 s, with room for a machine running the Docker side beside it.
#: Measured: 9-14 s (killed) and 12-28 s (cut) on a quieter machine (`tests/bench/bench_host_loss.py`,
#: docs/benchmarks.md), 67.2 s in the landing of 0d06961. A stall for the whole loss fails its wait for writes first.
PAUSE_BOUND_S = 90.0


def _hosts_section(hosts: list[harness.Host]) -> list[dict[str, object]]:
    """Each host by its engine's socket, host b by its TCP endpoint with the harness's client certificate, host c by
    ssh (the machine's ssh client, through c's sshd)."""
    ca, cert, key = (str(p) for p in harness.CLIENT_TLS)

    def endpoint(h: harness.Host) -> dict[str, object]:
        if h.name == "b":
            return {"docker": h.tcp_endpoint, "tls": {"ca": ca, "cert": cert, "key": key}}
        return {"docker": h.ssh_endpoint if h.name == "c" else h.docker_host}

    return [{"name": h.name, "address": h.address, "racks": [f"rack-{h.name}"], **endpoint(h)} for h in hosts]


@pytest.fixture(scope="module")
def on_hosts(four_hosts: list[harness.Host], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Day2]:
    three_hosts = four_hosts[:3]
    base = tmp_path_factory.mktemp("hosts")
    specs = base / "specs"
    doc = fixture_specs(specs, name="kfhosts", racks=[f"rack-{h.name}" for h in three_hosts],
                        hosts=_hosts_section(three_hosts),
                        security={"sasl_mechanism": "SCRAM-SHA-512", "external_listener": {"enabled": True}})
    doc["cluster"]["security"]["external_listener"]["base_port"] = 29092  # each host's ports are its own
    (specs / "cluster.yaml").write_text(yaml.safe_dump(doc))
    runtime = DockerRuntime(base / "state")
    try:
        runtime.up(dataclasses.replace(load_specs(specs).cluster, quick_start=True), timeout=300)
        yield Day2(specs, base / "state", runtime)
    finally:
        for host in four_hosts:
            for line in host.docker("ps", "-aq", check=False).stdout.split():
                name = host.docker("inspect", "--format", "{{.Name}}", line, check=False).stdout.strip("/\n")
                (base / f"{host.name}-{name}.log").write_text(host.docker("logs", line, check=False).stderr)
        if (base / "state" / "cluster.json").is_file():
            runtime.down(purge=True)


@pytest.fixture(scope="module")
def watched(on_hosts: Day2) -> Iterator[Day2]:
    """Prometheus and kraftform's exporter on this machine, as `kraftform monitoring up` starts them for the cluster."""
    data = on_hosts.state.parent / "data"
    done = on_hosts.kraftform("monitoring", "up", "--data-dir", str(data), "--scrape-interval", str(SCRAPE_S),
                              "--max-for", str(MAX_FOR_S))
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        yield on_hosts
    finally:
        subprocess.run(["kraftform", "monitoring", "down", "--state-dir", str(on_hosts.state)], capture_output=True,
                       timeout=120, check=False)


def _hosts_alerted(day2: Day2) -> set[str]:
    """The hosts whose KafkaHostLost alert fires on the cluster's Prometheus."""
    found = running(day2.state)
    assert found is not None, "monitoring is not up"
    with urllib.request.urlopen(f"{found.prometheus_url}/api/v1/alerts", timeout=10) as response:
        alerts = json.load(response)["data"]["alerts"]
    return {a["labels"]["host"] for a in alerts if a["labels"]["alertname"] == "KafkaHostLost" and
            a["state"] == "firing"}


def _until(what: str, timeout: float, check: object) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(1)


def _alive(pid: int) -> bool:
    """A process running (a zombie, not yet reaped by whoever inherited it, has no command line left)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except OSError:
        return False


def _containers(host: harness.Host) -> dict[str, str]:
    """Container name -> the host label kraftform gave it, on that host's engine."""
    out = host.docker("ps", "--format", f'{{{{.Names}}}} {{{{.Label "{LABEL_HOST}"}}}}').stdout
    return dict(line.split() for line in out.splitlines())


def test_each_host_runs_its_racks_nodes_reached_at_its_address_with_certificates_naming_it(
        on_hosts: Day2, three_hosts: list[harness.Host]) -> None:
    for i, host in enumerate(three_hosts):
        assert _containers(host) == {f"kfhosts-controller-{i}": host.name, f"kfhosts-broker-{i}": host.name}
    # The brokers advertise their hosts' addresses; the admin client verified each broker's certificate for it.
    brokers = on_hosts.admin.list_topics(timeout=10).brokers
    assert sorted(f"{b.host}:{b.port}" for b in brokers.values()) == [
        "10.231.0.1:29092", "10.231.0.2:29093", "10.231.0.3:29094"]
    assert load(on_hosts.state).bootstrap == "10.231.0.1:29092,10.231.0.2:29093,10.231.0.3:29094"
    # Nothing is published on the machine: nodes listen on their host's address, in the host's own network.
    assert harness._run(["ss", "-Hltn", "sport", "= :29092"]).stdout.strip() == ""
    planned = on_hosts.kraftform("plan")
    assert planned.returncode == 0 and "No changes" in planned.stdout, planned.stdout + planned.stderr


def test_a_roll_killed_mid_way_is_resumed_each_node_restarted_on_its_hosts_engine(on_hosts: Day2) -> None:
    before = on_hosts.pids()
    roll_killed_and_resumed(on_hosts)
    after = on_hosts.pids()
    assert {n for n in before if before[n] != after[n]} == {f"kfhosts-broker-{i}" for i in range(3)}


def _replicas_on(day2: Day2, broker: int) -> int:
    replicas, _leaders, offline = day2.placement()
    assert offline == 0
    return replicas[broker]


def test_a_host_added_with_its_rack_takes_a_broker_and_its_share_then_is_drained_and_removed(
        on_hosts: Day2, four_hosts: list[harness.Host]) -> None:
    d = four_hosts[3]
    doc = yaml.safe_load((on_hosts.specs / "cluster.yaml").read_text())["cluster"]
    on_hosts.edit(brokers=4, racks=[*doc["racks"], "rack-d"], hosts=_hosts_section(four_hosts))
    planned = on_hosts.kraftform("plan")
    assert planned.returncode == 2 and "create cluster kfhosts-broker-3 node: broker 4" in planned.stdout
    applied = on_hosts.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert _containers(d) == {"kfhosts-broker-3": "d"}
    assert _replicas_on(on_hosts, 4) > 0
    assert on_hosts.kraftform("plan").returncode == 0
    # Drained: its replicas go back to the three hosts, its broker and data leave host d.
    on_hosts.edit(brokers=3, racks=doc["racks"], hosts=_hosts_section(four_hosts[:3]))
    refused = on_hosts.kraftform("apply", "--auto-approve")
    assert refused.returncode == 1 and "--allow-destructive" in refused.stderr, refused.stderr
    applied = on_hosts.kraftform("apply", "--auto-approve", "--allow-destructive")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert _containers(d) == {} and d.docker("volume", "ls", "-q").stdout.strip() == ""
    assert _replicas_on(on_hosts, 4) == 0
    assert on_hosts.kraftform("plan").returncode == 0


#: The consumer run on hosts a and b: its own SCRAM login, read from this variable as the specs say.
READER_PASSWORD_ENV = "KRAFTFORM_PASSWORD_HOSTS_READER"
EVENTS, READER, RECORDS = "hosts.events", "hosts-reader", 3000


def _consumer_specs(day2: Day2, shared: Path) -> None:
    """A topic, the consumer's user and ACLs, the consumer (two cores: one executor on each of the two one-core
    workers) with a Parquet sink, and Spark standalone on hosts a and b over `shared`."""
    day2.edit(spark={"master": "standalone", "hosts": ["a", "b"], "shared_dir": str(shared), "worker_cores": 1,
                     "worker_memory": "1GiB"})
    sections: dict[str, object] = {
        "topics": [{"name": EVENTS, "partitions": 4, "replication_factor": 3}],
        "users": [{"name": READER, "password": {"env": READER_PASSWORD_ENV}}],
        "acls": [{"principal": f"User:{READER}", "resource": {"type": "topic", "name": EVENTS},
                  "operations": ["read", "describe"]},
                 {"principal": f"User:{READER}", "resource": {"type": "group", "name": READER, "pattern": "prefixed"},
                  "operations": ["read"]}],
        "consumers": [{"name": READER, "topics": [EVENTS], "user": READER, "starting_offsets": "earliest",
                       "trigger": "1s", "cores": 2, "value": {"format": "json", "schema": "n INT"},
                       "query": "SELECT n, partition, offset FROM input",
                       "sink": {"type": "parquet", "path": "events"}}],
    }
    for section, items in sections.items():
        (day2.specs / f"{section}.yaml").write_text(yaml.safe_dump({section: items}))


def _rows(shared: Path) -> list[dict[str, object]]:
    """What the consumer's Parquet sink holds, read from the shared directory (every committed batch's files)."""
    found = [d for d in shared.rglob("events") if d.is_dir()]
    files = sorted(str(f) for d in found for f in d.rglob("*.parquet"))
    return ds.dataset(files, format="parquet").to_table().to_pylist() if files else []


def test_a_consumer_runs_its_executors_on_two_hosts_and_every_record_reaches_its_sink(
        on_hosts: Day2, three_hosts: list[harness.Host]) -> None:
    """`consumers up` on hosts: the standalone master on host a with a worker on a and b, the consumer's driver on a;
    its two executors (a core each) run one on each host, write Parquet files to the directory both hosts share, and
    the driver commits every batch: each record produced is in the sink once."""
    a, b = three_hosts[:2]
    image = build_spark(docker_client(), [])
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda h: harness.load_image(h, image), (a, b)))
    shared = on_hosts.state.parent / "shared"
    _consumer_specs(on_hosts, shared)
    os.environ[READER_PASSWORD_ENV] = "hosts-reader-secret-1"  # the later tests' applies read it too
    applied = on_hosts.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    producer = ConfluentProducer({**admin_config(on_hosts.state).librdkafka(), "acks": "all"})
    for i in range(RECORDS):
        producer.produce(EVENTS, json.dumps({"n": i}).encode())
    assert producer.flush(60) == 0
    up = subprocess.run(["kraftform", "consumers", "up", str(on_hosts.specs), "--state-dir", str(on_hosts.state),
                         "--image", image, "--timeout", "600"], capture_output=True, text=True, timeout=900,
                        check=False)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "Spark standalone master kfhosts-spark-master with 2 worker(s): up" in up.stdout
        assert _spark_containers(a) == {"kfhosts-spark-master", "kfhosts-spark-worker-a", f"kfhosts-consumer-{READER}"}
        assert _spark_containers(b) == {"kfhosts-spark-worker-b"}
        # The master's UI answers on host a's loopback alone: read there, refused at the host's address.
        master = json.loads(a.docker("exec", "kfhosts-spark-master", "python", "-c", (
            "import urllib.request; print(urllib.request.urlopen('http://localhost:8080/json/').read().decode())"
        )).stdout)
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://{a.address}:8080/json/", timeout=10)
        assert [(app["name"], app["cores"]) for app in master["activeapps"]] == [(f"kraftform-{READER}", 2)]
        # A core taken on each host's worker: the consumer's executors run on both.
        assert sorted(w["host"] for w in master["workers"] if w["coresused"] == 1) == [a.address, b.address]
        _until(f"all {RECORDS} records in the sink", 300, lambda: len(_rows(shared)) >= RECORDS)
        rows = _rows(shared)
        assert sorted(int(str(r["n"])) for r in rows) == list(range(RECORDS))  # each once
    finally:
        down = subprocess.run(["kraftform", "consumers", "down", "--state-dir", str(on_hosts.state), "--purge"],
                              capture_output=True, text=True, timeout=300, check=False)
    assert down.returncode == 0, down.stdout + down.stderr
    assert _spark_containers(a) == _spark_containers(b) == set()
    planned = on_hosts.kraftform("plan")
    assert planned.returncode == 0 and "No changes" in planned.stdout, planned.stdout + planned.stderr


CONNECT, CONNECT_PASSWORD_ENV = "hosts-connect", "KRAFTFORM_PASSWORD_HOSTS_CONNECT"
CONNECT_PORT, SINK_FILE = 28083, "/tmp/hosts-events.txt"


def _connect(day2: Day2, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kraftform", "connect", *args, str(day2.specs), "--state-dir", str(day2.state)],
                          capture_output=True, text=True, timeout=600, check=False)


def _sunk(hosts: list[harness.Host]) -> int:
    """Lines the Connect sink wrote, in whichever workers' containers (on whichever host) ran its task."""
    lines = 0
    for host in hosts:
        for name in host.docker("ps", "-q", "--filter", f"label=dev.kraftform.connect={CONNECT}").stdout.split():
            lines += len(host.docker("exec", name, "cat", SINK_FILE, check=False).stdout.splitlines())
    return lines


def test_connect_workers_spread_over_the_hosts_and_a_sink_reads_every_record(
        on_hosts: Day2, three_hosts: list[harness.Host]) -> None:
    """`connect up` beside the cluster on hosts: worker 0 on host a, worker 1 on host b, each in its host's network
    serving its REST API on its host's address (its certificate names it; kraftform and the other worker reach it
    there); a sink connector applied through them writes every record of the topic the consumer read."""
    a, b = three_hosts[:2]
    users = yaml.safe_load((on_hosts.specs / "users.yaml").read_text())["users"]
    (on_hosts.specs / "users.yaml").write_text(yaml.safe_dump({"users": [
        *users, {"name": CONNECT, "password": {"env": CONNECT_PASSWORD_ENV}}]}))
    (on_hosts.specs / "connect.yaml").write_text(yaml.safe_dump({"connect": [{
        "name": CONNECT, "user": CONNECT, "workers": 2, "rest_port": CONNECT_PORT,
        "internal_topics": {"offsets_partitions": 1, "status_partitions": 1},
        "config": {"offset.flush.interval.ms": 1000},
        "connectors": [{"name": "events-file", "class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                        "type": "sink", "topics": [EVENTS], "config": {"file": SINK_FILE}}]}]}))
    os.environ[CONNECT_PASSWORD_ENV] = "hosts-connect-secret-1"
    try:
        applied = on_hosts.kraftform("apply", "--auto-approve")  # the internal topics, the user, its grants
        assert applied.returncode == 0, applied.stdout + applied.stderr
        up = _connect(on_hosts, "up")
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"https://{a.address}:{CONNECT_PORT}" in up.stdout + up.stderr
        assert f"https://{b.address}:{CONNECT_PORT + 1}" in up.stdout + up.stderr
        assert _labelled(a, CONNECT) == {f"kfhosts-connect-{CONNECT}-0"}
        assert _labelled(b, CONNECT) == {f"kfhosts-connect-{CONNECT}-1"}
        connected = _connect(on_hosts, "apply", "--auto-approve")
        assert connected.returncode == 0, connected.stdout + connected.stderr
        status = _connect(on_hosts, "status")
        assert status.returncode == 0 and "2 of 2 worker(s) running" in status.stdout, status.stdout + status.stderr
        _until(f"the sink to hold all {RECORDS} records", 180, lambda: _sunk([a, b]) >= RECORDS)
        assert _sunk([a, b]) == RECORDS
        _connect_with_a_host_lost(on_hosts, b)
    finally:
        down = _connect(on_hosts, "down", "--purge")
        # Decommissioned as a user would: its section and user out of the specs, its grants and user deleted.
        (on_hosts.specs / "connect.yaml").unlink()
        (on_hosts.specs / "users.yaml").write_text(yaml.safe_dump({"users": users}))
    assert down.returncode == 0, down.stdout + down.stderr
    assert _labelled(a, CONNECT) == _labelled(b, CONNECT) == set()
    removed = on_hosts.kraftform("apply", "--auto-approve", "--allow-destructive")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    planned = on_hosts.kraftform("plan")
    assert planned.returncode == 0 and "No changes" in planned.stdout, planned.stdout + planned.stderr


def _connect_with_a_host_lost(day2: Day2, lost: harness.Host) -> None:
    """Host b (worker 1, a broker and a controller) SIGKILLed: `status` still reads the Connect cluster through the
    worker that answers and exits 2 naming the host, `connect status` counts 1 of 2 workers, neither with a
    traceback; then b back and everything whole again."""
    harness.kill(lost)
    try:
        _until("status to name the lost host", 120, lambda: f"host {lost.name} ({lost.address}) is lost" in
               _status(day2).stdout)
        status = _status(day2)
        said = status.stdout + status.stderr
        assert status.returncode == 2 and "Traceback" not in said, said
        assert f"Connect cluster {CONNECT}: 1 of 2 worker(s) running" in said, said
        connect = _connect(day2, "status")
        said = connect.stdout + connect.stderr
        assert "1 of 2 worker(s) running" in said and "Traceback" not in said, said
    finally:
        harness.start_engine(lost)
    _back(day2)


def _labelled(host: harness.Host, connect: str) -> set[str]:
    out = host.docker("ps", "-a", "--filter", f"label=dev.kraftform.connect={connect}", "--format", "{{.Names}}").stdout
    return set(out.split())


def _spark_containers(host: harness.Host) -> set[str]:
    """The consumers' and Spark's containers on a host's engine."""
    out = host.docker("ps", "-a", "--filter", "label=dev.kraftform.cluster=kfhosts", "--format",
                      '{{.Names}} {{.Label "dev.kraftform.node"}}').stdout
    return {line.split()[0] for line in out.splitlines() if len(line.split()) == 1}


def _status(day2: Day2) -> subprocess.CompletedProcess[str]:
    return day2.kraftform("status")


def _leader_host(day2: Day2, hosts: list[harness.Host]) -> harness.Host:
    """The host running the active controller: losing it loses the quorum's leader too."""
    found = re.search(r"active controller \(quorum leader\) (\d+)", _status(day2).stdout)
    assert found, "no quorum leader in status"
    return hosts[int(found.group(1)) - 1001]


def _topic(day2: Day2, name: str) -> None:
    admin = day2.admin  # held: a client collected before its future is done fails it
    admin.create_topics([NewTopic(name, 3, 3, config={"min.insync.replicas": "2"})])[name].result(timeout=30)


def _back(day2: Day2) -> None:
    """The cluster whole again, then converged by `apply` and planned empty."""
    deployment = load(day2.state)
    wait_healthy(admin_config(day2.state), {n.node_id: n.name for n in deployment.nodes if "broker" in n.roles}, 180)
    deadline = time.monotonic() + 120
    while _status(day2).returncode != 0 and time.monotonic() < deadline:
        time.sleep(2)
    status = _status(day2)
    assert status.returncode == 0, status.stdout
    applied = day2.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    planned = day2.kraftform("plan")
    assert planned.returncode == 0 and "No changes" in planned.stdout, planned.stdout


def _topic_applied_while_lost(day2: Day2, lost: harness.Host, topic: str) -> None:
    """The control path in bad weather: a topic declared while a host is lost is planned and applied (exit 2: the
    node work waits), the plan and apply naming the host; each command within a bound of seconds."""
    path = day2.specs / "weather.yaml"
    declared = yaml.safe_load(path.read_text())["topics"] if path.exists() else []
    path.write_text(yaml.safe_dump({"topics": [*declared, {"name": topic, "partitions": 3, "replication_factor": 3}]}))
    for command in ("plan", "apply"):
        begun = time.monotonic()
        done = day2.kraftform(command, *(("--auto-approve",) if command == "apply" else ()))
        took = time.monotonic() - begun
        said = done.stdout + done.stderr
        assert done.returncode == 2 and "Traceback" not in said, said
        assert f"host {lost.name}" in said and "node work" in said and "waits" in said, said
        print(f"{command} with host {lost.name} lost: {took:.1f} s")
    assert topic in day2.admin.list_topics(timeout=30).topics


class PartitionWatch:
    """Each change of the topic's partitions' leaders and in-sync replicas, with its time, read every half second
    while a host is lost: what a pause of acknowledgements is explained by (a request waiting out its timeout on a
    cut-off leader, a new leader, an ISR below min.insync.replicas until a lagging follower catches up)."""

    def __init__(self, day2: Day2, topic: str) -> None:
        self.admin = AdminClient(admin_config(day2.state).librdkafka())
        self.topic = topic
        self.lines: list[str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def in_sync(self) -> bool:
        """Every partition's replicas all in its ISR (False while the metadata does not answer)."""
        try:
            partitions = self.admin.list_topics(self.topic, timeout=10).topics[self.topic].partitions.values()
        except KafkaException:
            return False
        return all(set(p.isrs) == set(p.replicas) for p in partitions)

    def _watch(self) -> None:
        last = None
        while not self.done.wait(0.5):
            try:
                partitions = self.admin.list_topics(self.topic, timeout=3).topics[self.topic].partitions
                now = sorted((p, m.leader, sorted(m.isrs)) for p, m in partitions.items())
            except Exception as error:  # a line of the timeline, not a failure
                self.lines.append(f"[{time.strftime('%H:%M:%S')}] metadata: {error}")
                continue
            if now != last:
                self.lines.append(f"[{time.strftime('%H:%M:%S')}] " + ", ".join(
                    f"{self.topic}-{p} leader {leader} isr {isr}" for p, leader, isr in now))
                last = now

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=10)


def _through(day2: Day2, topic: str, lose: object, back: object, lost: harness.Host, engine_lost: bool) -> None:
    """acks=all writes before, during and after a host's loss: they go on, and every acknowledged one is read. With
    `engine_lost`, kraftform's commands meanwhile too (a cut host's engine may still answer this machine)."""
    _topic(day2, topic)
    producer = Producer(day2, topic)
    try:
        deadline = time.monotonic() + 90  # the JVM started and writing
        while len(producer.log.acked) < 500 and time.monotonic() < deadline:
            time.sleep(1)
        before = len(producer.log.acked)
        assert before >= 500, producer.stderr.read_text()[-2000:]
        assert _hosts_alerted(day2) == set()
        watch = PartitionWatch(day2, topic)
        # The bound holds from a cluster in sync: with a follower already out of the ISR, losing another replica
        # leaves fewer than min.insync.replicas, and acks=all writes are refused until the follower catches up.
        _until(f"every replica of {topic} in sync", 60, watch.in_sync)
        watch.start()
        lose()  # type: ignore[operator]
        gone = time.monotonic()
        print(f"host {lost.name} lost at {time.strftime('%H:%M:%S')}")
        _until(f"KafkaHostLost firing for host {lost.name}", 60, lambda: _hosts_alerted(day2) == {lost.name})
        time.sleep(max(0.0, LOST_S - (time.monotonic() - gone)))
        status = _status(day2)
        assert status.returncode == 2, status.stdout + status.stderr
        assert f"PROBLEM: host {lost.name} ({lost.address}) is lost" in status.stdout, status.stdout
        if engine_lost:
            _topic_applied_while_lost(day2, lost, f"{topic}.weather")
        # Writes go on while the host is gone: the event waited for, not a count in a window a loaded machine
        # can miss (ci43 saw 6 acknowledged in its window). The bound is the client's: its requests to the lost
        # host time out within 30 s (request.timeout.ms), then it writes to the partitions' new leaders.
        alerted = len(producer.log.acked)
        _until(f"{WRITTEN_WHILE_LOST} writes acknowledged with host {lost.name} still lost", 120,
               lambda: len(producer.log.acked) - alerted >= WRITTEN_WHILE_LOST)
        assert _hosts_alerted(day2) == {lost.name}  # still lost while they were acknowledged
        back()  # type: ignore[operator]
        watch.stop()
        # A copy: the producer's reader thread adds to the log meanwhile (iterating it raced; ci50's cut test).
        pause = _longest_pause(producer.log.acked.copy().values(), gone)
        print(f"host {lost.name} lost: the longest pause of acknowledgements {pause:.1f} s")
        assert pause < PAUSE_BOUND_S, (
            f"acknowledgements paused {pause:.1f} s while host {lost.name} was lost; its partitions:\n"
            + "\n".join(watch.lines) + f"\nthe producer's client:\n{producer.stderr.read_text()[-6000:]}")
        _back(day2)
        _until(f"KafkaHostLost for host {lost.name} resolved", 60, lambda: _hosts_alerted(day2) == set())
        time.sleep(3)
    finally:
        acked = producer.stop()
    missing = acked - read_values(day2, topic, 3)
    assert not missing, f"{len(missing)} acknowledged records lost of {len(acked)}"


def _longest_pause(acknowledged: Iterable[int], since: float) -> float:
    """The longest gap between two acknowledgements (the producer's epoch milliseconds) from `since` (monotonic)
    on, to the last one."""
    start_ms = (time.time() - (time.monotonic() - since)) * 1000
    times = sorted(t for t in acknowledged if t >= start_ms - 5000)
    return max((b - a for a, b in itertools.pairwise(times) if b >= start_ms), default=0) / 1000


def test_a_host_lost_with_its_engine_keeps_writes_acknowledged_and_comes_back(
        watched: Day2, three_hosts: list[harness.Host]) -> None:
    lost = _leader_host(watched, three_hosts)
    _through(watched, "hosts.lost", lambda: harness.kill(lost), lambda: harness.start_engine(lost), lost, True)


def test_a_host_cut_off_keeps_writes_acknowledged_and_rejoins(
        watched: Day2, three_hosts: list[harness.Host]) -> None:
    cut = _leader_host(watched, three_hosts)
    _through(watched, "hosts.cut", lambda: harness.cut(cut), lambda: harness.cut(cut, connected=True), cut, False)


def test_stopped_and_purged_from_the_state_directory_alone_nothing_is_left_on_any_host(
        watched: Day2, three_hosts: list[harness.Host]) -> None:
    """With host b lost, `cluster down --purge` removes what hosts a and c run, names host b and its nodes, exits 1
    and keeps the state directory; run again once b is back, it removes the rest."""
    on_hosts = watched
    monitoring = running(on_hosts.state)
    assert monitoring is not None
    lost = three_hosts[1]
    on_lost = {r.name for r in load(on_hosts.state).nodes if r.host == lost.name}
    assert on_lost
    harness.kill(lost)
    begun = time.monotonic()
    partly = subprocess.run(["kraftform", "cluster", "down", "--purge", "--state-dir", str(on_hosts.state)],
                            capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ))
    print(f"cluster down --purge with host {lost.name} lost: {time.monotonic() - begun:.1f} s")
    said = partly.stdout + partly.stderr
    assert partly.returncode == 1 and "Traceback" not in said, said
    assert f"not on host '{lost.name}': no Docker engine answers" in said and "state directory is kept" in said, said
    assert all(name in said for name in on_lost), said
    for host in (three_hosts[0], three_hosts[2]):
        assert host.docker("ps", "-aq").stdout.strip() == ""
    assert Path(on_hosts.state).exists()
    harness.start_engine(lost)
    done = subprocess.run(["kraftform", "cluster", "down", "--purge", "--state-dir", str(on_hosts.state)],
                          capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    # Prometheus and the exporter stopped with the first: their record is in the state directory a purge deletes.
    assert f"stopped Prometheus (pid {monitoring.prometheus_pid})" in partly.stdout, partly.stdout
    assert not _alive(monitoring.prometheus_pid) and not _alive(monitoring.exporter_pid)
    for host in three_hosts:
        assert host.docker("ps", "-aq").stdout.strip() == ""
        assert host.docker("volume", "ls", "-q").stdout.strip() == ""
    assert not Path(on_hosts.state).exists()
