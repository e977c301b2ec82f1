"""Broker settings declared in the cluster section, against the running cluster: a dynamic one is applied live
on every broker (no node restarts: every PID stays), drift made with Kafka's own kafka-configs shows in the plan
and is put back, and one the specs no longer declare is removed."""

from __future__ import annotations

import pytest
import yaml

from kraftform.cluster.connection import read_connection
from kraftform.kafka.observe import observe
from kraftform.plan.changes import Action, Kind
from kraftform.runtime.nodes.tools import CONFIGS, run_kafka_tool

from .conftest import Workspace

pytestmark = pytest.mark.integration


def declare(workspace: Workspace, settings: dict[str, int] | None) -> None:
    path = workspace.root / "cluster.yaml"
    document = yaml.safe_load(path.read_text())
    document["cluster"].pop("broker_config", None)
    if settings:
        document["cluster"]["broker_config"] = settings
    path.write_text(yaml.safe_dump(document))


def effective(workspace: Workspace, key: str) -> set[str | None]:
    state = observe(read_connection(workspace.command_config), broker_keys=[key]).state
    return {values.get(key) for values in state.broker_settings.values()}


def test_a_dynamic_broker_setting_is_applied_live_and_drift_from_kafka_configs_is_put_back(
        workspace: Workspace) -> None:
    pids = [record.handle for record in workspace.cluster.deployment.nodes]
    brokers = sorted(workspace.observe().brokers)
    workspace.write()
    declare(workspace, {"num.io.threads": 12})
    try:
        plan = workspace.plan().plan
        assert [(c.kind, c.action, c.resource, c.key, c.desired) for c in plan.changes] == [
            (Kind.BROKER_CONFIG, Action.UPDATE, f"broker {b}", "num.io.threads", "12") for b in brokers]
        workspace.apply()
        assert effective(workspace, "num.io.threads") == {"12"}
        assert workspace.plan().plan.empty

        # Behind the specs' back, on one broker, with Kafka's own tool.
        run_kafka_tool(CONFIGS, ["--bootstrap-server", workspace.cluster.deployment.bootstrap, "--command-config",
                                 str(workspace.command_config), "--alter", "--entity-type", "brokers",
                                 "--entity-name", str(brokers[0]), "--add-config", "num.io.threads=10"])
        [drift] = workspace.plan().plan.changes
        assert (drift.resource, drift.action, drift.current, drift.desired) == (
            f"broker {brokers[0]}", Action.UPDATE, "10", "12")
        workspace.apply()
        assert effective(workspace, "num.io.threads") == {"12"}
    finally:
        # No longer declared: the values set for the specs go (the cluster is shared by other tests).
        declare(workspace, None)
        removal = workspace.plan().plan.changes
        assert {(c.kind, c.action, c.key) for c in removal} == {(Kind.BROKER_CONFIG, Action.DELETE, "num.io.threads")}
        workspace.apply()
    assert workspace.plan().plan.empty and effective(workspace, "num.io.threads") == {"8"}
    # Live: no node was restarted for any of it.
    assert [record.handle for record in workspace.cluster.deployment.nodes] == pids
    assert all(workspace.cluster.runtime._alive(record)  # type: ignore[attr-defined]
               for record in workspace.cluster.deployment.nodes)
