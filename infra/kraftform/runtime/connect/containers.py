"""Kafka Connect workers in containers beside a cluster kraftform runs on Docker: what `pulumi up` deploys for a
declared Connect cluster.

One container per worker on the cluster's network, from the cluster's own Kafka image (its Java); Connect's jars
and the plugins are the ones the local runtime runs, fetched on this machine from Maven Central with their
checksums checked, and copied in with the worker's files when the container is made. Nothing is bind-mounted and
no state directory is kept: the containers carry everything, and a label on each holds the digest of what it was
made from, so a later run knows which worker must be made again (one at a time, each serving its REST API before
the next goes) and which is as declared.

Workers reach Kafka on the network's internal listener as the Connect cluster's user; their REST API is TLS (a
certificate from the cluster's CA naming the container and 127.0.0.1) behind basic authentication, published on
127.0.0.1 at the declared port and the next ones. Beside a cluster on hosts (`cluster.hosts`), worker i runs on host
i mod the hosts, in that host's network: it reaches the brokers at their hosts' addresses and serves its REST API
on its host's address (which its certificate names and the other workers forward to), so losing a host loses only
its workers. Connector secrets (`${env:NAME}`) are in a file only the
worker's user reads, exported into the worker's environment as it starts: not in the container's configuration,
which anyone who can `docker inspect` reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import docker
from docker.errors import NotFound
from docker.models.containers import Container

from kraftform.artifacts import CONNECT_LOG4J2_FILE, builtin_plugin, connect_plugin, ensure_connect
from kraftform.cluster.certificates import KeyPair, issue, pkcs12_keystore, pkcs12_truststore
from kraftform.cluster.connect import (
    CONNECT_MAIN,
    REST_USER,
    WorkerFiles,
    jaas_config,
    rest_port,
    rest_users,
    worker_java_options,
    worker_properties,
    worker_properties_text,
)
from kraftform.cluster.connection import SASL_SSL, Connection
from kraftform.cluster.containers import CONTAINER_UID, HOST_NETWORK, LABEL_CLUSTER, LABEL_HOST, memory_limit
from kraftform.connect.rest import ConnectRest
from kraftform.errors import ClusterUnhealthy, HostUnreachable
from kraftform.runtime.connect.jvm_workers import (
    CLASS_PATH_PLUGINS,
    DEFAULT_PLUGINS,
    START_TIMEOUT_S,
    serves,
)
from kraftform.runtime.engines.engine import ended_saying, host_config, owned_tar, stop_and_remove
from kraftform.specset.model import ConnectSpec
from kraftform.versions import CONNECT_VERSION
from kraftform.waiting import poll

#: Which Connect cluster a container is a worker of, and the digest of what it was made from.
LABEL_CONNECT = "dev.kraftform.connect"
LABEL_DIGEST = "dev.kraftform.connect-digest"
#: In the container: Connect's jars and log configuration, the plugins, the worker's own files.
HOME = "/opt/kraftform-connect/home"
PLUGINS = "/opt/kraftform-connect/plugins"
CONF = "/etc/kraftform-connect"
ENV_FILE = f"{CONF}/environment"
CA_FILE = f"{CONF}/ca.pem"
#: Beside the logins the workers read (never among them): a digest of each connector user's password as it was
#: when its connectors' tasks last restarted to read it. The record lives with the workers because a stack keeps
#: no state directory, and the engine keeps no outputs of an update that failed: a password written into the
#: workers by an update that failed before the restart is still a relogin for the next one.
APPLIED_LOGINS = f"{CONF}/logins-applied"

Progress = Callable[[str], None]


def worker_container(cluster: str, connect: str, index: int) -> str:
    return f"{cluster}-connect-{connect}-{index}"


@dataclass(frozen=True)
class ConnectDeployment:
    """Everything one Connect cluster's worker containers are made from. The secrets are the stack's: the
    workers' Kafka password, the REST API's and the key stores' passwords, connector users' passwords and the
    connector secrets of the environment."""

    spec: ConnectSpec
    cluster: str
    network: str
    image: str
    #: The brokers on the network's internal listener.
    bootstrap: str
    ca: KeyPair = field(repr=False)
    password: str = field(repr=False)
    rest_password: str = field(repr=False)
    store_password: str = field(repr=False)
    logins: Mapping[str, str] = field(default_factory=dict, repr=False)
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: The cluster's hosts as (name, address), in the specs' order: worker i on host i mod their number. Empty: the
    #: network `network` on one engine.
    hosts: tuple[tuple[str, str], ...] = ()

    def name(self, index: int) -> str:
        return worker_container(self.cluster, self.spec.name, index)

    def host(self, index: int) -> tuple[str, str] | None:
        """The (name, address) of the host worker `index` runs on; None off hosts."""
        return self.hosts[index % len(self.hosts)] if self.hosts else None

    def address(self, index: int) -> str:
        """Where kraftform (and the other workers) reach worker `index`'s REST API."""
        host = self.host(index)
        return host[1] if host else "127.0.0.1"

    @staticmethod
    def files() -> WorkerFiles:
        """Where a worker's files are in its container."""
        return WorkerFiles(CONF, f"{CONF}/tls/rest.p12", f"{CONF}/tls/truststore.p12", f"{CONF}/jaas.conf",
                           f"{CONF}/rest-users.properties", f"{CONF}/logins")

    def plugin_dirs(self) -> dict[str, Path]:
        """Each plugin's directory on this machine by its name in the container, fetched and checked once."""
        return {**{name: builtin_plugin(name) for name in (*DEFAULT_PLUGINS, *CLASS_PATH_PLUGINS)},
                **{f"declared-{p.name}": connect_plugin(p.maven, p.sha256, p.exclude, f"plugin {p.name!r}")
                   for p in self.spec.plugins}}

    def properties(self, index: int, plugins: Mapping[str, Path]) -> dict[str, str]:
        kafka = Connection(self.bootstrap, SASL_SSL, self.spec.mechanism, self.spec.user, self.password, CA_FILE).java()
        paths = tuple(f"{PLUGINS}/{name}" for name in plugins if name not in CLASS_PATH_PLUGINS)
        host = self.host(index)
        return worker_properties(self.spec, index, host[1] if host else self.name(index), kafka, self.files(),
                                 self.store_password, paths, bind=None if host else "0.0.0.0")

    def command(self) -> list[str]:
        files = self.files()
        options = worker_java_options(self.spec.heap_bytes, files.jaas, f"{HOME}/config/{CONNECT_LOG4J2_FILE}")
        classpath = ":".join([f"{HOME}/libs/*", *(f"{PLUGINS}/{name}/libs/*" for name in CLASS_PATH_PLUGINS)])
        java = " ".join(shlex.quote(a) for a in ["java", *options, "-cp", classpath, CONNECT_MAIN,
                                                    f"{CONF}/worker.properties"])
        return ["sh", "-c", f"set -a; . {ENV_FILE}; set +a; exec {java}"]

    def text_files(self, index: int, plugins: Mapping[str, Path]) -> dict[str, tuple[str, int]]:
        """Path -> (content, mode) of every file but the key stores (made anew with each container)."""
        files = self.files()
        environment = "".join(f"{k}={shlex.quote(v)}\n" for k, v in sorted(self.environment.items()))
        return {f"{CONF}/worker.properties": (worker_properties_text(self.spec, index, self.properties(index, plugins)),
                                              0o600),
                files.jaas: (jaas_config(files.rest_users), 0o644),
                files.rest_users: (rest_users(self.rest_password), 0o600),
                CA_FILE: (self.ca.cert_pem, 0o644),
                ENV_FILE: (environment, 0o600),
                **{f"{files.logins}/{user}": (password, 0o600) for user, password in sorted(self.logins.items())},
                # A worker made now starts its tasks with these passwords.
                **{f"{APPLIED_LOGINS}/{user}": (_login_digest(password), 0o600)
                   for user, password in sorted(self.logins.items())}}

    def digest(self, index: int, plugins: Mapping[str, Path]) -> str:
        """What decides that a worker must be made again: its files, its image, its command, its plugins. Not the
        connector users' passwords: `sync_logins` writes those into running workers, and their connectors' tasks
        restart to read them (`relogin`)."""
        h = hashlib.sha256()
        logins = self.files().logins
        for path, (content, mode) in sorted(self.text_files(index, plugins).items()):
            if not path.startswith((f"{logins}/", f"{APPLIED_LOGINS}/")):
                h.update(f"{path}\0{mode}\0{content}\0".encode())
        h.update(json.dumps([self.image, self.command(), sorted(str(p) for p in plugins.values()),
                             self.spec.rest_port]).encode())
        return h.hexdigest()


def _login_digest(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


def _cat(container: Container, path: str) -> str | None:
    """A file's text in a running container; None when it is not there."""
    result = container.exec_run(["cat", path])
    return result.output.decode(errors="replace") if result.exit_code == 0 else None


class DockerConnectWorkers:
    """The worker containers of one Connect cluster on a Docker engine. `ca_path`: the cluster CA's PEM file, which
    kraftform's REST client checks the workers' certificates against."""

    def __init__(self, client: docker.DockerClient, deployment: ConnectDeployment, ca_path: str,
                 engines: Mapping[str, docker.DockerClient] | None = None,
                 lost: Sequence[HostUnreachable] = ()) -> None:
        """`engines`: each host's engine by its name, for a deployment on hosts (`lost`: the hosts that did not
        answer, whose workers count as not running); `client` runs the rest."""
        self.client = client
        self.d = deployment
        self.ca_path = ca_path
        self.engines = dict(engines or {})
        self.lost = {exc.host: exc for exc in lost}

    def engine(self, index: int) -> docker.DockerClient:
        host = self.d.host(index)
        if host and host[0] in self.lost:
            raise self.lost[host[0]]
        return self.engines[host[0]] if host else self.client

    def containers(self) -> dict[int, Container]:
        """This Connect cluster's worker containers by index, running or not (those past the declared count too), on
        every engine."""
        found = [c for client in (self.engines.values() or [self.client]) for c in client.containers.list(
            all=True, filters={"label": [f"{LABEL_CLUSTER}={self.d.cluster}", f"{LABEL_CONNECT}={self.d.spec.name}"]})]
        return {int(c.name.rsplit("-", 1)[1]): c for c in found if c.name}

    def running(self) -> list[int]:
        """The indexes of the declared workers whose container runs."""
        found = self.containers()
        return [i for i in range(self.d.spec.workers) if i in found and found[i].status == "running"]

    def not_running(self) -> list[str]:
        """The declared workers whose container is missing or not running."""
        running = self.running()
        return [self.d.name(i) for i in range(self.d.spec.workers) if i not in running]

    def stale(self) -> list[str]:
        """The declared workers whose container was made from something else than declared now, and those past
        the declared count: what `up` makes again or removes."""
        plugins = self.d.plugin_dirs()
        found = self.containers()
        return sorted([self.d.name(i) for i in range(self.d.spec.workers)
                       if i in found and found[i].labels.get(LABEL_DIGEST) != self.d.digest(i, plugins)]
                      + [c.name or "" for i, c in found.items() if i >= self.d.spec.workers])

    def rest(self, index: int | None = None, timeout: float = 30.0) -> ConnectRest:
        """kraftform's REST login to a worker (by default the first running one: the REST API forwards to the
        leader where it must) through its published port, TLS checked against the cluster's CA."""
        if index is None:
            index = next(iter(self.running()), 0)
        return ConnectRest(f"https://{self.d.address(index)}:{rest_port(self.d.spec, index)}", REST_USER,
                           self.d.rest_password, self.ca_path, timeout)

    def stale_logins(self) -> frozenset[str]:
        """The connector users whose password some running worker does not have, or has not restarted their
        connectors' tasks for since it was written (an update that failed in between)."""
        return frozenset(u for container in self._running() for u in set().union(*self._stale_in(container)))

    def sync_logins(self) -> frozenset[str]:
        """The connector users' passwords written into each running worker where they differ (a password changed);
        returns the stale ones (`stale_logins`, as they were): their connectors' tasks must restart to read them,
        and `mark_logins_applied` records that they did."""
        files = self.d.files()
        stale: set[str] = set()
        for container in self._running():
            unwritten, unread = self._stale_in(container)
            if unwritten:
                container.put_archive("/", owned_tar({f"{files.logins}/{u}": (self.d.logins[u].encode(), 0o600)
                                                 for u in sorted(unwritten)}, {}, (files.logins,)))
            stale |= unwritten | unread
        return frozenset(stale)

    def mark_logins_applied(self) -> None:
        """The connectors' tasks now run with the passwords the workers hold (an update restarted them)."""
        for container in self._running():
            container.put_archive("/", owned_tar({f"{APPLIED_LOGINS}/{u}": (_login_digest(p).encode(), 0o600)
                                             for u, p in sorted(self.d.logins.items())}, {}, (APPLIED_LOGINS,)))

    def _running(self) -> list[Container]:
        return [c for c in self.containers().values() if c.status == "running"]

    def _stale_in(self, container: Container) -> tuple[set[str], set[str]]:
        """The users whose login file in `container` is not their password, and those whose file is but whose
        tasks have not restarted since it was written. No record of a user (a worker an earlier kraftform made, a
        user new to it): its file, as it is, has been read, as the local runtime's record has it."""
        logins = self.d.files().logins
        unwritten = {u for u, password in self.d.logins.items() if _cat(container, f"{logins}/{u}") != password}
        unread = {u for u, password in self.d.logins.items() if u not in unwritten
                  and (applied := _cat(container, f"{APPLIED_LOGINS}/{u}")) is not None
                  and applied != _login_digest(password)}
        return unwritten, unread

    def up(self, progress: Progress, timeout: float = START_TIMEOUT_S) -> None:
        """Make each declared worker that is missing or made from something else (one at a time, each serving its
        REST API before the next), start one that is stopped, remove those past the declared count."""
        plugins = self.d.plugin_dirs()  # fetched and checked before any worker is touched
        home = ensure_connect(CONNECT_VERSION)
        found = self.containers()
        for index in range(self.d.spec.workers):
            digest = self.d.digest(index, plugins)
            container = found.pop(index, None)
            if container is not None and container.labels.get(LABEL_DIGEST) == digest:
                if container.status != "running":
                    progress(f"{self.d.spec.name}: starting worker {index} again (it was not running) ...")
                    container.start()
                    self._wait_up(index, timeout)
                continue
            if container is not None:
                progress(f"{self.d.spec.name}: making worker {index} again (its configuration changed) ...")
                stop_and_remove(container)
            else:
                progress(f"{self.d.spec.name}: starting worker {index} on https://{self.d.address(index)}:"
                         f"{rest_port(self.d.spec, index)} ...")
            self._create(index, digest, plugins, home).start()
            self._wait_up(index, timeout)
        for index, extra in sorted(found.items()):
            progress(f"{self.d.spec.name}: removing worker {index} (no longer declared) ...")
            stop_and_remove(extra)

    def _create(self, index: int, digest: str, plugins: Mapping[str, Path], home: Path) -> Container:
        d, name, client, host = self.d, self.d.name(index), self.engine(index), self.d.host(index)
        with contextlib.suppress(NotFound):
            client.containers.get(name).remove(force=True)
        pair = issue(d.ca, f"{d.spec.name} Connect worker {index}",
                     [name, "localhost", "127.0.0.1", *([host[1]] if host else [])])
        files = d.files()
        entries = {path: (content.encode(), mode) for path, (content, mode) in d.text_files(index, plugins).items()}
        entries |= {files.keystore: (pkcs12_keystore(pair, d.store_password), 0o600),
                    files.truststore: (pkcs12_truststore(d.ca.cert_pem, d.store_password), 0o644)}
        port = rest_port(d.spec, index)
        labels = {LABEL_CLUSTER: d.cluster, LABEL_CONNECT: d.spec.name, LABEL_DIGEST: digest,
                  **({LABEL_HOST: host[0]} if host else {})}
        # On a host: its own network, where the worker listens on the host's address (no bridge, nothing published).
        networking = None if host else client.api.create_networking_config(
            {d.network: client.api.create_endpoint_config(aliases=[name])})
        response = client.api.create_container(
            d.image, entrypoint=d.command(), name=name, hostname=None if host else name,
            user=f"{CONTAINER_UID}:{CONTAINER_UID}", labels=labels, ports=[] if host else [port],
            host_config=host_config(
                client, memory_limit(d.spec.heap_bytes), port_bindings={} if host else {port: ("127.0.0.1", port)},
                restart_policy={"Name": "unless-stopped"}, network_mode=HOST_NETWORK if host else None),
            networking_config=networking)
        container = client.containers.get(response["Id"])
        trees = {HOME: home, **{f"{PLUGINS}/{n}": p for n, p in plugins.items()}}
        container.put_archive("/", owned_tar(entries, trees, (files.logins, APPLIED_LOGINS)))
        return container

    def _wait_up(self, index: int, timeout: float) -> None:
        name = self.d.name(index)

        def answered() -> None:
            ended = ended_saying(self.engine(index).containers.get(name), f"Connect worker {name}")
            if ended:
                raise ClusterUnhealthy(ended)
            serves(self.rest(index, timeout=10))

        poll(f"Connect worker {name} to serve its REST API", timeout, answered, interval=1.0)

    def down(self) -> list[str]:
        """Every worker container of this Connect cluster stopped and removed; their names."""
        found = self.containers()
        for container in found.values():
            stop_and_remove(container)
        return sorted(c.name or "" for c in found.values())

