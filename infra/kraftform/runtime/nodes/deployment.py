"""What a runtime leaves in its state directory, so later commands find the cluster again.

    STATE_DIR/cluster.json          runtime, nodes, bootstrap servers (no secrets)
    STATE_DIR/admin.properties      Java admin client config (0600: holds the admin password)
    STATE_DIR/admin.librdkafka.conf librdkafka admin config for kcat and confluent-kafka (0600)
    STATE_DIR/ca.pem                the cluster's CA certificate
    STATE_DIR/metrics.json          each node's Prometheus endpoint (host:port) and roles, for scrapers
    STATE_DIR/secrets.json          the CA key, node keys, cluster id and passwords (0600): what adding a
                                    node or rendering a node's new configuration needs
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kraftform.cluster.config import Addressing
from kraftform.cluster.connection import Connection, read_connection
from kraftform.cluster.identity import PRINCIPAL_MAPPING, principal_mapping
from kraftform.cluster.render import ClusterSecrets, RenderedNode, make_secrets, secrets_from_dict, secrets_to_dict
from kraftform.cluster.topology import Topology
from kraftform.errors import UsageError
from kraftform.plan.nodes import NodePlan, RunningNode
from kraftform.specset.model import ClusterSpec
from kraftform.statefiles import PRIVATE, read_json, write_atomic

STATE_FILE = "cluster.json"
#: In a deployment's `extra`: the spec's hosts, as JSON (name -> its engine's endpoint and TLS files), so commands
#: given only the state directory reach each node's engine.
HOSTS = "hosts"
SECRETS_FILE = "secrets.json"


@dataclass
class NodeRecord:
    name: str
    node_id: int
    roles: list[str]
    #: The process id (local runtime) or container name (Docker runtime).
    handle: str = ""
    #: JVM heap, so a node restarted on its own gets the heap the spec gave it (None: written before heaps
    #: were recorded; the defaults apply).
    heap_bytes: int | None = None
    #: The node's rendered server.properties as it was started (no secrets in them: those are read from
    #: secrets.properties), so a changed cluster section shows as the nodes it changes (`plan.nodes`).
    properties: dict[str, str] | None = None
    #: The Kafka version the node runs (None: the deployment's, recorded before nodes had their own).
    kafka_version: str | None = None
    #: Started with `Node.quick_start`, so a restart keeps it.
    quick_start: bool = False
    #: The spec host (`cluster.hosts`) whose Docker engine runs it; "": the machine's own engine or process.
    host: str = ""


@dataclass
class Deployment:
    runtime: str
    cluster_name: str
    bootstrap: str
    brokers: int
    kafka_version: str
    nodes: list[NodeRecord] = field(default_factory=list)
    #: Runtime-specific facts (network name, image, address base).
    extra: dict[str, str] = field(default_factory=dict)
    #: Nodes being replaced, as they ran before: what a failed restart goes back to.
    previous: dict[str, NodeRecord] = field(default_factory=dict)

    def network(self, what: str) -> str:
        """The Docker network `what` (consumers, Connect workers, the registry) joins beside the nodes; refused for a
        cluster on several hosts, whose nodes are on their hosts' own networks and have no such network (what runs
        beside them there uses its host's network instead)."""
        if HOSTS in self.extra:
            raise UsageError(f"cluster {self.cluster_name!r} runs on hosts (cluster.hosts): {what} beside it in "
                             f"Docker is not placed on hosts yet; run it where it reaches the brokers' addresses "
                             f"({self.bootstrap}) instead")
        return self.extra["network"]

    def node(self, name: str) -> NodeRecord:
        for record in self.nodes:
            if record.name == name:
                return record
        raise UsageError(f"no node {name!r} in cluster {self.cluster_name!r} "
                         f"(nodes: {', '.join(n.name for n in self.nodes)})")


def running_nodes(deployment: Deployment) -> tuple[RunningNode, ...]:
    return tuple(RunningNode(r.name, r.node_id, tuple(r.roles), r.properties, r.heap_bytes,
                             r.kafka_version or deployment.kafka_version) for r in deployment.nodes)


def started(rendered: RenderedNode, kafka_version: str, handle: str = "", host: str = "") -> NodeRecord:
    """The record of a node started from `rendered` (on `host`)."""
    node = rendered.node
    return NodeRecord(node.name, node.node_id, list(node.roles), handle, node.heap_bytes, dict(rendered.properties),
                      kafka_version, node.quick_start, host)


def save_secrets(state_dir: Path, secrets: ClusterSecrets) -> None:
    write_private(state_dir / SECRETS_FILE, json.dumps(secrets_to_dict(secrets)))


def load_secrets(state_dir: Path) -> ClusterSecrets:
    path = state_dir / SECRETS_FILE
    if not path.is_file():
        raise UsageError(f"{state_dir}: no {SECRETS_FILE}: this cluster was started by an earlier kraftform that "
                         f"did not keep its CA, so no node can be added or given a new configuration; replace the "
                         f"cluster to manage its nodes")
    return secrets_from_dict(read_json(path, "the cluster's CA, node keys and passwords"))


def grown_secrets(state_dir: Path, topo: Topology, addr: Addressing, keep_new_keys: bool) -> ClusterSecrets:
    """The cluster's secrets with a key for every node `topo` has, new ones signed by the cluster's CA (and a node's
    key from before the node identity issued again: identity.py); saved with `keep_new_keys`, so a node added or
    restarted with a new key keeps it."""
    kept = load_secrets(state_dir)
    grown = make_secrets(topo, addr, keep=kept)
    if keep_new_keys and any(kept.node_keys.get(name) != key for name, key in grown.node_keys.items()):
        save_secrets(state_dir, grown)
    return grown


def principal_mapping_now(state_dir: Path) -> str:
    """The principal mapping to render the nodes with, from what the running nodes were started with
    (identity.py: the two rolls that move a cluster made before the node identity onto it)."""
    if not (state_dir / STATE_FILE).is_file():
        return PRINCIPAL_MAPPING
    return principal_mapping(r.properties for r in load(state_dir).nodes)


def write_private(path: Path, content: str) -> None:
    """Create or replace a file readable only by its owner, without a window where it is wider, atomically."""
    write_atomic(path, content, PRIVATE)


def save(state_dir: Path, deployment: Deployment) -> None:
    write_atomic(state_dir / STATE_FILE, json.dumps(asdict(deployment), indent=2) + "\n")


def load(state_dir: Path) -> Deployment:
    path = state_dir / STATE_FILE
    if not path.is_file():
        raise UsageError(f"{state_dir}: no cluster here (no {STATE_FILE}); start one with `kraftform cluster up`")
    data = read_json(path, "the cluster's node records")
    data["nodes"] = [NodeRecord(**n) for n in data["nodes"]]
    data["previous"] = {k: NodeRecord(**n) for k, n in data.get("previous", {}).items()}
    return Deployment(**data)


def drift(deployment: Deployment, topo: Topology) -> list[str]:
    """How the running cluster differs from what its specs now describe: nodes to add or remove, roles, heaps,
    the Kafka version. Pure; empty when `cluster up` can simply start it again."""
    running = {n.name: n for n in deployment.nodes}
    wanted = {n.name: n for n in topo.nodes}
    found = []
    if deployment.kafka_version != topo.cluster.kafka_version:
        found.append(f"kafka_version {deployment.kafka_version} -> {topo.cluster.kafka_version}")
    added, removed = sorted(set(wanted) - set(running)), sorted(set(running) - set(wanted))
    if added:
        found.append(f"nodes to add: {', '.join(added)}")
    if removed:
        found.append(f"nodes to remove: {', '.join(removed)}")
    for name in sorted(set(wanted) & set(running)):
        now, then = running[name], wanted[name]
        if sorted(now.roles) != sorted(then.roles):
            found.append(f"{name}: roles {', '.join(now.roles)} -> {', '.join(then.roles)}")
        if now.heap_bytes is not None and now.heap_bytes != then.heap_bytes:
            found.append(f"{name}: heap {now.heap_bytes // 2**20} MiB -> {then.heap_bytes // 2**20} MiB")
    return found


def require_as_declared(state_dir: Path, deployment: Deployment, topo: Topology,
                        plan: NodePlan | None) -> None:
    """`cluster up` on a running cluster that its specs no longer describe says so and points at `apply`, never
    starting the old shape and waiting for nodes nothing starts. `plan` None: a cluster whose secrets were
    not kept (an earlier kraftform), compared by its shape only."""
    differences = drift(deployment, topo) if plan is None else [s.summary for s in plan.steps] + list(plan.refused)
    if differences:
        raise UsageError(
            f"the cluster in {state_dir} differs from its specs: {'; '.join(differences)}. `kraftform plan "
            f"--state-dir {state_dir}` shows each step and `kraftform apply --state-dir {state_dir}` carries them "
            f"out (one node at a time, through the roll's health gates); `cluster up` only starts a cluster as "
            f"its specs describe it")


def load_existing(state_dir: Path, runtime: str, cluster_name: str) -> Deployment | None:
    """The deployment to restart, None for a fresh state directory; another runtime's or cluster's state
    is an error, so `up` never mixes two clusters' files."""
    if not (state_dir / STATE_FILE).is_file():
        return None
    deployment = load(state_dir)
    if deployment.runtime != runtime or deployment.cluster_name != cluster_name:
        raise UsageError(f"{state_dir} holds {deployment.runtime} cluster {deployment.cluster_name!r}; "
                         f"use another --state-dir")
    return deployment


def as_started(cluster: ClusterSpec, state_dir: Path) -> ClusterSpec:
    """`cluster` with the start mode of the nodes running in `state_dir`, which the specs cannot say: the nodes a
    roll or a resize starts run as the others do. A test cluster (`quick_start`: the client compiler only, no
    metrics agent) stays one; a cluster `cluster up` started keeps its full JIT and its metrics."""
    if not (state_dir / STATE_FILE).is_file():
        return cluster
    nodes = load(state_dir).nodes
    quick = bool(nodes) and all(n.quick_start for n in nodes)
    return cluster if quick == cluster.quick_start else dataclasses.replace(cluster, quick_start=quick)


def write_client_files(state_dir: Path, bootstrap: str, username: str, password: str, mechanism: str,
                       ca_pem: str) -> Connection:
    state_dir.mkdir(parents=True, exist_ok=True)
    ca_path = state_dir / "ca.pem"
    write_atomic(ca_path, ca_pem)
    auth = Connection.scram(bootstrap, username, password, mechanism, str(ca_path.resolve()))
    write_private(state_dir / "admin.properties", auth.java_properties())
    write_private(state_dir / "admin.librdkafka.conf", auth.librdkafka_conf())
    return auth


def reshaped(state_dir: Path, cluster: ClusterSpec, bootstrap: str) -> None:
    """After brokers were added or removed: the client files and the record list the brokers that now run."""
    secrets = load_secrets(state_dir)
    write_client_files(state_dir, bootstrap, cluster.security.admin_user, secrets.admin_password,
                       cluster.security.sasl_mechanism, secrets.ca.cert_pem)
    deployment = load(state_dir)
    deployment.bootstrap, deployment.brokers = bootstrap, cluster.brokers
    deployment.kafka_version = cluster.kafka_version
    save(state_dir, deployment)


METRICS_ENDPOINTS = "metrics.json"


def write_endpoints(state_dir: Path, endpoints: Mapping[str, tuple[str, str]],
                    hosts: Mapping[str, str] | None = None) -> None:
    """Node name -> (roles, host:port) where its metrics are served, beside the client files; with the spec host
    that runs each node (`hosts`: node name -> host name), so a scraper can tell a host lost from a node down."""
    listed = [{"node": name, "roles": roles, "address": address,
               **({"host": hosts[name]} if hosts and name in hosts else {})}
              for name, (roles, address) in sorted(endpoints.items())]
    write_atomic(state_dir / METRICS_ENDPOINTS, json.dumps(listed, indent=2) + "\n")


def admin_config(state_dir: Path) -> Connection:
    """The admin login of a running cluster, from the client files `cluster up` wrote."""
    path = state_dir / "admin.librdkafka.conf"
    if not path.is_file():
        raise UsageError(f"{state_dir}: no admin.librdkafka.conf; is the cluster up?")
    return read_connection(path)
