"""The dev stack with `cluster.spark.master: standalone`: a Spark standalone master and workers beside the
cluster, and the consumers after them, all from the descriptions `kraftform consumers up` runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

from kraftform.pulumi.program import StackConfig

from ...conftest import EXAMPLE_SPECS, edit
from .mocks import IMAGE_ID, SECRET_SIG, SECRET_VALUE, SPARK_SECRET, Mocks, RecordingMonitor, built_stack, pulumi_test

MONITOR: RecordingMonitor | None = None


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mocks, dict[str, Any]]]:
    global MONITOR
    specs = tmp_path_factory.mktemp("standalone") / "specs"
    shutil.copytree(EXAMPLE_SPECS, specs, ignore=shutil.ignore_patterns("schema"))
    edit(specs / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  spark: {master: standalone, workers: 2}\n")
    with built_stack("dev-standalone", lambda: StackConfig(specs, image="local")) as (mocks, MONITOR, outputs):
        yield mocks, outputs


@pulumi_test
def test_a_standalone_master_and_workers_run_beside_the_cluster_before_the_consumers(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(_: Any) -> None:
        assert MONITOR is not None
        assert [c.name for c in mocks.of_type("kraftform:index:SparkCluster")] == ["spark"]
        containers = {c.name: c for c in mocks.of_type("docker:index/container:Container")}
        master, workers = containers["spark-master"], [containers[f"spark-worker-{i}"] for i in range(2)]
        assert master.inputs["name"] == "platform-spark-master" and master.inputs["image"] == IMAGE_ID
        assert [w.inputs["command"][-1] for w in workers] == ["spark://platform-spark-master:7077"] * 2
        assert all(w.inputs["volumes"] == [{"volumeName": "platform-consumers-data",
                                            "containerPath": "/var/lib/kraftform"}] for w in workers)
        # Workers register with a running master; consumers are submitted to registered workers.
        for worker in ("spark-worker-0", "spark-worker-1"):
            assert any(urn.endswith("::spark-master") for urn in MONITOR.dependencies[worker])
        waits_for = {urn.rsplit("::", 1)[1] for urn in MONITOR.dependencies["fraud-scoring-consumer"]}
        assert {"spark-master", "spark-worker-0", "spark-worker-1", "topics", "User:fraud-scoring"} <= waits_for
        # One secret, the SparkSecret's output, in a secret upload of the master, each worker and each driver.
        assert [s.name for s in mocks.of_type("pulumi-python:dynamic:Resource") if s.name == "spark-secret"]
        for name in ("spark-master", "spark-worker-0", "spark-worker-1", "fraud-scoring-consumer"):
            wrapped = containers[name].inputs["uploads"]
            assert wrapped[SECRET_SIG] == SECRET_VALUE
            conf = {u["file"]: u["content"] for u in wrapped["value"]}["/etc/kraftform/spark/spark-defaults.conf"]
            assert f"spark.authenticate.secret {SPARK_SECRET}\n" in conf
            inputs = containers[name].inputs
            assert SPARK_SECRET not in str(inputs.get("envs")) + str(inputs["command"])

    return pulumi.Output.all(*outputs.values()).apply(check)
