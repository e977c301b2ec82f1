"""Offline diffs of spec revisions: each kind of change, with its safety class."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kraftform.declared import diff_specs, load_specs
from kraftform.errors import SpecError
from kraftform.plan import Action, Kind, Plan, Safety
from kraftform.plan.diff import classify_config_change

from ...conftest import SpecsCopy, edit


def diff(base: Path, head: Path) -> Plan:
    return diff_specs(load_specs(base), load_specs(head))


def one(plan: Plan, kind: Kind) -> tuple[Action, Safety, str | None, str | None]:
    matching = [c for c in plan.changes if c.kind is kind]
    assert len(matching) == 1, plan.changes
    c = matching[0]
    return c.action, c.safety, c.current, c.desired


def test_identical_revisions_have_no_changes(example_specs: Path) -> None:
    assert diff(example_specs, example_specs).empty


def test_partition_increase_is_disruptive_and_decrease_refused(specs_copy: SpecsCopy) -> None:
    base, grow, shrink = specs_copy("base"), specs_copy("grow"), specs_copy("shrink")
    edit(grow / "topics" / "orders.yaml", "partitions: 3", "partitions: 6")
    edit(shrink / "topics" / "orders.yaml", "partitions: 3", "partitions: 2")
    assert one(diff(base, grow), Kind.PARTITIONS) == (Action.UPDATE, Safety.DISRUPTIVE, "3", "6")
    plan = diff(base, shrink)
    assert one(plan, Kind.PARTITIONS) == (Action.REFUSE, Safety.DESTRUCTIVE, "3", "2")
    assert len(plan.refused) == 1 and "never" not in plan.refused[0].reason.lower().split("refuses")[0]


def test_topic_removal_is_destructive_and_addition_safe(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "topics" / "orders.yaml", "  - name: orders.dlq.v1\n", "  - name: orders.deadletters.v1\n")
    plan = diff(base, head)
    by_action = {c.action: c for c in plan.changes}
    assert by_action[Action.DELETE].resource == "orders.dlq.v1"
    assert by_action[Action.DELETE].safety is Safety.DESTRUCTIVE
    assert by_action[Action.CREATE].resource == "orders.deadletters.v1"
    assert by_action[Action.CREATE].safety is Safety.SAFE


def test_replication_change_is_a_disruptive_reassignment(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "cluster.yaml", "replication_factor: 3", "replication_factor: 2")
    edit(head / "cluster.yaml", "min_insync_replicas: 2", "min_insync_replicas: 1")
    plan = diff(base, head)
    replication = [c for c in plan.changes if c.kind is Kind.REPLICATION]
    # Only topics without a profile RF follow the cluster default.
    assert {c.resource for c in replication} == {
        "orders.inventory.reservations.v1", "orders.shipments.v1", "orders.dlq.v1", "clickstream.searches.v1",
        "clickstream.sessions.v1", "clickstream.page-views.v1", "clickstream.user-profiles.state.v1"}
    assert all(c.safety is Safety.DISRUPTIVE and c.desired == "2" for c in replication)


def test_config_changes_are_classified_by_effect(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "topics" / "orders.yaml", "retention.ms: 3d", "retention.ms: 30d")
    edit(head / "topics" / "orders.yaml", "      retention.ms: 14d\n  - name: orders.dlq.v1",
         "      retention.ms: 1d\n  - name: orders.dlq.v1")
    plan = diff(base, head)
    configs = {c.resource: c for c in plan.changes if c.kind is Kind.TOPIC_CONFIG}
    assert configs["orders.inventory.reservations.v1"].safety is Safety.SAFE
    assert configs["orders.shipments.v1"].safety is Safety.DESTRUCTIVE
    assert configs["orders.shipments.v1"].current == "1209600000 (2w)"


def test_removed_override_reverts_to_default_and_equal_default_is_no_change(specs_copy: SpecsCopy) -> None:
    base, head, same = specs_copy("base"), specs_copy("head"), specs_copy("same")
    edit(head / "topics" / "orders.yaml", "    config:\n      retention.ms: 3d\n", "")
    plan = diff(base, head)
    assert one(plan, Kind.TOPIC_CONFIG) == (Action.DELETE, Safety.SAFE, "259200000 (3d)", "604800000 (1w)")
    assert "reverts to the default" in plan.changes[0].reason
    # Writing the default explicitly is not a change.
    edit(same / "topics" / "orders.yaml", "      retention.ms: 14d\n  - name: orders.dlq",
         "      retention.ms: 14d\n      segment.ms: 7d\n      cleanup.policy: [delete]\n  - name: orders.dlq")
    assert diff(base, same).empty


def test_acl_quota_and_user_changes(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "acls.yaml", "operations: [read, write, describe]", "operations: [read, describe]")
    edit(head / "quotas.yaml", "producer_byte_rate: 60MB/s", "producer_byte_rate: 80MB/s")
    edit(head / "quotas.yaml", "consumer_byte_rate: 60MB/s", "consumer_byte_rate: 30MB/s")
    edit(head / "users.yaml", "iterations: 4096", "iterations: 8192")
    plan = diff(base, head)
    acl = [c for c in plan.changes if c.kind is Kind.ACL]
    assert [(c.action, c.safety, c.key) for c in acl] == [
        (Action.DELETE, Safety.DESTRUCTIVE, "allow write on topic 'orders.' (prefixed)")]
    quotas = {c.resource: (c.action, c.safety) for c in plan.changes if c.kind is Kind.QUOTA}
    assert quotas == {"user=clickstream-collector": (Action.UPDATE, Safety.SAFE),
                      "user=clickstream-sessionizer": (Action.UPDATE, Safety.DISRUPTIVE)}
    assert one(plan, Kind.USER) == (Action.UPDATE, Safety.SAFE, "4096", "8192")


def test_user_removal_is_destructive_and_never_shows_a_password(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "users.yaml", "password: {env: KRAFTFORM_PASSWORD_ORDERS_SERVICE}",
         "password: {env: KRAFTFORM_PASSWORD_ORDERS_SERVICE}\n    password_version: 2")
    plan = diff(base, head)
    assert one(plan, Kind.USER) == (Action.UPDATE, Safety.DISRUPTIVE, "1", "2")
    assert "KRAFTFORM_PASSWORD" not in str(plan.to_dict())


def test_cluster_consumer_and_profile_changes(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "cluster.yaml", "controller_auth: mtls", "controller_auth: plain")
    edit(head / "consumers.yaml", "trigger: 30s", "trigger: 1m")
    edit(head / "profiles.yaml", "      max.message.bytes: 1MiB\n",
         "      max.message.bytes: 1MiB\n    producer:\n      linger.ms: 20\n")
    plan = diff(base, head)
    assert one(plan, Kind.CLUSTER) == (Action.UPDATE, Safety.DISRUPTIVE, "mtls", "plain")
    assert one(plan, Kind.CONSUMER) == (Action.UPDATE, Safety.SAFE, "30000", "60000")
    assert one(plan, Kind.PROFILE) == (Action.UPDATE, Safety.SAFE, None, "20")


def test_fewer_brokers_is_destructive(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(base / "cluster.yaml", "brokers: 3", "brokers: 4")
    assert one(diff(base, head), Kind.CLUSTER) == (Action.UPDATE, Safety.DESTRUCTIVE, "4", "3")


def test_a_broker_count_change_shows_the_moves_it_implies_against_the_bound_from_the_placement_code(
        specs_copy: SpecsCopy) -> None:
    base, grow, shrink = specs_copy("base"), specs_copy("grow"), specs_copy("shrink")
    edit(grow / "cluster.yaml", "brokers: 3", "brokers: 4")
    edit(base / "cluster.yaml", "brokers: 3", "brokers: 4")
    edit(shrink / "cluster.yaml", "brokers: 3", "brokers: 4\n  placement: {even_topics: true}")
    specs = load_specs(base)
    replicas = sum(t.partitions * t.replication_factor for t in specs.topics)
    # 3 -> 4 on three racks, every partition in each rack: the new broker (rack-a) takes half of rack-a's share.
    assert not [c for c in diff(grow, base).changes if c.key == "brokers"]  # the same count: nothing to estimate
    reason = next(c.reason for c in diff(specs_copy("three"), grow).changes if c.key == "brokers")
    half = replicas // 3 // 2
    assert f"{half} replica(s) of {half} partition(s)" in reason and f"balance needs at least {half}" in reason
    assert "16 topic(s) declare none" in reason and "even_topics: true" in reason
    # 4 -> 3: every replica of the leaving broker moves, and no more; the setting is a safe change of its own.
    reason = next(c.reason for c in diff(base, specs_copy("back")).changes if c.key == "brokers")
    moved = re.search(r"(\d+) replica\(s\) of \d+ partition\(s\) in \d+ topic\(s\) move, where balance needs at "
                      r"least (\d+)", reason)
    assert moved is not None and moved[1] == moved[2] and int(moved[1]) > 0, reason
    changes = {c.key: c for c in diff(base, shrink).changes}
    assert changes["placement.even_topics"].safety is Safety.SAFE


def test_classify_config_change_edge_cases() -> None:
    assert classify_config_change("retention.ms", "-1", "604800000")[0] is Safety.DESTRUCTIVE
    assert classify_config_change("retention.ms", "604800000", "-1")[0] is Safety.SAFE
    assert classify_config_change("retention.bytes", None, "1000")[0] is Safety.DESTRUCTIVE
    assert classify_config_change("cleanup.policy", "delete", "compact,delete")[0] is Safety.DESTRUCTIVE
    assert classify_config_change("min.insync.replicas", "1", "2")[0] is Safety.DISRUPTIVE
    assert classify_config_change("min.insync.replicas", "2", "1")[0] is Safety.SAFE
    assert classify_config_change("max.message.bytes", "2000000", "1000000")[0] is Safety.DISRUPTIVE
    assert classify_config_change("unclean.leader.election.enable", "false", "true")[0] is Safety.DISRUPTIVE
    assert classify_config_change("segment.ms", "1", "2")[0] is Safety.SAFE


def test_a_new_limit_or_deny_rule_is_safe_unless_running_clients_fall_under_it() -> None:
    from kraftform.plan.diff import diff_states
    from kraftform.plan.state import ClusterState, UserState
    from kraftform.specset.model import AclBinding, QuotaEntity

    def deny(principal: str) -> AclBinding:
        return AclBinding(principal, "topic", "t", "literal", "write", "deny")

    current = ClusterState(users={"admin": UserState("admin", "SCRAM-SHA-512", 8192),
                                  "running": UserState("running", "SCRAM-SHA-512", 8192)})
    desired = ClusterState(
        users={**current.users, "fresh": UserState("fresh", "SCRAM-SHA-512", 8192)},
        acls=frozenset({deny("User:fresh"), deny("User:running"), deny("User:CN=billing,O=example")}),
        quotas={QuotaEntity(user="fresh"): {"producer_byte_rate": 1e6},
                QuotaEntity(user="running"): {"producer_byte_rate": 1e6},
                QuotaEntity(user="<default>"): {"producer_byte_rate": 1e6, "consumer_byte_rate": 1e6},
                QuotaEntity(client_id="batch"): {"consumer_byte_rate": 1e6}})
    plan = diff_states(current, desired)
    labels = {(c.resource, c.key): c.safety for c in plan.changes if c.kind in (Kind.ACL, Kind.QUOTA)}
    assert labels == {
        ("User:fresh", "deny write on topic 't'"): Safety.SAFE,  # created by this plan: nobody runs as it
        ("User:running", "deny write on topic 't'"): Safety.DISRUPTIVE,
        ("User:CN=billing,O=example", "deny write on topic 't'"): Safety.DISRUPTIVE,  # TLS: may be connected
        ("user=fresh", "producer_byte_rate"): Safety.SAFE,
        ("user=running", "producer_byte_rate"): Safety.DISRUPTIVE,
        ("user=<default>", "producer_byte_rate"): Safety.DISRUPTIVE,  # admin has no producer limit of its own
        ("user=<default>", "consumer_byte_rate"): Safety.DISRUPTIVE,
        ("client-id=batch", "consumer_byte_rate"): Safety.DISRUPTIVE,
    }
    reasons = {c.key: c.reason for c in plan.changes if c.resource == "user=<default>"}
    assert "(admin)" in reasons["producer_byte_rate"]  # `running` has a producer limit of its own
    assert "(admin, running)" in reasons["consumer_byte_rate"]  # which users it throttles, by name
    only_fresh = diff_states(ClusterState(), desired)  # nobody exists yet: nothing running is restricted
    assert {c.safety for c in only_fresh.changes if c.kind in (Kind.ACL, Kind.QUOTA)
            if "CN=" not in c.resource and "client-id" not in c.resource} == {Safety.SAFE}


def test_cluster_changes_restart_nodes_only_for_settings_that_reach_them(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "cluster.yaml", "  name: platform", "  name: platform2")
    edit(head / "cluster.yaml", "    min_retention: 1h\n", "")
    plan = diff(base, head)
    cluster = {c.key: c for c in plan.changes if c.kind is Kind.CLUSTER}
    assert cluster["name"].safety is Safety.DESTRUCTIVE and "new, empty" in cluster["name"].reason
    retention = cluster["conventions.min_retention_ms"]
    assert retention.safety is Safety.SAFE and "restart" not in retention.reason
    assert retention.current == "3600000" and retention.desired == "(unset)"  # never Python's None
    assert plan.subject == "diff"


def test_broker_settings_in_review_dynamic_ones_restart_nothing_read_only_ones_roll(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  broker_config:\n    num.io.threads: 16\n"
                                                  "    group.initial.rebalance.delay.ms: 3000\n")
    cluster = {c.key: c for c in diff(base, head).changes if c.kind is Kind.CLUSTER}
    threads = cluster["broker_config.num.io.threads"]
    assert (threads.safety, threads.current, threads.desired) == (Safety.SAFE, "(unset)", "16")
    assert "no restart" in threads.reason
    rolled = cluster["broker_config.group.initial.rebalance.delay.ms"]
    assert rolled.safety is Safety.DISRUPTIVE and "restart" in rolled.reason


def test_feature_levels_in_review_restart_nothing_and_going_down_is_destructive(specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    edit(base / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  features: {eligible.leader.replicas.version: 1,"
                                                  " group.version: 1}\n")
    edit(head / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  features: {eligible.leader.replicas.version: 0,"
                                                  " share.version: 1, kraft.version: 1}\n")
    cluster = {c.key: (c.safety, c.current, c.desired, c.reason) for c in diff(base, head).changes
               if c.kind is Kind.CLUSTER}
    assert cluster == {
        "features.eligible.leader.replicas.version": (
            Safety.DESTRUCTIVE, "1", "0",
            "a safe downgrade (UpdateFeatures): what relies on eligible.leader.replicas.version 1 stops working"),
        "features.group.version": (Safety.SAFE, "1", "(unset)",
                                   "no longer managed: the cluster keeps the level it has"),
        "features.share.version": (Safety.DISRUPTIVE, "(unset)", "1",
                                   "finalised (UpdateFeatures): brokers and clients take up what share.version 1 "
                                   "enables"),
        "features.kraft.version": (Safety.DESTRUCTIVE, "(unset)", "1",
                                   "finalised (UpdateFeatures): irreversible, Kafka cannot lower kraft.version again"),
    }


def test_a_broker_setting_kafka_does_not_have_is_a_located_validation_error(specs_copy: SpecsCopy) -> None:
    head = specs_copy("head")
    edit(head / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  broker_config:\n    num.io.thread: 16\n")
    with pytest.raises(SpecError) as caught:
        load_specs(head)
    [problem] = caught.value.problems
    assert "cluster.yaml" in str(problem) and '$.cluster.broker_config["num.io.thread"]' in str(problem)
    assert "did you mean num.io.threads?" in str(problem)
