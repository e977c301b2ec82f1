"""A cluster spec + secrets -> every node's files and commands, as data. Pure apart from key generation.

Both runtimes (Docker and local JVM processes) and the Pulumi program consume `RenderedNode`s; only the
paths and addresses differ between them, and those are inputs here.
"""

from __future__ import annotations

import base64
import dataclasses
import secrets as pysecrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftform.cluster.certificates import KeyPair, issue, make_ca
from kraftform.cluster.config import (
    LOG4J2_CONFIG,
    LOG4J2_FILE,
    Addressing,
    NodePaths,
    properties_text,
    render_properties,
    secrets_properties,
)
from kraftform.cluster.topology import Node, Topology


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


def make_secrets(topo: Topology, addr: Addressing, admin_password: str | None = None,
                 keep: ClusterSecrets | None = None) -> ClusterSecrets:
    """A CA and node certificates naming every address the node is reached at; fresh passwords.

    With `keep`, the secrets of this cluster before its node set changed, everything stays (the CA, the
    cluster id, the passwords the metadata log was formatted with, existing nodes' keys) and only new nodes
    get keys, signed by the same CA: a grown cluster is the same cluster."""
    ca = keep.ca if keep else make_ca(topo.cluster.name)
    keys = {}
    for node in topo.nodes:
        if keep and node.name in keep.node_keys:
            keys[node.name] = keep.node_keys[node.name]
            continue
        host = addr.advertised[node.name]
        # Clients check the name they connected to: the advertised one, and the external listener's host.
        hosts = list(dict.fromkeys([node.name, host, "localhost", *filter(None, [addr.external_host])]))
        ips = list(dict.fromkeys(["127.0.0.1", *(h for h in hosts if _is_ip(h))]))
        keys[node.name] = issue(ca, node.name, [h for h in hosts if not _is_ip(h)], ips)
    if keep:
        return dataclasses.replace(keep, node_keys=keys)
    return ClusterSecrets(new_cluster_id(), ca, keys, admin_password or new_password(), new_password())


def secrets_to_dict(s: ClusterSecrets) -> dict[str, Any]:
    """Plain data, for the Pulumi state (as secret outputs) and the runtimes' private `secrets.json`."""
    return {"cluster_id": s.cluster_id, "ca_cert": s.ca.cert_pem, "ca_key": s.ca.key_pem,
            "node_keys": {n: {"cert": k.cert_pem, "key": k.key_pem} for n, k in s.node_keys.items()},
            "admin_password": s.admin_password, "controller_password": s.controller_password}


def secrets_from_dict(o: Mapping[str, Any]) -> ClusterSecrets:
    return ClusterSecrets(o["cluster_id"], KeyPair(o["ca_cert"], o["ca_key"]),
                          {n: KeyPair(k["cert"], k["key"]) for n, k in o["node_keys"].items()},
                          o["admin_password"], o["controller_password"])


def _is_ip(host: str) -> bool:
    return host.replace(".", "").isdigit()


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
    #: The admin and inter-broker SCRAM users, created in the metadata log at format time.
    scram_args: tuple[str, ...] = field(repr=False)
    #: Further StorageTool arguments: the release whose feature levels a new cluster starts at.
    format_options: tuple[str, ...] = ()


#: For StorageTool and other one-shot tools: start quickly (C1 only, serial GC); they run for a second.
TOOL_JAVA_OPTIONS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")


def java_options(node: Node, paths: NodePaths) -> tuple[str, ...]:
    """Heaps from the spec (`cluster.resources`); the defaults are small, so six nodes of a test cluster fit
    beside the tests on a CI runner."""
    mib = node.heap_bytes // (1024 * 1024)
    return (f"-Xms{mib}m", f"-Xmx{mib}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:MaxMetaspaceSize=128m",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={paths.config_dir}/{LOG4J2_FILE}")


def format_args(classpath: str, cluster_id: str, paths: NodePaths) -> tuple[str, ...]:
    """The JVM arguments that format a node's storage (the SCRAM users follow: `RenderedNode.scram_args`), the
    one place they are written: the local runtime runs them, the containers' command renders them."""
    return (*TOOL_JAVA_OPTIONS, "-cp", classpath, "kafka.tools.StorageTool", "format", "--cluster-id", cluster_id,
            "--config", paths.server_properties, "--ignore-formatted")


def server_args(node: Node, paths: NodePaths, classpath: str) -> tuple[str, ...]:
    """The JVM arguments that start a node, for the local runtime and the containers alike."""
    return (*java_options(node, paths), "-cp", classpath, "kafka.Kafka", paths.server_properties)


def render_node(topo: Topology, node: Node, addr: Addressing, paths: NodePaths,
                secrets: ClusterSecrets) -> RenderedNode:
    props = render_properties(topo, node, addr, paths)
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
    )
    scram = ("--add-scram", f"{mech}=[name={topo.cluster.security.admin_user},password={secrets.admin_password}]")
    release = topo.cluster.metadata_version
    return RenderedNode(node, paths, props, files, scram, ("--release-version", release) if release else ())


def render_cluster(topo: Topology, addr: Addressing, paths: Mapping[str, NodePaths],
                   secrets: ClusterSecrets) -> tuple[RenderedNode, ...]:
    return tuple(render_node(topo, n, addr, paths[n.name], secrets) for n in topo.nodes)
