"""`kraftform:monitoring` under Pulumi's mocks: Prometheus and kraftform's exporter beside the stack's cluster, made
from the same rules and scrape configuration the CLI's `monitoring up` uses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.monitoring.alerts import rules_yaml
from kraftform.pulumi.program import StackConfig, build
from kraftform.spark.containers import consumers_volume

from ...conftest import EXAMPLE_SPECS
from .mocks import SECRET_SIG, SECRET_VALUE, Mocks, built_stack, pulumi_test

SPECS = load_specs(EXAMPLE_SPECS)


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[Mocks, dict[str, Any]]]:
    with built_stack("dev", lambda: StackConfig(Path(EXAMPLE_SPECS), image="local", monitoring=True,
                                                monitoring_port=19090)) as (mocks, _monitor, outputs):
        yield mocks, outputs


def _container(mocks: Mocks, name: str) -> Any:
    return next(c for c in mocks.of_type("docker:index/container:Container") if c.inputs["name"] == name)


def _uploads(container: Any) -> dict[str, Any]:
    wrapped = container.inputs["uploads"]
    assert wrapped[SECRET_SIG] == SECRET_VALUE  # uploads are secret in the state, whatever they hold
    return {u["file"]: u for u in wrapped["value"]}


@pulumi_test
def test_prometheus_scrapes_every_node_with_the_generated_rules_on_loopback(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(values: list[Any]) -> None:
        assert values[0] == {"prometheus": "http://127.0.0.1:19090"}
        prometheus = _container(mocks, "platform-prometheus")
        assert prometheus.inputs["ports"] == [{"internal": 9090, "external": 19090, "ip": "127.0.0.1"}]
        assert prometheus.inputs["networksAdvanced"][0]["name"] == "kraftform-platform"
        uploads = _uploads(prometheus)
        assert uploads["/etc/prometheus/rules.yml"]["content"] == rules_yaml(SPECS)
        config = yaml.safe_load(uploads["/etc/prometheus/prometheus.yml"]["content"])
        jobs = {job["job_name"]: job for job in config["scrape_configs"]}
        targets = {t["targets"][0]: t["labels"] for t in jobs["kafka"]["static_configs"]}
        assert targets == {f"{n.name}:9404": {"cluster": "platform", "node": n.name,
                                              "role": "controller" if n.is_controller else "broker"}
                           for n in topology(SPECS.cluster).nodes}
        assert jobs["kraftform"]["static_configs"][0]["targets"] == ["platform-kraftform-exporter:9405"]
        assert config["rule_files"] == ["/etc/prometheus/rules.yml"]

    return pulumi.Output.all(outputs["monitoring"]).apply(check)


@pulumi_test
def test_the_exporter_reads_the_specs_and_the_consumers_checkpoints_as_the_admin(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(_: Any) -> None:
        exporter = _container(mocks, "platform-kraftform-exporter")
        assert exporter.inputs["command"][:4] == ["kraftform", "monitoring", "exporter", "/etc/kraftform/specs"]
        assert exporter.inputs["volumes"] == [{"volumeName": consumers_volume("platform"),
                                               "containerPath": "/var/lib/kraftform"}]
        assert "ports" not in exporter.inputs or not exporter.inputs["ports"]  # reached on the network only
        uploads = _uploads(exporter)
        root = Path(EXAMPLE_SPECS).resolve()
        assert {f"/etc/kraftform/specs/{Path(f).resolve().relative_to(root)}" for f in SPECS.files} <= set(uploads)
        admin = uploads["/etc/kraftform/admin.properties"]
        assert admin["permissions"] == "0600" and "platform-broker-0:9092" in admin["content"]

    return pulumi.Output.all(*outputs.values()).apply(check)


def test_monitoring_needs_the_stacks_own_cluster() -> None:
    with pytest.raises(pulumi.RunError, match="kraftform:monitoring runs Prometheus beside the stack's own"):
        build(StackConfig(Path(EXAMPLE_SPECS), mode="external", bootstrap="kafka:9092", username="admin",
                          password="x", monitoring=True))
