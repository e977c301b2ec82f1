"""The dynamic providers in Pulumi's own provider host (`python -m pulumi.dynamic`, a process of its own),
started as the engine's launcher starts it (in the program's directory, with the interpreter Pulumi.yaml's
`virtualenv` names, resolved as the launcher resolves it) and driven over gRPC in the engine's order and with
the engine's arguments: Check gets old and new inputs, Diff and Update get the old *outputs*, Read (refresh)
gets outputs and inputs, Delete gets the outputs. The host unpickles each provider with dill from the
`__provider` property, so this also proves kraftform imports where Pulumi runs it."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from pulumi.runtime import proto

from kraftform.cluster.connection import read_connection
from kraftform.cluster.containers import in_containers
from kraftform.cluster.render import secrets_from_dict
from kraftform.declared import load_specs
from kraftform.kafka.credentials import logs_in
from kraftform.kafka.observe import observe
from kraftform.pulumi.cluster import ClusterSecretsProvider, secrets_inputs
from kraftform.pulumi.consumers import ConsumerStateProvider, state_inputs
from kraftform.pulumi.nodes import ClusterNodesProvider, node_inputs, nodes_props
from kraftform.pulumi.providers import (
    AccessProvider,
    BrokerSettingsProvider,
    FeaturesProvider,
    GroupSettingsProvider,
)
from kraftform.pulumi.topics import TopicSetProvider
from kraftform.runtime.nodes.tools import ACLS, CONFIGS, TOPICS, run_kafka_tool
from kraftform.spark.manifest import consumer_manifest, shape_digest
from kraftform.specset.model import QuotaEntity, SecretRef, UserSpec
from kraftform.waiting import until

from ...conftest import EXAMPLE_SPECS, REPO
from ..conftest import LiveCluster, unique
from .engine import LaunchError, ProviderHost, launch_command
from .test_providers import connection_props

pytestmark = pytest.mark.integration


def test_the_launcher_finds_the_projects_interpreter_from_the_programs_directory() -> None:
    launch = launch_command(REPO)
    assert launch.cwd == REPO / "infra"
    assert Path(launch.argv[0]).resolve() == (REPO / ".venv" / "bin" / "python").resolve()


def test_a_virtualenv_only_the_language_host_finds_is_refused_as_the_launcher_refuses_it(tmp_path: Path) -> None:
    """The layout that failed the real `pulumi up`: the venv beside Pulumi.yaml, nothing in the program's dir."""
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "infra").mkdir()
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").touch()
    with pytest.raises(LaunchError, match=r"is set to \".*/infra/\.venv\", but .* doesn't exist"):
        launch_command(tmp_path)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderHost]:
    started = ProviderHost(REPO, tmp_path_factory.mktemp("host-tmp"))
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


def test_a_user_error_reaches_the_engine_as_its_sentence_alone(host: ProviderHost) -> None:
    """`pulumi up` prints what the provider host sends: a user error's sentence, not a Python traceback."""
    spec = replace(load_specs(EXAMPLE_SPECS).cluster, name=f"gone{uuid.uuid4().hex[:8]}")
    inputs, _ = host.check(ClusterSecretsProvider(), "secrets", {}, secrets_inputs(spec, None))
    _, secrets = host.create(ClusterSecretsProvider(), "secrets", inputs)
    plain = replace(in_containers(spec), features={})
    props = nodes_props(plain, "kraftform/kafka:none", secrets, node_inputs(plain, secrets_from_dict(secrets)))
    with pytest.raises(grpc.RpcError) as refused:
        host.update(ClusterNodesProvider(), "nodes", spec.name, props, props)
    details = str(refused.value.details())
    assert details.startswith(f"no node container of cluster {spec.name} is on this Docker engine"), details
    assert "Traceback" not in details


def topic_set(cluster: LiveCluster, **topics: dict[str, Any]) -> dict[str, Any]:
    return {"connection": connection_props(cluster), "protect": False, "topics": topics}


def test_the_topic_set_through_the_engine_calls_and_a_decrease_refused(host: ProviderHost,
                                                                       local_cluster: LiveCluster) -> None:
    provider = TopicSetProvider()
    a, b = unique("host"), unique("host")
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    props = topic_set(local_cluster, **{a: {"partitions": 2, "replication_factor": 3, "config": {"retention.ms": "1d"}},
                                        b: {"partitions": 1, "replication_factor": 3, "config": {}}})

    inputs, failures = host.check(provider, "topics", {}, props)
    assert failures == [] and inputs["topics"][a]["config"] == {"retention.ms": "86400000"}
    id_, outputs = host.create(provider, "topics", inputs)
    # Create returns once the brokers it asked report both; another broker may answer this read a moment later.
    until("both topics in every broker's metadata", 30.0,
          lambda: {a, b} <= set(observe(connection).state.topics))
    topics = observe(connection).state.topics
    assert id_ == "topics" and topics[a].partitions == 2 and topics[b].partitions == 1
    # The next `pulumi up` with the same specs: nothing to do.
    same, _ = host.check(provider, "topics", inputs, props)
    assert host.diff(provider, "topics", id_, outputs, same).changes == proto.DiffResponse.DIFF_NONE

    grown, _ = host.check(provider, "topics", inputs, {**props, "topics": {
        **props["topics"], a: {**props["topics"][a], "partitions": 3}}})
    diff = host.diff(provider, "topics", id_, outputs, grown)
    assert diff.changes == proto.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    outputs = host.update(provider, "topics", id_, outputs, grown)
    assert observe(connection).state.topics[a].partitions == 3

    # The engine hands numbers over as floats; the refusal still reads as the user wrote the spec.
    _, refused = host.check(provider, "topics", grown, {**props, "topics": {
        **props["topics"], a: {**props["topics"][a], "partitions": 1}}})
    [(prop, reason)] = refused
    assert prop == "" and reason.startswith(f"topic {a}: partitions") and "cannot decrease partitions" in reason
    assert f"topic {a}: partitions 3 -> 1 refused" in reason and "3.0" not in reason

    # Protected, a topic removed from the specs is refused before anything is deleted.
    _, refused = host.check(provider, "topics", {**grown, "protect": True}, {**props, "protect": True, "topics": {
        a: grown["topics"][a]}})
    assert [(p, r.split(" was removed")[0]) for p, r in refused] == [("", f"topic {b}")]

    host.delete(provider, "topics", id_, outputs)
    topics = observe(connection).state.topics
    assert a not in topics and b not in topics


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


def kafka_tool_args(cluster: LiveCluster) -> list[str]:
    return ["--bootstrap-server", cluster.deployment.bootstrap, "--command-config",
            str(cluster.state_dir / "admin.properties")]


def test_refresh_shows_topic_drift_made_by_kafkas_tools_and_up_repairs_it(host: ProviderHost,
                                                                        local_cluster: LiveCluster) -> None:
    provider = TopicSetProvider()
    name, deleted = unique("drift"), unique("drift")
    props = topic_set(local_cluster, **{
        name: {"partitions": 2, "replication_factor": 3, "config": {"retention.ms": "1d"}},
        deleted: {"partitions": 1, "replication_factor": 3, "config": {}}})
    inputs, _ = host.check(provider, "topics", {}, props)
    id_, outputs = host.create(provider, "topics", inputs)
    _, refreshed = host.read(provider, "topics", id_, outputs, inputs)
    assert host.diff(provider, "topics", id_, refreshed, inputs).changes == proto.DiffResponse.DIFF_NONE

    run_kafka_tool(CONFIGS, [*kafka_tool_args(local_cluster), "--alter", "--entity-type", "topics", "--entity-name",
                             name, "--add-config", "retention.ms=60000,max.message.bytes=2000000"])
    run_kafka_tool(TOPICS, [*kafka_tool_args(local_cluster), "--delete", "--topic", deleted])
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    until("the deletion to reach the brokers", 60.0, lambda: deleted not in observe(connection).state.topics)
    _, refreshed = host.read(provider, "topics", id_, outputs, inputs)
    assert refreshed["topics"] == {name: {"partitions": 2, "replication_factor": 3, "config": {
        "retention.ms": "60000", "max.message.bytes": "2000000"}}}
    diff = host.diff(provider, "topics", id_, refreshed, inputs)
    assert diff.changes == proto.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    outputs = host.update(provider, "topics", id_, refreshed, inputs)
    topics = observe(connection).state.topics
    assert dict(topics[name].config) == {"retention.ms": "86400000"} and topics[deleted].partitions == 1
    _, refreshed = host.read(provider, "topics", id_, outputs, inputs)
    assert host.diff(provider, "topics", id_, refreshed, inputs).changes == proto.DiffResponse.DIFF_NONE
    host.delete(provider, "topics", id_, outputs)


def test_refresh_shows_access_drift_made_by_kafkas_tools_and_up_repairs_it(host: ProviderHost,
                                                                         local_cluster: LiveCluster) -> None:
    provider = AccessProvider()
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    name = unique("driftapp").replace(".", "-")
    principal = f"User:{name}"
    props: dict[str, Any] = {
        "connection": connection_props(local_cluster), "principal": principal,
        "acls": [{"principal": principal, "resource_type": "topic", "resource_name": f"{name}.",
                  "pattern_type": "prefixed", "operations": ["read", "describe"], "permission": "allow",
                  "host": "*"}],
        "quotas": [{"user": name, "client_id": None, "values": {"consumer_byte_rate": 1e6}}],
        "user": {"name": name, "mechanism": "SCRAM-SHA-512", "iterations": 8192, "password": "first"}}
    inputs, _ = host.check(provider, principal, {}, props)
    id_, outputs = host.create(provider, principal, inputs)
    _, refreshed = host.read(provider, principal, id_, outputs, inputs)
    assert refreshed["acls"] == inputs["acls"] and refreshed["user"]["password"] == "first"
    assert host.diff(provider, principal, id_, refreshed, inputs).changes == proto.DiffResponse.DIFF_NONE

    # Behind Pulumi's back: one more grant, a looser quota, and the credential deleted.
    tool = kafka_tool_args(local_cluster)
    run_kafka_tool(ACLS, [*tool, "--add", "--allow-principal", principal, "--operation", "Write",
                          "--topic", f"{name}.extra"])
    run_kafka_tool(CONFIGS, [*tool, "--alter", "--entity-type", "users", "--entity-name", name,
                             "--add-config", "consumer_byte_rate=5000000"])
    run_kafka_tool(CONFIGS, [*tool, "--alter", "--entity-type", "users", "--entity-name", name,
                             "--delete-config", "SCRAM-SHA-512"])
    _, refreshed = host.read(provider, principal, id_, outputs, inputs)
    grants = {(a["operations"][0], a["resource_name"]) for a in refreshed["acls"]}
    assert grants == {("read", f"{name}."), ("describe", f"{name}."), ("write", f"{name}.extra")}
    # (the wire, a protobuf Struct, drops None: no client_id, no user)
    assert refreshed["quotas"] == [{"user": name, "values": {"consumer_byte_rate": 5e6}}]
    assert refreshed.get("user") is None
    assert host.diff(provider, principal, id_, refreshed, inputs).changes == proto.DiffResponse.DIFF_SOME

    outputs = host.update(provider, principal, id_, refreshed, inputs)
    state = observe(connection).state
    assert {b.operation for b in state.acls if b.principal == principal} == {"read", "describe"}
    assert state.quotas[QuotaEntity(user=name)] == {"consumer_byte_rate": 1e6}
    assert logs_in(connection, UserSpec(name, SecretRef("env", "unused")), "first")
    _, refreshed = host.read(provider, principal, id_, outputs, inputs)
    assert host.diff(provider, principal, id_, refreshed, inputs).changes == proto.DiffResponse.DIFF_NONE
    host.delete(provider, principal, id_, outputs)


def test_a_stack_made_clusters_ca_leaves_no_file_behind(host: ProviderHost, local_cluster: LiveCluster) -> None:
    """A cluster made by the stack hands its CA as PEM text (`ca_pem`); librdkafka needs a file, which must not
    outlive the call (it did: /tmp/kraftform-ca-<hash>.pem stayed after `pulumi destroy`)."""
    provider = TopicSetProvider()
    name = unique("capem")
    props = topic_set(local_cluster, **{name: {"partitions": 1, "replication_factor": 3, "config": {}}})
    connection = props["connection"]
    props["connection"] = {**connection, "ca_pem": Path(connection.pop("ca_path")).read_text()}
    inputs, _ = host.check(provider, "topics", {}, props)
    id_, outputs = host.create(provider, "topics", inputs)
    host.read(provider, "topics", id_, outputs, inputs)
    host.delete(provider, "topics", id_, outputs)
    assert name not in observe(read_connection(local_cluster.state_dir / "admin.properties")).state.topics
    assert list(host.tmpdir.iterdir()) == []


def test_a_consumers_state_reset_is_refused_in_check_unless_the_stack_allows_it(host: ProviderHost) -> None:
    """What `pulumi preview` shows when a deployed consumer's new definition cannot reuse its checkpoint, and
    what the permission costs: one update of the guard, none when it is taken back."""
    provider = ConsumerStateProvider()
    specs = load_specs(EXAMPLE_SPECS)
    sessionizer = next(c for c in specs.consumers if c.name == "clickstream-sessionizer")
    props = state_inputs(consumer_manifest(sessionizer, specs), allow_reset=False)
    inputs, failures = host.check(provider, "sessionizer-state", {}, props)
    assert failures == []
    id_, outputs = host.create(provider, "sessionizer-state", inputs)
    assert outputs["reset_to"] == ""  # the job may reset nothing
    same, failures = host.check(provider, "sessionizer-state", inputs, props)
    assert failures == [] and host.diff(provider, "sessionizer-state", id_, outputs, same).changes == \
        proto.DiffResponse.DIFF_NONE

    # Grouping by device as well: the sessions' state in the checkpoint has another shape.
    assert sessionizer.query is not None
    regrouped = replace(sessionizer, query=sessionizer.query.replace(
        "GROUP BY user_id,", "GROUP BY user_id, device,").replace("SELECT user_id,", "SELECT user_id, device,"))
    manifest = consumer_manifest(regrouped, replace(specs, consumers=(regrouped,)))
    changed = state_inputs(manifest, allow_reset=False)
    _, refused = host.check(provider, "sessionizer-state", inputs, changed)
    [(prop, reason)] = refused
    # No property: Pulumi then prints the sentence itself, not `property shape value {<the whole map>}` first.
    assert prop == "" and reason.startswith("consumer clickstream-sessionizer: state reset refused")
    assert "grouping" in reason and "kraftform:allowStateReset clickstream-sessionizer" in reason

    allowed = {**changed, "allow_reset": True}
    _, failures = host.check(provider, "sessionizer-state", inputs, allowed)
    assert failures == []
    assert host.diff(provider, "sessionizer-state", id_, outputs, allowed).changes == proto.DiffResponse.DIFF_SOME
    after = host.update(provider, "sessionizer-state", id_, outputs, allowed)
    # The job may start a new checkpoint for this shape, and only this one.
    assert after["reset_to"] == shape_digest(manifest.shape) != ""
    assert replace(manifest, reset_to=after["reset_to"]).reset_allowed
    # Taking the permission back is no change: the container (whose manifest holds `reset_to`) stays.
    taken_back, failures = host.check(provider, "sessionizer-state", after, changed)
    assert failures == []
    assert host.diff(provider, "sessionizer-state", id_, after, taken_back).changes == proto.DiffResponse.DIFF_NONE


def test_broker_settings_are_set_live_through_the_engine_calls_and_removed_with_the_resource(
        host: ProviderHost, local_cluster: LiveCluster) -> None:
    provider = BrokerSettingsProvider()
    props = {"settings": {"num.io.threads": "12"}, "connection": connection_props(local_cluster)}
    inputs, failures = host.check(provider, "broker-settings", {}, props)
    assert failures == []
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    id_, outputs = host.create(provider, "broker-settings", inputs)
    try:
        assert {v.get("num.io.threads") for v in observe(connection).state.broker_dynamic.values()} == {"12"}
        assert host.diff(provider, "broker-settings", id_, outputs, inputs).changes == proto.DiffResponse.DIFF_NONE
        _, refreshed = host.read(provider, "broker-settings", id_, outputs, inputs)
        assert refreshed["settings"] == {"num.io.threads": "12"}
    finally:
        host.delete(provider, "broker-settings", id_, outputs)
    assert not any("num.io.threads" in v for v in observe(connection).state.broker_dynamic.values())


def test_feature_levels_are_set_through_the_engine_calls_and_a_move_kafka_refuses_fails_in_its_words(
        host: ProviderHost, local_cluster: LiveCluster) -> None:
    provider = FeaturesProvider()
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    elr = "eligible.leader.replicas.version"

    def finalised() -> dict[str, int]:
        return dict(observe(connection).state.features)

    assert finalised()[elr] == 1  # the pinned Kafka's own level (4.3 and 4.4)
    props = {"levels": {elr: 0}, "connection": connection_props(local_cluster)}
    inputs, failures = host.check(provider, "features", {}, props)
    assert failures == []
    id_, outputs = host.create(provider, "features", inputs)
    try:
        assert elr not in finalised()  # level 0: no longer finalised
        assert host.diff(provider, "features", id_, outputs, inputs).changes == proto.DiffResponse.DIFF_NONE
        _, refreshed = host.read(provider, "features", id_, outputs, inputs)
        assert refreshed["levels"] == {elr: 0}
        with pytest.raises(grpc.RpcError) as refused:
            host.update(provider, "features", id_, outputs, {**inputs, "levels": {elr: 0, "kraft.version": 0}})
        details = str(refused.value.details())
        assert "Kafka refuses kraft.version 1 -> 0: Invalid update version 0 for feature kraft.version" in details
        assert details.startswith("the plan has refused changes; nothing was applied") and "Traceback" not in details
    finally:
        outputs = host.update(provider, "features", id_, outputs, {**inputs, "levels": {elr: 1}})
        host.delete(provider, "features", id_, outputs)
    assert finalised()[elr] == 1  # deleting the resource leaves the levels as they are


def test_groups_settings_are_set_through_the_engine_calls_refreshed_and_removed_with_the_resource(
        host: ProviderHost, local_cluster: LiveCluster) -> None:
    provider = GroupSettingsProvider()
    group = unique("pulumi-group")
    connection = read_connection(local_cluster.state_dir / "admin.properties")

    def held() -> dict[str, str]:
        return dict(observe(connection, groups=[group]).state.group_configs[group])

    props = {"groups": {group: {"consumer.session.timeout.ms": "50000"}},
             "connection": connection_props(local_cluster)}
    inputs, failures = host.check(provider, "group-settings", {}, props)
    assert failures == []
    id_, outputs = host.create(provider, "group-settings", inputs)
    try:
        assert held() == {"consumer.session.timeout.ms": "50000"}
        assert host.diff(provider, "group-settings", id_, outputs, inputs).changes == proto.DiffResponse.DIFF_NONE
        run_kafka_tool(CONFIGS, [*kafka_tool_args(local_cluster), "--alter", "--entity-type", "groups",
                                 "--entity-name", group, "--add-config", "consumer.session.timeout.ms=55000"])
        _, refreshed = host.read(provider, "group-settings", id_, outputs, inputs)
        assert refreshed["groups"] == {group: {"consumer.session.timeout.ms": "55000"}}  # the drift, for a refresh
        outputs = host.update(provider, "group-settings", id_, outputs, inputs)
        assert held() == {"consumer.session.timeout.ms": "50000"}
    finally:
        host.delete(provider, "group-settings", id_, outputs)
    assert held() == {}
