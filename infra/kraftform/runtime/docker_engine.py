"""Run container specs on a Docker engine through the Docker SDK for Python.

Each node is a container on the cluster's own bridge network, with its data on a named volume that
outlives the container (restart and re-create keep data; `down --purge` removes it). Configuration files
are copied in before the container starts, owned by the image's Kafka user, secrets mode 0600. Brokers
publish their external listener on 127.0.0.1 only; the host-side admin files point there.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import docker
from docker.errors import NotFound
from docker.models.containers import Container

from kraftform.cluster.config import Addressing
from kraftform.cluster.containers import (
    LABEL_CLUSTER,
    LOCAL_IMAGE,
    ContainerSpec,
    bootstrap_servers,
    container_specs,
    docker_addressing,
    in_containers,
    volume_name,
)
from kraftform.cluster.render import make_secrets
from kraftform.cluster.topology import topology
from kraftform.errors import UsageError
from kraftform.kafka.health import ClusterHealth, wait_healthy
from kraftform.runtime import deployment as dep
from kraftform.runtime.engine import attached, create_container, docker_client, remove_attached, remove_if_present
from kraftform.specset.model import ClusterSpec


class DockerRuntime:
    name = "docker"

    def __init__(self, state_dir: Path, image: str | None = None) -> None:
        self.state_dir = state_dir.resolve()
        self.image = image

    @property
    def client(self) -> docker.DockerClient:
        return docker_client()

    def _network(self, client: docker.DockerClient, name: str, cluster: str) -> None:
        if not client.networks.list(names=[name]):
            client.networks.create(name, driver="bridge", labels={LABEL_CLUSTER: cluster})

    def create_container(self, client: docker.DockerClient, spec: ContainerSpec) -> Container:
        return create_container(client, spec)

    def up(self, cluster: ClusterSpec, admin_password: str | None = None, timeout: float = 240) -> ClusterHealth:
        """Create the network, volumes and containers and start them; idempotent like the local runtime."""
        cluster = in_containers(cluster)
        client = self.client
        topo = topology(cluster)
        addr: Addressing = docker_addressing(topo)
        image = self.image or LOCAL_IMAGE
        deployment = dep.load_existing(self.state_dir, self.name, cluster.name)
        if deployment is not None:
            dep.require_as_declared(self.state_dir, deployment, topo)
            for record in deployment.nodes:
                client.containers.get(record.handle).start()
        else:
            secrets = make_secrets(topo, addr, admin_password)
            specs = container_specs(topo, secrets, image)
            leftovers = [s.volume for s in specs if client.volumes.list(filters={"name": f"^{s.volume}$"})]
            if leftovers:
                # Their data belongs to another cluster id; never reuse or delete it silently.
                raise UsageError(
                    f"data volumes from an earlier cluster exist ({', '.join(leftovers)}) but {self.state_dir} "
                    f"holds no cluster: use that cluster's --state-dir, or remove them with "
                    f"`docker volume rm {' '.join(leftovers)}`")
            self._network(client, specs[0].network, cluster.name)
            for spec in specs:
                remove_if_present(client, spec.name)
                self.create_container(client, spec).start()
            bootstrap = bootstrap_servers(specs, cluster.security.external_listener.host)
            dep.write_client_files(self.state_dir, bootstrap, cluster.security.admin_user, secrets.admin_password,
                                   cluster.security.sasl_mechanism, secrets.ca.cert_pem)
            deployment = dep.Deployment(
                self.name, cluster.name, bootstrap, cluster.brokers, cluster.kafka_version,
                [dep.NodeRecord(n.name, n.node_id, list(n.roles), n.name, n.heap_bytes) for n in topo.nodes],
                {"network": specs[0].network, "image": image})
            dep.save(self.state_dir, deployment)
        return wait_healthy(dep.admin_config(self.state_dir), cluster.brokers, timeout)

    def kill_node(self, name: str, signal: str = "SIGKILL") -> None:
        container = self.client.containers.get(dep.load(self.state_dir).node(name).handle)
        container.kill(signal=signal)
        container.wait(timeout=60)

    def start_node(self, name: str) -> None:
        self.client.containers.get(dep.load(self.state_dir).node(name).handle).start()

    def stop(self) -> None:
        """Containers attached to the cluster (consumers) first, then brokers (controlled shutdown needs the
        controllers), then controllers."""
        deployment = dep.load(self.state_dir)
        client = self.client
        for container in attached(client, deployment.cluster_name):
            with contextlib.suppress(NotFound):
                container.stop(timeout=60)
        for want_broker in (True, False):
            for record in deployment.nodes:
                if ("broker" in record.roles) == want_broker:
                    with contextlib.suppress(NotFound):
                        client.containers.get(record.handle).stop(timeout=30)

    def down(self, purge: bool = False) -> None:
        self.stop()
        if not purge:
            return
        deployment = dep.load(self.state_dir)
        client = self.client
        remove_attached(client, deployment.cluster_name, [LABEL_CLUSTER], purge=True)
        for record in deployment.nodes:
            remove_if_present(client, record.handle)
            with contextlib.suppress(NotFound):
                client.volumes.get(volume_name(record.name)).remove(force=True)
        for network in client.networks.list(names=[deployment.extra["network"]]):
            network.remove()
        shutil.rmtree(self.state_dir)

    def resident_bytes(self) -> int:
        total = 0
        client = self.client
        for record in dep.load(self.state_dir).nodes:
            stats = client.containers.get(record.handle).stats(stream=False)
            memory = stats.get("memory_stats", {})
            total += int(memory.get("usage", 0)) - int(memory.get("stats", {}).get("cache", 0))
        return total
