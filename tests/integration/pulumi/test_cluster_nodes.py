"""A stack's nodes as `pulumi up` changes them: the `ClusterNodes` provider in Pulumi's provider host, driven over
gRPC with values as the engine sends them (every number a float), on a real Docker engine. The four day-2
changes a team makes (a setting read at start, brokers and controllers added, then removed) go through the
engine `kraftform apply --state-dir` runs, checked from outside: container starts, Kafka's own view of its
brokers, voters and replicas.

The cluster starts on the release pinned before (OLD) and is upgraded to the pinned one first, under an acks=all
producer. The tests run in order on one cluster, each leaving it as its inputs declare."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pulumi.runtime import proto

from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import (
    LOCAL_IMAGE,
    bootstrap_servers,
    container_specs,
    in_containers,
    stack_image,
)
from kraftform.cluster.render import secrets_from_dict
from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.kafka import gates
from kraftform.pulumi.cluster import ClusterSecretsProvider, secrets_inputs
from kraftform.pulumi.nodes import ClusterNodesProvider, node_inputs, nodes_props
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.engines.images import build_kafka
from kraftform.runtime.nodes.docker_engine import LABEL_RECORD
from kraftform.runtime.nodes.rolling import RollOptions
from kraftform.specset.model import ClusterDefaults, ClusterSpec, ExternalListener
from kraftform.versions import KAFKA_VERSION

from ...conftest import REPO
from ..runtime.conftest import FIXTURE, clear_leftovers
from .engine import ProviderHost

pytestmark = pytest.mark.integration

NAME = "kfstack"
TOPIC = "stack.moves"
#: The release the stack starts on: the one pinned before KAFKA_VERSION.
OLD = "4.3.1"


@dataclasses.dataclass
class Stack:
    """The two resources of a stack's cluster as the engine holds them: inputs, outputs, ids."""

    host: ProviderHost
    spec: ClusterSpec
    secrets_id: str = ""
    secrets: dict[str, Any] = dataclasses.field(default_factory=dict)
    nodes_id: str = ""
    nodes: dict[str, Any] = dataclasses.field(default_factory=dict)
    ca: Path | None = None

    def secrets_news(self, spec: ClusterSpec) -> dict[str, Any]:
        news, failures = self.host.check(ClusterSecretsProvider(), "secrets", self.secrets,
                                         secrets_inputs(spec, None))
        assert failures == []
        return news

    def nodes_news(self, spec: ClusterSpec, secrets: dict[str, Any], protect: bool = False) -> dict[str, Any]:
        made = secrets_from_dict(secrets)
        plain = dataclasses.replace(in_containers(spec), features={})
        # A node that does not come back is given three minutes (a quick-start broker is back in about 10 s alone;
        # under the rest of the suite one took over 60 s to register, ci38).
        return nodes_props(plain, stack_image("local", spec.kafka_version), secrets, node_inputs(plain, made),
                           RollOptions(node_timeout_s=180), protect)

    def up(self, spec: ClusterSpec) -> Any:
        """`pulumi up` of the cluster as `spec` declares it: the secrets resource first, then the nodes; returns
        the nodes' Diff as the preview saw it."""
        if not self.secrets:
            self.secrets_id, self.secrets = self.host.create(ClusterSecretsProvider(), "secrets",
                                                             self.secrets_news(spec))
            news = self.nodes_news(spec, self.secrets)
            self.nodes_id, self.nodes = self.host.create(ClusterNodesProvider(), "nodes", news)
            self.spec = spec
            return None
        self.secrets = self.host.update(ClusterSecretsProvider(), "secrets", self.secrets_id, self.secrets,
                                        self.secrets_news(spec))
        news = self.nodes_news(spec, self.secrets)
        diff = self.host.diff(ClusterNodesProvider(), "nodes", self.nodes_id, self.nodes, news)
        if diff.changes == proto.DiffResponse.DIFF_SOME:
            self.nodes = self.host.update(ClusterNodesProvider(), "nodes", self.nodes_id, self.nodes, news)
        self.spec = spec
        return diff

    def connection(self) -> Connection:
        made = secrets_from_dict(self.secrets)
        if self.ca is None:
            self.ca = self.host.tmpdir.parent / "stack-ca.pem"
            self.ca.write_text(made.ca.cert_pem)
        spec = in_containers(self.spec)
        bootstrap = bootstrap_servers(container_specs(topology(spec), made, LOCAL_IMAGE),
                                      spec.security.external_listener.host)
        return Connection.scram(bootstrap, spec.security.admin_user, made.admin_password,
                                spec.security.sasl_mechanism, str(self.ca))

    def admin(self) -> AdminClient:
        return AdminClient(self.connection().librdkafka())

    def started(self) -> dict[str, str]:
        """Each node container's start time: a restart changes it."""
        client = docker_client()
        return {str(c.name): c.attrs["State"]["StartedAt"]
                for c in client.containers.list(all=True, filters={"label": f"dev.kraftform.cluster={NAME}"})
                if LABEL_RECORD in c.labels}


@contextlib.contextmanager
def stack_up(host: ProviderHost, spec: ClusterSpec) -> Iterator[Stack]:
    """The stack's cluster made as `spec` declares it, and its nodes deleted at the end as `pulumi destroy` does."""
    made = Stack(host, spec)
    try:
        made.up(spec)
        yield made
    finally:
        if made.nodes_id:
            host.delete(ClusterNodesProvider(), "nodes", made.nodes_id, made.nodes)


def spec_of(**fields: Any) -> ClusterSpec:
    base = load_specs(FIXTURE.parent).cluster
    listener = ExternalListener(True, "localhost", 49092)
    # Fixed whatever the broker count, so that adding a broker restarts none (they are in every server.properties).
    return dataclasses.replace(base, name=NAME, quick_start=True, racks=(), defaults=ClusterDefaults(1, 2, 1), **{
        "security": dataclasses.replace(base.security, external_listener=listener), **fields})


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    client = docker_client()
    build_kafka(client, [])
    build_kafka(client, [], OLD)
    clear_leftovers(client, NAME)
    host = ProviderHost(REPO, tmp_path_factory.mktemp("nodes-host-tmp"))
    try:
        with stack_up(host, spec_of(brokers=2, controllers=3, kafka_version=OLD)) as made:
            yield made
    finally:
        try:
            host.close()
        finally:
            base = tmp_path_factory.getbasetemp()
            for container in client.containers.list(all=True, filters={"label": f"dev.kraftform.cluster={NAME}"}):
                (base / f"{container.name}.log").write_bytes(container.logs())
            clear_leftovers(client, NAME)


def test_a_first_up_waits_until_every_broker_is_registered_and_a_second_changes_nothing(stack: Stack) -> None:
    assert sorted(stack.admin().list_topics(timeout=10).brokers) == [1, 2]
    assert sorted(stack.started()) == [f"{NAME}-broker-{i}" for i in range(2)] + [
        f"{NAME}-controller-{i}" for i in range(3)]
    before = stack.started()
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE
    assert stack.started() == before
    admin = stack.admin()
    admin.create_topics([NewTopic(TOPIC, 6, 2)])[TOPIC].result(30)



def test_an_admin_or_mechanism_change_that_would_lock_pulumi_out_fails_the_update_and_nothing_restarts(
        stack: Stack) -> None:
    """As the CLI's (tests/integration/runtime/test_day2.py): the admin's credential exists for one name and one
    mechanism, made at format, so each node restarted with another would refuse the admin the others accept."""
    before = stack.started()
    security = stack.spec.security
    for changed in (dataclasses.replace(security, admin_user="another-admin"),
                    dataclasses.replace(security, sasl_mechanism="SCRAM-SHA-256")):
        with pytest.raises(grpc.RpcError) as refused:
            stack.up(dataclasses.replace(stack.spec, security=changed))
        assert "make a new cluster with it" in str(refused.value), str(refused.value)[-3000:]
    assert stack.started() == before
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE

def test_a_node_container_stopped_outside_pulumi_is_a_change_and_the_update_starts_it(stack: Stack) -> None:
    """The inputs have not changed, but a declared node is not running: the preview is not "unchanged" (it was),
    and the update starts the container with its data; the next preview is empty again."""
    name = f"{NAME}-broker-1"
    client = docker_client()
    client.containers.get(name).stop(timeout=30)
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_SOME
    assert client.containers.get(name).attrs["State"]["Running"]
    assert f"{name}: not running; starting it with its data and configuration" in stack.host.stderr.read_text()
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE
    assert sorted(stack.admin().list_topics(timeout=10).brokers) == [1, 2]


class Writer:
    """An acks=all idempotent producer writing numbered records on a thread; `acked` is what Kafka acknowledged."""

    def __init__(self, config: dict[str, Any], topic: str) -> None:
        self.config, self.topic = config, topic
        self.acked: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        producer = Producer({**self.config, "acks": "all", "enable.idempotence": True, "linger.ms": 5})

        def delivered(error: Any, message: Any) -> None:
            if error is None:
                self.acked.add(int(message.value()))

        sent = 0
        while not self._stop.is_set():
            producer.produce(self.topic, str(sent).encode(), on_delivery=delivered)
            sent += 1
            producer.poll(0.005)
        producer.flush(120)

    def wait_acked(self, count: int, timeout: float) -> None:
        """Until `count` writes are acknowledged (a producer up and writing), or fail after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"{len(self.acked)} of {count} writes acknowledged in {timeout} s"
            time.sleep(0.2)

    def stop(self) -> set[int]:
        self._stop.set()
        self._thread.join(180)
        return self.acked


def read_back(config: dict[str, Any], topic: str, partitions: int, expected: set[int]) -> set[int]:
    """The topic's values, read from the beginning until every `expected` value is seen (or 300 s pass). Not up to
    the high watermarks read once: a leader elected a moment ago may report one below writes already acknowledged,
    until its follower fetches again."""
    consumer = Consumer({**config, "group.id": f"read-{time.monotonic_ns()}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: set[int] = set()
        deadline = time.monotonic() + 300
        while not expected <= values and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                values.add(int(message.value() or b"-1"))
        return values
    finally:
        consumer.close()


def test_an_upgrade_rolls_every_node_onto_the_new_release_one_at_a_time_and_loses_no_acknowledged_write(
        stack: Stack) -> None:
    topic = "stack.upgrade"
    admin = stack.admin()  # held: a client destroyed before its future resolves fails it
    admin.create_topics([NewTopic(topic, 3, 2)])[topic].result(30)
    before = stack.started()
    config = stack.connection().librdkafka()
    writer = Writer(config, topic)
    try:
        writer.wait_acked(100, 120)  # writing before the first node stops
        diff = stack.up(dataclasses.replace(stack.spec, kafka_version=KAFKA_VERSION))
    finally:
        acked = writer.stop()
    assert diff.changes == proto.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    assert stack.nodes["image"] == LOCAL_IMAGE
    client = docker_client()
    containers = client.containers.list(filters={"label": f"dev.kraftform.cluster={NAME}"})
    assert {c.name: c.image.tags for c in containers if LABEL_RECORD in c.labels} == {
        n: [LOCAL_IMAGE] for n in before}
    assert all(stack.started()[n] != before[n] for n in before)
    log = stack.host.stderr.read_text()
    # One node at a time, brokers after the controllers (the active one last among them).
    steps = [log.index(f"[{i}/5] ") for i in range(1, 6)]
    assert steps == sorted(steps) and log.index(f"[5/5] {NAME}-broker-1: restarting") > steps[0], log[-3000:]
    missing = acked - read_back(config, topic, 3, acked)
    assert len(acked) > 500 and not missing, f"{len(missing)} acknowledged write(s) lost, e.g. {sorted(missing)[:10]}"
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE


def test_a_setting_read_at_start_restarts_each_broker_once_and_no_controller(stack: Stack) -> None:
    before = stack.started()
    diff = stack.up(dataclasses.replace(stack.spec, broker_config={"log.retention.check.interval.ms": "600000"}))
    assert diff.changes == proto.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    after = stack.started()
    brokers = [n for n in before if "broker" in n]
    assert all(after[n] != before[n] for n in brokers)
    assert all(after[n] == before[n] for n in before if n not in brokers)
    # One at a time, in the CLI's order and through its gates: its messages are the provider's log.
    log = stack.host.stderr.read_text()
    assert f"[1/2] {NAME}-broker-0: restarting (log.retention.check.interval.ms" in log, log[-3000:]
    assert log.index(f"[1/2] {NAME}-broker-0: back in") < log.index(f"[2/2] {NAME}-broker-1: waiting until it may")
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE


def test_brokers_and_controllers_added_join_and_partitions_move_onto_the_new_broker(stack: Stack) -> None:
    stack.up(dataclasses.replace(stack.spec, brokers=3, controllers=5))
    admin = stack.admin()
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3]
    quorum = gates.read_quorum(stack.connection())
    assert sorted(quorum.behind_ms) == [1001, 1002, 1003, 1004, 1005]
    replicas = [r for p in admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.values() for r in p.replicas]
    assert replicas.count(3) == 4 and replicas.count(1) == replicas.count(2) == 4
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE


def test_brokers_and_controllers_removed_leave_kafkas_metadata_one_at_a_time(stack: Stack) -> None:
    """Refused while the stack protects its objects (the engine's `check`, before anything runs: the preview shows
    it); with the consent (`kraftform:protect false`), each removed node drained and taken out in turn."""
    fewer = dataclasses.replace(stack.spec, brokers=2, controllers=3)
    before = stack.started()
    _, refused = stack.host.check(ClusterNodesProvider(), "nodes", stack.nodes,
                                  stack.nodes_news(fewer, stack.secrets, protect=True))
    assert sorted(reason.split(" (")[0] for _, reason in refused) == [
        f"node {NAME}-broker-2", f"node {NAME}-controller-3", f"node {NAME}-controller-4"], refused
    assert all("kraftform:protect false" in reason for _, reason in refused)
    assert stack.started() == before
    stack.up(fewer)
    admin = stack.admin()
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2]
    assert sorted(gates.read_quorum(stack.connection()).behind_ms) == [1001, 1002, 1003]
    topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    assert all(set(p.replicas) <= {1, 2} and p.leader in (1, 2) for p in topic.partitions.values())
    assert sorted(stack.started()) == [f"{NAME}-broker-{i}" for i in range(2)] + [
        f"{NAME}-controller-{i}" for i in range(3)]
    volumes = {v.name for v in docker_client().volumes.list(filters={"label": f"dev.kraftform.cluster={NAME}"})}
    assert volumes == {f"{n}-data" for n in stack.started()}
    log = stack.host.stderr.read_text()
    assert f"removing {NAME}-controller-3" in log and f"removing {NAME}-controller-4" in log
    assert stack.up(stack.spec).changes == proto.DiffResponse.DIFF_NONE


def test_a_node_that_cannot_start_fails_the_update_naming_its_error_and_is_started_as_it_was(stack: Stack) -> None:
    before = stack.started()
    with pytest.raises(grpc.RpcError) as halted:
        stack.up(dataclasses.replace(stack.spec, broker_config={"log.retention.check.interval.ms": "600000",
                                                                "replica.fetch.wait.max.ms": "60000"}))
    message = str(halted.value)
    assert f"{NAME}-broker-0 did not come back with its new configuration" in message, message[-3000:]
    assert "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms" in message
    assert "started again with its previous configuration and is back" in message
    after = stack.started()
    assert {n: t for n, t in after.items() if n != f"{NAME}-broker-0"} == {
        n: t for n, t in before.items() if n != f"{NAME}-broker-0"}
    assert sorted(stack.admin().list_topics(timeout=10).brokers) == [1, 2]
