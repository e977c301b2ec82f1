"""The Docker runtime's containers as Docker sees them: the health check `pulumi up` waits for."""

from __future__ import annotations

import time
from typing import Any

from kraftform.runtime.engine import docker_client

from ..conftest import Clusters


def test_docker_reports_every_node_healthy_and_the_check_can_fail(clusters: Clusters) -> None:
    cluster = clusters.get("docker")
    client = docker_client()
    names = [c.name for c in client.containers.list(filters={"label": f"dev.kraftform.cluster={cluster.spec.name}"})]
    assert len(names) == cluster.spec.brokers + cluster.spec.controllers

    def health() -> dict[str, Any]:
        return {n: client.containers.get(n).attrs["State"].get("Health", {}).get("Status") for n in names}

    deadline = time.monotonic() + 90
    while set(health().values()) != {"healthy"} and time.monotonic() < deadline:
        time.sleep(1)
    assert set(health().values()) == {"healthy"}, health()
    # The same check against a port nothing listens on fails: "healthy" above means something.
    container = client.containers.get(names[0])
    kind, command = container.attrs["Config"]["Healthcheck"]["Test"]
    assert kind == "CMD-SHELL"
    port = command.split("':", 1)[1][:4]
    result = container.exec_run(["sh", "-c", command.replace(f"':{port} ", "':FFFE ")])
    assert result.exit_code == 1, result.output
