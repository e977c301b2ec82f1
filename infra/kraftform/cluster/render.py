"""A cluster spec + secrets -> every node's files and commands, as data. Pure apart from key generation.

Both runtimes (Docker and local JVM processes) and the Pulumi program consume `RenderedNode`s; only the
paths and addresses differ between them, and those are inputs here.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import secrets as pysecrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kraftform.cluster.certificates import KeyPair, issue_node, make_ca
from kraftform.cluster.config import (
    LOG4J2_CONFIG,
    LOG4J2_FILE,
    Addressing,
    NodePaths,
    properties_text,
    render_properties,
    secrets_properties,
)
from kraftform.cluster.identity import PRINCIPAL_MAPPING, is_node_certificate
from kraftform.cluster.jmx import METRICS_FILE, METRICS_PORT, agent_option, exporter_config
from kraftform.cluster.topology import Node, Topology
from kraftform.errors import UsageError
from kraftform.specset.model import SCRAM_ANCHORS, ClusterSpec


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def new_password() -> str:
    return pysecrets.token_urlsafe(24)


@dataclass(frozen=True)
class ClusterSecrets:
    """Everything secret about one cluster. Never logged, never rendered into reviewable output."""

    cluster_id: str
    ca: KeyPair
    node_keys: Mapping[str, KeyPair]
    admin_password: str = field(repr=False)
    controller_password: str = field(repr=False)
    #: First controller's name -> the directory id of its metadata log (KIP-853's voter identity), for a cluster
    #: whose controller quorum can change; empty for a static quorum (`controller.quorum.voters`), which a
    #: cluster made before kept. A controller added later gets its directory id from StorageTool.
    directory_ids: Mapping[str, str] = field(default_factory=dict)
    #: The voters a new cluster's controllers were formatted with (`--initial-controllers`); a controller added
    #: later is formatted without any and joins the quorum once it has caught up.
    initial_voters: str = ""

    @property
    def dynamic_quorum(self) -> bool:
        return bool(self.directory_ids)


def new_directory_id() -> str:
    """A Kafka Uuid as its tools print it: 16 random bytes, URL-safe base64 without padding, not starting with
    '-' (as a cluster id)."""
    return new_cluster_id()


def make_secrets(topo: Topology, addr: Addressing, admin_password: str | None = None,
                 keep: ClusterSecrets | None = None) -> ClusterSecrets:
    """A CA and node certificates naming every address the node is reached at; fresh passwords.

    With `keep`, the secrets of this cluster before its node set changed, everything stays (the CA, the
    cluster id, the passwords the metadata log was formatted with, existing nodes' keys) and only new nodes
    get keys, signed by the same CA: a grown cluster is the same cluster."""
    ca = keep.ca if keep else make_ca(topo.cluster.name)
    keys = {}
    for node in topo.nodes:
        if keep and node.name in keep.node_keys and is_node_certificate(keep.node_keys[node.name].cert_pem):
            keys[node.name] = keep.node_keys[node.name]
            continue  # a key from before the node identity (identity.py) is issued again
        host = addr.advertised[node.name]
        # Clients check the name they connected to: the advertised one, and the external listener's host.
        keys[node.name] = issue_node(ca, node.name, [node.name, host, "localhost", "127.0.0.1",
                                                     *filter(None, [addr.external_host])])
    if keep:  # a static quorum stays static: its voters are in every node's configuration
        return dataclasses.replace(keep, node_keys=keys)
    directories = {n.name: new_directory_id() for n in topo.controllers}
    voters = ",".join(f"{n.node_id}@{addr.controller(n.name)}:{directories[n.name]}" for n in topo.controllers)
    return ClusterSecrets(new_cluster_id(), ca, keys, admin_password or new_password(), new_password(), directories,
                          voters)


def secrets_to_dict(s: ClusterSecrets) -> dict[str, Any]:
    """Plain data, for the Pulumi state (as secret outputs) and the runtimes' private `secrets.json`."""
    return {"cluster_id": s.cluster_id, "ca_cert": s.ca.cert_pem, "ca_key": s.ca.key_pem,
            "node_keys": {n: {"cert": k.cert_pem, "key": k.key_pem} for n, k in s.node_keys.items()},
            "admin_password": s.admin_password, "controller_password": s.controller_password,
            "directory_ids": dict(s.directory_ids), "initial_voters": s.initial_voters}


def secrets_from_dict(o: Mapping[str, Any]) -> ClusterSecrets:
    return ClusterSecrets(o["cluster_id"], KeyPair(o["ca_cert"], o["ca_key"]),
                          {n: KeyPair(k["cert"], k["key"]) for n, k in o["node_keys"].items()},
                          o["admin_password"], o["controller_password"], dict(o.get("directory_ids") or {}),
                          o.get("initial_voters") or "")


@dataclass(frozen=True)
class NodeFile:
    """A file under the node's config directory. `secret` files hold keys or passwords (mode 0600)."""

    relative_path: str
    content: str = field(repr=False)
    secret: bool = False

    @property
    def mode(self) -> int:
        return 0o600 if self.secret else 0o644


@dataclass(frozen=True)
class RenderedNode:
    node: Node
    paths: NodePaths
    properties: Mapping[str, str]
    files: tuple[NodeFile, ...]
    #: The SCRAM anchors and the admin, created in the metadata log at format time.
    scram_args: tuple[str, ...] = field(repr=False)
    #: Further StorageTool arguments: the release whose feature levels a new cluster starts at.
    format_options: tuple[str, ...] = ()


#: The main classes a node is formatted and run with (kafka-storage.sh, kafka-server-start.sh).
STORAGE_TOOL = "kafka.tools.StorageTool"
KAFKA_MAIN = "kafka.Kafka"
#: For StorageTool and other one-shot tools: start quickly (C1 only, serial GC); they run for a second.
TOOL_JAVA_OPTIONS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")


def java_options(node: Node, paths: NodePaths) -> tuple[str, ...]:
    """Heaps from the spec (`cluster.resources`); the defaults are small, so six nodes of a test cluster fit
    beside the tests on a CI runner."""
    mib = node.heap_bytes // (1024 * 1024)
    # The client compiler alone: on 2 cores, six JVMs starting together spend most of it in C2 compilations
    # (a faithful test cluster healthy in 17.5 s instead of 30 s, docs/testing.md).
    quick = ("-XX:TieredStopAtLevel=1",) if node.quick_start else ()
    return (f"-Xms{mib}m", f"-Xmx{mib}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:MaxMetaspaceSize=128m",
            *quick, "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={paths.config_dir}/{LOG4J2_FILE}")


def format_args(classpath: str, cluster_id: str, paths: NodePaths) -> tuple[str, ...]:
    """The JVM arguments that format a node's storage (the SCRAM users follow: `RenderedNode.scram_args`), the
    one place they are written: the local runtime runs them, the containers' command renders them."""
    return (*TOOL_JAVA_OPTIONS, "-cp", classpath, STORAGE_TOOL, "format", "--cluster-id", cluster_id,
            "--config", paths.server_properties, "--ignore-formatted")


#: The file the SCRAM arguments of a node's format are read from, beside its configuration (mode 0600).
FORMAT_ARGS = "format.args"


def tool_argfile(args: Sequence[str]) -> str:
    """`args` as an argument file Kafka's tools read themselves (`StorageTool ... @FILE`: argparse4j's file prefix,
    one argument a line, taken as it is), so the arguments (passwords among them) are on no process's command line,
    which every local user can read: `/proc/PID/cmdline` shows `@FILE`."""
    for arg in args:
        if "\n" in arg or "\r" in arg:
            raise UsageError("an argument for a Kafka tool holds a line break (a password?); it cannot be passed in a "
                             "file of one argument a line")
    return "\n".join(args) + "\n"


def server_args(node: Node, paths: NodePaths, classpath: str, metrics_host: str = "",
                extra: tuple[str, ...] = (), metrics_port: int = METRICS_PORT) -> tuple[str, ...]:
    """The JVM arguments that start a node, for the local runtime and the containers alike; with the metrics agent
    serving on `metrics_host:metrics_port` when the paths name its jar, and the runtime's `extra` JVM options."""
    agent = (agent_option(paths.metrics_agent, metrics_host, paths.config_dir, metrics_port),) \
        if paths.metrics_agent and metrics_host else ()
    return (*java_options(node, paths), *extra, *agent, "-cp", classpath, KAFKA_MAIN, paths.server_properties)


def render_node(topo: Topology, node: Node, addr: Addressing, paths: NodePaths,
                secrets: ClusterSecrets, mapping: str = PRINCIPAL_MAPPING) -> RenderedNode:
    props = render_properties(topo, node, addr, paths, mapping)
    if secrets.dynamic_quorum:
        props = dynamic_quorum_properties(props, topo, node, addr)
    mech = topo.cluster.security.sasl_mechanism
    header = (f"kraftform: {node.name} (node.id {node.node_id}, {', '.join(node.roles)}) of cluster "
              f"{topo.cluster.name}. Generated; do not edit.")
    files = (
        NodeFile("server.properties", properties_text(props, header)),
        NodeFile("secrets.properties",
                 secrets_properties(topo, secrets.controller_password), True),
        NodeFile("tls/ca.pem", secrets.ca.cert_pem),
        NodeFile("tls/node.pem", secrets.node_keys[node.name].keystore_pem, True),
        NodeFile(LOG4J2_FILE, LOG4J2_CONFIG),
        NodeFile(METRICS_FILE, exporter_config()),
    )
    scram = (*anchor_args(secrets.admin_password),
             "--add-scram", f"{mech}=[name={topo.cluster.security.admin_user},password={secrets.admin_password}]")
    return RenderedNode(node, paths, props, files, scram,
                        _feature_options(topo.cluster) + _voter_options(node, secrets))


def anchor_args(admin_password: str) -> tuple[str, ...]:
    """StorageTool arguments that create the SCRAM anchors (specset/model.py, SCRAM_ANCHORS) before any other
    user. Nobody logs in as them: the password is derived from the admin's (so a render stays the same from one
    run to the next) through a one-way hash, and they are granted nothing."""
    password = hashlib.sha256(f"kraftform scram anchor\0{admin_password}".encode()).hexdigest()
    return tuple(arg for mechanism, name in sorted(SCRAM_ANCHORS.items())
                 for arg in ("--add-scram", f"{mechanism}=[name={name},password={password}]"))


def _feature_options(cluster: ClusterSpec) -> tuple[str, ...]:
    """A new cluster is formatted at the declared levels (the release's, then each declared feature's), so its
    first plan has no feature changes. kraft.version is not passed: how the quorum is formatted sets it."""
    release = ("--release-version", cluster.metadata_version) if cluster.metadata_version else ()
    return release + tuple(option for name, level in sorted(cluster.features.items()) if name != "kraft.version"
                           for option in ("--feature", f"{name}={level}"))


def _voter_options(node: Node, secrets: ClusterSecrets) -> tuple[str, ...]:
    """How StorageTool learns the voters of a quorum that can change: a controller of the first quorum is
    formatted with all of them; one added later, and every broker, with none (it joins once caught up)."""
    if not secrets.dynamic_quorum:
        return ()
    directory = secrets.directory_ids.get(node.name)
    if node.is_controller and directory and f":{directory}" in secrets.initial_voters:
        return ("--initial-controllers", secrets.initial_voters)
    return ("--no-initial-controllers",)


#: Controllers every node finds the quorum through (KIP-853): the first few by id, so adding or removing
#: controllers beyond them changes no node's configuration.
BOOTSTRAP_CONTROLLERS = 3


def dynamic_quorum_properties(props: Mapping[str, str], topo: Topology, node: Node,
                              addr: Addressing) -> dict[str, str]:
    """A node of a quorum that can change: it finds the controllers through bootstrap servers instead of a fixed
    voter list, and a controller joins the voters by itself once it has caught up."""
    out = {k: v for k, v in props.items() if k != "controller.quorum.voters"}
    first = sorted(topo.controllers, key=lambda n: n.node_id)[:BOOTSTRAP_CONTROLLERS]
    out["controller.quorum.bootstrap.servers"] = ",".join(addr.controller(n.name) for n in first)
    if node.is_controller:
        out["controller.quorum.auto.join.enable"] = "true"
    return out


def render_cluster(topo: Topology, addr: Addressing, paths: Mapping[str, NodePaths],
                   secrets: ClusterSecrets, mapping: str = PRINCIPAL_MAPPING) -> tuple[RenderedNode, ...]:
    return tuple(render_node(topo, n, addr, paths[n.name], secrets, mapping) for n in topo.nodes)
