"""Streaming consumers in containers beside a cluster from `kraftform cluster up --runtime docker`.

Each consumer is the container `spark.containers.consumer_container` describes, on the cluster's network,
reaching the brokers by their in-network names. Redeploying replaces the container and keeps its volume,
so the job continues from its checkpoint; `down --purge` removes the volumes too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from docker.models.containers import Container

from kraftform.cluster.containers import ContainerSpec, network_bootstrap
from kraftform.errors import ClusterUnhealthy, UsageError
from kraftform.kafka.credentials import passwords, require_password
from kraftform.runtime import deployment as dep
from kraftform.runtime.docker_engine import DockerRuntime, attached, remove_attached, remove_if_present
from kraftform.spark.containers import LABEL_CONSUMER, consumer_container
from kraftform.spec.loader import spec_files
from kraftform.spec.model import ConsumerSpec, SpecSet
from kraftform.waiting import NotYet, poll


def _docker_deployment(state_dir: Path) -> dep.Deployment:
    deployment = dep.load(state_dir)
    if deployment.runtime != "docker":
        raise UsageError(f"{state_dir} holds a {deployment.runtime} cluster; consumers run in containers beside a "
                         f"cluster from `kraftform cluster up --runtime docker` (for a local cluster, run one with "
                         f"`kraftform consumers run NAME`)")
    return deployment


def chosen(specs: SpecSet, names: Sequence[str]) -> list[ConsumerSpec]:
    unknown = sorted(set(names) - {c.name for c in specs.consumers})
    if unknown:
        raise UsageError(f"no consumer {', '.join(map(repr, unknown))} in the specs (declared: "
                         f"{', '.join(c.name for c in specs.consumers) or 'none'})")
    return [c for c in specs.consumers if not names or c.name in names]


def container_specs(state_dir: Path, specs: SpecSet, specs_dir: Path, consumers: Sequence[ConsumerSpec],
                    image: str) -> list[ContainerSpec]:
    """The consumers' containers for the Docker cluster in `state_dir`: its network, its brokers' in-network
    listener and CA, each consumer's password read as the specs say (named if missing, never shown)."""
    deployment = _docker_deployment(state_dir)
    bootstrap = network_bootstrap(n.name for n in deployment.nodes if "broker" in n.roles)
    ca_pem = (state_dir / "ca.pem").read_text()
    files = {str(p.relative_to(specs_dir)): p.read_text(encoding="utf-8") for p in spec_files(specs_dir)}
    users = {u.name: u for u in specs.users}
    made = []
    for consumer in consumers:
        user = users[consumer.user]
        password = require_password(user, passwords((user,)))
        made.append(consumer_container(consumer, deployment.cluster_name, files, bootstrap, user.mechanism, password,
                                       ca_pem, deployment.extra["network"], image))
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


def states(state_dir: Path) -> list[ConsumerContainer]:
    deployment = _docker_deployment(state_dir)
    return [_state(c) for c in attached(DockerRuntime(state_dir).client, deployment.cluster_name, LABEL_CONSUMER)]


def up(state_dir: Path, containers: Sequence[ContainerSpec], timeout: float | None) -> list[ConsumerContainer]:
    """(Re)create and start the consumers' containers, keeping their volumes; with a `timeout`, wait until each
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

    def healthy() -> list[ConsumerContainer]:
        now = [_state(c) for c in started]
        for state, container in zip(now, started, strict=True):
            if state.status == "exited":
                logs = container.logs(tail=15).decode(errors="replace").strip()
                raise ClusterUnhealthy(f"consumer {state.consumer}: its container {state.container} stopped (exit "
                                       f"code {state.exit_code}); its last lines:\n{logs}")
        waiting = [f"{s.consumer} {s.health}" for s in now if s.health != "healthy"]
        if waiting:
            raise NotYet(", ".join(waiting))
        return now

    return poll("the consumers to be healthy (running, with a finished micro-batch)", timeout, healthy,
                interval=2.0)


def down(state_dir: Path, purge: bool = False) -> list[str]:
    """Stop the consumers (SIGTERM: each stops its query between micro-batches) and remove their containers;
    with `purge`, their checkpoint volumes too."""
    deployment = _docker_deployment(state_dir)
    return remove_attached(DockerRuntime(state_dir).client, deployment.cluster_name, LABEL_CONSUMER, purge)
