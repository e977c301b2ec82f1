"""Consumer and share groups as code against a real cluster of its own (one combined node, started through
`kraftform.testing`): settings applied live on GROUP resources, drift made with Kafka's kafka-configs tool planned
and repaired, an undeclared setting removed, an undeclared group never touched; a share group's declared readers
consume through it (librdkafka's share consumer, KIP-932), no one else does, and `kraftform status` shows its
delivery state as Kafka counts it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from kraftform.runtime.nodes.tools import CONFIGS, run_kafka_tool

from .conftest import OneNode, one_node

pytestmark = pytest.mark.integration

class Grouped(OneNode):
    def declare_groups(self, groups: list[dict[str, Any]]) -> None:
        self.declare(groups=groups)

    def settings(self, group: str) -> dict[str, str]:
        """What is set on the group's own GROUP resource, read with the Admin API."""
        resource = ConfigResource(ResourceType.GROUP, group)
        admin = AdminClient(self.running.client())  # kept while the request runs: a destroyed client fails it
        entries = admin.describe_configs([resource])[resource].result(30)
        return {k: e.value for k, e in entries.items() if e.source == ConfigSource.GROUP_CONFIG.value}

    def tool(self, *args: str) -> str:
        return run_kafka_tool(CONFIGS, ["--bootstrap-server", self.running.bootstrap, "--command-config",
                                        str(self.running.properties()), *args])


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grouped]:
    with one_node(tmp_path_factory.mktemp("groups")) as node:
        yield Grouped(node.specs, node.cluster)


def test_group_settings_are_applied_live_drift_is_repaired_and_other_groups_are_left_alone(
        grouped: Grouped) -> None:
    grouped.tool("--alter", "--entity-type", "groups", "--entity-name", "someone-else", "--add-config",
                 "consumer.session.timeout.ms=60000")
    grouped.declare_groups([
        {"name": "billing", "config": {"consumer.session.timeout.ms": 50000, "consumer.heartbeat.interval.ms": 6000}},
        {"name": "billing-share", "config": {"share.auto.offset.reset": "earliest",
                                             "share.record.lock.duration.ms": 20000}},
    ])
    planned = grouped.kraftform("plan")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "~ [safe] update group_config billing consumer.session.timeout.ms: 50000" in planned.stdout, planned.stdout
    applied = grouped.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert grouped.settings("billing") == {"consumer.session.timeout.ms": "50000",
                                           "consumer.heartbeat.interval.ms": "6000"}
    assert grouped.settings("billing-share") == {"share.auto.offset.reset": "earliest",
                                                 "share.record.lock.duration.ms": "20000"}
    assert grouped.kraftform("plan").returncode == 0

    # Drift made with Kafka's own tool: a changed value and a setting the specs do not declare.
    grouped.tool("--alter", "--entity-type", "groups", "--entity-name", "billing", "--add-config",
                 "consumer.session.timeout.ms=55000,consumer.assignment.interval.ms=2000")
    drift = grouped.kraftform("plan")
    assert drift.returncode == 2, drift.stdout + drift.stderr
    assert "update group_config billing consumer.session.timeout.ms: 55000 -> 50000" in drift.stdout, drift.stdout
    assert "delete group_config billing consumer.assignment.interval.ms: was 2000" in drift.stdout, drift.stdout
    assert grouped.kraftform("apply", "--auto-approve").returncode == 0
    assert grouped.settings("billing") == {"consumer.session.timeout.ms": "50000",
                                           "consumer.heartbeat.interval.ms": "6000"}
    assert grouped.settings("someone-else") == {"consumer.session.timeout.ms": "60000"}  # not declared: untouched


def test_a_group_setting_kafka_does_not_have_is_a_located_validation_error(grouped: Grouped) -> None:
    def validate(config: dict[str, Any]) -> str:
        grouped.declare_groups([{"name": "billing", "config": config}])
        checked = subprocess.run([sys.executable, "-m", "kraftform", "validate", str(grouped.specs)],
                                 capture_output=True, text=True, timeout=60, check=False)
        assert checked.returncode == 1 and "cluster.yaml:" in checked.stderr, checked.stderr
        return checked.stderr

    said = validate({"consumer.sesion.timeout.ms": 50000, "share.auto.offset.reset": "by_duration:yesterday"})
    assert "group 'billing': consumer.sesion.timeout.ms is not a group setting of Kafka; did you mean " \
           "consumer.session.timeout.ms?" in said, said
    assert "share.auto.offset.reset takes by_duration: with an ISO 8601 duration" in said
    # Within Kafka's own range for the setting, but outside the brokers' bounds for groups: Kafka refuses it.
    said = validate({"consumer.heartbeat.interval.ms": 3000})
    assert "consumer.heartbeat.interval.ms 3000 is outside what the brokers allow " \
           "(group.consumer.min.heartbeat.interval.ms=5000, group.consumer.max.heartbeat.interval.ms=15000)" in said


def _share_read(config: dict[str, Any], topic: str, wanted: int) -> list[bytes]:
    """What a share consumer with `config` gets of `topic` within 60 s (stops at `wanted` records)."""
    got: list[bytes] = []
    with ShareConsumer(config) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < wanted and time.monotonic() < deadline:
            for message in consumer.poll(1.0):
                value = message.value()
                assert message.error() is None and value is not None, message.error()
                got.append(value)
        consumer.commit_sync()  # what the last poll got, acknowledged now (implicit mode)
    return got


def test_a_share_groups_readers_consume_through_it_under_their_derived_acls_and_no_one_else_does(
        grouped: Grouped, monkeypatch: pytest.MonkeyPatch) -> None:
    passwords = {"sq-reader": "reader-pw-" + "x" * 8, "sq-outsider": "outsider-pw-" + "y" * 8}
    for user, password in passwords.items():
        monkeypatch.setenv(f"KF_TEST_{user.replace('-', '_').upper()}", password)
    users = [{"name": u, "password": {"env": f"KF_TEST_{u.replace('-', '_').upper()}"}} for u in passwords]
    share = {"name": "sq-workers", "type": "share", "config": {"share.auto.offset.reset": "earliest"},
             "readers": [{"principal": "User:sq-reader", "topics": ["sq.events"]}]}
    grouped.declare({"managed_scope": {"topic_prefixes": ["sq."]}}, topics=[{"name": "sq.events", "partitions": 2}],
                    users=users, groups=[share])
    planned = grouped.kraftform("plan")
    assert "create acl User:sq-reader allow read on group 'sq-workers'" in planned.stdout, planned.stdout
    assert "create acl User:sq-reader allow read on topic 'sq.events'" in planned.stdout, planned.stdout
    applied = grouped.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert grouped.kraftform("plan").returncode == 0

    def delivery_state() -> dict[str, Any]:
        done = grouped.kraftform("status", "--format", "json")
        assert done.returncode == 0, done.stdout + done.stderr
        (share_group,) = [c for c in json.loads(done.stdout)["consumers"] if c["name"] == "sq-workers"]
        return dict(share_group)

    assert delivery_state()["lag"] is None  # no member yet: Kafka holds no state for it
    producer = Producer(grouped.running.client())

    def produce(count: int) -> None:
        for i in range(count):
            producer.produce("sq.events", key=str(i), value=f"event-{i}")
        assert producer.flush(30) == 0

    produce(10)
    admin = grouped.running.admin

    def as_user(user: str) -> dict[str, Any]:
        return {**admin.as_user(user, passwords[user], "SCRAM-SHA-512").librdkafka(), "group.id": "sq-workers"}

    # Records produced before it joined: the group's declared share.auto.offset.reset (earliest) at work.
    assert sorted(_share_read(as_user("sq-reader"), "sq.events", 10)) == sorted(f"event-{i}".encode()
                                                                                for i in range(10))
    assert delivery_state()["lag"] == 0
    produce(7)
    state = delivery_state()
    assert state["kind"] == "share" and state["lag"] == 7 and sum(state["partitions"].values()) == 7, state
    with pytest.raises(KafkaException, match="GROUP_AUTHORIZATION_FAILED"):
        _share_read(as_user("sq-outsider"), "sq.events", 1)

    # The reader dropped from the specs: its grants go with it.
    grouped.declare({"managed_scope": {"topic_prefixes": ["sq."]}}, topics=[{"name": "sq.events", "partitions": 2}],
                    users=users, groups=[{**share, "readers": []}])
    dropped = grouped.kraftform("plan")
    assert "delete acl User:sq-reader allow read on group 'sq-workers'" in dropped.stdout, dropped.stdout
