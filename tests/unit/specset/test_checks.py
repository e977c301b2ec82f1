"""Cross-reference rules, each shown to fire on a minimal edit of the valid example platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftform.declared import load_specs
from kraftform.errors import SpecError

from ...conftest import SpecsCopy, edit


def problems_after(specs: Path, file: str, old: str, new: str) -> list[str]:
    edit(specs / file, old, new)
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    return [p.message for p in caught.value.problems]


def test_consumer_needs_read_acl_on_its_topics(specs_copy: SpecsCopy) -> None:
    messages = problems_after(specs_copy(), "acls.yaml",
                              "    resource: {type: topic, name: clickstream.page-views.v1}\n"
                              "    operations: [read, describe]",
                              "    resource: {type: topic, name: clickstream.page-views.v1}\n"
                              "    operations: [describe]")
    assert messages == ["consumer 'clickstream-sessionizer': user 'clickstream-sessionizer' has no ACL allowing "
                        "read on topic "
                        "'clickstream.page-views.v1'; the authorizer denies by default"]


def test_a_deny_acl_overrides_an_allow(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    (specs / "deny.yaml").write_text(
        "acls:\n  - principal: User:fraud-scoring\n    resource: {type: topic, name: payments., pattern: prefixed}\n"
        "    operations: [all]\n    permission: deny\n")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    assert sorted(p.message for p in caught.value.problems) == [
        "consumer 'fraud-scoring': user 'fraud-scoring' has no ACL allowing read on topic "
        "'payments.authorizations.v1'; the authorizer denies by default",
        "consumer 'fraud-scoring': user 'fraud-scoring' has no ACL allowing read on topic "
        "'payments.transactions.v1'; the authorizer denies by default",
        "consumer 'fraud-scoring': user 'fraud-scoring' has no ACL allowing write on its sink topic "
        "'payments.fraud-scores.v1'",
    ]


def test_topics_outside_the_managed_scope_are_rejected(specs_copy: SpecsCopy) -> None:
    messages = problems_after(specs_copy(), "topics/orders.yaml", "name: orders.dlq.v1", "name: legacy.dlq.v1")
    assert len(messages) == 1 and "outside cluster.managed_scope.topic_prefixes" in messages[0]


def test_admin_user_cannot_also_be_declared(specs_copy: SpecsCopy) -> None:
    messages = problems_after(specs_copy(), "cluster.yaml", "admin_user: kraftform-admin",
                              "admin_user: payments-service")
    assert messages == ["security.admin_user 'payments-service' is also declared under users; the cluster "
                        "creates the admin user itself"]



def test_a_scram_anchors_name_is_reserved(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    (specs / "anchor.yaml").write_text(
        "users:\n  - name: kraftform-anchor-sha-512-acywjyik\n    password: {env: ANCHOR_PASSWORD}\n")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    assert [p.message for p in caught.value.problems] == [
        "user 'kraftform-anchor-sha-512-acywjyik' is reserved: a SCRAM anchor kraftform keeps on every cluster "
        "(docs/security.md)"]

def test_duplicate_acl_bindings_and_quota_entities(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    (specs / "more.yaml").write_text(
        "acls:\n  - principal: User:orders-service\n    resource: {type: group, name: orders-service, "
        "pattern: prefixed}\n    operations: [read]\n"
        "quotas:\n  - entity: {user: orders-service}\n    producer_byte_rate: 1MB/s\n")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    messages = sorted(p.message.split(" (first")[0] for p in caught.value.problems)
    assert messages == ["duplicate ACL binding \"User:orders-service: allow read on group 'orders-service' "
                        "(prefixed)\"", "duplicate quota entity 'user=orders-service'"]


def test_kafka_sink_must_name_a_declared_topic(specs_copy: SpecsCopy) -> None:
    messages = problems_after(specs_copy(), "consumers.yaml", "topic: payments.fraud-scores.v1",
                              "topic: payments.nowhere.v1")
    assert messages == ["consumer 'fraud-scoring': a kafka sink needs `sink.topic` naming a declared topic, got "
                        "'payments.nowhere.v1'"]


def test_combined_mode_needs_enough_brokers(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "cluster.yaml", "mode: dedicated", "mode: combined")
    edit(specs / "cluster.yaml", "controllers: 3", "controllers: 5")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    assert [p.message for p in caught.value.problems] == [
        "combined mode runs controllers on brokers: 5 controllers need at least as many brokers, got 3"]


def test_per_node_settings_name_real_nodes_and_leave_dynamic_broker_settings_to_broker_config(
        specs_copy: SpecsCopy) -> None:
    messages = problems_after(specs_copy(), "cluster.yaml", "  brokers: 3\n",
                              "  brokers: 3\n  node_config:\n    platform-broker-7: {queued.max.requests: 200}\n"
                              "    platform-broker-1: {num.io.threads: 4}\n"
                              "    platform-controller-0: {queued.max.requests: 200}\n")
    assert messages == [
        "node_config.platform-broker-1.num.io.threads: a dynamic broker setting is applied live to every broker "
        "from broker_config; a per-broker value is not supported",
        "node_config: 'platform-broker-7' is not a node of cluster 'platform'; did you mean 'platform-broker-2'?"]


def test_metadata_version_is_a_known_release_the_kafka_version_can_run(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    assert problems_after(specs, "cluster.yaml", "  brokers: 3\n",
                          "  brokers: 3\n  metadata_version: '4.9'\n") == [
        "metadata_version '4.9' is not a Kafka release kraftform knows the feature levels of "
        "(4.0, 4.1, 4.2, 4.3, 4.4); did you mean '4.4'?"]
    assert problems_after(specs_copy("older"), "cluster.yaml", '  kafka_version: "4.4.0"\n',
                          "  kafka_version: 4.2.1\n  metadata_version: '4.3'\n") == [
        "metadata_version 4.3 is newer than kafka_version 4.2.1: brokers of 4.2.1 cannot run it; raise "
        "kafka_version first"]


def test_a_feature_is_one_the_kafka_version_has_at_a_level_it_ships_each_named_where_it_stands(
        specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "cluster.yaml", "  brokers: 3\n",
         "  brokers: 3\n  features:\n    group.version: 1\n    share.verison: 1\n"
         "    eligible.leader.replicas.version: 3\n    metadata.version: 30\n")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    said = sorted((p.location.line, p.message) for p in caught.value.problems)
    assert [message for _, message in said] == [
        "features: 'share.verison' is not a feature of Kafka 4.4.0; did you mean 'share.version'?",
        "features: Kafka 4.4.0 ships eligible.leader.replicas.version levels 0 to 1, not 3",
        'features: metadata.version is declared as a release with metadata_version (e.g. "4.3"), not as a level']
    lines = (specs / "cluster.yaml").read_text().splitlines()
    assert [lines[line - 1].strip().split(":")[0] for line, _ in said] == [
        "share.verison", "eligible.leader.replicas.version", "metadata.version"]
    valid = specs_copy("valid")
    edit(valid / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  features: {share.version: 1, group.version: 0}\n")
    assert load_specs(valid).cluster.features == {"share.version": 1, "group.version": 0}


def test_a_groups_readers_get_read_on_the_group_and_its_topics_once(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    (specs / "groups.yaml").write_text(
        "groups:\n  - name: alert-workers\n    type: share\n    config: {share.auto.offset.reset: earliest}\n"
        "    readers:\n      - principal: User:orders-service\n"
        "        topics: [payments.fraud-scores.v1, orders.created.v1]\n")
    loaded = load_specs(specs)
    derived = [a for a in loaded.acls if a.location.file.endswith("groups.yaml")]
    # orders-service already reads both topics (acls.yaml: a literal grant and the orders. prefix): only the
    # literal topic binding that acls.yaml lacks and the group grant are added.
    assert sorted((a.resource_type, a.resource_name, a.operations) for a in derived) == [
        ("group", "alert-workers", ("read",)), ("topic", "orders.created.v1", ("read",))]
    assert all(a.pattern_type == "literal" and a.permission == "allow" for a in derived)
    assert {a.location.line for a in derived} == {6}  # the reader's entry


def test_a_groups_type_readers_and_share_version_are_checked_where_declared(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    (specs / "groups.yaml").write_text(
        "groups:\n"
        "  - name: alert-workers\n    type: share\n    config: {consumer.session.timeout.ms: 50000}\n"
        "    readers:\n      - principal: User:nobody\n        topics: [payments.fraud-score.v1]\n"
        "  - name: app\n    type: streams\n"
        "    readers:\n      - principal: User:orders-service\n        topics: [orders.created.v1]\n")
    edit(specs / "cluster.yaml", "  name: platform\n", "  name: platform\n  features: {share.version: 0}\n")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    found = sorted(f"{p.location.line}: {p.message}" for p in caught.value.problems)
    assert found == [
        "11: group 'app': a streams group's application also needs its internal topics; declare its ACLs in "
        "the acls section",
        "2: group 'alert-workers' is a share group: consumer.session.timeout.ms is a consumer group's setting "
        "(a share group takes share.*)",
        "2: group 'alert-workers': share groups need share.version 1 and the cluster's is 0 (declare "
        "`features: {share.version: 1}` in the cluster section)",
        "6: group 'alert-workers': User:nobody reads undeclared topic 'payments.fraud-score.v1'; did you mean "
        "'payments.fraud-scores.v1'?",
        "6: principal 'User:nobody' is neither a declared user nor a declared external principal",
    ], found
