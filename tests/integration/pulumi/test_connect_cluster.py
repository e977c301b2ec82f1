"""A declared Kafka Connect cluster as `pulumi up` runs it: the `ConnectCluster` provider in Pulumi's provider host,
driven over gRPC with values as the engine sends them, its workers in containers on a real Docker engine beside a
`fast` Docker cluster, its connectors through their REST API. Checked from outside: the containers, Connect's own
status, the records a sink connector wrote inside its worker.

The tests run in order on one Connect cluster, each leaving it as its inputs declare."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from pulumi.runtime import proto

from kraftform.cluster.connect import REST_USER
from kraftform.cluster.containers import LABEL_CLUSTER, kafka_image, memory_limit, network_bootstrap, network_name
from kraftform.cluster.topology import topology
from kraftform.connect.rest import ConnectRest
from kraftform.pulumi.connect import ConnectClusterProvider, connect_props
from kraftform.runtime.connect.containers import LABEL_CONNECT, worker_container
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.local import listening
from kraftform.specset.model import ConnectSpec
from kraftform.testing.cluster import EphemeralCluster, ephemeral_cluster

from ...conftest import REPO
from ..conftest import CLUSTER_SPECS, assert_hardened
from .engine import ProviderHost

pytestmark = pytest.mark.integration

TOPIC = "stack.orders"
USER = "stack-connect"
#: The stack's sink logs in as a user of its own: its password is a connector login, rotated below.
ARCHIVER = "stack-archiver"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
#: Inside the worker's container (its user's to write).
SINK_FILE = "/tmp/orders.txt"
CLI_CONNECT, CLI_USER, CLI_PASSWORD_ENV = "cli-connect", "cli-connect", "KRAFTFORM_PASSWORD_CLI_CONNECT"
CLI_ARCHIVER, CLI_ARCHIVER_ENV = "cli-archiver", "KRAFTFORM_PASSWORD_CLI_ARCHIVER"


def _free_port() -> int:
    while True:
        port = random.randint(30000, 39000)
        if not listening("127.0.0.1", port):
            return port


@dataclasses.dataclass
class ConnectStack:
    host: ProviderHost
    cluster: EphemeralCluster
    specs_dir: Path
    id: str = ""
    outputs: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The connector users' passwords the stack declares (rotated by a test).
    logins: dict[str, str] = dataclasses.field(default_factory=dict)
    #: The Connect section the last successful `up` deployed.
    deployed: ConnectSpec | None = None

    @property
    def spec(self) -> ConnectSpec:
        return self.cluster.specs.connect[0]

    def news(self, spec: ConnectSpec) -> dict[str, Any]:
        cluster = self.cluster
        made = dep.load_secrets(cluster.state_dir)
        admin = cluster.admin
        brokers = [n.name for n in topology(cluster.specs.cluster).brokers]
        ca = {"cert": made.ca.cert_pem, "key": made.ca.key_pem}
        return connect_props(spec, cluster.name, network_name(cluster.name),
                             kafka_image(cluster.specs.cluster.kafka_version), network_bootstrap(brokers), ca,
                             cluster.passwords[USER], {u: self.logins[u] for u in spec.connector_users}, {},
                             admin.props(ca_pem=made.ca.cert_pem), False)

    def up(self, spec: ConnectSpec) -> Any:
        """`pulumi up`: create, or a diff then an update when it says so; returns the diff."""
        news = self.news(spec)
        if not self.id:
            self.id, self.outputs = self.host.create(ConnectClusterProvider(), "connect", news)
            self.deployed = spec
            return None
        diff = self.host.diff(ConnectClusterProvider(), "connect", self.id, self.outputs, news)
        if diff.changes == proto.DiffResponse.DIFF_SOME:
            self.outputs = self.host.update(ConnectClusterProvider(), "connect", self.id, self.outputs, news)
        self.deployed = spec
        return diff

    def rest(self) -> ConnectRest:
        return ConnectRest(f"https://127.0.0.1:{self.spec.rest_port}", REST_USER, self.outputs["rest_password"],
                           self.cluster.admin.ca_path)

    def sunk(self) -> list[str]:
        container = docker_client().containers.get(worker_container(self.cluster.name, self.spec.name, 0))
        result = container.exec_run(["cat", SINK_FILE])
        return result.output.decode().splitlines() if result.exit_code == 0 else []


def _with(spec: ConnectSpec, **config: str) -> ConnectSpec:
    sink = spec.connectors[0]
    return dataclasses.replace(spec, connectors=(dataclasses.replace(sink, config={**sink.config, **config}),))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectStack]:
    base = tmp_path_factory.mktemp("pulumi-connect")
    root = base / "specs"
    root.mkdir()
    (root / "cluster.yaml").write_text((CLUSTER_SPECS / "cluster.yaml").read_text())
    (root / "kafka.yaml").write_text(yaml.safe_dump({
        "topics": [{"name": TOPIC, "partitions": 1}],
        "users": [{"name": USER, "password": {"env": "KRAFTFORM_PASSWORD_STACK_CONNECT"}},
                  {"name": ARCHIVER, "password": {"env": "KRAFTFORM_PASSWORD_STACK_ARCHIVER"}},
                  {"name": CLI_USER, "password": {"env": CLI_PASSWORD_ENV}},
                  {"name": CLI_ARCHIVER, "password": {"env": CLI_ARCHIVER_ENV}}]}))

    def connect(name: str, workers_user: str, sink: str, **archive: str) -> dict[str, Any]:
        return {"name": name, "user": workers_user, "rest_port": _free_port(),
                "internal_topics": {"offsets_partitions": 1, "status_partitions": 1},
                "config": {"offset.flush.interval.ms": 1000},
                "connectors": [{"name": sink, "class": FILE_SINK, "type": "sink", "topics": [TOPIC],
                                "config": {"file": SINK_FILE}, **archive}]}

    # The first for `pulumi up`'s provider, the second for `kraftform connect` on the Docker runtime; each sink
    # logs in as a user of its own (its password in the workers' containers).
    (root / "connect.yaml").write_text(yaml.safe_dump({"connect": [
        connect("stack-connect", USER, "archive", user=ARCHIVER),
        connect(CLI_CONNECT, CLI_USER, "cli-archive", user=CLI_ARCHIVER)]}))
    client = docker_client()
    with ephemeral_cluster(root, "fast", "docker", base_dir=base / "clusters") as cluster:
        host = ProviderHost(REPO, base / "host-tmp")
        made = ConnectStack(host, cluster, root, logins={ARCHIVER: cluster.passwords[ARCHIVER]})
        try:
            made.up(made.spec)
            yield made
        finally:
            try:
                if made.id:
                    host.delete(ConnectClusterProvider(), "connect", made.id, made.outputs)
            finally:
                host.close()
                for c in client.containers.list(all=True, filters={"label": [LABEL_CONNECT,
                                                                             f"{LABEL_CLUSTER}={cluster.name}"]}):
                    (base / f"{c.name}.log").write_bytes(c.logs())
                    c.remove(force=True)


def test_a_first_up_runs_the_workers_in_containers_and_the_connectors_move_records(stack: ConnectStack) -> None:
    name = worker_container(stack.cluster.name, stack.spec.name, 0)
    container = docker_client().containers.get(name)
    assert container.status == "running"
    # Published on this machine only; the REST API refuses a request without kraftform's login.
    assert container.attrs["HostConfig"]["PortBindings"] == {
        f"{stack.spec.rest_port}/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(stack.spec.rest_port)}]}
    assert_hardened(container, memory_limit(stack.spec.heap_bytes))
    live = stack.rest().connectors()
    assert live["archive"].state == "running" and [t[1] for t in live["archive"].tasks] == ["running"]
    producer = Producer(stack.cluster.client())
    for i in range(5):
        producer.produce(TOPIC, json.dumps({"n": i}).encode())
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 60
    while len(stack.sunk()) < 5 and time.monotonic() < deadline:
        time.sleep(1)
    # The sink writes each value as Connect holds it (schemaless JSON: a map).
    assert stack.sunk() == [f"{{n={i}}}" for i in range(5)]
    # No secret in the container's configuration: the passwords are in its files.
    inspected = json.dumps(container.attrs["Config"])
    assert stack.cluster.passwords[USER] not in inspected and stack.outputs["rest_password"] not in inspected
    started = container.attrs["State"]["StartedAt"]
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE
    assert docker_client().containers.get(name).attrs["State"]["StartedAt"] == started


def test_a_connector_paused_with_curl_is_a_change_and_the_update_resumes_it(stack: ConnectStack) -> None:
    stack.rest().set_state("archive", "paused")
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_SOME
    assert stack.rest().connectors()["archive"].state == "running"
    assert "resuming connector archive" in stack.host.stderr.read_text()
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE


def test_a_stopped_worker_is_a_change_and_the_update_starts_it(stack: ConnectStack) -> None:
    docker_client().containers.get(worker_container(stack.cluster.name, stack.spec.name, 0)).stop(timeout=30)
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_SOME
    assert stack.rest().connectors()["archive"].state == "running"
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE


def test_an_up_whose_connector_task_fails_fails_naming_the_connector_and_its_error(stack: ConnectStack) -> None:
    broken = _with(stack.spec, file="/nonexistent/orders.txt")
    with pytest.raises(Exception) as failed:
        stack.up(broken)
    message = str(failed.value)
    assert "connector 'archive'" in message and "task 0 failed" in message, message
    assert "/nonexistent/orders.txt" in message, message
    # Declared back as it was: the update repairs it.
    stack.outputs = stack.host.update(ConnectClusterProvider(), "connect", stack.id, stack.outputs,
                                      stack.news(stack.spec))
    assert [t[1] for t in stack.rest().connectors()["archive"].tasks] == ["running"]


def test_a_worker_setting_changed_makes_the_worker_again(stack: ConnectStack) -> None:
    changed = dataclasses.replace(stack.spec, config={**stack.spec.config, "offset.flush.interval.ms": "2000"})
    name = worker_container(stack.cluster.name, stack.spec.name, 0)
    before = docker_client().containers.get(name).id
    diff = stack.up(changed)
    assert diff.changes == proto.DiffResponse.DIFF_SOME
    assert docker_client().containers.get(name).id != before
    assert "making worker 0 again (its configuration changed)" in stack.host.stderr.read_text()
    assert stack.rest().connectors()["archive"].state == "running"
    assert stack.up(changed).changes == proto.DiffResponse.DIFF_NONE


def test_a_password_an_update_wrote_into_the_workers_before_failing_still_restarts_the_tasks_next_time(
        stack: ConnectStack) -> None:
    """A connector user's new password goes into the workers before the connectors' plan is judged. An update that
    failed after that (here: Connect refuses a setting) once left the next one with nothing to do, the files being
    already right, while the tasks ran with the password they started with."""
    rotated = secrets.token_urlsafe(18)
    upsert = UserScramCredentialUpsertion(ARCHIVER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          rotated.encode())
    admin = AdminClient(stack.cluster.client())
    admin.alter_user_scram_credentials([upsert])[ARCHIVER].result(timeout=30)
    stack.logins[ARCHIVER] = rotated
    deployed = stack.deployed
    assert deployed is not None
    with pytest.raises(Exception, match=r"errors\.tolerance"):
        stack.up(_with(deployed, **{"errors.tolerance": "sometimes"}))
    logged = len(stack.host.stderr.read_text())
    assert stack.up(deployed).changes == proto.DiffResponse.DIFF_SOME
    done = stack.host.stderr.read_text()[logged:]
    assert "restarting (its user's new password) connector archive" in done and "making worker" not in done, done
    assert [t[1] for t in stack.rest().connectors()["archive"].tasks] == ["running"]
    assert stack.up(deployed).changes == proto.DiffResponse.DIFF_NONE


def test_kraftform_connect_runs_workers_in_containers_beside_a_docker_cluster(stack: ConnectStack) -> None:
    """The same workers through the CLI, for a cluster of the Docker runtime: up, apply, status, plan, down."""
    spec = stack.cluster.specs.connect[1]
    env = {**os.environ, CLI_PASSWORD_ENV: stack.cluster.passwords[CLI_USER],
           CLI_ARCHIVER_ENV: stack.cluster.passwords[CLI_ARCHIVER]}

    def kraftform(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kraftform", "connect", *args, str(stack.specs_dir), "--state-dir",
                               str(stack.cluster.state_dir), "--name", CLI_CONNECT], capture_output=True, text=True,
                              env=env, timeout=600, check=False)

    up = kraftform("up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"{CLI_CONNECT}: 1 worker(s): https://127.0.0.1:{spec.rest_port}" in up.stdout
    name = worker_container(stack.cluster.name, CLI_CONNECT, 0)
    assert docker_client().containers.get(name).status == "running"
    assert kraftform("plan").returncode == 2
    applied = kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    status = kraftform("status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "1 of 1 worker(s) running" in status.stdout and "cli-archive" in status.stdout
    # The sink reads as its own user: its password is in the worker's container, a file only the worker reads.
    container = docker_client().containers.get(name)
    login = container.exec_run(["stat", "-c", "%a %U", f"/etc/kraftform-connect/logins/{CLI_ARCHIVER}"])
    assert login.output.decode().split() == ["600", "kafka"]
    before = len(stack.sunk())
    producer = Producer(stack.cluster.client())
    producer.produce(TOPIC, b'{"n": 99}')
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 60
    while "{n=99}" not in _cat(container) and time.monotonic() < deadline:
        time.sleep(1)
    assert "{n=99}" in _cat(container) and len(stack.sunk()) > before
    assert kraftform("plan").returncode == 0
    again = kraftform("up")
    assert again.returncode == 0 and "starting worker" not in again.stderr, again.stderr
    down = kraftform("down", "--purge")
    assert down.returncode == 0, down.stderr
    assert not docker_client().containers.list(all=True, filters={"name": name})
    assert kraftform("status").returncode == 2


def _cat(container: Any) -> str:
    result = container.exec_run(["cat", SINK_FILE])
    return str(result.output.decode()) if result.exit_code == 0 else ""
