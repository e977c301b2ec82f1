"""The Connect clusters beside a cluster kraftform runs, whichever its runtime: JVMs on this machine beside a local
cluster (`runtime.connect.jvm_workers`), containers beside a Docker one (`runtime.connect.containers`, as `pulumi
up` runs them). What `kraftform connect`, `kraftform status` and the pytest plugin call.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from docker.models.containers import Container

from kraftform.cluster.connect import rest_port
from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import LABEL_CLUSTER, network_bootstrap
from kraftform.connect.rest import ConnectRest
from kraftform.errors import ConnectionFailed, HostUnreachable, KafkaRequestFailed, UsageError
from kraftform.monitoring.status import ConnectSeen
from kraftform.plan.connectors import Logins
from kraftform.plan.live import OwnLogin
from kraftform.runtime.connect.containers import LABEL_CONNECT, ConnectDeployment, DockerConnectWorkers
from kraftform.runtime.connect.jvm_workers import (
    LOGIN_FILE,
    START_TIMEOUT_S,
    ConnectWorkers,
    Progress,
    WorkerRecord,
    _read,
    running_pids,
    stop_recorded,
)
from kraftform.runtime.engines.engine import docker_client, stop_and_remove
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.docker_engine import answering_engines, recorded_addresses
from kraftform.specset.model import ConnectSpec, SpecSet
from kraftform.statefiles import read_json


class DockerStateWorkers(ConnectWorkers):
    """`kraftform connect` beside a cluster of the Docker runtime (`kraftform cluster up --runtime docker`): the
    workers in containers as `pulumi up` runs them, on the cluster's network and image; their REST and key store
    passwords, and the connector users' passwords as last given to them, kept in the state directory as the local
    runtime keeps them."""

    def _docker(self, password: str = "", environment: Mapping[str, str] | None = None,
                logins: Mapping[str, str] | None = None) -> DockerConnectWorkers:
        """`password` (the workers' Kafka password) and `environment` matter only to a call that makes workers."""
        deployment = dep.load(self.state_dir)
        made = self._secrets()
        brokers = [n.name for n in deployment.nodes if "broker" in n.roles]
        # On hosts: the hosts the records keep, by name, the workers spread over them in that order; the brokers at
        # their hosts' addresses.
        hosts = tuple(sorted(recorded_addresses(deployment).items()))
        network = "" if hosts else deployment.network("a Connect worker")
        d = ConnectDeployment(self.spec, deployment.cluster_name, network,
                              deployment.extra["image"], deployment.bootstrap if hosts else network_bootstrap(brokers),
                              dep.load_secrets(self.state_dir).ca, password, made["rest_password"],
                              made["store_password"], dict(logins or {}),
                              {name: environment.get(name, "") for name in self.spec.environment_names}
                              if environment is not None else {}, hosts)
        # On hosts every worker is on a host's engine: this machine need not run one. A host that does not answer
        # has its workers counted as not running; acting on one of them names the host.
        engines, lost = answering_engines(self.state_dir) if hosts else ({}, [])
        if hosts and not engines:
            raise lost[0]
        client = next(iter(engines.values())) if engines else docker_client()
        return DockerConnectWorkers(client, d, str(dep.admin_config(self.state_dir).ca_path), engines, lost)

    def _recorded_logins(self) -> dict[str, str]:
        return {u: text for u in self.spec.connector_users if (text := _read(self.logins_dir / u)) is not None}

    def logins(self, found: Mapping[str, str | None]) -> Logins:
        """As the local runtime's, the directory being the containers'."""
        return dataclasses.replace(super().logins(found), path=ConnectDeployment.files().logins)

    def write_logins(self, found: Mapping[str, str | None]) -> None:
        """The record in the state directory, then the passwords in every running worker (their tasks restart to
        read them: `relogin`)."""
        super().write_logins(found)
        self._docker(logins=self._recorded_logins()).sync_logins()

    def rest(self) -> ConnectRest:
        workers = self._docker()
        if not workers.containers():
            raise UsageError(f"Connect cluster {self.spec.name!r} is not running here; start it with "
                             f"`kraftform connect up`")
        return workers.rest()

    def up(self, login: Connection, env: Mapping[str, str], progress: Progress,
           timeout: float = START_TIMEOUT_S) -> list[WorkerRecord]:
        assert login.password is not None
        unset = [name for name in self.spec.environment_names if not env.get(name)]
        if unset:  # written into the containers as they are made: an empty one would be a connector's setting
            raise UsageError(f"Connect cluster {self.spec.name!r}: connector secret(s) not set in the environment: "
                             f"{', '.join(unset)} (`kraftform passwords` lists them)")
        workers = self._docker(login.password, env, self._recorded_logins())
        workers.up(progress, timeout)
        self.record_started(login)
        return self.running()

    def down(self, purge: bool = False) -> None:
        """The workers on the hosts that answer stopped (and, with `purge`, their records); HostUnreachable naming
        a host that did not, whose workers are left as they were, and the records kept for a run once it answers."""
        workers = self._docker()
        workers.down()
        if workers.lost:
            exc = next(iter(workers.lost.values()))
            raise HostUnreachable(exc.host, f"{exc}: Connect cluster {self.spec.name!r}'s workers there were left as "
                                            f"they were; run it again once the host answers")
        if purge:
            shutil.rmtree(self.dir, ignore_errors=True)

    def running(self) -> list[WorkerRecord]:
        workers = self._docker()
        return [WorkerRecord(i, workers.d.address(i), rest_port(self.spec, i), 0) for i in workers.running()]


def connect_workers(state_dir: Path, spec: ConnectSpec) -> ConnectWorkers:
    """The workers of `spec` beside the cluster in `state_dir`: JVMs on this machine beside a local cluster,
    containers beside a Docker one (`connect_containers`)."""
    if dep.load(state_dir).runtime == "docker":
        return DockerStateWorkers(state_dir, spec)
    return ConnectWorkers(state_dir, spec)


def _recorded_containers(state_dir: Path, name: str, running_only: bool) -> list[Container]:
    """The worker containers of Connect cluster `name` beside the Docker-runtime cluster in `state_dir`, found by
    their labels (no spec needed: one the specs no longer declare may still run)."""
    filters: dict[str, Any] = {"label": [f"{LABEL_CLUSTER}={dep.load(state_dir).cluster_name}",
                                         f"{LABEL_CONNECT}={name}"]}
    if running_only:
        filters["status"] = "running"
    return [c for client in answering_engines(state_dir)[0].values()
            for c in client.containers.list(all=not running_only, filters=filters)]


def workers_logins(state_dir: Path) -> dict[str, OwnLogin]:
    """The users the Connect clusters running beside the cluster in `state_dir` log in as, whatever the specs now
    declare of them (their `connect up` recorded each): a plan that rotated or deleted one would leave its workers
    refused at their next connection, so it is refused until they are stopped."""
    docker = dep.load(state_dir).runtime == "docker"
    found: dict[str, OwnLogin] = {}
    for record in sorted((state_dir / "connect").glob(f"*/{LOGIN_FILE}")):
        name = record.parent.name
        running = (len(_recorded_containers(state_dir, name, running_only=True)) if docker
                   else len(running_pids(record.parent)))
        if running:
            user = str(read_json(record, f"Connect cluster {name}'s login")["user"])
            found[user] = OwnLogin(
                f"Connect cluster {name!r} logs in as it, {running} worker(s) running",
                f"stop its workers first (`kraftform connect down SPECS_DIR --state-dir DIR --name {name}`), "
                f"apply, then start them again (`kraftform connect up`)")
    return found


def stop_undeclared(state_dir: Path, name: str) -> int:
    """`kraftform connect down --name NAME` for a Connect cluster the specs no longer declare but whose workers
    still run: stopped by what its `connect up` recorded; how many workers there were."""
    if dep.load(state_dir).runtime == "docker":
        found = _recorded_containers(state_dir, name, running_only=False)
        for container in found:
            stop_and_remove(container)
        return len(found)
    return stop_recorded([state_dir / "connect" / name])


def observe(state_dir: Path, spec: ConnectSpec) -> ConnectSeen:
    """One look at a Connect cluster beside the cluster in `state_dir`: its workers, its connectors."""
    workers = connect_workers(state_dir, spec)
    running = len(workers.running())
    try:
        return ConnectSeen(spec, running, workers.rest().connectors())
    except (ConnectionFailed, UsageError, KafkaRequestFailed) as exc:
        return ConnectSeen(spec, running, None, str(exc))


def start_declared(state_dir: Path, specs: SpecSet, spec: ConnectSpec, env: Mapping[str, str],
                   progress: Progress) -> list[WorkerRecord]:
    """`kraftform connect up` for one Connect cluster: refused before its internal topics exist (`kraftform apply`
    makes them and its grants) or while its user's password is not set; the workers log in as that user."""
    from kraftform.kafka.admin import Admin
    from kraftform.kafka.credentials import passwords, read_secret

    admin = dep.admin_config(state_dir)
    present = set(Admin(admin).metadata().topics)
    missing = [t for t in spec.internal_topics.values() if t not in present]
    if missing:
        raise UsageError(f"Connect cluster {spec.name!r}: its internal topics {', '.join(missing)} are not there "
                         f"yet; `kraftform apply` makes them and its workers' grants")
    user = next(u for u in specs.users if u.name == spec.user)
    password = read_secret(user.password)
    if password is None:
        raise UsageError(f"Connect cluster {spec.name!r}: the password of its user {user.name!r} is not set "
                         f"({user.password})")
    workers = connect_workers(state_dir, spec)
    workers.write_logins(passwords(specs.users))  # tasks that start with the workers read them
    return workers.up(admin.as_user(user.name, password, user.mechanism), env, progress)
