"""What applying costs, in Admin requests per step, as Strimzi's operator tests count them."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka.admin import ScramMechanism, UserScramCredentialDeletion

from kraftform.cluster.connection import read_connection
from kraftform.errors import KafkaRequestFailed
from kraftform.kafka.admin import Admin
from kraftform.kafka.apply import Applier, ApplyOptions
from kraftform.kafka.credentials import logs_in
from kraftform.kafka.observe import observe
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.plan.changes import Action, Kind
from kraftform.specset.model import (
    SCRAM_ANCHORS,
    AclSpec,
    ClusterSpec,
    PrincipalSpec,
    SecretRef,
    SpecSet,
    TopicSpec,
    UserSpec,
)
from kraftform.waiting import until

from ..conftest import LiveCluster, unique

pytestmark = pytest.mark.integration


def test_an_apply_sends_its_steps_in_batches_and_acls_before_topics(local_cluster: LiveCluster) -> None:
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    prefix = unique("batch")
    principal = f"User:{prefix.replace('.', '-')}"
    topics = tuple(TopicSpec(f"{prefix}.t{i:04d}", 1, 1, {"min.insync.replicas": "1"}) for i in range(1200))
    acls = tuple(AclSpec(principal, "topic", t.name, ("read",)) for t in topics[:600])
    specs = SpecSet(ClusterSpec(local_cluster.spec.name, 3, local_cluster.spec.kafka_version), topics=topics,
                    acls=acls, principals=(PrincipalSpec(principal),))
    live = plan_cluster(connection, specs)
    assert {(c.kind, c.action) for c in live.plan.changes} == {(Kind.TOPIC, Action.CREATE), (Kind.ACL, Action.CREATE)}

    admin = Admin(connection)
    steps: list[str] = []
    Applier(connection, {}, ApplyOptions(), steps.append, admin).run(live.plan)
    # 1,200 topics of 3 metadata records each fit one CreateTopics (up to 9,000 records); ACLs go 500 a request.
    assert dict(admin.requests) == {"CreateAcls": 2, "CreateTopics": 1}
    assert [s.split(":")[0] for s in steps if "done in" in s] == ["[1/2] acl", "[2/2] topic"]

    until("the brokers to report the applied plan", 120.0, lambda: plan_cluster(connection, specs).plan.empty)

    # Cleaning up: the ACLs (their principal still declared, its bindings gone from the specs) and the topics.
    bare = SpecSet(specs.cluster, principals=specs.principals)
    apply_cluster(connection, bare, plan_cluster(connection, bare), ApplyOptions(allow_destructive=True), steps.append)
    for name, future in admin.client.delete_topics([t.name for t in topics]).items():
        admin.wait(future, f"delete {name}")


def test_a_refused_resource_fails_alone_and_everything_independent_is_applied(local_cluster: LiveCluster) -> None:
    """As Strimzi's operator does: Kafka answers per resource, so one topic the broker refuses (a replication
    factor above the broker count) neither stops the other topics of its request nor the grants of another
    step, and the error lists it with Kafka's cause."""
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    prefix = unique("alone")
    principal = f"User:{prefix.replace('.', '-')}"
    good, bad = f"{prefix}.good", f"{prefix}.too-many-replicas"
    specs = SpecSet(ClusterSpec(local_cluster.spec.name, 3, local_cluster.spec.kafka_version),
                    topics=(TopicSpec(good, 1, 3, {"retention.ms": "3600000"}),
                            TopicSpec(bad, 1, 5, {"retention.ms": "3600000"})),
                    acls=(AclSpec(principal, "topic", good, ("read",)),), principals=(PrincipalSpec(principal),))
    live = plan_cluster(connection, specs)
    steps: list[str] = []
    with pytest.raises(KafkaRequestFailed) as failed:
        Applier(connection, {}, ApplyOptions(), steps.append).run(live.plan)
    message = str(failed.value)
    assert message.startswith(f"1 of {len(live.plan.changes)} change(s) failed; every other one was applied")
    assert f"{bad}: create topics: INVALID_REPLICATION_FACTOR" in message and good not in message
    until("the good topic and the grant to show", 60.0, lambda: (lambda state: good in state.topics and any(
        b.principal == principal for b in state.acls))(observe(connection).state))
    assert bad not in observe(connection).state.topics
    # What is left is the refused topic alone.
    remaining = plan_cluster(connection, specs).plan.changes
    assert {(c.kind, c.resource) for c in remaining} == {(Kind.TOPIC, bad)}

    bare = SpecSet(specs.cluster, principals=specs.principals)
    apply_cluster(connection, bare, plan_cluster(connection, bare), ApplyOptions(allow_destructive=True), steps.append)
    admin = Admin(connection)
    admin.wait(admin.client.delete_topics([good])[good], f"delete {good}")


def test_a_cluster_without_the_scram_anchors_gets_them_first_from_a_plan_with_users(
        local_cluster: LiveCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster kraftform did not format (or formatted before them) lacks the SCRAM anchors (specset/model.py):
    the first plan declaring a SCRAM user creates them too, with passwords nobody keeps; then nothing."""
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    admin = Admin(connection)

    def users() -> set[str]:
        described = admin.client.describe_user_scram_credentials()  # every user's: one future
        assert isinstance(described, Future)
        return set(admin.wait(described, "describe SCRAM users"))

    assert set(SCRAM_ANCHORS.values()) <= users()  # formatted with them
    for mechanism, anchor in SCRAM_ANCHORS.items():
        deletion = UserScramCredentialDeletion(anchor, ScramMechanism[mechanism.replace("-", "_")])
        admin.wait(admin.client.alter_user_scram_credentials([deletion])[anchor], f"delete {anchor}")
    until("the anchors to be gone", 60.0, lambda: not set(SCRAM_ANCHORS.values()) & users())

    name = unique("anchored").replace(".", "-")
    monkeypatch.setenv("ANCHORED_PASSWORD", "anchored-password")
    specs = SpecSet(ClusterSpec(local_cluster.spec.name, 3, local_cluster.spec.kafka_version),
                    users=(UserSpec(name, SecretRef("env", "ANCHORED_PASSWORD")),))
    live = plan_cluster(connection, specs)
    assert sorted((c.action, c.kind, c.resource) for c in live.plan.changes) == sorted(
        (Action.CREATE, Kind.USER, user) for user in (*SCRAM_ANCHORS.values(), name))
    assert apply_cluster(connection, specs, live, ApplyOptions(), lambda _: None).plan.empty
    assert set(SCRAM_ANCHORS.values()) | {name} <= users()
    assert logs_in(connection, specs.users[0], "anchored-password")
    admin.wait(admin.client.alter_user_scram_credentials([UserScramCredentialDeletion(
        name, ScramMechanism.SCRAM_SHA_512)])[name], f"delete {name}")
