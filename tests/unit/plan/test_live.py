"""Live plans: what kraftform owns on a cluster, and what it leaves alone."""

from __future__ import annotations

import dataclasses

import pytest

from kraftform.declared import load_specs
from kraftform.plan import Action, ClusterState, Kind, Plan, Safety, TopicState, UserState, state_of
from kraftform.plan.brokers import declared_features, feature_changes
from kraftform.plan.changes import Change, Credential, FeatureLevel
from kraftform.plan.live import OwnLogin, desired_of, live_plan, ownership_of, plan_against
from kraftform.specset.model import SCRAM_ANCHORS, AclBinding, QuotaEntity, SpecSet

from ...conftest import EXAMPLE_SPECS

BROKERS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}


@pytest.fixture(scope="module")
def specs() -> SpecSet:
    return load_specs(EXAMPLE_SPECS)


def applied(specs: SpecSet, **changes: object) -> ClusterState:
    """The cluster as it is after applying `specs`, as the observer reports it (defaults are not overrides)."""
    state = state_of(specs)
    topics = {n: dataclasses.replace(t, assignment=tuple((1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3)[
        :t.replication_factor] for p in range(t.partitions))) for n, t in state.topics.items()}
    users = {n: dataclasses.replace(u, password_version=None) for n, u in state.users.items()}
    users.update({name: UserState(name, mechanism, 4096) for mechanism, name in SCRAM_ANCHORS.items()})
    defaults = {"min.insync.replicas": "2", "retention.ms": "604800000", "cleanup.policy": "delete"}
    base = dataclasses.replace(state, topics=topics, users=users, brokers=BROKERS, topic_defaults=defaults)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def kinds(plan: Plan) -> list[tuple[Action, Kind, str, str | None]]:
    return [(c.action, c.kind, c.resource, c.key) for c in plan.changes]


def test_an_applied_cluster_has_no_changes_whatever_else_it_holds(specs: SpecSet) -> None:
    extra = {"__consumer_offsets": TopicState("__consumer_offsets", 50, 3, {"cleanup.policy": "compact"}),
             "kraftform.health": TopicState("kraftform.health", 1, 3),
             "billing.invoices": TopicState("billing.invoices", 3, 3)}
    admin = UserState("kraftform-admin", "SCRAM-SHA-512", 4096)
    observed = applied(specs)
    observed = dataclasses.replace(
        observed, topics={**observed.topics, **extra}, users={**observed.users, "kraftform-admin": admin},
        acls=observed.acls | {AclBinding("User:billing", "topic", "billing.", "prefixed", "read", "allow")},
        quotas={**observed.quotas, QuotaEntity(client_id="batch"): {"producer_byte_rate": 1.0}})
    plan = live_plan(specs, observed)
    assert plan.empty, plan.changes
    assert any("1 topic outside the managed scope left alone: billing.invoices" in n for n in plan.notes)
    assert any("User:billing" in n for n in plan.notes)


def test_a_spec_value_equal_to_the_clusters_default_is_not_drift(specs: SpecSet) -> None:
    observed = applied(specs)
    topic = "payments.refunds.v1"
    want = specs.topic(topic)
    assert want is not None and "min.insync.replicas" in want.config
    cur = observed.topics[topic]
    without = {k: v for k, v in cur.config.items() if k != "min.insync.replicas"}
    observed = dataclasses.replace(observed,
                                   topics={**observed.topics, topic: dataclasses.replace(cur, config=without)})
    assert want.config["min.insync.replicas"] == observed.topic_defaults["min.insync.replicas"]
    assert live_plan(specs, observed).empty


def test_an_override_set_behind_kraftforms_back_reverts_to_the_clusters_default(specs: SpecSet) -> None:
    observed = applied(specs)
    cur = observed.topics["orders.created.v1"]  # no retention.ms in its spec
    drifted = dataclasses.replace(cur, config={**cur.config, "retention.ms": "1000"})
    plan = live_plan(specs, dataclasses.replace(observed, topics={**observed.topics, cur.name: drifted}))
    [change] = plan.changes
    assert (change.action, change.kind, change.key, change.safety) == (
        Action.DELETE, Kind.TOPIC_CONFIG, "retention.ms", Safety.SAFE)
    assert change.current is not None and change.current.startswith("1000")
    assert change.desired is not None and change.desired.startswith("604800000")


def test_managed_topics_absent_from_the_specs_are_deleted_only_in_scope(specs: SpecSet) -> None:
    observed = applied(specs)
    observed = dataclasses.replace(observed, topics={
        **observed.topics, "orders.legacy.v0": TopicState("orders.legacy.v0", 3, 3),
        "inventory.v1": TopicState("inventory.v1", 3, 3)})
    assert kinds(live_plan(specs, observed)) == [(Action.DELETE, Kind.TOPIC, "orders.legacy.v0", None)]


def test_acls_quotas_and_users_of_declared_principals_are_managed(specs: SpecSet) -> None:
    observed = applied(specs)
    stray = AclBinding("User:orders-service", "topic", "payments.", "prefixed", "write", "allow")
    quota = QuotaEntity(user="orders-service", client_id="batch")
    observed = dataclasses.replace(observed, acls=observed.acls | {stray},
                                   quotas={**observed.quotas, quota: {"producer_byte_rate": 1e6}})
    plan = live_plan(specs, observed)
    assert kinds(plan) == [(Action.DELETE, Kind.ACL, "User:orders-service", stray.grant()),
                           (Action.DELETE, Kind.QUOTA, quota.describe(), "producer_byte_rate")]


def test_scope_all_removes_undeclared_access_but_never_the_clusters_identities(specs: SpecSet) -> None:
    everything = dataclasses.replace(specs, cluster=dataclasses.replace(
        specs.cluster, managed_scope=dataclasses.replace(specs.cluster.managed_scope, acl_principals="all")))
    observed = applied(specs)
    observed = dataclasses.replace(
        observed, acls=observed.acls | {AclBinding("User:billing", "group", "b", "literal", "read", "allow")},
        users={**observed.users, **{n: UserState(n, "SCRAM-SHA-512", 4096)
                                    for n in ("kraftform-admin", "kraftform-broker", "old-app")}})
    assert kinds(live_plan(everything, observed)) == [
        (Action.DELETE, Kind.USER, "old-app", "mechanism"),
        (Action.DELETE, Kind.ACL, "User:billing", "allow read on group 'b'")]
    assert not ownership_of(everything).user("kraftform-broker")

    assert not any(ownership_of(everything).user(name) for name in SCRAM_ANCHORS.values())


def test_a_cluster_without_the_scram_anchors_gets_them_once_scram_users_are_declared_or_deleted(
        specs: SpecSet) -> None:
    """A cluster kraftform did not format (or formatted before the anchors) lacks them (specset/model.py)."""
    bare = applied(specs)
    bare = dataclasses.replace(bare, users={n: u for n, u in bare.users.items() if n not in SCRAM_ANCHORS.values()})
    plan = live_plan(specs, bare)
    assert kinds(plan)[:2] == [(Action.CREATE, Kind.USER, name, "mechanism")
                               for _, name in sorted(SCRAM_ANCHORS.items())]
    assert len(plan.changes) == 2 and {c.safety for c in plan.changes} == {Safety.SAFE}
    assert [(c.desired, c.payload) for c in plan.changes] == [
        (mechanism, Credential((mechanism, 8192))) for mechanism in sorted(SCRAM_ANCHORS)]
    assert "docs/security.md" in plan.changes[0].reason
    # No SCRAM user declared, none to delete: nothing to guard, no anchor planned.
    no_users = dataclasses.replace(specs, users=(), acls=(), quotas=())
    assert not any(c.kind is Kind.USER for c in live_plan(no_users, dataclasses.replace(bare, users={})).changes)
    # A deletion is guarded too.
    everything = dataclasses.replace(no_users, cluster=dataclasses.replace(
        specs.cluster, managed_scope=dataclasses.replace(specs.cluster.managed_scope, acl_principals="all")))
    stray = dataclasses.replace(bare, users={"old-app": UserState("old-app", "SCRAM-SHA-256", 4096)})
    users = [(c.action, c.resource) for c in live_plan(everything, stray).changes if c.kind is Kind.USER]
    assert users == [(Action.CREATE, name) for _, name in sorted(SCRAM_ANCHORS.items())] + [
        (Action.DELETE, "old-app")]


def test_the_login_a_plan_applies_with_is_never_altered_or_deleted_whatever_the_scope(specs: SpecSet) -> None:
    everything = dataclasses.replace(specs, cluster=dataclasses.replace(
        specs.cluster, managed_scope=dataclasses.replace(specs.cluster.managed_scope, acl_principals="all")))
    observed = applied(specs)
    ops = AclBinding("User:ops", "topic", "audit", "literal", "read", "allow")
    observed = dataclasses.replace(observed, acls=observed.acls | {ops},
                                   users={**observed.users, "ops": UserState("ops", "SCRAM-SHA-512", 4096)})
    # Logged in as "ops", an admin the specs do not name: left alone under acl_principals: all, and said so.
    logins = {"ops": OwnLogin("the admin this plan logs in as")}
    plan = plan_against(desired_of(everything), observed, logins)
    assert plan.empty, plan.changes
    assert any("rule: own logins" in n and "User:ops user (delete)" in n and "User:ops acl (delete)" in n
               for n in plan.notes)
    # Without the login the same plan deletes both: what the rule is there for.
    assert {(c.action, c.kind, c.resource) for c in plan_against(desired_of(everything), observed).changes} == {
        (Action.DELETE, Kind.USER, "ops"), (Action.DELETE, Kind.ACL, "User:ops")}
    # Declared with a password to rotate, the login is refused, naming the rule and the principal.
    declared = specs.users[0]
    mine = {declared.name: OwnLogin("the admin this plan logs in as")}
    rotated = dataclasses.replace(observed, users={
        **observed.users, declared.name: dataclasses.replace(observed.users[declared.name], password_ok=False)})
    [change] = plan_against(desired_of(specs), rotated, mine).changes
    assert change.action is Action.REFUSE and change.kind is Kind.USER and change.resource == declared.name
    assert f"update refused: User:{declared.name} is a login kraftform itself uses" in change.reason
    assert "rule: own logins" in change.reason


def test_a_running_connect_clusters_login_is_refused_with_the_steps_that_change_it(specs: SpecSet) -> None:
    declared = specs.users[0]
    workers = {declared.name: OwnLogin("Connect cluster 'cdc' logs in as it, 2 worker(s) running",
                                       "stop its workers first (`kraftform connect down ...`)")}
    rotated = applied(specs)
    rotated = dataclasses.replace(rotated, users={
        **rotated.users, declared.name: dataclasses.replace(rotated.users[declared.name], password_ok=False)})
    [change] = plan_against(desired_of(specs), rotated, workers).changes
    assert change.action is Action.REFUSE and change.resource == declared.name
    assert "Connect cluster 'cdc' logs in as it, 2 worker(s) running" in change.reason
    assert change.reason.endswith("stop its workers first (`kraftform connect down ...`)")
    # Once no longer declared (the Connect cluster and its user gone from the specs, its workers still running),
    # the user and its grants are left alone, and said so, instead of deleted under the workers by the ownership
    # of every principal.
    principal = f"User:{declared.name}"
    everything = dataclasses.replace(specs.cluster, managed_scope=dataclasses.replace(
        specs.cluster.managed_scope, acl_principals="all"))
    gone = dataclasses.replace(specs, cluster=everything,
                               users=tuple(u for u in specs.users if u.name != declared.name),
                               acls=tuple(a for a in specs.acls if a.principal != principal),
                               principals=tuple(p for p in specs.principals if p.name != principal),
                               quotas=tuple(q for q in specs.quotas if q.entity.user != declared.name))
    assert principal not in desired_of(gone).principals
    plan = plan_against(desired_of(gone), applied(specs), workers)
    logins = {Kind.USER: declared.name, Kind.ACL: principal}  # a quota is no login: lifted as declared
    assert not [c for c in plan.changes if logins.get(c.kind) == c.resource], plan.changes
    assert any("rule: own logins" in n and f"{principal} user (delete)" in n and f"{principal} acl (delete)" in n
               for n in plan.notes)
    assert {(Action.DELETE, Kind.USER), (Action.DELETE, Kind.ACL)} <= {
        (c.action, c.kind) for c in plan_against(desired_of(gone), applied(specs)).changes
        if logins.get(c.kind) == c.resource}


def test_a_password_that_no_longer_logs_in_is_set_again(specs: SpecSet) -> None:
    observed = applied(specs)
    user = dataclasses.replace(observed.users["fraud-scoring"], password_ok=False)
    plan = live_plan(specs, dataclasses.replace(observed, users={**observed.users, "fraud-scoring": user}))
    [change] = plan.changes
    assert (change.action, change.kind, change.resource, change.key, change.safety) == (
        Action.UPDATE, Kind.USER, "fraud-scoring", "password", Safety.DISRUPTIVE)
    assert change.current is None and change.desired is None


def test_replication_change_shows_the_rack_aware_target(specs: SpecSet) -> None:
    observed = applied(specs)
    topic = "orders.dlq.v1"
    cur = observed.topics[topic]
    two = dataclasses.replace(cur, replication_factor=2, assignment=tuple(r[:2] for r in cur.assignment))
    plan = live_plan(specs, dataclasses.replace(observed, topics={**observed.topics, topic: two}))
    [change] = plan.changes
    assert (change.action, change.kind, change.safety, change.current) == (
        Action.UPDATE, Kind.REPLICATION, Safety.DISRUPTIVE, "2")
    assert change.desired is not None and change.desired.startswith("3 (replicas 1,2,3 | 2,3,1")


def test_more_replicas_than_brokers_and_fewer_partitions_are_refused(specs: SpecSet) -> None:
    observed = applied(specs, brokers={1: "rack-a", 2: "rack-b"})
    topic = "orders.dlq.v1"
    cur = observed.topics[topic]
    smaller = dataclasses.replace(cur, replication_factor=2, partitions=cur.partitions + 1,
                                  assignment=(*(r[:2] for r in cur.assignment), (1, 2)))
    plan = live_plan(specs, dataclasses.replace(observed, topics={**observed.topics, topic: smaller}))
    assert {(c.kind, c.action) for c in plan.refused} == {(Kind.REPLICATION, Action.REFUSE),
                                                         (Kind.PARTITIONS, Action.REFUSE)}
    assert any("needs 3 brokers; the cluster has 2" in c.reason for c in plan.refused)
    # The declared broker count is a change (node work), never a note beside "No changes".
    [node] = plan.node_work
    assert (node.kind, node.key, node.current, node.desired, node.safety) == (Kind.CLUSTER, "brokers", "2", "3",
                                                                              Safety.SAFE)
    assert node.reason.startswith("node work")


def test_a_cluster_that_differs_from_its_cluster_section_is_a_change_not_no_changes(specs: SpecSet) -> None:
    """`brokers: 3 -> 4` declared on a running 3-broker cluster once planned as "No changes" (with a note)."""
    grown = dataclasses.replace(specs, cluster=dataclasses.replace(specs.cluster, brokers=4))
    plan = live_plan(grown, applied(specs))
    assert [(c.action, c.key, c.current, c.desired, c.safety) for c in plan.changes] == [
        (Action.UPDATE, "brokers", "3", "4", Safety.SAFE)]
    assert not plan.empty and plan.without_node_work().empty
    shrunk = dataclasses.replace(specs, cluster=dataclasses.replace(specs.cluster, brokers=2))
    [fewer] = live_plan(shrunk, applied(specs)).node_work
    assert (fewer.current, fewer.desired, fewer.safety) == ("3", "2", Safety.DESTRUCTIVE)
    # Racks declared and contradicted: a rolling restart's worth of node work; undeclared racks are not managed.
    moved = applied(specs, brokers={1: "rack-a", 2: "rack-b", 3: "rack-x"})
    [racks] = live_plan(specs, moved).node_work
    assert (racks.key, racks.current, racks.desired, racks.safety) == (
        "racks", "rack-a, rack-b, rack-x", "rack-a, rack-b, rack-c", Safety.DISRUPTIVE)
    unracked = dataclasses.replace(specs, cluster=dataclasses.replace(specs.cluster, racks=()))
    assert live_plan(unracked, moved).empty




def test_acl_resources_managed_leaves_a_declared_principals_grants_on_other_resources_alone(specs: SpecSet) -> None:
    managed = dataclasses.replace(specs, cluster=dataclasses.replace(
        specs.cluster, managed_scope=dataclasses.replace(specs.cluster.managed_scope, acl_resources="managed")))
    inside = AclBinding("User:orders-service", "topic", "orders.stray.v1", "literal", "write", "allow")
    outside = [AclBinding("User:orders-service", "topic", "billing.invoices", "literal", "read", "allow"),
               AclBinding("User:orders-service", "topic", "ord", "prefixed", "read", "allow"),  # wider than scope
               AclBinding("User:orders-service", "topic", "*", "literal", "read", "allow"),
               AclBinding("User:orders-service", "group", "billing-app", "literal", "read", "allow")]
    named_group = next(b for a in specs.acls if a.resource_type == "group" for b in a.bindings())
    extra_on_named = dataclasses.replace(named_group, operation="delete")
    observed = applied(specs)
    observed = dataclasses.replace(observed, acls=observed.acls | {inside, extra_on_named, *outside})
    assert {c.key for c in live_plan(specs, observed).changes} == {b.grant() for b in [inside, extra_on_named,
                                                                                          *outside]}
    plan = live_plan(managed, observed)
    assert {c.key for c in plan.changes} == {inside.grant(), extra_on_named.grant()}
    [note] = [n for n in plan.notes if "outside the managed scope" in n]
    assert note.startswith("4 ACL bindings of declared principals")


def test_every_change_a_live_plan_applies_carries_what_apply_sends(specs: SpecSet) -> None:
    from kraftform.plan.changes import (
        ConfigValue,
        Credential,
        NewTopic,
        PartitionCount,
        QuotaValue,
        Reassignment,
    )

    payload_of = {Kind.USER: Credential, Kind.TOPIC: NewTopic, Kind.TOPIC_CONFIG: ConfigValue,
                  Kind.PARTITIONS: PartitionCount, Kind.REPLICATION: Reassignment, Kind.ACL: AclBinding,
                  Kind.QUOTA: QuotaValue}
    fresh = live_plan(specs, ClusterState(brokers=BROKERS))
    observed = applied(specs)
    grown = dataclasses.replace(specs, topics=tuple(
        dataclasses.replace(t, partitions=t.partitions + 1, replication_factor=2, config={**t.config,
                                                                                      "retention.ms": "3600000"})
        for t in specs.topics))
    drifted = live_plan(grown, dataclasses.replace(observed, acls=observed.acls | {
        AclBinding("User:orders-service", "topic", "x", "literal", "read", "allow")}))
    changes = [*fresh.changes, *drifted.changes]
    assert {c.kind for c in changes} >= set(payload_of)
    for c in changes:
        assert isinstance(c.payload, payload_of[c.kind]), c
    topic = next(c for c in fresh.changes if c.kind is Kind.TOPIC)
    want = next(t for t in specs.topics if t.name == topic.resource)
    assert topic.payload == NewTopic(want.partitions, want.replication_factor, want.config)
    move = next(c for c in drifted.changes if c.kind is Kind.REPLICATION)
    assert isinstance(move.payload, Reassignment) and move.payload.brokers == (1, 2, 3)
    assert all(len(replicas) == 2 for replicas in move.payload.target)
    stray = next(c for c in drifted.changes if c.kind is Kind.ACL)
    assert stray.payload == AclBinding("User:orders-service", "topic", "x", "literal", "read", "allow")
    assert "payload" not in fresh.to_dict()["changes"][0]  # renderings show what a reviewer reads, not requests


def test_declared_broker_settings_are_planned_live_or_as_node_work_by_kafkas_update_mode(specs: SpecSet) -> None:
    cluster = dataclasses.replace(specs.cluster, broker_config={
        "num.io.threads": "16",                   # dynamic (cluster-wide): set live on each broker
        "log.retention.ms": "86400000",           # dynamic, and every topic's default retention: shorter
        "group.initial.rebalance.delay.ms": "3000",  # read-only: a rolling restart
    })
    declared = dataclasses.replace(specs, cluster=cluster)
    brokers = {b: {"num.io.threads": "8", "log.retention.ms": "604800000", "group.initial.rebalance.delay.ms": "0"}
               for b in BROKERS}
    observed = applied(specs, broker_settings=brokers, broker_dynamic={1: {"background.threads": "20"}},
                       broker_defaults={"num.replica.fetchers": "2"})
    plan = live_plan(declared, observed)
    shown = {(c.kind, c.action, c.resource, c.key): c for c in plan.changes}
    for broker in BROKERS:
        threads = shown[(Kind.BROKER_CONFIG, Action.UPDATE, f"broker {broker}", "num.io.threads")]
        assert (threads.safety, threads.current, threads.desired) == (Safety.SAFE, "8", "16")
        assert "no restart" in threads.reason
        retention = shown[(Kind.BROKER_CONFIG, Action.UPDATE, f"broker {broker}", "log.retention.ms")]
        assert retention.safety is Safety.DESTRUCTIVE and "retention.ms" in retention.reason
    rolled = shown[(Kind.CLUSTER, Action.UPDATE, "brokers", "broker_config.group.initial.rebalance.delay.ms")]
    assert rolled.reason.startswith("node work") and (rolled.current, rolled.desired) == ("0", "3000")
    # Set on broker 1 behind the specs' back (kafka-configs --entity-name 1): drift, removed.
    stray = shown[(Kind.BROKER_CONFIG, Action.DELETE, "broker 1", "background.threads")]
    assert (stray.current, stray.desired, stray.safety) == ("20", None, Safety.DISRUPTIVE)
    assert {c.key for c in plan.node_work} == {"broker_config.group.initial.rebalance.delay.ms"}
    # A cluster-wide default neither client library can remove: named in a note, not ignored.
    assert any("num.replica.fetchers=2" in note for note in plan.notes)

    # Once applied (the values set live, the brokers restarted with the read-only one), nothing is left.
    done = applied(specs, broker_settings={b: {**values, "num.io.threads": "16", "log.retention.ms": "86400000",
                                               "group.initial.rebalance.delay.ms": "3000"}
                                           for b, values in brokers.items()})
    assert live_plan(declared, done).empty


def test_metadata_version_is_finalised_only_upward_and_only_when_declared() -> None:
    cluster = load_specs(EXAMPLE_SPECS).cluster
    running = ClusterState(features={"metadata.version": 29, "kraft.version": 0})

    def changes(release: str | None) -> list[Change]:
        return feature_changes(declared_features(dataclasses.replace(cluster, metadata_version=release)), running)

    assert changes(None) == []  # not declared: not managed
    up = changes("4.3")
    assert [(c.action, c.safety, c.resource, c.current, c.desired) for c in up] == [
        (Action.UPDATE, Safety.DESTRUCTIVE, "metadata.version", "29", "30")]
    assert "never go back to a Kafka older than 4.3" in up[0].reason
    assert changes("4.2") == []
    down = changes("4.1")
    assert [c.action for c in down] == [Action.REFUSE] and "cannot lower" in down[0].reason


RUNNING = ClusterState(features={"metadata.version": 30, "kraft.version": 1, "group.version": 1,
                                 "eligible.leader.replicas.version": 1},
                       supported_features={"metadata.version": 30, "kraft.version": 1, "group.version": 1,
                                           "share.version": 1, "eligible.leader.replicas.version": 1})


def test_a_feature_moves_up_disruptively_and_down_destructively_and_kraft_version_never_down() -> None:
    changes = feature_changes({"share.version": 1, "eligible.leader.replicas.version": 0, "group.version": 1,
                               "kraft.version": 0}, RUNNING)
    seen = {c.resource: (c.action, c.safety, c.current, c.desired, c.payload) for c in changes}
    assert seen == {
        "share.version": (Action.UPDATE, Safety.DISRUPTIVE, "0", "1", FeatureLevel(1)),  # not finalised: level 0
        "eligible.leader.replicas.version": (Action.UPDATE, Safety.DESTRUCTIVE, "1", "0",
                                             FeatureLevel(0, downgrade=True)),
        "kraft.version": (Action.REFUSE, Safety.DESTRUCTIVE, "1", "0", None),
    }
    assert feature_changes({"group.version": 1}, RUNNING) == []  # as declared: nothing


def test_a_level_the_nodes_do_not_support_or_kafka_refuses_is_refused_with_the_reason() -> None:
    above = feature_changes({"group.version": 2}, RUNNING)
    assert [c.action for c in above] == [Action.REFUSE]
    assert "support group.version up to level 1, not 2" in above[0].reason
    verdict = "INVALID_UPDATE_VERSION: downgrade would lose metadata"
    refused = dataclasses.replace(RUNNING, feature_verdicts={"eligible.leader.replicas.version": verdict})
    said = feature_changes({"eligible.leader.replicas.version": 0}, refused)
    assert [c.action for c in said] == [Action.REFUSE]
    assert said[0].reason == ("Kafka refuses eligible.leader.replicas.version 1 -> 0: INVALID_UPDATE_VERSION: "
                              "downgrade would lose metadata")
    assert feature_changes({"share.version": 1}, ClusterState()) == []  # an offline state: nothing observed


def test_with_elr_enabled_a_topics_min_isr_change_says_it_clears_its_elr_and_the_cluster_default_is_refused(
) -> None:
    specs = load_specs(EXAMPLE_SPECS)
    topic = next(t for t in specs.topics if "min.insync.replicas" in t.config)
    running = state_of(specs)
    lowered = {**running.topics[topic.name].config, "min.insync.replicas": "1"}
    observed = dataclasses.replace(
        running, topics={**running.topics, topic.name: dataclasses.replace(running.topics[topic.name],
                                                                          config=lowered)},
        brokers={1: None}, features={"eligible.leader.replicas.version": 1},
        broker_defaults={"min.insync.replicas": "1"})
    plan = live_plan(specs, observed)
    [isr] = [c for c in plan.changes if c.kind is Kind.TOPIC_CONFIG and c.resource == topic.name]
    assert isr.reason.endswith("; it clears the topic's eligible leader replicas (ELR is enabled)")
    [default] = [c for c in plan.changes if c.resource == "cluster default"]
    assert (default.action, default.current, default.desired) == (
        Action.REFUSE, "1", str(specs.cluster.defaults.min_insync_replicas))
    assert "--entity-default --alter --add-config min.insync.replicas=" in default.reason
    without = live_plan(specs, dataclasses.replace(observed, features={"eligible.leader.replicas.version": 0}))
    assert not any(c.resource == "cluster default" or "ELR" in c.reason for c in without.changes)
