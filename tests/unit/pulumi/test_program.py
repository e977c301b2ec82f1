"""The stack's resource graph for the example specs, under Pulumi's mocks (no CLI, no engine)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import pytest

from kraftform.cluster.containers import in_containers
from kraftform.cluster.spec_json import cluster_from_json
from kraftform.declared import load_specs
from kraftform.plan.export import password_env
from kraftform.pulumi.program import StackConfig, build
from kraftform.spark.manifest import read_manifest

from ...conftest import EXAMPLE_SPECS, SpecsCopy
from ..specset.test_hosts import THREE_HOSTS, with_hosts
from .mocks import IMAGE_ID, SECRET_SIG, SECRET_VALUE, Mocks, RecordingMonitor, built_stack, pulumi_test, start

MONITOR: RecordingMonitor | None = None
#: The stack refuses ssh:// endpoints (`test_a_stack_refuses_an_ssh_host_naming_it`): host b by TCP with TLS instead.
STACK_HOSTS = THREE_HOSTS.replace('docker: "ssh://ops@10.0.0.2"', 'docker: "tcp://10.0.0.2:2376", tls: {ca: ca.pem, '
                                  'cert: cert.pem, key: key.pem}')


def nodes_resource(mocks: Mocks) -> Any:
    """The cluster's nodes, one resource the runtime's engine carries out (`pulumi.nodes`)."""
    [nodes] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "platform-nodes"]
    return nodes


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[Mocks, dict[str, Any]]]:
    global MONITOR
    with built_stack("dev", lambda: StackConfig(Path(EXAMPLE_SPECS), image="local")) as (mocks, MONITOR, outputs):
        yield mocks, outputs


@pulumi_test
def test_the_nodes_are_one_resource_the_runtimes_engine_runs_on_one_network(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(_: Any) -> None:
        nodes = nodes_resource(mocks)
        # No pulumi-docker container of a node: pulumi-docker would replace a changed one on its own.
        assert not [c for c in mocks.of_type("docker:index/container:Container")
                    if any(label["label"] == "dev.kraftform.node" for label in c.inputs["labels"])]
        assert sorted(nodes.inputs["nodes"]) == sorted(
            [f"platform-controller-{i}" for i in range(3)] + [f"platform-broker-{i}" for i in range(3)])
        assert cluster_from_json(nodes.inputs["cluster"]) == replace(in_containers(load_specs(EXAMPLE_SPECS).cluster),
                                                                     features={})
        assert len(mocks.of_type("docker:index/network:Network")) == 1
        [image] = [i for i in mocks.of_type("docker:index/remoteImage:RemoteImage") if i.name != "spark-image"]
        assert image.inputs["name"] == nodes.inputs["image"] == "kraftform/kafka:4.4.0"
        assert image.inputs["keepLocally"] is True
        # The secrets the engine needs are a secret input; what a preview shows per node holds none.
        assert nodes.inputs["secrets"][SECRET_SIG] == SECRET_VALUE
        shown = json.dumps(nodes.inputs["nodes"])
        made = nodes.inputs["secrets"]["value"]
        assert made["admin_password"] not in shown and "PRIVATE KEY" not in shown
        broker = nodes.inputs["nodes"]["platform-broker-0"]
        assert broker["node_id"] == 1 and broker["roles"] == ["broker"] and broker["kafka_version"] == "4.4.0"
        protocol_map = broker["properties"]["listener.security.protocol.map"]
        assert "PLAINTEXT" not in protocol_map.replace("SASL_SSL", "")

    return pulumi.Output.all(*outputs.values()).apply(check)


@pulumi_test
def test_one_resource_holds_every_topic_and_the_outputs_users_need(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack
    specs = load_specs(EXAMPLE_SPECS)

    def check(values: list[Any]) -> None:
        [topics] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "topics"]
        assert len(specs.topics) == 16 and set(topics.inputs["topics"]) == {t.name for t in specs.topics}
        transactions = topics.inputs["topics"]["payments.transactions.v1"]
        spec = next(t for t in specs.topics if t.name == "payments.transactions.v1")
        assert (transactions["partitions"], transactions["replication_factor"], transactions["config"]) == (
            spec.partitions, spec.replication_factor, dict(spec.config))
        assert topics.inputs["protect"] is False  # dev: throw-away clusters
        assert nodes_resource(mocks).inputs["protect"] is False  # and so their nodes
        assert MONITOR is not None and not MONITOR.protected["platform-nodes"]
        assert values[0] == "localhost:19092,localhost:19093,localhost:19094"
        assert values[1].startswith("-----BEGIN CERTIFICATE-----")
        assert set(values[2]) == set(specs.profiles)
        assert values[2]["durability"]["producer"]["acks"] == "all"
        assert len(mocks.of_type("kraftform:index:Specs")) == 1
        assert len(mocks.of_type("kraftform:index:Consumers")) == 1

    return pulumi.Output.all(outputs["bootstrapServers"], outputs["caCertificate"],
                             outputs["clientConfigs"]).apply(check)


@pulumi_test
def test_secrets_stay_secret(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    _mocks, outputs = stack

    def check(flags: list[bool]) -> None:
        assert flags == [True, True, False]

    return pulumi.Output.all(outputs["clientConfigs"].is_secret(), outputs["adminConnection"].is_secret(),
                             pulumi.Output.from_input(outputs["bootstrapServers"]).is_secret()).apply(
        lambda v: check(list(v)))


@pulumi_test
def test_the_admin_connection_output_is_what_client_files_need(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    _mocks, outputs = stack

    def check(admin: dict[str, str]) -> None:
        assert admin["bootstrapServers"] == "localhost:19092,localhost:19093,localhost:19094"
        assert (admin["securityProtocol"], admin["saslMechanism"], admin["username"]) == (
            "SASL_SSL", "SCRAM-SHA-512", "kraftform-admin")
        assert len(admin["password"]) >= 16  # the generated admin password, kept in the state

    return outputs["adminConnection"].apply(check)


@pulumi_test
def test_one_access_resource_per_principal_with_its_password_secret(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack
    specs = load_specs(EXAMPLE_SPECS)

    def check(_: Any) -> None:
        access = {r.name: r for r in mocks.of_type("pulumi-python:dynamic:Resource")
                  if r.name.startswith("User:") or r.name == "default-quotas"}
        assert sorted(access) == sorted([f"User:{u.name}" for u in specs.users]
                                        + ["User:CN=legacy-billing,OU=apps,O=example", "default-quotas"])
        orders = access["User:orders-service"].inputs
        assert {o for a in orders["acls"] for o in a["operations"]} == {"read", "write", "describe"}
        assert [q["values"] for q in orders["quotas"]] == [
            {"producer_byte_rate": 10e6, "consumer_byte_rate": 20e6, "controller_mutation_rate": 5.0}]
        user = orders["user"]  # a secret as a whole, because the password inside it is
        assert user[SECRET_SIG] == SECRET_VALUE and user["value"]["name"] == "orders-service"
        assert access["default-quotas"].inputs["quotas"][0]["user"] == "<default>"

    return pulumi.Output.all(*outputs.values()).apply(check)


@pulumi_test
def test_kafka_resources_wait_for_the_nodes(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(_: Any) -> None:
        assert MONITOR is not None
        kafka = [r.name for r in mocks.of_type("pulumi-python:dynamic:Resource")
                 if not r.name.endswith(("-secrets", "-state", "-ready", "-nodes"))]
        assert len(kafka) == 1 + 7 + 1  # the topics, one resource per principal, and the broker settings
        for name in kafka:
            waits_for = {urn.rsplit("::", 1)[1] for urn in MONITOR.dependencies[name]}
            assert "platform-nodes" in waits_for, name  # every node as declared, partitions moved
        # A dev stack is throw-away: nothing protected, so `pulumi destroy` removes it all.
        assert not any(MONITOR.protected[name] for name in kafka)
        nodes = {urn.rsplit("::", 1)[1] for urn in MONITOR.dependencies["platform-nodes"]}
        assert {"platform-network", "platform-image"} <= nodes

    return pulumi.Output.all(*outputs.values()).apply(check)


@pulumi_test
def test_each_consumer_is_a_container_beside_the_cluster_after_its_topics_and_access(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack
    specs = load_specs(EXAMPLE_SPECS)

    def check(deployed: dict[str, dict[str, str]]) -> None:
        assert MONITOR is not None
        assert sorted(c.name for c in mocks.of_type("kraftform:index:SparkConsumer")) == sorted(
            c.name for c in specs.consumers) == ["clickstream-sessionizer", "fraud-scoring"]
        assert deployed == {c.name: {"container": f"platform-consumer-{c.name}", "volume": "platform-consumers-data"}
                            for c in specs.consumers}
        assert not mocks.of_type("kraftform:index:SparkCluster")  # the example runs local masters
        [image] = [i for i in mocks.of_type("docker:index/remoteImage:RemoteImage") if i.name == "spark-image"]
        assert image.inputs["name"].startswith("kraftform/spark:4.2.0-") and image.inputs["keepLocally"] is True
        container = next(c for c in mocks.of_type("docker:index/container:Container")
                         if c.name == "fraud-scoring-consumer")
        # The same container `kraftform consumers up` runs (spark.containers), by image ID, on the cluster's network.
        assert container.inputs["image"] == IMAGE_ID
        assert container.inputs["command"][:4] == ["kraftform", "consumers", "run", "fraud-scoring"]
        assert container.inputs["networksAdvanced"] == [{"name": "kraftform-platform",
                                                         "aliases": ["platform-consumer-fraud-scoring"]}]
        assert container.inputs["volumes"] == [{"volumeName": "platform-consumers-data",
                                                "containerPath": "/var/lib/kraftform"}]
        # Healthy only once this container's own job finished a micro-batch; `pulumi up` waits for that in
        # ConsumerReady (which names the job's error), not in pulumi-docker (which could not).
        assert container.inputs["wait"] is False
        assert "/home/kraftform/heartbeat" in container.inputs["healthcheck"]["tests"][-1]
        [ready] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "fraud-scoring-ready"]
        assert ready.inputs["consumer"] == "fraud-scoring" and ready.inputs["timeout_s"] >= 240
        assert {urn.rsplit("::", 1)[1] for urn in MONITOR.dependencies["fraud-scoring-ready"]} >= {
            "fraud-scoring-consumer"}
        assert "ports" not in container.inputs or not container.inputs["ports"]
        wrapped = container.inputs["uploads"]  # the client config holds the consumer's password: secret
        assert wrapped[SECRET_SIG] == SECRET_VALUE
        uploads = {u["file"]: u for u in wrapped["value"]}
        client = uploads["/etc/kraftform/client.properties"]
        assert client["permissions"] == "0600" and client["owner"] == "1000"
        assert "bootstrap.servers=platform-broker-0:9092,platform-broker-1:9092,platform-broker-2:9092\n" in \
            client["content"]
        # Of the specs, only its job manifest: what it runs, resolved.
        assert set(uploads) == {"/etc/kraftform/job.json", "/etc/kraftform/ca.pem", "/etc/kraftform/client.properties"}
        job = read_manifest(uploads["/etc/kraftform/job.json"]["content"], "job.json")
        assert job.consumer == replace(next(c for c in specs.consumers if c.name == "fraud-scoring"), description="",
                                       location=job.consumer.location, query_location=job.consumer.query_location)
        assert job.reset_to == "" and not job.reset_allowed
        # It waits for what it uses: its topics, its own principal's access, its volume and state guard; not the
        # other principals.
        waits_for = {urn.rsplit("::", 1)[1] for urn in MONITOR.dependencies["fraud-scoring-consumer"]}
        assert {"topics", "User:fraud-scoring", "consumers-data", "fraud-scoring-state"} <= waits_for
        assert not {"User:orders-service", "User:clickstream-sessionizer", "default-quotas"} & waits_for
        # Its checkpoint's state shape, guarded in preview (pulumi.consumers.ConsumerStateProvider).
        [state] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "fraud-scoring-state"]
        assert state.inputs["shape"]["topics"] == ["payments.authorizations.v1", "payments.transactions.v1"]
        assert state.inputs["allow_reset"] is False and "--allow-destructive" not in container.inputs["command"]

    return outputs["consumers"].apply(check)


def test_every_missing_password_is_named_at_once_and_nothing_is_declared() -> None:
    users = load_specs(EXAMPLE_SPECS).users
    saved = dict(os.environ)
    for user in users:
        os.environ.pop(password_env(user.name), None)
    os.environ[password_env(users[0].name)] = "set"
    try:
        mocks, _ = start("dev-missing")
        with pytest.raises(pulumi.RunError) as caught:
            build(StackConfig(Path(EXAMPLE_SPECS)))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    message = str(caught.value)
    assert message.startswith(f"{len(users) - 1} password(s) not set; nothing was deployed")
    assert all(f"user {u.name!r}" in message for u in users[1:]) and f"user {users[0].name!r}" not in message
    assert mocks.resources == []  # raised before the first resource



def test_a_stack_refuses_an_ssh_host_naming_it(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy())
    with pytest.raises(pulumi.RunError) as refused, built_stack("dev-hosts", lambda: StackConfig(specs)):
        pass
    assert str(refused.value).startswith(f"{specs / 'cluster.yaml'}:") and "host 'host-b': an ssh:// Docker endpoint " \
        "is not supported under `pulumi up` yet; give the host a tcp:// endpoint" in str(refused.value)


def test_a_stack_on_hosts_refuses_what_it_does_not_place_there_yet_naming_where(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), STACK_HOSTS)
    with pytest.raises(pulumi.RunError) as refused, built_stack("dev-hosts", lambda: StackConfig(specs)):
        pass
    message = str(refused.value)
    assert message.startswith(f"{specs / 'cluster.yaml'}:") and message.endswith(
        "the stack places the nodes on their hosts, but not yet what runs beside them: consumers in containers; "
        "nothing was deployed (`kraftform connect up`, `consumers up` and `monitoring up` run Connect workers, "
        "consumers and monitoring beside a cluster on hosts: docs/hosts.md)")


@pulumi_test
def test_a_stack_on_hosts_has_a_docker_provider_per_host_and_the_image_looked_for_on_each(
        specs_copy: SpecsCopy) -> Any:
    specs = with_hosts(specs_copy(), STACK_HOSTS)
    (specs / "consumers.yaml").unlink()
    for name in ("ca.pem", "cert.pem", "key.pem"):  # host b's client certificate, read when the program runs
        (specs / name).write_text(f"PEM {name}")

    def check(_: Any) -> None:
        providers = {r.name: r.inputs["host"] for r in mocks.of_type("pulumi:providers:docker")}
        assert providers == {"platform-host-a": "unix:///run/a/docker.sock",
                             "platform-host-b": "tcp://10.0.0.2:2376", "platform-host-c": "unix:///run/c/docker.sock"}
        images = {r.name: r.provider for r in mocks.of_type("docker:index/remoteImage:RemoteImage")}
        assert set(images) == {f"platform-image-host-{h}" for h in "abc"}
        assert all(f"platform-host-{name[-1]}" in (provider or "") for name, provider in images.items())
        assert not mocks.of_type("docker:index/network:Network")
        nodes = nodes_resource(mocks)
        assert {name: node["host"] for name, node in nodes.inputs["nodes"].items()} == {
            **{f"platform-controller-{i}": f"host-{h}" for i, h in enumerate("abc")},
            **{f"platform-broker-{i}": f"host-{h}" for i, h in enumerate("abc")}}

    with built_stack("dev-hosts", lambda: StackConfig(specs)) as (mocks, _monitor, outputs):
        return outputs["topics"].apply(check)
