"""Consumer and share groups' settings as code against a real cluster of its own (one combined node, started
through `kraftform.testing`): applied live on GROUP resources, drift made with Kafka's kafka-configs tool planned
and repaired, an undeclared setting removed, and an undeclared group never touched."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from kraftform.runtime.tools import CONFIGS, run_kafka_tool

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
