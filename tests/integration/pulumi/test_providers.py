"""The dynamic providers, called as Pulumi calls them, after a dill round trip, against the real cluster."""

from __future__ import annotations

import base64
from typing import Any

import dill
import pytest
from pulumi.dynamic.dynamic import serialize_provider

from kraftform.kafka.connect import read_connection
from kraftform.kafka.credentials import logs_in
from kraftform.kafka.observe import observe
from kraftform.pulumi.providers import AccessProvider, TopicProvider
from kraftform.spec.model import QuotaEntity, SecretRef, UserSpec

from ..conftest import LiveCluster, unique

pytestmark = pytest.mark.integration


def as_pulumi_would(provider: TopicProvider) -> TopicProvider:
    """Serialized into the state the way the Pulumi SDK does it, then loaded back."""
    restored = dill.loads(base64.b64decode(serialize_provider(provider)))
    assert isinstance(restored, TopicProvider)
    return restored


def connection_props(cluster: LiveCluster) -> dict[str, Any]:
    c = read_connection(cluster.state_dir / "admin.properties")
    return {"bootstrap": c.bootstrap, "protocol": c.protocol, "mechanism": c.mechanism, "username": c.username,
            "password": c.password, "ca_path": c.ca_path}


def test_topic_provider_checks_creates_updates_reads_and_deletes(local_cluster: LiveCluster) -> None:
    provider = as_pulumi_would(TopicProvider())
    name = unique("pulumi")
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    props = {"connection": connection_props(local_cluster), "name": name, "partitions": 2, "replication_factor": 3,
             "config": {"retention.ms": "1d"}}

    checked = provider.check({}, props)
    assert checked.failures == [] and checked.inputs["config"] == {"retention.ms": "86400000"}
    created = provider.create(checked.inputs)
    assert created.id == name
    topic = observe(connection).state.topics[name]
    assert (topic.partitions, topic.replication_factor, dict(topic.config)) == (2, 3, {"retention.ms": "86400000"})

    grown = provider.check(checked.inputs, {**props, "partitions": 4, "config": {"cleanup.policy": "compact"}})
    assert grown.failures == []
    diff = provider.diff(name, checked.inputs, grown.inputs)
    assert diff.changes and diff.replaces == []
    provider.update(name, checked.inputs, grown.inputs)
    topic = observe(connection).state.topics[name]
    assert (topic.partitions, dict(topic.config)) == (4, {"cleanup.policy": "compact"})

    shrink = provider.check(grown.inputs, {**props, "partitions": 3})
    assert [f.property for f in shrink.failures] == ["partitions"]
    assert "cannot decrease partitions" in shrink.failures[0].reason
    assert observe(connection).state.topics[name].partitions == 4

    read = provider.read(name, grown.inputs)
    assert read.outs is not None
    assert read.id == name and read.outs["partitions"] == 4 and read.outs["config"] == {"cleanup.policy": "compact"}

    provider.delete(name, grown.inputs)
    assert name not in observe(connection).state.topics
    assert provider.read(name, grown.inputs).id is None


def test_a_bad_config_key_fails_the_check_with_the_property(local_cluster: LiveCluster) -> None:
    result = TopicProvider().check({}, {"connection": connection_props(local_cluster), "name": unique("pulumi"),
                                        "partitions": 1, "replication_factor": 3, "config": {"retention.mss": 1}})
    assert [f.property for f in result.failures] == ["config.retention.mss"]
    assert "retention.ms" in result.failures[0].reason  # the suggestion


def test_access_provider_manages_a_principals_user_acls_and_quotas(local_cluster: LiveCluster) -> None:
    provider = dill.loads(base64.b64decode(serialize_provider(AccessProvider())))
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    name = unique("app").replace(".", "-")
    principal = f"User:{name}"
    acl = {"principal": principal, "resource_type": "topic", "resource_name": f"{name}.", "pattern_type": "prefixed",
           "operations": ["read", "describe"], "permission": "allow", "host": "*"}
    props: dict[str, Any] = {
        "connection": connection_props(local_cluster), "principal": principal, "acls": [acl],
        "quotas": [{"user": name, "client_id": None, "values": {"producer_byte_rate": 1e6}}],
        "user": {"name": name, "mechanism": "SCRAM-SHA-512", "iterations": 8192, "password": "first"}}

    assert provider.create(props).id == principal
    state = observe(connection).state
    assert name in state.users
    assert {b.operation for b in state.acls if b.principal == principal} == {"read", "describe"}
    assert state.quotas[QuotaEntity(user=name)] == {"producer_byte_rate": 1e6}
    user = UserSpec(name, SecretRef("env", "unused"))
    assert logs_in(connection, user, "first")

    changed = {**props, "acls": [{**acl, "operations": ["read"]}],
               "quotas": [{"user": name, "client_id": None, "values": {"producer_byte_rate": 2e6}}],
               "user": {**props["user"], "password": "second"}}
    assert provider.diff(principal, props, changed).changes
    provider.update(principal, props, changed)
    state = observe(connection).state
    assert {b.operation for b in state.acls if b.principal == principal} == {"read"}
    assert state.quotas[QuotaEntity(user=name)] == {"producer_byte_rate": 2e6}
    assert logs_in(connection, user, "second") and not logs_in(connection, user, "first")

    provider.delete(principal, changed)
    state = observe(connection).state
    assert name not in state.users and QuotaEntity(user=name) not in state.quotas
    assert not any(b.principal == principal for b in state.acls)
