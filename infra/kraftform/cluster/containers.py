"""Rendered nodes -> container specs, as plain data. Pure.

The Docker runtime runs these objects and the Pulumi program turns the same objects into pulumi-docker
resources, so a cluster started by `kraftform cluster up` and one made by `pulumi up` are the same.

The contract with the image is the official `apache/kafka` one: jars in /opt/kafka/libs, `java` on PATH,
a POSIX shell, user id 1000. kraftform mounts a full configuration and runs its own command instead of the
image's env-driven entry point (which wants JKS stores and password files).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kraftform.cluster.config import Addressing, NodePaths
from kraftform.cluster.identity import PRINCIPAL_MAPPING
from kraftform.cluster.jmx import METRICS_PORT, agent_option
from kraftform.cluster.render import (
    FORMAT_ARGS,
    ClusterSecrets,
    RenderedNode,
    format_args,
    render_cluster,
    server_args,
    tool_argfile,
)
from kraftform.cluster.topology import CLIENT_PORT, Node, Topology
from kraftform.specset.hosts import listener_ports, metrics_port, node_hosts
from kraftform.specset.model import ClusterSpec
from kraftform.versions import KAFKA_VERSION

CONFIG_DIR = "/etc/kraftform"
DATA_DIR = "/var/lib/kafka/data"
KAFKA_LIBS = "/opt/kafka/libs"
#: The JMX exporter agent in the Kafka image.
METRICS_AGENT = "/opt/kafka/metrics/jmx_prometheus_javaagent.jar"
CONTAINER_UID = 1000

LOCAL_IMAGE = f"kraftform/kafka:{KAFKA_VERSION}"
#: Labels on everything kraftform runs in Docker: the cluster it belongs to, and a node's name.
LABEL_CLUSTER = "dev.kraftform.cluster"
LABEL_NODE = "dev.kraftform.node"
LABEL_ROLES = "dev.kraftform.roles"
#: On a node's container that runs on one of the spec's hosts: the host's name.
LABEL_HOST = "dev.kraftform.host"
#: The network of a node on one of the spec's hosts: the host's own, where it listens on the host's address at
#: ports of its own (`host_ports`), as every other host and client reaches it; no bridge, no published port.
HOST_NETWORK = "host"
#: Every container kraftform runs: no process in it gains privileges through a setuid binary, it holds no Linux
#: capability (each runs as an unprivileged user that needs none, so only a way out of it would use one), and
#: Docker keeps a bounded log of it (json-file grows without end otherwise, on a host's root file system).
SECURITY_OPTS = ("no-new-privileges:true",)
CAP_DROP = ("ALL",)
LOG_OPTS: Mapping[str, str] = {"max-size": "20m", "max-file": "5"}
#: Above a JVM's heap: its metaspace, code cache, threads' stacks, direct buffers and page tables. A node's RSS
#: measured about 1.3 x its heap; the limit stops one node's leak from starving the host's others.
JVM_OVERHEAD_BYTES = 512 * 2**20


def memory_limit(heap_bytes: int) -> int:
    """A JVM container's memory limit, from its declared heap."""
    return 2 * heap_bytes + JVM_OVERHEAD_BYTES


@dataclass(frozen=True)
class ContainerFile:
    path: str
    content: str = field(repr=False)
    mode: int = 0o644
    secret: bool = False


@dataclass(frozen=True)
class PortBinding:
    container_port: int
    host_port: int
    host_ip: str = "127.0.0.1"  # published on loopback only: nothing outside this machine reaches it


@dataclass(frozen=True)
class Healthcheck:
    """Docker's health probe: frequent, so whoever waits for "healthy" waits seconds, not Docker's 30 s default."""

    test: tuple[str, ...]
    interval_s: int = 2
    timeout_s: int = 2
    retries: int = 30
    start_period_s: int = 5


@dataclass(frozen=True)
class ContainerSpec:
    name: str
    hostname: str
    image: str
    command: tuple[str, ...]
    network: str
    aliases: tuple[str, ...]
    volume: str
    volume_path: str
    files: tuple[ContainerFile, ...]
    ports: tuple[PortBinding, ...] = ()
    healthcheck: Healthcheck | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    user: str = f"{CONTAINER_UID}:{CONTAINER_UID}"
    #: Docker's restart policy, the same for the Docker runtime and the Pulumi program: a process that dies is
    #: started again (a node after a crash, a consumer whose job failed: its health shows it), one stopped or
    #: killed on purpose (`docker stop`, `docker kill`, `kraftform cluster down`) is not.
    restart: str = "unless-stopped"
    #: The spec host (`cluster.hosts`) whose engine runs it; "": the one engine of a cluster without hosts.
    host: str = ""
    #: Environment variables (never a secret: `docker inspect` shows them; secrets go in `files`).
    env: Mapping[str, str] = field(default_factory=dict)
    #: Docker's memory limit in bytes (0: none; a node's is `memory_limit` of its heap).
    memory_bytes: int = 0


def volume_name(node_name: str) -> str:
    """A node's data volume; it outlives the container, so its name must be derivable from the node."""
    return f"{node_name}-data"


def in_containers(cluster: ClusterSpec) -> ClusterSpec:
    """The cluster as kraftform runs it in containers, for the Docker runtime and the Pulumi component alike:
    clients outside the Docker network reach brokers only through published ports, so the external listener
    is on, at the spec's `external_listener.host` and `base_port`."""
    listener = dataclasses.replace(cluster.security.external_listener, enabled=True)
    return dataclasses.replace(cluster, security=dataclasses.replace(cluster.security, external_listener=listener))


def host_ports(topo: Topology, node: Node) -> dict[str, int]:
    """A node's listener ports on its host (`specset.hosts.listener_ports`)."""
    return listener_ports(topo.cluster.security.external_listener.base_port, node.node_id, node.broker_index,
                          node.is_controller)


def docker_addressing(topo: Topology) -> Addressing:
    """Nodes find each other by container hostname; clients outside reach brokers at the external listener's
    host, on the published ports. On hosts, every node listens on and advertises its host's address, at its
    own ports, for nodes and clients alike."""
    if topo.cluster.hosts:
        placed = node_hosts(topo.cluster)
        addresses = {n.name: placed[n.name].address for n in topo.nodes}
        return Addressing(advertised=addresses, bind=addresses, ports={n.name: host_ports(topo, n)
                                                                       for n in topo.nodes})
    names = {n.name: n.name for n in topo.nodes}
    return Addressing(advertised=names, bind={n.name: "0.0.0.0" for n in topo.nodes},
                      external_host=topo.cluster.security.external_listener.host)


def publish_ip(external_host: str) -> str:
    """Loopback for a loopback host (nothing outside this machine reaches the brokers); every interface when
    the spec advertises another host, which clients elsewhere are meant to reach."""
    return "127.0.0.1" if external_host == "localhost" or external_host.startswith("127.") else "0.0.0.0"


def network_bootstrap(brokers: Iterable[str]) -> str:
    """What clients inside the cluster's Docker network (the consumers' containers) connect to: each broker by
    its container name, on the SASL_SSL CLIENT listener."""
    return ",".join(f"{name}:{CLIENT_PORT}" for name in brokers)


def bootstrap_servers(specs: tuple[ContainerSpec, ...], external_host: str) -> str:
    """What clients outside the Docker network connect to: every published broker port."""
    return ",".join(f"{external_host}:{p.host_port}" for s in specs for p in s.ports
                    if p.container_port != METRICS_PORT)


def metrics_endpoints(specs: tuple[ContainerSpec, ...]) -> dict[str, tuple[str, str]]:
    """Node name -> (roles, host:port) of its published metrics."""
    return {s.name: (s.labels.get(LABEL_ROLES, ""), f"{p.host_ip}:{p.host_port}") for s in specs for p in s.ports
            if p.container_port == METRICS_PORT}


def _command(r: RenderedNode, cluster_id: str, metrics_bind: str = "0.0.0.0",
             metrics_port: int = METRICS_PORT) -> tuple[str, ...]:
    # The classpath in double quotes, so the shell leaves its `*` to Java; the SCRAM arguments come from an argument
    # file StorageTool reads itself (they hold passwords, which neither the command `docker inspect` shows nor the
    # process's command line, which the host's `ps` shows, may hold). The metrics agent only where the
    # image has it: the official image does not, and its nodes start without metrics.
    classpath = f'"{KAFKA_LIBS}/*"'
    agent = agent_option(METRICS_AGENT, metrics_bind, r.paths.config_dir, metrics_port)
    java = " ".join("${agent}" if arg == agent else arg
                    for arg in server_args(r.node, r.paths, classpath, metrics_bind, metrics_port=metrics_port))
    script = (
        "set -euf; "  # -f: nothing here is for the shell to glob (the classpath's `*` is Java's)
        f"if [ ! -f {DATA_DIR}/meta.properties ]; then "
        f"java {' '.join((*format_args(classpath, cluster_id, r.paths), *r.format_options))} "
        f"@{CONFIG_DIR}/{FORMAT_ARGS}; fi; "
        # The admin's password is in it: gone once the storage is formatted, as the local runtime removes its own.
        f"rm -f {CONFIG_DIR}/{FORMAT_ARGS}; "
        f"agent=''; if [ -f {METRICS_AGENT} ]; then agent='{agent}'; fi; "
        f"exec java {java}"
    )
    return ("sh", "-c", script)


def _healthcheck(r: RenderedNode, addr: Addressing) -> Healthcheck:
    """Healthy once the node's own port is listening (state 0A in the kernel's socket tables). Plain `sh`,
    `cat` and `grep`: the official image is Alpine without bash, ours is Debian."""
    port = addr.port(r.node.name, "CLIENT" if r.node.is_broker else "CONTROLLER")
    listening = f"':{port:04X} [0-9A-F]*:[0-9A-F]* 0A'"
    return Healthcheck(("CMD-SHELL", f"cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q {listening}"))


def render_in_containers(topo: Topology, secrets: ClusterSecrets,
                         mapping: str = PRINCIPAL_MAPPING) -> tuple[RenderedNode, ...]:
    """Every node's files and settings as its container runs them (`mapping`: identity.py)."""
    return render_cluster(topo, docker_addressing(topo), {n.name: NodePaths(CONFIG_DIR, DATA_DIR, METRICS_AGENT)
                                                                   for n in topo.nodes},
                          secrets, mapping)


def kafka_image(version: str) -> str:
    """The locally built image of a Kafka version (`runtime.engines.images.build_kafka` builds it)."""
    return LOCAL_IMAGE if version == KAFKA_VERSION else f"kraftform/kafka:{version}"


def stack_image(choice: str, kafka_version: str) -> str:
    """The image a stack's `kraftform:image` names for the specs' Kafka version: `official` (apache/kafka),
    `local` (built by `kraftform images build`), or an image name taken as it is. The version comes from the
    specs, so `kafka_version: 4.3.1 -> 4.4.0` is a new image and a roll, never the pinned release under an old
    version's name."""
    if choice == "official":
        return f"apache/kafka:{kafka_version}"
    return kafka_image(kafka_version) if choice == "local" else choice


def network_name(cluster: str) -> str:
    """The Docker network a cluster's containers share."""
    return f"kraftform-{cluster}"


def external_bootstrap(topo: Topology) -> str:
    """`bootstrap_servers` of the topology's containers from the topology alone: no secret goes into it, so under
    Pulumi it stays known in a preview while the secrets resource changes (a node added), and nothing that
    connects to it is shown as replaced. On hosts: each broker's client listener on its host's address."""
    addr = docker_addressing(topo)
    if topo.cluster.hosts:
        return ",".join(f"{addr.advertised[n.name]}:{addr.port(n.name, 'CLIENT')}" for n in topo.brokers)
    ports = (addr.external_port(topo, n) for n in topo.nodes)
    return ",".join(f"{topo.cluster.security.external_listener.host}:{p}" for p in ports if p is not None)


def container_specs(topo: Topology, secrets: ClusterSecrets, image: str = LOCAL_IMAGE,
                    mapping: str = PRINCIPAL_MAPPING) -> tuple[ContainerSpec, ...]:
    """One container per node, on one network, each with its own data volume; on hosts, each on its host's own
    network (`HOST_NETWORK`). `mapping`: the principal mapping its nodes run with (identity.py)."""
    addr = docker_addressing(topo)
    network = network_name(topo.cluster.name)
    base = topo.cluster.security.external_listener.base_port
    placed = node_hosts(topo.cluster)
    specs = []
    for r in render_in_containers(topo, secrets, mapping):
        files = tuple(ContainerFile(f"{CONFIG_DIR}/{f.relative_path}", f.content, f.mode, f.secret) for f in r.files)
        files += (ContainerFile(f"{CONFIG_DIR}/{FORMAT_ARGS}", tool_argfile(r.scram_args), 0o600, True),)
        port = addr.external_port(topo, r.node)
        # Metrics on loopback only, whatever host the brokers advertise: nothing else needs them.
        metrics = PortBinding(METRICS_PORT, metrics_port(base, r.node.node_id))
        spec = ContainerSpec(
            name=r.node.name, hostname=r.node.name, image=image, command=_command(r, secrets.cluster_id),
            network=network, aliases=(r.node.name,), volume=volume_name(r.node.name), volume_path=DATA_DIR,
            files=files, ports=((PortBinding(port, port, publish_ip(addr.external_host or "localhost")),)
                                if port is not None else ()) + (metrics,),
            healthcheck=_healthcheck(r, addr), memory_bytes=memory_limit(r.node.heap_bytes),
            labels={LABEL_CLUSTER: topo.cluster.name, LABEL_NODE: r.node.name,
                    LABEL_ROLES: ",".join(r.node.roles)},
        )
        host = placed.get(r.node.name)
        if host is not None:
            spec = dataclasses.replace(
                spec, command=_command(r, secrets.cluster_id, host.address, metrics_port(base, r.node.node_id)),
                network=HOST_NETWORK, aliases=(), ports=(), labels={**spec.labels, LABEL_HOST: host.name},
                host=host.name)
        specs.append(spec)
    return tuple(specs)


def client_bootstrap(topo: Topology, specs: tuple[ContainerSpec, ...]) -> str:
    """What clients outside the cluster's containers connect to: the published broker ports, or on hosts each
    broker's client listener on its host's address."""
    if topo.cluster.hosts:
        return external_bootstrap(topo)
    return bootstrap_servers(specs, topo.cluster.security.external_listener.host)


def node_metrics(topo: Topology, specs: tuple[ContainerSpec, ...]) -> dict[str, tuple[str, str]]:
    """Node name -> (roles, host:port) of its metrics: published on loopback, or on hosts served on the host's
    address."""
    if not topo.cluster.hosts:
        return metrics_endpoints(specs)
    base, placed = topo.cluster.security.external_listener.base_port, node_hosts(topo.cluster)
    return {n.name: (",".join(n.roles), f"{placed[n.name].address}:{metrics_port(base, n.node_id)}")
            for n in topo.nodes}
