"""Run container specs on a Docker engine through the Docker SDK for Python.

Each node is a container on the cluster's own bridge network, with its data on a named volume that
outlives the container (restart and re-create keep data; `down --purge` removes it). Configuration files
are copied in before the container starts, owned by the image's Kafka user, secrets mode 0600. Brokers
publish their external listener on 127.0.0.1 only; the host-side admin files point there.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tarfile
from collections.abc import Sequence
from pathlib import Path

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from kraftform.cluster.config import Addressing
from kraftform.cluster.containers import (
    CONTAINER_UID,
    LABEL_CLUSTER,
    LABEL_NODE,
    LOCAL_IMAGE,
    ContainerSpec,
    Healthcheck,
    bootstrap_servers,
    container_specs,
    docker_addressing,
    in_containers,
    volume_name,
)
from kraftform.cluster.render import make_secrets
from kraftform.cluster.topology import topology
from kraftform.errors import EnvironmentMissing, UsageError
from kraftform.kafka.health import ClusterHealth, wait_healthy
from kraftform.runtime import deployment as dep
from kraftform.runtime.images import docker_client
from kraftform.specset.model import ClusterSpec
from kraftform.waiting import until


def _healthcheck(check: Healthcheck | None) -> dict[str, object] | None:
    """The Engine API's form: durations in nanoseconds."""
    if check is None:
        return None
    return {"test": list(check.test), "interval": check.interval_s * 10**9, "timeout": check.timeout_s * 10**9,
            "retries": check.retries, "start_period": check.start_period_s * 10**9}


def files_tar(spec: ContainerSpec) -> bytes:
    """A tar of the spec's files, owned by the container user, with their modes; directories included."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        dirs = sorted({str(Path(f.path).parent) for f in spec.files})
        for directory in dirs:
            parts = Path(directory).parts
            for i in range(2, len(parts) + 1):
                name = str(Path(*parts[:i])).lstrip("/")
                if name in tar.getnames():
                    continue
                info = tarfile.TarInfo(name)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                info.uid = info.gid = CONTAINER_UID
                tar.addfile(info)
        for f in spec.files:
            data = f.content.encode()
            info = tarfile.TarInfo(f.path.lstrip("/"))
            info.size, info.mode = len(data), f.mode
            info.uid = info.gid = CONTAINER_UID
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


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
        """Create (not start) one node's container with its files in place; volume created if missing."""
        try:
            client.volumes.get(spec.volume)
        except NotFound:
            client.volumes.create(spec.volume, labels=dict(spec.labels))
        networking = client.api.create_networking_config(
            {spec.network: client.api.create_endpoint_config(aliases=list(spec.aliases))})
        response = client.api.create_container(
            spec.image, command=list(spec.command), name=spec.name, hostname=spec.hostname, user=spec.user,
            labels=dict(spec.labels), ports=[p.container_port for p in spec.ports],
            healthcheck=_healthcheck(spec.healthcheck),
            host_config=client.api.create_host_config(
                binds={spec.volume: {"bind": spec.volume_path, "mode": "rw"}},
                port_bindings={p.container_port: (p.host_ip, p.host_port) for p in spec.ports},
                restart_policy={"Name": "no"}),
            networking_config=networking)
        container = client.containers.get(response["Id"])
        container.put_archive("/", files_tar(spec))
        return container

    def up(self, cluster: ClusterSpec, admin_password: str | None = None, timeout: float = 240) -> ClusterHealth:
        """Create the network, volumes and containers and start them; idempotent like the local runtime."""
        cluster = in_containers(cluster)
        client = self.client
        topo = topology(cluster)
        addr: Addressing = docker_addressing(topo)
        image = self.image or LOCAL_IMAGE
        deployment = dep.load_existing(self.state_dir, self.name, cluster.name)
        if deployment is not None:
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
                [dep.NodeRecord(n.name, n.node_id, list(n.roles), n.name) for n in topo.nodes],
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


def attached(client: docker.DockerClient, cluster: str, label: str = LABEL_CLUSTER) -> list[Container]:
    """Containers beside the cluster's nodes (its consumers), carrying the cluster's label and `label`."""
    found = client.containers.list(all=True, filters={"label": [f"{LABEL_CLUSTER}={cluster}", label]})
    return sorted((c for c in found if LABEL_NODE not in c.labels), key=lambda c: c.name or "")


def remove_attached(client: docker.DockerClient, cluster: str, labels: Sequence[str], purge: bool) -> list[str]:
    """Stop (SIGTERM, then SIGKILL after 60 s) and remove the attached containers carrying any of `labels`;
    with `purge`, then their volumes (which they may share). Returns their names."""
    found = {c.name: c for label in labels for c in attached(client, cluster, label)}
    volumes: set[str] = set()
    for _name, container in sorted(found.items()):
        volumes |= {m["Name"] for m in container.attrs.get("Mounts", []) if m.get("Type") == "volume"}
        with contextlib.suppress(NotFound):
            container.stop(timeout=60)
            container.remove(force=True)
    for volume in sorted(volumes) if purge else ():
        with contextlib.suppress(NotFound):
            client.volumes.get(volume).remove(force=True)
    return sorted(str(n) for n in found)


def remove_if_present(client: docker.DockerClient, name: str) -> None:
    try:
        client.containers.get(name).remove(force=True)
    except NotFound:
        pass
    except APIError as exc:
        raise EnvironmentMissing(f"cannot remove old container {name}: {exc}") from None
    def gone() -> bool:
        try:
            client.containers.get(name)
            return False
        except NotFound:
            return True

    until(f"old container {name} to be removed", 5.0, gone, interval=0.1, error=EnvironmentMissing)

