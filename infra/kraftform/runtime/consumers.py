"""Streaming consumers in containers beside a cluster from `kraftform cluster up --runtime docker`.

Each consumer is the container `spark.containers.consumer_container` describes, on the cluster's network,
reaching the brokers by their in-network names. Redeploying replaces the container and keeps its volume,
so the job continues from its checkpoint; `down --purge` removes the volumes too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from docker.errors import NotFound
from docker.models.containers import Container

from kraftform.cluster.containers import ContainerSpec, network_bootstrap
from kraftform.errors import ClusterUnhealthy, UsageError
from kraftform.kafka.credentials import passwords, require_password
from kraftform.runtime import deployment as dep
from kraftform.runtime.docker_engine import DockerRuntime, attached, remove_attached, remove_if_present
from kraftform.spark.containers import LABEL_CONSUMER, LABEL_SPARK, consumer_container, spark_cluster_containers
from kraftform.spec.loader import spec_texts
from kraftform.spec.model import ConsumerSpec, SpecSet
from kraftform.waiting import NotYet, poll


def _docker_deployment(state_dir: Path) -> dep.Deployment:
    deployment = dep.load(state_dir)
    if deployment.runtime != "docker":
        raise UsageError(f"{state_dir} holds a {deployment.runtime} cluster; consumers run in containers beside a "
                         f"cluster from `kraftform cluster up --runtime docker` (for a local cluster, run one with "
                         f"`kraftform consumers run NAME`)")
    return deployment


def spark_cluster_specs(state_dir: Path, specs: SpecSet, image: str) -> tuple[ContainerSpec, ...]:
    """The standalone master and workers beside the Docker cluster, when the specs ask for them."""
    if specs.cluster.spark.master != "standalone":
        return ()
    deployment = _docker_deployment(state_dir)
    if deployment.cluster_name != specs.cluster.name:  # consumers find the master by the specs' cluster name
        raise UsageError(f"the specs describe cluster {specs.cluster.name!r}, {state_dir} holds "
                         f"{deployment.cluster_name!r}: a standalone Spark master beside it would not be found")
    return spark_cluster_containers(deployment.cluster_name, specs.cluster.spark, image, deployment.extra["network"],
                                    (state_dir / "ca.pem").read_text())


def container_specs(state_dir: Path, specs: SpecSet, specs_dir: Path, consumers: Sequence[ConsumerSpec],
                    image: str, allow_reset: bool = False) -> list[ContainerSpec]:
    """The consumers' containers for the Docker cluster in `state_dir`: its network, its brokers' in-network
    listener and CA, each consumer's password read as the specs say (named if missing, never shown)."""
    deployment = _docker_deployment(state_dir)
    bootstrap = network_bootstrap(n.name for n in deployment.nodes if "broker" in n.roles)
    ca_pem = (state_dir / "ca.pem").read_text()
    files = spec_texts(specs_dir)
    users = {u.name: u for u in specs.users}
    made = []
    for consumer in consumers:
        user = users[consumer.user]
        password = require_password(user, passwords((user,)))
        made.append(consumer_container(consumer, deployment.cluster_name, files, bootstrap, user.mechanism, password,
                                       ca_pem, deployment.extra["network"], image, allow_reset))
    return made


@dataclass(frozen=True)
class ConsumerContainer:
    consumer: str
    container: str
    status: str  # Docker's: running, exited, ...
    health: str  # starting, healthy, unhealthy, or none
    exit_code: int | None = None


def _state(container: Container) -> ConsumerContainer:
    container.reload()
    state = container.attrs.get("State", {})
    return ConsumerContainer(container.labels.get(LABEL_CONSUMER, "?"), container.name or "", container.status,
                             (state.get("Health") or {}).get("Status", "none"),
                             state.get("ExitCode") if container.status == "exited" else None)


def states(state_dir: Path, label: str = LABEL_CONSUMER) -> list[ConsumerContainer]:
    """The consumers' containers (or, with LABEL_SPARK, the standalone master's and workers')."""
    deployment = _docker_deployment(state_dir)
    return [_state(c) for c in attached(DockerRuntime(state_dir).client, deployment.cluster_name, label)]


def spark_cluster_up(state_dir: Path, containers: Sequence[ContainerSpec], timeout: float) -> None:
    """Start the standalone master and workers, keeping those already running this image (replacing a worker
    would kill the executors of every consumer on it), and wait until the master lists every worker."""
    runtime = DockerRuntime(state_dir)
    client = runtime.client
    started = []
    for spec in containers:
        try:
            current = client.containers.get(spec.name)
            if current.status == "running" and spec.image in (current.image.tags if current.image else []):
                started.append(current)
                continue
        except NotFound:
            pass
        remove_if_present(client, spec.name)
        started.append(runtime.create_container(client, spec))
        started[-1].start()
    _wait_healthy(started, "the Spark standalone master and workers to be up", timeout)


def _wait_healthy(started: Sequence[Container], what: str, timeout: float) -> list[ConsumerContainer]:
    def healthy() -> list[ConsumerContainer]:
        now = [_state(c) for c in started]
        for state, container in zip(now, started, strict=True):
            if state.status == "exited":
                logs = container.logs(tail=15).decode(errors="replace").strip()
                raise ClusterUnhealthy(f"{state.container} stopped (exit code {state.exit_code}); its last "
                                       f"lines:\n{logs}")
        waiting = [f"{s.container} {s.health}" for s in now if s.health != "healthy"]
        if waiting:
            raise NotYet(", ".join(waiting))
        return now

    return poll(what, timeout, healthy, interval=2.0)


def up(state_dir: Path, containers: Sequence[ContainerSpec], timeout: float | None) -> list[ConsumerContainer]:
    """(Re)create and start the consumers' containers, keeping their volume; with a `timeout`, wait until each
    is healthy (its query runs and has finished a micro-batch), failing with the job's own last words if a
    container stops."""
    runtime = DockerRuntime(state_dir)
    client = runtime.client
    started = []
    for spec in containers:
        remove_if_present(client, spec.name)
        started.append(runtime.create_container(client, spec))
        started[-1].start()
    if timeout is None:
        return [_state(c) for c in started]
    return _wait_healthy(started, "the consumers to be healthy (running, with a finished micro-batch)", timeout)


def down(state_dir: Path, purge: bool = False) -> list[str]:
    """Stop the consumers (SIGTERM: each stops its query between micro-batches) and the Spark standalone
    cluster, and remove their containers; with `purge`, their volume (checkpoints, output) too."""
    deployment = _docker_deployment(state_dir)
    return remove_attached(DockerRuntime(state_dir).client, deployment.cluster_name, [LABEL_CONSUMER, LABEL_SPARK],
                           purge)
