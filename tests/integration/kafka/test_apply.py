"""What applying costs, in Admin requests per step, as Strimzi's operator tests count them."""

from __future__ import annotations

import pytest

from kraftform.kafka.admin import Admin
from kraftform.kafka.apply import Applier, ApplyOptions
from kraftform.kafka.connect import read_connection
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.plan.changes import Action, Kind
from kraftform.specset.model import AclSpec, ClusterSpec, PrincipalSpec, SpecSet, TopicSpec
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
