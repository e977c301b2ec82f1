"""The dynamic providers in Pulumi's own provider host (`python -m pulumi.dynamic`, a process of its own),
driven over gRPC in the engine's order and with the engine's arguments: Check gets old and new inputs,
Diff and Update get the old *outputs*, Delete gets the outputs. The host unpickles each provider with dill
from the `__provider` property, so this also proves kraftform imports where Pulumi runs it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from pulumi.dynamic import ResourceProvider
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import proto, rpc
from pulumi.runtime.proto import provider_pb2_grpc

from kraftform.kafka.connect import read_connection
from kraftform.kafka.credentials import logs_in
from kraftform.kafka.observe import observe
from kraftform.pulumi.cluster import ClusterSecretsProvider, secrets_inputs
from kraftform.pulumi.providers import AccessProvider, TopicProvider
from kraftform.spec.loader import load_specs
from kraftform.spec.model import QuotaEntity, SecretRef, UserSpec

from ...conftest import EXAMPLE_SPECS
from ..conftest import LiveCluster, unique
from .test_providers import connection_props

pytestmark = pytest.mark.integration
URN = "urn:pulumi:dev::kraftform::pulumi-python:dynamic:Resource::{}"


def wire(props: dict[str, Any]) -> Any:
    """Properties as the engine sends them (a protobuf Struct; secrets already plain: the dynamic provider
    host does not accept secrets)."""
    # A loop of its own, as the provider host does: asyncio.run() would leave this thread without a current
    # loop, and the Pulumi SDK (the mock tests that follow) asks for one.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def unwire(struct: Any) -> dict[str, Any]:
    return {k: v for k, v in rpc.deserialize_properties(struct).items() if k != "__provider"}


class ProviderHost:
    """One provider host process, as the engine starts it; resources keep their state here between calls."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.dynamic"], cwd=cwd,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={**os.environ, "PULUMI_PROJECT": "kraftform"})
        assert self.process.stdout is not None
        port = int(self.process.stdout.readline())
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        self.stub.Configure(proto.ConfigureRequest(args=wire({})))

    def check(self, provider: ResourceProvider, name: str, olds: dict[str, Any], news: dict[str, Any]
              ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        code = serialize_provider(provider)
        old = wire({**olds, "__provider": code}) if olds else wire({})
        response = self.stub.Check(proto.CheckRequest(urn=URN.format(name), olds=old,
                                                      news=wire({**news, "__provider": code})))
        return unwire(response.inputs), [(f.property, f.reason) for f in response.failures]

    def create(self, provider: ResourceProvider, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        code = serialize_provider(provider)
        response = self.stub.Create(proto.CreateRequest(urn=URN.format(name),
                                                        properties=wire({**inputs, "__provider": code})))
        return response.id, unwire(response.properties)

    def diff(self, provider: ResourceProvider, name: str, id_: str, outputs: dict[str, Any],
             inputs: dict[str, Any]) -> Any:
        code = serialize_provider(provider)
        return self.stub.Diff(proto.DiffRequest(id=id_, urn=URN.format(name),
                                                olds=wire({**outputs, "__provider": code}),
                                                news=wire({**inputs, "__provider": code})))

    def update(self, provider: ResourceProvider, name: str, id_: str, outputs: dict[str, Any],
               inputs: dict[str, Any]) -> dict[str, Any]:
        code = serialize_provider(provider)
        response = self.stub.Update(proto.UpdateRequest(id=id_, urn=URN.format(name),
                                                        olds=wire({**outputs, "__provider": code}),
                                                        news=wire({**inputs, "__provider": code})))
        return unwire(response.properties)

    def delete(self, provider: ResourceProvider, name: str, id_: str, outputs: dict[str, Any]) -> None:
        code = serialize_provider(provider)
        self.stub.Delete(proto.DeleteRequest(id=id_, urn=URN.format(name),
                                             properties=wire({**outputs, "__provider": code})))

    def close(self) -> None:
        self.channel.close()
        self.process.kill()
        self.process.wait()


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderHost]:
    started = ProviderHost(tmp_path_factory.mktemp("provider-host"))  # not the repository: kraftform must be installed
    try:
        yield started
    finally:
        started.close()


def test_cluster_secrets_are_made_once_and_a_second_run_changes_nothing(host: ProviderHost) -> None:
    provider = ClusterSecretsProvider()
    spec = load_specs(EXAMPLE_SPECS).cluster
    inputs, failures = host.check(provider, "platform-secrets", {}, secrets_inputs(spec, None))
    assert failures == []
    id_, outputs = host.create(provider, "platform-secrets", inputs)
    assert id_ == "platform" and outputs["ca_cert"].startswith("-----BEGIN CERTIFICATE-----")
    assert outputs["admin_password"] and len(outputs["node_keys"]) == 6
    again, _ = host.check(provider, "platform-secrets", inputs, secrets_inputs(spec, None))
    assert host.diff(provider, "platform-secrets", id_, outputs, again).changes == proto.DiffResponse.DIFF_NONE


def test_a_topic_through_the_engine_calls_and_a_decrease_refused(host: ProviderHost, local_cluster: LiveCluster
                                                                 ) -> None:
    provider = TopicProvider()
    name = unique("host")
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    props = {"connection": connection_props(local_cluster), "name": name, "partitions": 2, "replication_factor": 3,
             "config": {"retention.ms": "1d"}}

    inputs, failures = host.check(provider, name, {}, props)
    assert failures == [] and inputs["config"] == {"retention.ms": "86400000"}
    id_, outputs = host.create(provider, name, inputs)
    assert id_ == name and observe(connection).state.topics[name].partitions == 2
    # The next `pulumi up` with the same specs: nothing to do.
    same, _ = host.check(provider, name, inputs, props)
    assert host.diff(provider, name, id_, outputs, same).changes == proto.DiffResponse.DIFF_NONE

    grown, _ = host.check(provider, name, inputs, {**props, "partitions": 3})
    diff = host.diff(provider, name, id_, outputs, grown)
    assert diff.changes == proto.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    outputs = host.update(provider, name, id_, outputs, grown)
    assert observe(connection).state.topics[name].partitions == 3

    _, refused = host.check(provider, name, grown, {**props, "partitions": 1})
    assert [p for p, _ in refused] == ["partitions"] and "cannot decrease partitions" in refused[0][1]

    host.delete(provider, name, id_, outputs)
    assert name not in observe(connection).state.topics


def test_a_principal_through_the_engine_calls(host: ProviderHost, local_cluster: LiveCluster) -> None:
    provider = AccessProvider()
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    name = unique("hostapp").replace(".", "-")
    principal = f"User:{name}"
    props: dict[str, Any] = {
        "connection": connection_props(local_cluster), "principal": principal,
        "acls": [{"principal": principal, "resource_type": "topic", "resource_name": f"{name}.",
                  "pattern_type": "prefixed", "operations": ["read"], "permission": "allow", "host": "*"}],
        "quotas": [{"user": name, "client_id": None, "values": {"consumer_byte_rate": 1e6}}],
        "user": {"name": name, "mechanism": "SCRAM-SHA-512", "iterations": 8192, "password": "first"}}

    inputs, failures = host.check(provider, principal, {}, props)
    assert failures == []
    id_, outputs = host.create(provider, principal, inputs)
    state = observe(connection).state
    assert id_ == principal and name in state.users and state.quotas[QuotaEntity(user=name)] == {
        "consumer_byte_rate": 1e6}
    assert logs_in(connection, UserSpec(name, SecretRef("env", "unused")), "first")
    same, _ = host.check(provider, principal, inputs, props)
    assert host.diff(provider, principal, id_, outputs, same).changes == proto.DiffResponse.DIFF_NONE

    host.delete(provider, principal, id_, outputs)
    state = observe(connection).state
    assert name not in state.users and not any(b.principal == principal for b in state.acls)
