"""`ClusterNodes`: a stack's Kafka nodes, carried out by the engine `kraftform apply --state-dir` runs, not by a
second one: the Docker runtime's single-node operations and `runtime.nodes.rolling`'s order, gates, revert, partition
moves and membership changes. pulumi-docker would replace a changed container on its own, with no gate before
the stop and none after the start, and delete removed ones all at once; this resource hands the node work to
the runtime instead.

The engine keeps no state directory between runs: each call makes a private one for the length of the call
from the stack's secrets and from Docker itself (each node container carries its record:
`docker_engine.recovered`), so an update interrupted at any point (a roll halted, a SIGKILLed `pulumi up`)
resumes from what really runs, as the CLI resumes from its state directory. The inputs hold, per node, what it
is rendered with (no secret in it): a preview's diff names the nodes that change and the settings why.

- create: `cluster up` (the nodes registered and a record written and read back, within its deadline; a node
  that does not start fails naming its log's last error)
- update: `cluster_work` + `carry_out`: adds, the roll (the active controller last), partition moves, removals
  (drained, stopped, unregistered or taken out of the voters, one at a time; their volumes deleted)
- delete: the containers and their volumes (the network is pulumi-docker's own resource)
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ResourceProvider, UpdateResult

from kraftform.cluster.containers import (
    client_bootstrap,
    container_specs,
    in_containers,
    network_name,
    render_in_containers,
)
from kraftform.cluster.render import ClusterSecrets, secrets_from_dict
from kraftform.cluster.spec_json import cluster_from_json, cluster_to_json
from kraftform.cluster.topology import topology
from kraftform.errors import PlanRefusedError, UsageError
from kraftform.plan.changes import Safety
from kraftform.runtime.engines.engine import docker_client, host_client
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.docker_engine import DockerRuntime, hosts_json, recovered
from kraftform.runtime.nodes.rolling import RollOptions, carry_out, cluster_work
from kraftform.specset.hosts import node_hosts
from kraftform.specset.model import ClusterSpec

#: As long as `kraftform cluster up` waits for a new cluster (its --timeout default).
START_TIMEOUT_S = 240.0
#: The CLI's defaults: the replication throttle while partitions move, how long a node may take to be back.
ROLL = RollOptions()
#: Another cluster, not a change of this one.
IDENTITY = ("name", "mode")


def node_inputs(cluster: ClusterSpec, secrets: ClusterSecrets) -> dict[str, Any]:
    """Per node, what the runtime records when it starts it (`deployment.started`): the preview's diff."""
    spec = in_containers(cluster)
    placed = {name: h.name for name, h in node_hosts(spec).items()}
    return {r.node.name: {k: v for k, v in dataclasses.asdict(
        dep.started(r, spec.kafka_version, host=placed.get(r.node.name, ""))).items()
        if k not in ("name", "handle") and (k != "host" or v)} for r in render_in_containers(topology(spec), secrets)}


def _plain(value: Any) -> Any:
    """The engine hands numbers back as floats: 1004.0 and 1004 are the same input."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _not_running(nodes: Mapping[str, Any], spec: ClusterSpec) -> list[str]:
    """The declared nodes whose container is not running on its Docker engine (stopped, exited, removed)."""
    running: set[str] = set()
    for client in _engines(spec):
        try:
            running |= {c.name for c in client.containers.list(filters={"status": "running"})}
        finally:
            client.close()
    return sorted(set(nodes) - running)


def _engines(spec: ClusterSpec) -> list[docker.DockerClient]:
    """This machine's engine, or each host's."""
    if not spec.hosts:
        return [docker_client()]
    return [host_client(h.name, h.docker, [h.tls.ca, h.tls.cert, h.tls.key] if h.tls else None) for h in spec.hosts]


def _brokers(nodes: Mapping[str, Any]) -> set[str]:
    return {name for name, n in nodes.items() if "broker" in n["roles"]}


#: What a protected stack answers a change that deletes a node's data: the CLI's `--allow-destructive`, here.
CONSENT = ("Run that `pulumi up` with `pulumi config set kraftform:protect false` (the consent the CLI's "
           "--allow-destructive gives), then set it back")


def removals(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """What an update would delete with its data, from the inputs alone (so `check` can refuse it before a
    preview ends): the nodes the old inputs ran that the new cluster section does not declare, or every node when
    the cluster is another one (its mode changed: replaced, the old volumes deleted; a new name is a resource of
    its own, and Pulumi's `protect` on this one stops the old one's deletion). The new `nodes`
    input is not read: it is unknown in a preview while the secrets change."""
    if not olds.get("cluster") or not olds.get("nodes"):
        return []
    old, new = cluster_from_json(olds["cluster"]), cluster_from_json(news["cluster"])
    running = sorted(olds["nodes"])
    changed = [k for k in IDENTITY if getattr(old, k) != getattr(new, k)]
    if changed:
        return [f"{name} (the cluster's {changed[0]} changes {getattr(old, changed[0])} -> "
                f"{getattr(new, changed[0])}: a new cluster replaces it, every node's data goes)" for name in running]
    declared = {n.name for n in topology(in_containers(new)).nodes}
    return [f"{name} (removed from the specs: its data volume is deleted)" for name in running
            if name not in declared]


class ClusterNodesProvider(ResourceProvider):
    """Inputs: `cluster` (the cluster section, `spec_json`), `image`, `secrets` (the stack's secrets resource's
    outputs), `nodes` (`node_inputs`), `protect`; and, as `kraftform apply`'s options, `throttle` (bytes/s),
    `node_timeout_s`, `gate_timeout_s`."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """While the stack protects its objects, node work that deletes data (brokers or controllers removed, the
        cluster replaced) fails here, so `pulumi preview` shows it and nothing runs; the failure names no property
        (Pulumi would print its whole value first)."""
        if not news.get("protect"):
            return CheckResult(news, [])
        return CheckResult(news, [CheckFailure("", f"node {what}: refused while the stack protects its objects "
                                                   f"(kraftform:protect, on by default in prod). {CONSENT}")
                                  for what in removals(olds, news)])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = _plain(olds), _plain(news)
        # The cluster section compared as the spec it stands for: a field kraftform added since (its default in
        # the new inputs, absent from the old) is no change.
        old["cluster"], new["cluster"] = (cluster_to_json(cluster_from_json(c)) for c in (old["cluster"],
                                                                                        new["cluster"]))
        changed = [k for k in ("cluster", "nodes", "image") if old.get(k) != new.get(k)]
        replaces = ["cluster"] if any(old["cluster"][k] != new["cluster"][k] for k in IDENTITY) else []
        # The inputs alone would call a cluster with a stopped node unchanged: the update starts it (`carry_out`).
        stopped = not changed and bool(_not_running(new["nodes"], cluster_from_json(new["cluster"])))
        return DiffResult(changes=bool(changed) or stopped, replaces=replaces, delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        spec = cluster_from_json(props["cluster"])
        with _runtime(props) as runtime:
            runtime.up(spec, timeout=START_TIMEOUT_S, secrets=secrets_from_dict(props["secrets"]))
        return CreateResult(spec.name, props)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        spec = cluster_from_json(news["cluster"])
        with _runtime(news, olds) as runtime:
            if not (runtime.state_dir / dep.STATE_FILE).is_file():
                raise UsageError(f"no node container of cluster {spec.name} is on this Docker engine (removed "
                                 f"outside Pulumi?): start them again, or `pulumi destroy` and `pulumi up` for a new "
                                 f"cluster")
            connection = dep.admin_config(runtime.state_dir)
            options = RollOptions(node_timeout_s=float(news.get("node_timeout_s") or ROLL.node_timeout_s),
                                  gate_timeout_s=float(news.get("gate_timeout_s") or ROLL.gate_timeout_s),
                                  throttle_bytes_per_s=int(news.get("throttle") or ROLL.throttle_bytes_per_s),
                                  purge_removed=True)
            work = cluster_work(runtime, spec, connection, options.throttle_bytes_per_s)
            destructive = [c for c in work.changes(spec) if c.safety is Safety.DESTRUCTIVE]
            if destructive and news.get("protect"):  # `check` refused it from the inputs; this is what runs
                raise PlanRefusedError(
                    f"{len(destructive)} destructive change(s) to the cluster's nodes while the stack protects its "
                    f"objects (kraftform:protect); nothing was done:\n" + "\n".join(
                        f"  {c.action} {c.resource}: {c.reason}" for c in destructive) + f"\n{CONSENT}")
            if _brokers(olds["nodes"]) != _brokers(news["nodes"]):
                # An update that failed before its moves leaves the stack's old inputs: move them now.
                work = dataclasses.replace(work, rebalance_pending=True)
            carry_out(runtime, spec, work, connection, options, _progress)
        return UpdateResult(news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        with _runtime(props) as runtime:
            if not (runtime.state_dir / dep.STATE_FILE).is_file():
                return  # no container of the cluster is left
            for name in list(dep.load(runtime.state_dir).previous):
                runtime.settle_node(name)  # kept aside by an interrupted roll, it shares the node's volume
            runtime.down(purge=True, keep_network=True)


def _progress(line: str) -> None:
    """The roll's steps, on the provider's standard error (its standard output is the engine's channel)."""
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def _runtime(props: dict[str, Any], olds: dict[str, Any] | None = None) -> Iterator[DockerRuntime]:
    """The Docker runtime over a private state directory made for this call: the stack's secrets, the client
    files, and the node records Docker's containers carry, read from every engine the cluster runs on now or ran
    on before this update (`olds`): a host taken out of the specs still holds the nodes the update removes."""
    spec = in_containers(cluster_from_json(props["cluster"]))
    before = in_containers(cluster_from_json(olds["cluster"])) if olds else None
    hosts = {h.name: h for h in (*(before.hosts if before else ()), *spec.hosts)}
    secrets = secrets_from_dict(props["secrets"])
    state_dir = Path(tempfile.mkdtemp(prefix="kraftform-stack-"))
    try:
        runtime = DockerRuntime(state_dir, props["image"])
        topo = topology(spec)
        specs = container_specs(topo, secrets, props["image"])
        if before is not None:
            runtime.know(before)
        runtime.know(spec)
        nodes: list[dep.NodeRecord] = []
        previous: dict[str, dep.NodeRecord] = {}
        for host in list(hosts) or [""]:
            found, aside = recovered(runtime.engine(host), spec.name)
            nodes += found
            previous |= aside
        nodes.sort(key=lambda r: r.node_id)
        if nodes or previous:
            dep.save_secrets(state_dir, secrets)
            bootstrap = client_bootstrap(topo, specs)
            dep.write_client_files(state_dir, bootstrap, spec.security.admin_user, secrets.admin_password,
                                   spec.security.sasl_mechanism, secrets.ca.cert_pem)
            versions = sorted({n.kafka_version or spec.kafka_version for n in nodes})
            dep.save(state_dir, dep.Deployment(
                runtime.name, spec.name, bootstrap, sum("broker" in n.roles for n in nodes),
                versions[0] if versions else spec.kafka_version, nodes, {
                    "network": network_name(spec.name), "image": props["image"],
                    **({dep.HOSTS: hosts_json(hosts.values())} if hosts else {})}, previous))
        yield runtime
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def nodes_props(cluster: ClusterSpec, image: pulumi.Input[str], secrets: pulumi.Input[dict[str, Any]],
                nodes: pulumi.Input[dict[str, Any]], options: RollOptions = ROLL, protect: bool = False
                ) -> dict[str, Any]:
    """The resource's inputs: `secrets` is the secrets resource's outputs (`secrets_to_dict`), `nodes` what
    `node_inputs` makes of them; `protect`, whether the stack protects its objects (`kraftform:protect`)."""
    return {"cluster": cluster_to_json(cluster), "image": image, "secrets": secrets, "nodes": nodes,
            "throttle": options.throttle_bytes_per_s, "node_timeout_s": options.node_timeout_s,
            "gate_timeout_s": options.gate_timeout_s, "protect": protect}


class ClusterNodes(pulumi.dynamic.Resource):
    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["secrets"])
        super().__init__(ClusterNodesProvider(), name, {**props, "secrets": pulumi.Output.secret(props["secrets"])},
                         pulumi.ResourceOptions.merge(opts, secret))
