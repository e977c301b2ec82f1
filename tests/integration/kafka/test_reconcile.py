"""Reconcile against the real secure cluster: plan, apply, and a second plan that is empty."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kraftform.errors import PlanRefusedError
from kraftform.kafka.admin import Admin
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.credentials import logs_in, refusing_brokers
from kraftform.kafka.observe import topics_per_broker
from kraftform.kafka.reconcile import SETTLE_S, apply_cluster, plan_cluster
from kraftform.plan import Action, Kind, Plan, Safety
from kraftform.runtime.nodes.tools import ACLS, CONFIGS, run_kafka_tool
from kraftform.versions import KAFKA_VERSION

from ...conftest import EXAMPLE_SPECS
from .conftest import Workspace

pytestmark = pytest.mark.integration


def produce(ws: Workspace, topic: str, count: int) -> None:
    producer = Producer({**ws.cluster.admin, "acks": "all"})
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=b"x" * 100)
    assert producer.flush(30) == 0


def record_count(ws: Workspace, topic: str, partitions: int) -> int:
    consumer = Consumer({**ws.cluster.admin, "group.id": "kraftform-test-count"})
    try:
        total = 0
        for p in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            total += high - low
        return total
    finally:
        consumer.close()


def topic_spec(name: str, partitions: int = 1, rf: int = 3, config: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "partitions": partitions, "replication_factor": rf, **({"config": config} if config else {})}


def test_example_specs_apply_on_a_fresh_cluster_then_plan_is_empty(workspace: Workspace,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for user in ("PAYMENTS_SERVICE", "ORDERS_SERVICE", "CLICKSTREAM_COLLECTOR", "FRAUD_SCORING",
                 "CLICKSTREAM_SESSIONIZER"):
        monkeypatch.setenv(f"KRAFTFORM_PASSWORD_{user}", f"pw-{user.lower()}")
    workspace.root = EXAMPLE_SPECS
    first = workspace.cli("plan")
    assert first.returncode == 2, first.stderr
    assert "create topic payments.transactions.v1" in first.stdout
    applied = workspace.cli("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stderr + applied.stdout
    assert "the cluster now matches the specs" in applied.stdout
    second = workspace.cli("plan", "--format", "json")
    assert second.returncode == 0, second.stdout + second.stderr
    assert '"changes": []' in second.stdout


def test_configs_are_set_changed_and_unset(workspace: Workspace) -> None:
    topic = workspace.name("configs")
    workspace.write(topics=[topic_spec(topic, config={"retention.ms": "1d", "compression.type": "zstd"})])
    workspace.apply()
    assert workspace.observe().topics[topic].config == {"retention.ms": "86400000", "compression.type": "zstd"}

    workspace.write(topics=[topic_spec(topic, config={"retention.ms": "2d"})])
    plan = workspace.plan().plan
    assert sorted((c.action, c.key) for c in plan.changes) == [(Action.DELETE, "compression.type"),
                                                               (Action.UPDATE, "retention.ms")]
    workspace.apply()
    assert workspace.observe().topics[topic].config == {"retention.ms": "172800000"}

    workspace.write(topics=[topic_spec(topic)])
    [change] = workspace.plan().plan.changes
    assert (change.action, change.key, change.safety) == (Action.DELETE, "retention.ms", Safety.SAFE)
    workspace.apply()
    assert workspace.observe().topics[topic].config == {}


def test_partitions_grow_and_a_decrease_is_refused_with_the_data_intact(workspace: Workspace) -> None:
    topic = workspace.name("partitions")
    workspace.write(topics=[topic_spec(topic, partitions=2)])
    workspace.apply()
    produce(workspace, topic, 50)

    workspace.write(topics=[topic_spec(topic, partitions=4)])
    [grow] = workspace.plan().plan.changes
    assert (grow.kind, grow.safety, grow.current, grow.desired) == (Kind.PARTITIONS, Safety.DISRUPTIVE, "2", "4")
    assert "keys map to different partitions" in grow.reason
    workspace.apply()
    assert workspace.observe().topics[topic].partitions == 4

    workspace.write(topics=[topic_spec(topic, partitions=3)])
    [refused] = workspace.plan().plan.changes
    assert refused.action is Action.REFUSE and "recreate" in refused.reason
    with pytest.raises(PlanRefusedError, match="nothing was applied"):
        workspace.apply(allow_destructive=True)
    done = workspace.cli("apply", "--auto-approve", "--allow-destructive")
    assert done.returncode == 1 and "Kafka cannot decrease partitions" in done.stderr
    assert "Traceback" not in done.stderr
    assert workspace.observe().topics[topic].partitions == 4
    assert record_count(workspace, topic, 4) == 50


def test_replication_two_to_three_lands_on_distinct_racks(workspace: Workspace) -> None:
    topic = workspace.name("replication")
    workspace.write(topics=[topic_spec(topic, partitions=6, rf=2, config={"min.insync.replicas": 1})])
    workspace.apply()
    produce(workspace, topic, 200)
    before = workspace.observe().topics[topic].assignment
    assert {len(r) for r in before} == {2}

    workspace.write(topics=[topic_spec(topic, partitions=6, rf=3, config={"min.insync.replicas": 1})])
    [change] = workspace.plan().plan.changes
    assert (change.kind, change.safety, change.current) == (Kind.REPLICATION, Safety.DISRUPTIVE, "2")
    workspace.apply()  # waits for the reassignment, removes the throttle, then plans again: empty
    after = workspace.observe()
    racks = after.brokers
    for old, new in zip(before, after.topics[topic].assignment, strict=True):
        assert len(new) == 3 and len({racks[b] for b in new}) == 3
        assert new[0] == old[0] and set(old) <= set(new)
    assert after.topics[topic].config == {"min.insync.replicas": "1"}  # throttles removed
    assert record_count(workspace, topic, 6) == 200


def test_acls_quotas_and_users_are_added_updated_and_removed(workspace: Workspace,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    app = workspace.prefix.replace(".", "-")
    monkeypatch.setenv("APP_PASSWORD", "first-secret")
    topic = workspace.name("access")
    user = {"name": app, "password": {"env": "APP_PASSWORD"}}
    acl_read = {"principal": f"User:{app}", "resource": {"type": "topic", "name": topic},
                "operations": ["read", "describe"]}
    acl_group = {"principal": f"User:{app}", "resource": {"type": "group", "name": app, "pattern": "prefixed"},
                 "operations": ["read"]}
    quota = {"entity": {"user": app}, "producer_byte_rate": "1MB/s", "consumer_byte_rate": "2MB/s"}
    pair = {"entity": {"user": app, "client_id": "batch"}, "request_percentage": 50}
    workspace.write(topics=[topic_spec(topic)], users=[user], acls=[acl_read, acl_group], quotas=[quota, pair])
    workspace.apply()
    state = workspace.observe()
    assert app in state.users
    mine = {b for b in state.acls if b.principal == f"User:{app}"}
    assert {(b.resource_type, b.operation) for b in mine} == {("topic", "read"), ("topic", "describe"),
                                                             ("group", "read")}
    quotas = {e.describe(): v for e, v in state.quotas.items() if e.user == app}
    assert quotas == {f"user={app}": {"producer_byte_rate": 1e6, "consumer_byte_rate": 2e6},
                      f"user={app},client-id=batch": {"request_percentage": 50.0}}

    acl_read["operations"] = ["read"]
    quota.pop("consumer_byte_rate")
    quota["producer_byte_rate"] = "3MB/s"
    workspace.write(topics=[topic_spec(topic)], users=[user], acls=[acl_read], quotas=[quota])
    plan = workspace.plan().plan
    assert sorted((c.action, c.kind, c.key) for c in plan.changes if c.kind in (Kind.ACL, Kind.QUOTA)) == sorted([
        (Action.DELETE, Kind.ACL, f"allow describe on topic {topic!r}"),
        (Action.DELETE, Kind.ACL, f"allow read on group {app!r} (prefixed)"),
        (Action.UPDATE, Kind.QUOTA, "producer_byte_rate"), (Action.DELETE, Kind.QUOTA, "consumer_byte_rate"),
        (Action.DELETE, Kind.QUOTA, "request_percentage")])
    with pytest.raises(PlanRefusedError, match="need --allow-destructive"):
        workspace.apply()
    workspace.apply(allow_destructive=True)
    state = workspace.observe()
    assert {(b.resource_type, b.operation) for b in state.acls if b.principal == f"User:{app}"} == {("topic", "read")}
    assert {e.describe(): v for e, v in state.quotas.items() if e.user == app} == {
        f"user={app}": {"producer_byte_rate": 3e6}}

    # The user leaves users.yaml but stays declared (now an mTLS principal): its SCRAM credential goes.
    workspace.write(topics=[topic_spec(topic)], principals=[{"name": f"User:{app}"}], acls=[acl_read])
    workspace.apply(allow_destructive=True)
    assert app not in workspace.observe().users


def test_a_rotated_password_is_set_and_the_old_one_rejected(workspace: Workspace,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    app = workspace.prefix.replace(".", "-")
    monkeypatch.setenv("ROTATED_PASSWORD", "old-secret")
    specs = workspace.write(users=[{"name": app, "password": {"env": "ROTATED_PASSWORD"}}])
    workspace.apply()
    [spec] = specs.users
    assert logs_in(workspace.connection, spec, "old-secret")

    monkeypatch.setenv("ROTATED_PASSWORD", "new-secret")
    [change] = workspace.plan().plan.changes
    assert (change.kind, change.key, change.action) == (Kind.USER, "password", Action.UPDATE)
    shown = workspace.cli("plan")
    assert shown.returncode == 2 and "new-secret" not in shown.stdout + shown.stderr
    assert "old-secret" not in shown.stdout + shown.stderr
    workspace.apply()
    assert logs_in(workspace.connection, spec, "new-secret")
    assert not logs_in(workspace.connection, spec, "old-secret")
    # The apply returned only once every broker, asked alone, took the new password (a client may meet any).
    brokers = sorted(Admin(workspace.connection).metadata().brokers)
    assert len(brokers) == 3
    assert refusing_brokers(workspace.connection, [spec], {app: "new-secret"}) == {}
    assert refusing_brokers(workspace.connection, [spec], {app: "old-secret"}) == {app: brokers}


def test_drift_made_with_kafkas_own_tools_is_found_and_fixed(workspace: Workspace) -> None:
    app = workspace.prefix.replace(".", "-")
    topic = workspace.name("drift")
    acl = {"principal": f"User:{app}", "resource": {"type": "topic", "name": topic}, "operations": ["read"]}
    workspace.write(topics=[topic_spec(topic, config={"retention.ms": "1h"})], principals=[{"name": f"User:{app}"}],
                    acls=[acl])
    workspace.apply()
    common = ["--bootstrap-server", workspace.cluster.deployment.bootstrap,
              "--command-config", str(workspace.command_config)]
    run_kafka_tool(CONFIGS, [*common, "--alter", "--entity-type", "topics", "--entity-name", topic,
                             "--add-config", "retention.ms=60000,max.message.bytes=2000000"])
    run_kafka_tool(ACLS, [*common, "--add", "--allow-principal", f"User:{app}", "--operation", "Write",
                          "--topic", topic])
    drifted = workspace.cli("plan")
    assert drifted.returncode == 2, drifted.stderr
    assert f"update topic_config {topic} retention.ms: 60000" in drifted.stdout
    assert f"delete topic_config {topic} max.message.bytes" in drifted.stdout
    assert f"delete acl User:{app} allow write on topic {topic!r}" in drifted.stdout
    fixed = workspace.cli("apply", "--auto-approve", "--allow-destructive")
    assert fixed.returncode == 0, fixed.stderr
    assert workspace.cli("plan").returncode == 0
    described = run_kafka_tool(CONFIGS, [*common, "--describe", "--entity-type", "topics", "--entity-name", topic])
    assert "retention.ms=3600000" in described and "max.message.bytes=2000000" not in described


def test_acl_resources_managed_leaves_grants_made_by_aclcommand_outside_the_scope(workspace: Workspace) -> None:
    app = workspace.prefix.replace(".", "-")
    topic = workspace.name("owned")
    acl = {"principal": f"User:{app}", "resource": {"type": "topic", "name": topic}, "operations": ["read"]}
    sections: dict[str, Any] = {"topics": [topic_spec(topic)], "principals": [{"name": f"User:{app}"}],
                                "acls": [acl]}
    workspace.write(scope={"acl_resources": "managed"}, **sections)
    workspace.apply()
    common = ["--bootstrap-server", workspace.cluster.deployment.bootstrap,
              "--command-config", str(workspace.command_config)]
    other_team = f"otherteam.{app}"  # outside the test's managed prefix: another tool's grant
    run_kafka_tool(ACLS, [*common, "--add", "--allow-principal", f"User:{app}", "--operation", "Read",
                          "--topic", other_team])
    run_kafka_tool(ACLS, [*common, "--add", "--allow-principal", f"User:{app}", "--operation", "Write",
                          "--topic", topic])
    planned = workspace.cli("plan")
    assert planned.returncode == 2, planned.stderr
    assert f"delete acl User:{app} allow write on topic {topic!r}" in planned.stdout  # inside: kraftform's
    assert other_team not in planned.stdout.split("note:")[0]  # no change touches the other team's grant
    assert "1 ACL binding of declared principals on resources outside the managed scope" in planned.stdout
    assert workspace.cli("apply", "--auto-approve", "--allow-destructive").returncode == 0
    assert workspace.cli("plan").returncode == 0
    left = run_kafka_tool(ACLS, [*common, "--list", "--topic", other_team])
    assert f"User:{app}" in left and "READ" in left  # still there, as AclCommand made it

    workspace.write(**sections)  # the default (acl_resources: all): every ACL of a declared principal
    assert f"delete acl User:{app} allow read on topic {other_team!r}" in workspace.cli("plan").stdout
    run_kafka_tool(ACLS, [*common, "--remove", "--force", "--allow-principal", f"User:{app}", "--operation",
                          "Read", "--topic", other_team])


def test_import_then_plan_is_empty(workspace: Workspace) -> None:
    topic = workspace.name("imported")
    group = workspace.name("importing-group")
    workspace.write(topics=[topic_spec(topic, partitions=3, config={"cleanup.policy": "compact"})],
                    principals=[{"name": "User:CN=importer"}],
                    acls=[{"principal": "User:CN=importer", "resource": {"type": "topic", "name": topic},
                           "operations": ["read"], "host": "10.1.2.3"}],
                    groups=[{"name": group, "readers": [{"principal": "User:CN=importer", "topics": [topic]}],
                             "config": {"consumer.session.timeout.ms": 50000}}])
    workspace.apply()
    workspace.root = workspace.root.parent / "imported"
    done = workspace.cli("import", str(workspace.root))
    assert done.returncode == 0, done.stderr
    assert f"name: {topic}" in (workspace.root / "topics.yaml").read_text()
    # The feature levels the cluster was formatted at, and the settings of a group an ACL names.
    assert f"metadata_version: '{KAFKA_VERSION.rsplit('.', 1)[0]}'" in (workspace.root / "cluster.yaml").read_text()
    assert f"- name: {group}\n  config:\n    consumer.session.timeout.ms: '50000'" in \
        (workspace.root / "groups.yaml").read_text()
    planned = workspace.cli("plan")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "No changes." in planned.stdout


def test_an_apply_killed_midway_converges_on_the_next_run(workspace: Workspace) -> None:
    app = workspace.prefix.replace(".", "-")
    topics = [topic_spec(workspace.name(f"bulk-{i:04d}"), rf=1, config={"min.insync.replicas": 1}) for i in range(1500)]
    acls = [{"principal": f"User:{app}", "resource": {"type": "topic", "name": f"{workspace.prefix}.",
                                                       "pattern": "prefixed"}, "operations": ["read"]}]
    existing = workspace.name("existing")
    workspace.write(topics=[topic_spec(existing, rf=1, config={"retention.ms": "1d", "min.insync.replicas": 1})])
    workspace.apply()
    # The config change is a step after the topic step, so the kill below leaves it unsent.
    changed = topic_spec(existing, rf=1, config={"retention.ms": "2d", "min.insync.replicas": 1})
    workspace.write(topics=[*topics, changed], principals=[{"name": f"User:{app}"}], acls=acls)
    process = subprocess.Popen([sys.executable, "-m", "kraftform", "apply", str(workspace.root), "--auto-approve",
                                "--command-config", str(workspace.command_config)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        if "topic: 1500 change(s)" in line:
            time.sleep(0.5)
            os.kill(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    # Killed inside the topic step: the ACLs before it are there, the config change after it was never sent.
    state = workspace.observe()
    assert any(b.principal == f"User:{app}" for b in state.acls)
    assert state.topics[existing].config["retention.ms"] == "86400000"

    converged = workspace.cli("apply", "--auto-approve")
    assert converged.returncode == 0, converged.stderr
    assert workspace.cli("plan").returncode == 0
    # Read back from every broker, not from the one a client happened to ask.
    names = [t["name"] for t in topics]
    every = set(workspace.observe().brokers)
    assert len(every) > 1
    assert topics_per_broker(workspace.connection, names) == dict.fromkeys(every, frozenset(names))

    # Deleting them is destructive: refused without the flag, done with it.
    workspace.write(principals=[{"name": f"User:{app}"}])
    refused = workspace.cli("apply", "--auto-approve")
    assert refused.returncode == 1 and "1502 destructive change(s) need --allow-destructive" in refused.stderr
    assert "and 1482 more" in refused.stderr
    workspace.apply(allow_destructive=True)
    assert not any(t.startswith(f"{workspace.prefix}.") for t in workspace.observe().topics)
    assert topics_per_broker(workspace.connection, names) == dict.fromkeys(every, frozenset())


def test_a_write_the_brokers_never_report_is_sent_again_before_the_deadline(workspace: Workspace) -> None:
    """A write a busy broker dropped (here: one left out of what was sent) is not waited for until the deadline
    and then reported as missing: after RESEND_AFTER_S the idempotent changes still unreported go again."""
    topic, app = workspace.name("resent"), f"{workspace.prefix}-resent-app"
    acl = {"principal": f"User:{app}", "resource": {"type": "topic", "name": topic}, "operations": ["read"]}
    quota = {"entity": {"user": app}, "consumer_byte_rate": "5MB/s"}
    specs = workspace.write(topics=[topic_spec(topic)], principals=[{"name": f"User:{app}"}], acls=[acl],
                            quotas=[quota])
    live = plan_cluster(workspace.connection, specs)
    assert sorted(c.kind for c in live.plan.changes) == sorted([Kind.TOPIC, Kind.ACL, Kind.QUOTA])
    lost = [c for c in live.plan.changes if c.kind in (Kind.ACL, Kind.QUOTA)]
    sent_once = dataclasses.replace(live, plan=Plan.of([c for c in live.plan.changes if c not in lost]))
    said: list[str] = []
    started = time.monotonic()
    after = apply_cluster(workspace.connection, specs, sent_once, ApplyOptions(), said.append)
    assert after.plan.empty and workspace.plan().plan.empty
    assert any(re.fullmatch(r"2 change\(s\) not reported after 1\d s: sending them again", line) for line in said), said
    assert time.monotonic() - started < SETTLE_S  # converged by sending again, not by running out the wait


def test_a_cluster_section_the_running_cluster_contradicts_is_planned_and_reported_never_ignored(
        workspace: Workspace) -> None:
    """`brokers: 3 -> 4` on the running 3-broker cluster: `plan` once said "No changes". Now it is a change
    (node work), `apply` with only --command-config does everything the Admin protocol can and exits 2 naming
    what it cannot, and `cluster up` on the running cluster says how it differs and points at `apply --state-dir`
    instead of waiting for a broker nothing starts."""
    topic = workspace.name("beside-node-work")
    workspace.write(topics=[topic_spec(topic)])
    cluster_file = workspace.root / "cluster.yaml"
    cluster_file.write_text(cluster_file.read_text().replace("brokers: 3", "brokers: 4"))
    plan = workspace.cli("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "brokers: 3 -> 4" in plan.stdout and "node work" in plan.stdout and f"create topic {topic}" in plan.stdout
    applied = workspace.cli("apply", "--auto-approve")
    assert applied.returncode == 2, applied.stdout + applied.stderr
    assert "Applied 1 change (1 safe)." in applied.stdout, applied.stdout
    assert "The cluster's nodes still differ from the specs: 1 change(s) of node work" in applied.stdout
    assert "update cluster" in applied.stdout and "brokers: 3 -> 4" in applied.stdout
    assert topic in workspace.observe().topics
    again = workspace.cli("plan")
    assert again.returncode == 2 and f"topic {topic}" not in again.stdout and "brokers: 3 -> 4" in again.stdout

    started = time.monotonic()
    up = subprocess.run([sys.executable, "-m", "kraftform", "cluster", "up", str(workspace.root), "--runtime",
                         "local", "--state-dir", str(workspace.cluster.state_dir)], capture_output=True, text=True,
                        check=False, timeout=300)
    assert up.returncode == 1 and "Traceback" not in up.stderr, up.stdout + up.stderr
    assert f"differs from its specs: add {workspace.cluster.spec.name}-broker-3" in up.stderr, up.stderr
    assert f"kraftform apply --state-dir {workspace.cluster.state_dir}" in up.stderr
    assert time.monotonic() - started < 60


def test_the_admin_a_plan_logs_in_as_is_never_planned_away_whatever_the_specs_call_the_admin(
        workspace: Workspace) -> None:
    # Every principal owned, and the specs naming another admin than the one the command config logs in as: the
    # login's credential was planned for deletion (behind --allow-destructive only) and the next apply locked out.
    login = workspace.connection.username
    assert login
    workspace.write(scope={"acl_principals": "all"}, security={"admin_user": f"{workspace.prefix}-admin"})
    plan = workspace.plan().plan
    assert not [c for c in plan.changes if c.resource in (login, f"User:{login}")], plan.changes
    assert any("rule: own logins" in n and f"User:{login} user (delete)" in n for n in plan.notes), plan.notes
    # Declared with a credential the plan would re-salt, the login is refused, and nothing is applied.
    workspace.write(security={"admin_user": f"{workspace.prefix}-admin"},
                    users=[{"name": login, "iterations": 8192, "password": {"env": "KRAFTFORM_NO_SUCH_PASSWORD"}}])
    refused = workspace.cli("apply", "--auto-approve")
    assert refused.returncode != 0 and "rule: own logins" in refused.stderr, refused.stderr
    assert workspace.observe().users[login].iterations != 8192
