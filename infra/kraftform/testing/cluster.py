"""A test cluster's life: started from the specs, applied, handed out, and gone afterwards, even after a SIGKILL.

Each cluster lives in a directory of its own under a base directory (default: the temp dir's
`kraftform-tests`), with an owner file naming the process that started it (its pid and start time, so a
recycled pid is not mistaken for it). Starting a cluster first sweeps the base: a directory whose owner is
gone (a session SIGKILLed, a CI job cut off) has its nodes stopped (processes or containers) and is removed,
so nothing it left holds a port, an address or a volume the next cluster needs. Local clusters get a
loopback range no other live cluster holds (`runtime.nodes.local.claim_loopback_base`); Docker clusters get
published ports nothing listens on.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftform.cluster.connection import Connection
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.specset.model import ClusterSpec, SpecSet
from kraftform.testing.variant import Topology, for_tests, password_variable

OWNER_FILE = "owner"


def default_base() -> Path:
    return Path(os.environ.get("KRAFTFORM_TEST_DIR") or Path(tempfile.gettempdir()) / "kraftform-tests")


def _started_at(pid: int) -> str:
    """A process's start time (clock ticks since boot, /proc/PID/stat field 22): with its pid, its identity."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _owner_alive(directory: Path) -> bool:
    try:
        pid_text, started = (directory / OWNER_FILE).read_text().split()
    except (OSError, ValueError):
        return False
    return _started_at(int(pid_text)) == started


def sweep(base: Path) -> list[str]:
    """Stop and remove every test cluster under `base` whose owner process is gone; returns their names."""
    from kraftform.runtime import runtime_of
    from kraftform.runtime.connect.jvm_workers import stop_all
    from kraftform.runtime.nodes.deployment import STATE_FILE
    from kraftform.runtime.registry.running import stop_registry

    removed = []
    for directory in sorted(base.glob("*")) if base.is_dir() else []:
        is_cluster = (directory / OWNER_FILE).is_file() or (directory / STATE_FILE).is_file()
        if not directory.is_dir() or not is_cluster or _owner_alive(directory):
            continue
        stop_all(directory)
        stop_registry(directory)
        if (directory / STATE_FILE).is_file():
            with contextlib.suppress(Exception):  # whatever is left of it: the directory goes regardless
                runtime_of(directory).down(purge=True)
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory.name)
    return removed


def _ephemeral_low() -> int:
    """Where the kernel starts choosing client ports: a published port above it can be taken by any outgoing
    connection between the check and Docker's bind (seen in CI: `bind: address already in use`)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_base_port(cluster: ClusterSpec) -> int:
    """A published port base for a Docker test cluster, below the kernel's client ports, such that Docker could
    bind every port it would publish now: each broker's external listener (base + its index) and each node's
    metrics (`specset.hosts.metrics_port`)."""
    from kraftform.cluster.topology import topology
    from kraftform.runtime.nodes.docker_engine import port_taken
    from kraftform.specset.hosts import metrics_port

    nodes = topology(cluster).nodes
    offsets = sorted({n.broker_index for n in nodes if n.broker_index is not None}
                     | {metrics_port(0, n.node_id) for n in nodes})
    top = _ephemeral_low() - offsets[-1] - 1
    for _ in range(200):
        port = random.randint(min(10000, top), top)
        if not any(port_taken("127.0.0.1", port + i) for i in offsets):
            return port
    raise UsageError("no free ports for a Docker test cluster below the kernel's client port range")


@dataclass
class EphemeralCluster:
    """A running test cluster: its specs (as it runs them), where it lives, and clients for its declared users."""


    specs: SpecSet
    state_dir: Path
    runtime_name: str
    passwords: dict[str, str] = field(repr=False)

    @property
    def name(self) -> str:
        return self.specs.cluster.name

    @property
    def admin(self) -> Connection:
        from kraftform.runtime.nodes.deployment import admin_config

        return admin_config(self.state_dir)

    @property
    def bootstrap(self) -> str:
        return self.admin.bootstrap

    def connection(self, user: str | None = None) -> Connection:
        """The cluster as a declared user (None: the admin, a super user)."""
        admin = self.admin
        if user is None:
            return admin
        found = next((u for u in self.specs.users if u.name == user), None)
        if found is None:
            raise UsageError(f"no user {user!r} in the specs (declared: {', '.join(u.name for u in self.specs.users)})")
        return admin.as_user(found.name, self.passwords[found.name], found.mechanism)

    def client(self, user: str | None = None, **overrides: Any) -> dict[str, Any]:
        """confluent-kafka settings logged in as `user`, with `overrides` (group.id, acks, ...)."""
        return {**self.connection(user).librdkafka(), **overrides}

    def properties(self, user: str | None = None) -> Path:
        """A Java client .properties file for `user` (Kafka's tools, Java clients), 0600 in the cluster's dir."""
        from kraftform.runtime.nodes.deployment import write_private

        path = self.state_dir / "clients" / f"{user or 'admin'}.properties"
        write_private(path, self.connection(user).java_properties(f"test cluster {self.name}: {user or 'admin'}"))
        return path

    def spark_options(self, user: str | None = None) -> dict[str, str]:
        """Spark's `kafka.*` source and sink options for `user` (they hold the password: do not print them)."""
        return self.connection(user).spark_options()

    @staticmethod
    def unique_topic(prefix: str = "test") -> str:
        """A topic name no other test uses (under `prefix`, so prefixed ACLs in the specs cover it)."""
        return f"{prefix}.{uuid.uuid4().hex[:10]}"

    def env(self) -> dict[str, str]:
        """The environment variables the test cluster's specs read their users' passwords from, for a
        `kraftform` command run against it."""
        return {password_variable(self.name, user): password for user, password in self.passwords.items()}


def _name() -> str:
    """Short (node names, container names and loopback ranges derive from it) and unique per cluster."""
    return f"t{os.getpid() % 100000}-{uuid.uuid4().hex[:4]}"


@contextlib.contextmanager
def ephemeral_cluster(specs_dir: str | Path, topology: Topology = "faithful", runtime: str = "local",
                 base_dir: Path | None = None, timeout: float = 300) -> Iterator[EphemeralCluster]:
    """A secure cluster from `specs_dir` with the specs applied, removed on exit (processes or containers,
    volumes, its directory). Invalid specs raise the same located errors as `kraftform validate`, before any
    process starts."""
    import secrets as pysecrets

    from kraftform.kafka.apply import ApplyOptions
    from kraftform.kafka.reconcile import apply_cluster, plan_cluster
    from kraftform.runtime import get_runtime
    from kraftform.runtime.nodes.deployment import admin_config

    declared = load_specs(specs_dir)
    base = base_dir or default_base()
    base.mkdir(parents=True, exist_ok=True)
    sweep(base)
    name = _name()
    specs = for_tests(declared, topology, name)
    state = base / name  # a local cluster claims a loopback range of its own when it starts
    state.mkdir(parents=True)
    (state / OWNER_FILE).write_text(f"{os.getpid()} {_started_at(os.getpid())}\n")
    if runtime == "docker":
        specs = _with_free_ports(specs)
    passwords = {u.name: pysecrets.token_urlsafe(18) for u in specs.users}
    os.environ.update({password_variable(name, user): pw for user, pw in passwords.items()})
    engine = get_runtime(runtime, state)
    try:
        if runtime == "docker":
            from kraftform.runtime.engines.engine import docker_client
            from kraftform.runtime.engines.images import build_kafka

            build_kafka(docker_client(), [], specs.cluster.kafka_version)
        engine.up(specs.cluster, timeout=timeout)
        connection = admin_config(state)
        live = plan_cluster(connection, specs, found=dict(passwords))
        left = apply_cluster(connection, specs, live, ApplyOptions(), progress=lambda _line: None)
        if left.plan.changes:
            raise UsageError(f"test cluster {name}: the specs could not be applied in full: "
                             f"{'; '.join(f'{c.action} {c.kind} {c.resource}' for c in left.plan.changes)}")
        yield EphemeralCluster(specs, state, runtime, passwords)
    finally:
        from kraftform.runtime.connect.jvm_workers import stop_all
        from kraftform.runtime.registry.running import stop_registry

        stop_all(state)  # Connect workers a test started (`kafka_connect`), before the cluster they log in to
        stop_registry(state)
        with contextlib.suppress(Exception):
            engine.down(purge=True)
        shutil.rmtree(state, ignore_errors=True)


def _with_free_ports(specs: SpecSet) -> SpecSet:
    import dataclasses

    security = specs.cluster.security
    listener = dataclasses.replace(security.external_listener, enabled=True, host="localhost",
                                   base_port=free_base_port(specs.cluster))
    cluster = dataclasses.replace(specs.cluster, security=dataclasses.replace(security, external_listener=listener))
    return dataclasses.replace(specs, cluster=cluster)
