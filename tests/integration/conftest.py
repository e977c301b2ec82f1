"""Real secure clusters for integration tests: one per runtime per test session.

Each runs the test spec in tests/fixtures/cluster (3 controllers, 3 brokers on 3 racks, TLS and SCRAM on
every listener). Tests get unique topic names, so they never depend on each other's data.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftform.cluster.connection import Connection
from kraftform.declared import load_specs
from kraftform.runtime import Runtime, get_runtime
from kraftform.runtime.deployment import Deployment, admin_config, load
from kraftform.specset.model import ClusterSpec

CLUSTER_SPECS = Path(__file__).resolve().parents[1] / "fixtures" / "cluster"


@dataclass
class LiveCluster:
    runtime: Runtime
    state_dir: Path
    spec: ClusterSpec

    @property
    def deployment(self) -> Deployment:
        return load(self.state_dir)

    @property
    def connection(self) -> Connection:
        """The admin (super) user's login, as `cluster up` wrote it."""
        return admin_config(self.state_dir)

    @property
    def admin(self) -> dict[str, Any]:
        """librdkafka config of the admin (super) user, for the tests' own producers and consumers."""
        return self.connection.librdkafka()

    def client(self, **overrides: str) -> dict[str, Any]:
        return {**self.admin, **overrides}


def unique(prefix: str = "it") -> str:
    return f"{prefix}.{uuid.uuid4().hex[:10]}"


def clear_leftovers(client: Any, cluster_name: str) -> None:
    """Remove what a killed earlier test run left of the test cluster (containers, volumes, network).

    The name belongs to the test suite alone; a run cut off before its teardown (a killed CI job, a
    restarted machine) leaves data volumes that the runtime rightly refuses to adopt.
    """
    label = f"dev.kraftform.cluster={cluster_name}"
    for container in client.containers.list(all=True, filters={"label": label}):
        container.remove(force=True)
    for volume in client.volumes.list(filters={"label": label}):
        volume.remove(force=True)
    for network in client.networks.list(filters={"label": label}):
        network.remove()


class Clusters:
    """Starts at most one cluster per runtime per session, on first use; stops them all at the end."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.running: dict[str, LiveCluster] = {}

    def get(self, runtime_name: str) -> LiveCluster:
        if runtime_name not in self.running:
            spec = load_specs(CLUSTER_SPECS).cluster
            if runtime_name == "docker":
                from kraftform.runtime.engine import docker_client
                from kraftform.runtime.images import build_kafka

                client = docker_client()
                build_kafka(client, [])
                # A name of its own: the local and Docker clusters may run side by side.
                spec = dataclasses.replace(spec, name=f"{spec.name}-docker")
                clear_leftovers(client, spec.name)
            state_dir = self.base / runtime_name
            runtime = get_runtime(runtime_name, state_dir)
            runtime.up(spec, timeout=300)
            self.running[runtime_name] = LiveCluster(runtime, state_dir, spec)
        return self.running[runtime_name]

    def stop_all(self) -> None:
        for live in self.running.values():
            live.runtime.down(purge=True)


@pytest.fixture(scope="session")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    started = Clusters(tmp_path_factory.mktemp("clusters"))
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture(scope="session", params=["local", "docker"])
def cluster(request: pytest.FixtureRequest, clusters: Clusters) -> LiveCluster:
    """Each runtime in turn: for tests that every runtime must pass."""
    return clusters.get(request.param)


@pytest.fixture(scope="session")
def local_cluster(clusters: Clusters) -> LiveCluster:
    """The local-runtime cluster, for tests whose subject is not the runtime."""
    return clusters.get("local")


@pytest.fixture(scope="session")
def docker_cluster(clusters: Clusters) -> LiveCluster:
    """The Docker-runtime cluster, for tests of what runs beside it in containers (the consumers)."""
    return clusters.get("docker")
