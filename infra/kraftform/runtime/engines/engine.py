"""The Docker engine, for every part of kraftform that runs containers: the cluster's nodes (`docker_engine`),
the consumers and Spark's standalone cluster (`consumers`) and the image builds (`images`). A container is
made from its `ContainerSpec`, the plain description the Pulumi program turns into pulumi-docker resources
too, so both paths create the same container: command, files, user, labels, ports, health check, restart
policy.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import docker
import docker.tls
import requests
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from docker.types import LogConfig

from kraftform.cluster.containers import (
    CAP_DROP,
    CONTAINER_UID,
    HOST_NETWORK,
    LABEL_CLUSTER,
    LABEL_NODE,
    LOG_OPTS,
    SECURITY_OPTS,
    ContainerSpec,
    Healthcheck,
)
from kraftform.errors import EnvironmentMissing, HostUnreachable
from kraftform.runtime.nodes.local import last_error_line
from kraftform.waiting import until


def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=300)
        client.ping()
        return client
    except docker.errors.DockerException as exc:
        raise EnvironmentMissing(f"no Docker engine answers ({exc}); start dockerd") from None


@contextlib.contextmanager
def _host_ca_only() -> Iterator[None]:
    """While the client asks the engine its API version: without the CA bundles of the environment, which requests
    would verify the engine's certificate against instead of the host's CA."""
    saved = {k: os.environ.pop(k) for k in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


#: How long a host's engine has to answer its first requests (its API version, a ping): a host that is down, cut
#: off or dropping packets costs a command this much, not the request timeout below.
HOST_ANSWER_S = 5
#: Any later request to an engine that answered (a container stopping, an image loading) may take this long.
REQUEST_TIMEOUT_S = 300


def host_client(name: str, endpoint: str, tls: Sequence[str] | None = None) -> docker.DockerClient:
    """The Docker engine of one of the spec's hosts: a unix socket, tcp:// with the client certificate `tls`
    (ca, cert, key) verified against its CA, or ssh:// through the machine's own ssh client (its keys, agent and
    known_hosts: kraftform holds no SSH secret). HostUnreachable when it does not answer within HOST_ANSWER_S."""
    try:
        config = docker.tls.TLSConfig(client_cert=(tls[1], tls[2]), ca_cert=tls[0], verify=True) if tls else None
        with _host_ca_only():
            client = docker.DockerClient(base_url=endpoint, tls=config, use_ssh_client=endpoint.startswith("ssh://"),
                                         timeout=HOST_ANSWER_S)
        # The host's CA alone verifies it: requests would otherwise take REQUESTS_CA_BUNDLE (the machine's public
        # CAs) over the one given, and route the Docker API through an HTTP(S)_PROXY.
        client.api.trust_env = False
        client.ping()
        client.api.timeout = REQUEST_TIMEOUT_S
        return client
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise HostUnreachable(name, f"host {name!r}: no Docker engine answers at {endpoint} within {HOST_ANSWER_S} "
                                    f"s ({exc})") from None


def engine_healthcheck(check: Healthcheck | None) -> dict[str, object] | None:
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


def host_config(client: docker.DockerClient, memory_bytes: int = 0, **settings: object) -> dict[str, object]:
    """Docker's host configuration of any container kraftform runs: `settings` over the hardening every one gets
    (`containers.SECURITY_OPTS`, `CAP_DROP`, `LOG_OPTS`) and its memory limit, swap included."""
    made: dict[str, object] = client.api.create_host_config(
        security_opt=list(SECURITY_OPTS), cap_drop=list(CAP_DROP), mem_limit=memory_bytes or None,
        memswap_limit=memory_bytes or None,  # no swap above the limit
        log_config=LogConfig(type=LogConfig.types.JSON, config=dict(LOG_OPTS)), **settings)
    return made


def create_container(client: docker.DockerClient, spec: ContainerSpec) -> Container:
    """Create (not start) one container with its files in place; its volume created if missing."""
    if not spec.volume.startswith("/"):  # a path is a directory of the host's (a shared file system's), bound
        try:
            client.volumes.get(spec.volume)
        except NotFound:
            client.volumes.create(spec.volume, labels=dict(spec.labels))
    on_host = spec.network == HOST_NETWORK  # the host's own network: no hostname, alias or published port
    networking = None if on_host else client.api.create_networking_config(
        {spec.network: client.api.create_endpoint_config(aliases=list(spec.aliases))})
    response = client.api.create_container(
        spec.image, command=list(spec.command), name=spec.name, hostname=None if on_host else spec.hostname,
        user=spec.user, labels=dict(spec.labels), ports=[p.container_port for p in spec.ports],
        environment=dict(spec.env) or None,
        healthcheck=engine_healthcheck(spec.healthcheck),
        host_config=host_config(
            client, spec.memory_bytes, binds={spec.volume: {"bind": spec.volume_path, "mode": "rw"}},
            port_bindings={p.container_port: (p.host_ip, p.host_port) for p in spec.ports},
            restart_policy={"Name": spec.restart}, network_mode=HOST_NETWORK if on_host else None),
        networking_config=networking)
    container = client.containers.get(response["Id"])
    container.put_archive("/", files_tar(spec))
    return container


def attached(client: docker.DockerClient, cluster: str, label: str = LABEL_CLUSTER) -> list[Container]:
    """Containers beside the cluster's nodes (its consumers), carrying the cluster's label and `label`."""
    found = client.containers.list(all=True, filters={"label": [f"{LABEL_CLUSTER}={cluster}", label]})
    return sorted((c for c in found if LABEL_NODE not in c.labels), key=lambda c: c.name or "")


def stop_and_remove(container: Container, timeout: int = 30) -> None:
    """SIGTERM (what it runs leaves cleanly: a worker commits its offsets, a database closes its file), SIGKILL after
    `timeout` s, then removed; a container already gone is no error."""
    with contextlib.suppress(NotFound):
        container.stop(timeout=timeout)
        container.remove(force=True)


def ended_saying(container: Container, what: str) -> str | None:
    """Why `what` (its container) ended, from the last error line of its log; None while it runs. A container
    Docker started again by its restart policy has ended once: a service that stops on an error would otherwise
    be seen up between two runs."""
    if container.status not in ("exited", "dead", "restarting") and not container.attrs.get("RestartCount"):
        return None
    log = container.logs(tail=200).decode(errors="replace")
    return f"{what} exited: {last_error_line(log)} (docker logs {container.name})"


def remove_attached(client: docker.DockerClient, cluster: str, labels: Sequence[str], purge: bool) -> list[str]:
    """Stop (SIGTERM, then SIGKILL after 60 s) and remove the attached containers carrying any of `labels`;
    with `purge`, then their volumes (which they may share). Returns their names."""
    found = {c.name: c for label in labels for c in attached(client, cluster, label)}
    volumes: set[str] = set()
    for _name, container in sorted(found.items()):
        volumes |= {m["Name"] for m in container.attrs.get("Mounts", []) if m.get("Type") == "volume"}
        stop_and_remove(container, 60)
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


def owned_tar(entries: Mapping[str, tuple[bytes, int]], trees: Mapping[str, Path], private: tuple[str, ...] = ()
              ) -> bytes:
    """Files (path -> (bytes, mode)) and directories of this machine copied to container paths, owned by the
    container's user; the directories `private` made too, even empty, and only that user's to read."""
    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = CONTAINER_UID
        info.uname = info.gname = ""
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        # Not the image's own top-level directories (/etc, /opt): their owner and mode stay as they are.
        directories = {str(parent) for path in [*entries, *(f"{p}/-" for p in private)]
                       for parent in Path(path.lstrip("/")).parents if len(parent.parts) > 1}
        for directory in sorted(directories):
            info = owned(tarfile.TarInfo(directory))
            info.type, info.mode = tarfile.DIRTYPE, 0o700 if f"/{directory}" in private else 0o755
            tar.addfile(info)
        for path, (data, mode) in sorted(entries.items()):
            info = owned(tarfile.TarInfo(path.lstrip("/")))
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
        for target, source in sorted(trees.items()):
            tar.add(str(source), arcname=target.lstrip("/"), filter=owned)
    return buffer.getvalue()
