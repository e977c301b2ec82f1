"""The schema registry kraftform runs beside a cluster of the Docker runtime: one container on the cluster's
network, from the cluster's own Kafka image (its Java), the registry's build and files copied in when it is made.

Its subjects live in H2 on a named volume of its own (`<cluster>-registry-data`), so a container made again keeps
them; `cluster down --purge` removes the volume with the cluster's. HTTPS only, published on 127.0.0.1 at the
declared port, with a certificate from the cluster's CA naming the container (for clients on the cluster's
network) and 127.0.0.1; client certificates from that CA required, as beside a local cluster. Its configuration
(with the key stores' password) is a file only the container's user reads, not an environment variable that
`docker inspect` shows. A label holds the digest of what the container was made from: a changed port, heap or
build makes it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from pathlib import Path

from docker.errors import NotFound
from docker.models.containers import Container

from kraftform.cluster.certificates import KeyPair
from kraftform.cluster.containers import CONTAINER_UID, LABEL_CLUSTER, memory_limit
from kraftform.registry_app import ensure_registry
from kraftform.runtime.engines.engine import docker_client, ended_saying, host_config, owned_tar, stop_and_remove
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.registry.base import START_TIMEOUT_S, KraftformRegistry, Progress
from kraftform.specset.model import RegistrySpec

LABEL_REGISTRY = "dev.kraftform.registry"
LABEL_DIGEST = "dev.kraftform.registry-digest"
#: Where the build and the registry's files are inside the container.
APP_DIR = "/opt/kraftform-registry"
WORK_DIR = "/var/lib/kraftform-registry"


def registry_container(cluster: str) -> str:
    return f"{cluster}-registry"


def data_volume(cluster: str) -> str:
    return f"{cluster}-registry-data"


class DockerRegistry(KraftformRegistry):
    """The registry container of one Docker-runtime cluster's state directory."""

    def __init__(self, state_dir: Path, spec: RegistrySpec, cluster: str, network: str, image: str,
                 ca: KeyPair | None = None) -> None:
        super().__init__(state_dir, spec, "127.0.0.1", ca)
        self.cluster = cluster
        self.network = network
        self.image = image
        self.name = registry_container(self.cluster)
        self.client_docker = docker_client()

    @classmethod
    def beside(cls, state_dir: Path, spec: RegistrySpec) -> DockerRegistry:
        """The registry of the Docker-runtime cluster whose state directory is `state_dir`."""
        deployment = dep.load(state_dir)
        return cls(state_dir, spec, deployment.cluster_name, deployment.network("the schema registry"),
                   str(deployment.extra["image"]))

    def _container(self) -> Container | None:
        try:
            return self.client_docker.containers.get(self.name)
        except NotFound:
            return None

    def running(self) -> bool:
        container = self._container()
        return container is not None and container.status == "running"

    def _files(self) -> dict[str, tuple[bytes, int]]:
        return {f"{WORK_DIR}/config/application.properties":
                ((self.dir / "config" / "application.properties").read_bytes(), 0o600),
                f"{WORK_DIR}/tls/keystore.p12": ((self.dir / "tls" / "keystore.p12").read_bytes(), 0o600),
                f"{WORK_DIR}/tls/truststore.p12": ((self.dir / "tls" / "truststore.p12").read_bytes(), 0o644)}

    def _digest(self, app: Path) -> str:
        made = hashlib.sha256(f"{self.image}\0{app.resolve()}\0{self.spec.port}\0{self.spec.heap_bytes}".encode())
        for path, (data, _mode) in sorted(self._files().items()):
            made.update(path.encode() + b"\0" + data)
        return made.hexdigest()[:16]

    def _declared_digest(self) -> tuple[Path, str]:
        app = ensure_registry().parent
        self.write_files([self.name, "localhost", "127.0.0.1"], "0.0.0.0", f"{WORK_DIR}/tls")
        return app, self._digest(app)

    def drift(self) -> str | None:
        """Why the container is not as declared (missing, stopped, made from something else); None when it is."""
        container = self._container()
        if container is None:
            return f"container {self.name} does not exist"
        if container.status != "running":
            return f"container {self.name} is {container.status}"
        if container.labels.get(LABEL_DIGEST) != self._declared_digest()[1]:
            return f"container {self.name} was made from another configuration or build"
        return None

    def up(self, progress: Progress, timeout: float = START_TIMEOUT_S) -> str:
        """Make the container unless it is there as declared, start it unless it runs; return the URL once the
        registry answers kraftform's authenticated request."""
        app, digest = self._declared_digest()
        container = self._container()
        if container is not None and container.labels.get(LABEL_DIGEST) == digest:
            if container.status != "running":
                progress(f"starting the schema registry container {self.name} again ...")
                container.start()
            self._wait_up(timeout)
            return self.url
        if container is not None:
            progress(f"making the schema registry container {self.name} again (its configuration changed; its "
                     f"subjects stay on {data_volume(self.cluster)}) ...")
            stop_and_remove(container)
        else:
            progress(f"starting the schema registry on {self.url} (container {self.name}) ...")
        self._create(app, digest).start()
        self._wait_up(timeout)
        return self.url

    def _create(self, app: Path, digest: str) -> Container:
        api = self.client_docker.api
        labels = {LABEL_CLUSTER: self.cluster, LABEL_REGISTRY: self.cluster}
        if not self.client_docker.volumes.list(filters={"name": f"^{data_volume(self.cluster)}$"}):
            self.client_docker.volumes.create(data_volume(self.cluster), labels=labels)
        port = self.spec.port
        response = api.create_container(
            self.image, name=self.name, hostname=self.name, user=f"{CONTAINER_UID}:{CONTAINER_UID}",
            entrypoint=["java", f"-Xmx{self.spec.heap_bytes // (1024 * 1024)}m", "-jar",
                        f"{APP_DIR}/quarkus-run.jar"],
            working_dir=WORK_DIR, labels={**labels, LABEL_DIGEST: digest}, ports=[port],
            environment={"REGISTRY_DATASOURCE_URL": f"jdbc:h2:file:{WORK_DIR}/db/registry_db"},
            host_config=host_config(
                self.client_docker, memory_limit(self.spec.heap_bytes), port_bindings={port: ("127.0.0.1", port)},
                restart_policy={"Name": "unless-stopped"},
                binds={data_volume(self.cluster): {"bind": f"{WORK_DIR}/db", "mode": "rw"}}),
            networking_config=api.create_networking_config({self.network: api.create_endpoint_config(
                aliases=[self.name])}))
        container = self.client_docker.containers.get(response["Id"])
        container.put_archive("/", owned_tar(self._files(), {APP_DIR: app}, (f"{WORK_DIR}/db",)))
        return container

    def _wait_up(self, timeout: float) -> None:
        def failed() -> str | None:
            container = self._container()
            if container is None:
                return f"the schema registry container {self.name} is gone"
            return ended_saying(container, f"the schema registry container {self.name}")

        self.wait_answered(timeout, failed)

    def down(self, purge: bool = False) -> None:
        """Stop the container (kept, with its volume, for `cluster down --purge` to remove with the cluster's);
        `purge` removes both now, and the registry's files: its subjects are gone."""
        container = self._container()
        if container is not None:
            with contextlib.suppress(NotFound):
                container.stop(timeout=30)
            if purge:
                stop_and_remove(container)
        if purge:
            with contextlib.suppress(NotFound):
                self.client_docker.volumes.get(data_volume(self.cluster)).remove(force=True)
            shutil.rmtree(self.dir, ignore_errors=True)
