"""The containers `kraftform:monitoring` makes, run on the real Docker engine beside the session's Docker cluster:
the very ContainerSpecs the Pulumi component hands pulumi-docker, created as the Docker runtime creates
containers. Prometheus (the locally built image) must scrape every node by its container name and kraftform's
exporter (in the consumers' image) must read the cluster as its admin."""

from __future__ import annotations

import json
import shutil
import socket
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kraftform.declared import load_specs
from kraftform.pulumi.monitoring import exporter_container, prometheus_container, spec_files
from kraftform.runtime.engines.engine import create_container, docker_client, remove_if_present
from kraftform.runtime.engines.images import build_prometheus, build_spark

from ..conftest import CLUSTER_SPECS, LiveCluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _query(port: int, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as response:
        return list(json.load(response)["data"]["result"])


@pytest.fixture(scope="module")
def prometheus(docker_cluster: LiveCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    client = docker_client()
    log: list[str] = []
    build_prometheus(client, log)
    spark_image = build_spark(client, log)
    specs_dir = tmp_path_factory.mktemp("specs")
    shutil.copy(CLUSTER_SPECS / "cluster.yaml", specs_dir / "cluster.yaml")
    doc = yaml.safe_load((specs_dir / "cluster.yaml").read_text())
    doc["cluster"]["name"] = docker_cluster.spec.name  # the session's Docker cluster has a name of its own
    (specs_dir / "cluster.yaml").write_text(yaml.safe_dump(doc))
    specs = load_specs(specs_dir)
    network = docker_cluster.deployment.extra["network"]
    port = _free_port()
    admin = docker_cluster.connection
    assert admin.password and admin.ca_path
    made = [prometheus_container(specs, network, port, interval_s=2),
            exporter_container(specs, spec_files(specs, specs_dir), network, spark_image, admin.password,
                               Path(admin.ca_path).read_text(), f"{specs.cluster.name}-exporter-test")]
    for spec in made:
        remove_if_present(client, spec.name)
        create_container(client, spec).start()
    try:
        yield port
    finally:
        for spec in made:
            remove_if_present(client, spec.name)
            client.volumes.get(spec.volume).remove(force=True)


def test_prometheus_scrapes_every_node_and_the_exporter_by_name_on_the_cluster_network(prometheus: int) -> None:
    deadline = time.monotonic() + 120
    up: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            up = _query(prometheus, "up == 1")
        except OSError:
            up = []
        if len(up) == 7:
            break
        time.sleep(1)
    assert sorted(r["metric"]["job"] for r in up) == ["kafka"] * 6 + ["kraftform"], up
    assert float(_query(prometheus, "sum(kafka_controller_active)")[0]["value"][1]) == 1
    healthy = _query(prometheus, "kraftform_status_healthy")
    assert healthy and float(healthy[0]["value"][1]) == 1, healthy
