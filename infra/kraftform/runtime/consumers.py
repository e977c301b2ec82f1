"""Streaming consumers in containers beside a cluster from `kraftform cluster up --runtime docker`.

Each consumer is the container `spark.containers.consumer_container` describes, on the cluster's network,
reaching the brokers by their in-network names; on a cluster with hosts, on the first Spark host's engine and
network (`specset.hosts.spark_hosts`), reaching the brokers at their hosts' addresses, with the standalone master
beside it and a worker on each Spark host. Redeploying replaces the container and keeps its volume (or the
shared directory's contents), so the job continues from its checkpoint; `down --purge` removes the volumes too
(never a shared directory: it is the user's).
"""

from __future__ import annotations

import posixpath
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import ContainerError, NotFound
from docker.models.containers import Container

from kraftform.cluster.containers import CONTAINER_UID, HOST_NETWORK, ContainerSpec, network_bootstrap
from kraftform.errors import ClusterUnhealthy, UsageError
from kraftform.kafka.credentials import passwords, require_passwords
from kraftform.runtime.engines.engine import (
    attached,
    create_container,
    docker_client,
    remove_attached,
    remove_if_present,
)
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.docker_engine import DockerRuntime, host_engines
from kraftform.runtime.registry.running import avro_writers
from kraftform.spark.containers import (
    CLIENT_CONFIG,
    JOB_FILE,
    LABEL_CONSUMER,
    LABEL_SPARK,
    LABEL_SPEC,
    WORK_DIR,
    consumer_container,
    spark_cluster_containers,
)
from kraftform.spark.manifest import consumer_manifest, manifest_text
from kraftform.specset.hosts import spark_hosts
from kraftform.specset.model import ConsumerSpec, SpecSet
from kraftform.waiting import NotYet, poll

#: How `kraftform` prints an error it stops on (cli.main).
ERROR_PREFIX = "kraftform: error: "
#: The standalone Spark cluster's shared secret (`spark.containers.standalone_conf`), in the state directory.
SPARK_SECRET_FILE = "spark-secret"


def _docker_deployment(state_dir: Path) -> dep.Deployment:
    deployment = dep.load(state_dir)
    if deployment.runtime != "docker":
        raise UsageError(f"{state_dir} holds a {deployment.runtime} cluster; consumers run in containers beside a "
                         f"cluster from `kraftform cluster up --runtime docker` (for a local cluster, run one with "
                         f"`kraftform consumers run NAME`)")
    return deployment


def engines(state_dir: Path) -> dict[str, docker.DockerClient]:
    """Host name -> its engine (`docker_engine.host_engines`), for a cluster of the Docker runtime."""
    _docker_deployment(state_dir)
    return host_engines(state_dir)


def spark_secret(state_dir: Path, specs: SpecSet) -> str:
    """The standalone cluster's shared secret, made once (32 random bytes, readable by the state's owner alone) and
    kept, so a consumer redeployed later is admitted by the master and workers already running; "" without one."""
    if specs.cluster.spark.master != "standalone":
        return ""
    path = state_dir / SPARK_SECRET_FILE
    if not path.is_file():
        dep.write_private(path, secrets.token_hex(32))
    return path.read_text().strip()


def spark_cluster_specs(state_dir: Path, specs: SpecSet, image: str) -> tuple[ContainerSpec, ...]:
    """The standalone master and workers beside the Docker cluster, when the specs ask for them."""
    if specs.cluster.spark.master != "standalone":
        return ()
    deployment = _docker_deployment(state_dir)
    if deployment.cluster_name != specs.cluster.name:  # consumers find the master by the specs' cluster name
        raise UsageError(f"the specs describe cluster {specs.cluster.name!r}, {state_dir} holds "
                         f"{deployment.cluster_name!r}: a standalone Spark master beside it would not be found")
    hosts = spark_hosts(specs.cluster)
    return spark_cluster_containers(deployment.cluster_name, specs.cluster.spark, image,
                                    HOST_NETWORK if hosts else deployment.network("Spark's standalone cluster"),
                                    (state_dir / "ca.pem").read_text(), spark_secret(state_dir, specs), hosts)


def container_specs(state_dir: Path, specs: SpecSet, consumers: Sequence[ConsumerSpec], image: str,
                    allow_reset: bool = False) -> list[ContainerSpec]:
    """The consumers' containers for the Docker cluster in `state_dir`: its network, its brokers' in-network
    listener (on hosts: the first Spark host's network, the brokers at their hosts' addresses) and CA, each
    consumer's job manifest (with `allow_reset`, allowed to reset its state to the declared shape) and password
    read as the specs say (every missing one named at once, none shown)."""
    deployment = _docker_deployment(state_dir)
    driver = next(iter(spark_hosts(specs.cluster)), None)
    bootstrap = deployment.bootstrap if driver else network_bootstrap(
        n.name for n in deployment.nodes if "broker" in n.roles)
    network = HOST_NETWORK if driver else deployment.network("a consumer's container")
    ca_pem = (state_dir / "ca.pem").read_text()
    users = {u.name: u for u in specs.users}
    theirs = tuple({c.user: users[c.user] for c in consumers}.values())
    found = passwords(theirs)
    require_passwords(theirs, found)
    made, secret = [], spark_secret(state_dir, specs)
    for consumer in consumers:
        manifest = consumer_manifest(consumer, specs, allow_reset, avro_writers(specs, state_dir, consumer))
        made.append(consumer_container(consumer, deployment.cluster_name, manifest_text(manifest), bootstrap,
                                       manifest.mechanism, found[consumer.user] or "", ca_pem, network, image,
                                       driver, specs.cluster.spark.shared_dir, secret))
    return made


#: Where a one-shot container sees the shared directory it prepares and checks.
_SHARED = "/shared"


def _one_shot(client: docker.DockerClient, image: str, directory: str, script: str, user: str) -> str:
    output: bytes = client.containers.run(image, ["sh", "-c", script], user=user, network_mode="none", remove=True,
                                          volumes={directory: {"bind": _SHARED, "mode": "rw"}})
    return output.decode(errors="replace").strip()


def prepare_hosts(state_dir: Path, specs: SpecSet, containers: Sequence[ContainerSpec]) -> None:
    """On hosts, before anything starts: the image on every engine that runs one of `containers`, and
    `spark.shared_dir` usable by every Spark host: made on the first (given to the containers' user, uid 1000,
    only when it made it, empty), then a token written there from the first host read back on each other.
    A directory local to each host would let executors write checkpoint state and Parquet files the driver never
    sees: refused, naming the host that does not see it."""
    on_hosts = {c.host for c in containers if c.host}
    if not on_hosts:
        return
    DockerRuntime(state_dir).require_image(containers[0].image, on_hosts)
    directory, hosts = specs.cluster.spark.shared_dir, spark_hosts(specs.cluster)
    if not directory:
        return
    on, image, uid = engines(state_dir), containers[0].image, f"{CONTAINER_UID}:{CONTAINER_UID}"
    first = hosts[0]
    # Given to the containers' user only when made here, empty: never a directory that was there before (a spec
    # naming /etc would otherwise hand it over; validate refuses system paths too).
    parent, name = posixpath.split(directory.rstrip("/"))
    inside = shlex.quote(f"{_SHARED}/{name}")
    _one_shot(on[first.name], image, parent, f"[ -e {inside} ] || {{ mkdir {inside} && chown {uid} {inside}; }}",
              "0:0")
    token, check = secrets.token_hex(8), f"{_SHARED}/.kraftform-shared"
    try:
        _one_shot(on[first.name], image, directory, f"echo {token} > {check}", uid)
    except ContainerError:
        raise UsageError(f"spark.shared_dir {directory} on host {first.name!r} is not writable by uid "
                         f"{CONTAINER_UID}, the user Spark's containers run as; kraftform gives a directory to that "
                         f"user only when it makes it: give it yourself (chown {uid} {directory})") from None
    for host in hosts[1:]:
        if _one_shot(on[host.name], image, directory, f"cat {check} 2>/dev/null || true", uid) != token:
            raise UsageError(f"spark.shared_dir {directory} is not one shared file system: host {host.name!r} does "
                             f"not see what host {first.name!r} wrote there; mount the same file system (NFS, ...) "
                             f"at {directory} on every Spark host ({', '.join(h.name for h in hosts)})")


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


def _attached(state_dir: Path, label: str) -> list[Container]:
    deployment = _docker_deployment(state_dir)
    return [c for client in engines(state_dir).values() for c in attached(client, deployment.cluster_name, label)]


def states(state_dir: Path, label: str = LABEL_CONSUMER) -> list[ConsumerContainer]:
    """The consumers' containers (or, with LABEL_SPARK, the standalone master's and workers'), on every engine."""
    return [_state(c) for c in _attached(state_dir, label)]


def position_inside(state_dir: Path, state: ConsumerContainer) -> str:
    """What `consumers status` says inside the consumer's running container, where its checkpoint is."""
    found = next(c for c in _attached(state_dir, LABEL_CONSUMER) if c.name == state.container)
    done = found.exec_run(
        ["kraftform", "consumers", "status", "--name", state.consumer, "--job", JOB_FILE, "--command-config",
         CLIENT_CONFIG, "--data-dir", WORK_DIR])
    output: bytes = done.output
    return output.decode(errors="replace").strip()


def spark_cluster_up(state_dir: Path, containers: Sequence[ContainerSpec], timeout: float) -> None:
    """Start the standalone master and workers, keeping those already running as described (replacing a worker
    would kill the executors of every consumer on it), and wait until every worker is registered."""
    on = engines(state_dir)
    started = []
    for spec in containers:
        client = on[spec.host]
        try:
            current = client.containers.get(spec.name)
            if current.status == "running" and current.labels.get(LABEL_SPEC) == spec.labels[LABEL_SPEC]:
                started.append(current)
                continue
        except NotFound:
            pass
        remove_if_present(client, spec.name)
        started.append(create_container(client, spec))
        started[-1].start()
    _wait_healthy(started, "the Spark standalone master and workers to be up", timeout)


def last_words(container: Container) -> str:
    """Why a container's job failed, in its own words: the last `kraftform: error:` line it printed (a consumer's
    names the consumer and Spark's cause), else its last lines."""
    logs: bytes = container.logs(tail=300)
    lines = [line for line in logs.decode(errors="replace").splitlines() if line.strip()]
    errors = [line.removeprefix(ERROR_PREFIX) for line in lines if line.startswith(ERROR_PREFIX)]
    if errors:
        return errors[-1]
    return "its last lines:\n" + "\n".join(lines[-15:]) if lines else "it printed nothing"


def _wait_healthy(started: Sequence[Container], what: str, timeout: float) -> list[ConsumerContainer]:
    """Until every container is healthy. A container whose job ended (exited, or restarted by its restart
    policy) fails the wait at once with the job's own error; so does the deadline, with what each container
    that is not healthy said last."""
    restarts = {c.id: _restarts(c) for c in started}

    def healthy() -> list[ConsumerContainer]:
        now = [_state(c) for c in started]
        for state, container in zip(now, started, strict=True):
            restarted = _restarts(container) > restarts[container.id]
            if state.status in ("exited", "restarting") or state.health == "unhealthy" or restarted:
                # A container its policy already started again reports the new run's state, not the exit code.
                code = container.attrs.get("State", {}).get("ExitCode")
                ended = (f"exit code {code}" if code and not restarted else
                         "its job ended and its restart policy started it again" if restarted else state.health)
                raise ClusterUnhealthy(f"{_named(state)} failed ({ended}): {last_words(container)}")
        waiting = [f"{s.container} {s.health}" for s in now if s.health != "healthy"]
        if waiting:
            raise NotYet(", ".join(waiting))
        return now

    try:
        return poll(what, timeout, healthy, interval=2.0)
    except ClusterUnhealthy as exc:
        late = [(s, c) for s, c in ((_state(c), c) for c in started) if s.health != "healthy"]
        if not late or "failed (" in str(exc):
            raise
        said = "; ".join(f"{_named(s)} is {s.health} after {timeout:.0f} s: {last_words(c)}" for s, c in late)
        raise ClusterUnhealthy(said) from None


def _restarts(container: Container) -> int:
    return int(container.attrs.get("RestartCount") or 0)


def _named(state: ConsumerContainer) -> str:
    return f"consumer {state.consumer} ({state.container})" if state.consumer != "?" else state.container


def up(state_dir: Path, containers: Sequence[ContainerSpec], timeout: float | None) -> list[ConsumerContainer]:
    """(Re)create and start the consumers' containers, keeping their volume; with a `timeout`, wait until each
    is healthy (its query runs and has finished a micro-batch), failing with the job's own last words if a
    container stops."""
    on = engines(state_dir)
    started = []
    for spec in containers:
        client = on[spec.host]
        remove_if_present(client, spec.name)
        started.append(create_container(client, spec))
        started[-1].start()
    if timeout is None:
        return [_state(c) for c in started]
    return _wait_healthy(started, "the consumers to be healthy (running, with a finished micro-batch)", timeout)


def wait_healthy(container: str, timeout: float) -> ConsumerContainer:
    """Wait for one consumer's container (name or ID) on the local Docker engine: what `pulumi up` waits for."""
    try:
        found = docker_client().containers.get(container)
    except NotFound:
        raise ClusterUnhealthy(f"container {container} is gone (removed while it was waited for)") from None
    return _wait_healthy([found], f"container {found.name} to be healthy (its job running, with a finished "
                                  f"micro-batch)", timeout)[0]


def down(state_dir: Path, purge: bool = False) -> list[str]:
    """Stop the consumers (SIGTERM: each stops its query between micro-batches) and the Spark standalone
    cluster, and remove their containers; with `purge`, their volume (checkpoints, output) too."""
    deployment = _docker_deployment(state_dir)
    return sorted(name for client in engines(state_dir).values()
                  for name in remove_attached(client, deployment.cluster_name, [LABEL_CONSUMER, LABEL_SPARK], purge))
