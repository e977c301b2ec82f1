"""The dynamic providers, called as Pulumi calls them, after a dill round trip, against the real cluster."""

from __future__ import annotations

import base64
import time
from typing import Any

import dill
import pytest
from pulumi.dynamic.dynamic import serialize_provider

from kraftform.cluster.connection import read_connection
from kraftform.errors import AuthenticationFailed
from kraftform.kafka.credentials import logs_in
from kraftform.kafka.observe import observe
from kraftform.pulumi.providers import LOGIN_GRACE_S, AccessProvider, TopicProvider
from kraftform.pulumi.topics import TopicSetProvider
from kraftform.specset.model import QuotaEntity, SecretRef, UserSpec

from ..conftest import LiveCluster, unique

pytestmark = pytest.mark.integration


def as_pulumi_would(provider: TopicSetProvider) -> TopicSetProvider:
    """Serialized into the state the way the Pulumi SDK does it, then loaded back."""
    restored = dill.loads(base64.b64decode(serialize_provider(provider)))
    assert isinstance(restored, TopicSetProvider)
    return restored


def connection_props(cluster: LiveCluster) -> dict[str, Any]:
    c = read_connection(cluster.state_dir / "admin.properties")
    return {"bootstrap": c.bootstrap, "protocol": c.protocol, "mechanism": c.mechanism, "username": c.username,
            "password": c.password, "ca_path": c.ca_path}


def test_the_topic_set_creates_grows_configures_removes_reads_and_deletes(local_cluster: LiveCluster) -> None:
    provider = as_pulumi_would(TopicSetProvider())
    a, b = unique("pulumi"), unique("pulumi")
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    props: dict[str, Any] = {"connection": connection_props(local_cluster), "protect": False, "topics": {
        a: {"partitions": 2, "replication_factor": 3, "config": {"retention.ms": "1d"}},
        b: {"partitions": 1, "replication_factor": 3, "config": {}}}}

    checked = provider.check({}, props)
    assert checked.failures == [] and checked.inputs["topics"][a]["config"] == {"retention.ms": "86400000"}
    created = provider.create(checked.inputs)
    assert created.id == "topics"
    topics = observe(connection).state.topics
    assert (topics[a].partitions, topics[a].replication_factor, dict(topics[a].config)) == (
        2, 3, {"retention.ms": "86400000"})
    assert topics[b].partitions == 1

    # a grows and changes its config; b leaves the specs (not protected: it is deleted).
    grown = provider.check(checked.inputs, {**props, "topics": {
        a: {"partitions": 4, "replication_factor": 3, "config": {"cleanup.policy": "compact"}}}})
    assert grown.failures == []
    diff = provider.diff("topics", checked.inputs, grown.inputs)
    assert diff.changes and diff.replaces == []
    provider.update("topics", checked.inputs, grown.inputs)
    topics = observe(connection).state.topics
    assert (topics[a].partitions, dict(topics[a].config)) == (4, {"cleanup.policy": "compact"}) and b not in topics

    read = provider.read("topics", grown.inputs)
    assert read.outs is not None and read.outs["topics"] == {
        a: {"partitions": 4, "replication_factor": 3, "config": {"cleanup.policy": "compact"}}}

    provider.delete("topics", grown.inputs)
    assert a not in observe(connection).state.topics
    gone = provider.read("topics", grown.inputs)
    assert gone.outs is not None and gone.outs["topics"] == {}  # the next `pulumi up` creates it again


def test_a_stack_from_before_the_topic_set_forgets_its_topic_resources_without_deleting_them(
        local_cluster: LiveCluster) -> None:
    """Stacks made by earlier versions hold one resource per topic, whose provider the state names; moving
    to the topic set, the engine deletes those resources, and that must leave the topics in place."""
    legacy = dill.loads(base64.b64decode(serialize_provider(TopicProvider())))
    name = unique("legacy")
    props = {"connection": connection_props(local_cluster), "protect": False,
             "topics": {name: {"partitions": 1, "replication_factor": 3, "config": {}}}}
    TopicSetProvider().create(props)
    old = {"connection": props["connection"], "name": name, "partitions": 1, "replication_factor": 3, "config": {}}
    assert not legacy.diff(name, old, old).changes
    legacy.delete(name, old)
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    assert name in observe(connection).state.topics
    TopicSetProvider().delete("topics", props)


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


@pytest.mark.parametrize("provider", [AccessProvider(), TopicSetProvider()], ids=["access", "topics"])
def test_a_wrong_admin_password_fails_a_provider_within_seconds_with_its_cause(
        local_cluster: LiveCluster, provider: Any) -> None:
    """A cluster the same `pulumi up` is still starting gets minutes to answer, but a refused login is the
    password's fault once the brokers had their grace: the provider fails with that cause, not a timeout."""
    props = {"connection": {**connection_props(local_cluster), "password": "not-the-password"}, "protect": False,
             "principal": f"User:{unique('nobody')}", "acls": [], "quotas": [], "user": None,
             "topics": {unique("never"): {"partitions": 1, "replication_factor": 3, "config": {}}}}
    started = time.monotonic()
    with pytest.raises(AuthenticationFailed):
        provider.create(props)
    assert time.monotonic() - started < LOGIN_GRACE_S + 15
