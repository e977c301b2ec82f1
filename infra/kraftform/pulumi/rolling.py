"""The roll's gates as Pulumi resources, so that `pulumi up` changes broker and controller containers one at a
time, as `kraftform apply --state-dir` does, never all at once.

Each node's container sits between two gates, and each node's first gate depends on the previous node's second:

    may-stop(node 1) -> container(node 1) -> back(node 1) -> may-stop(node 2) -> container(node 2) -> ...

`may-stop` is updated when the node's container is about to change (its revision: a digest of its spec and
image) and waits until the node may stop (no partition it is in the ISR of at min.insync.replicas, the voters
keeping a majority); `back` is updated when the container was replaced and waits until the node is registered
or caught up and nothing is under-replicated. Pulumi registers a resource only once its dependencies are done,
so a replacement waits for the gate before it, and the next node waits for the gate after. A node that does not
come back fails the update there, every later node untouched; its log's last error is the message. On a first
`pulumi up` the gates pass at once (there is nothing to stop yet). `Partitions` moves replicas onto added brokers
and off removed ones (before Pulumi deletes their containers, which it does last), and `Membership` unregisters
a removed broker, or takes a removed controller out of the voters, once its container is gone. An added
controller joins the voters by itself once caught up (its `back` gate waits for that).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import LABEL_CLUSTER, ContainerSpec
from kraftform.cluster.topology import Node, Role
from kraftform.errors import KraftformError
from kraftform.kafka import gates
from kraftform.pulumi.providers import connection_of
from kraftform.runtime.rolling import RollHalted, RollOptions, rebalance, wait_gate
from kraftform.runtime.tools import CLUSTER_TOOL, METADATA_QUORUM, run_kafka_tool

#: How long a node may take to be safe to stop, or to be back.
GATE_TIMEOUT_S = 300.0


def revision(spec: ContainerSpec, image_id: str) -> str:
    """What a container's replacement follows from: its spec (files included, so a new key or setting counts)
    and its image. A digest: the files hold keys."""
    return hashlib.sha256(repr((spec, image_id)).encode()).hexdigest()[:16]


def node_id(value: Any) -> int:
    """A node id as the engine hands it back: the engine sends a dynamic provider's numbers as floats (1004.0),
    and `str()` of one is no id Kafka's tools take."""
    return int(float(value))


def _node(props: dict[str, Any]) -> Node:
    roles: tuple[Role, ...] = tuple(props["roles"])
    return Node(node_id(props["node_id"]), props["node"], roles)


def _last_error(container: str) -> str:
    from kraftform.runtime.engine import docker_client
    from kraftform.runtime.local import last_error_line

    try:
        return last_error_line(docker_client().containers.get(container).logs(tail=400).decode(errors="replace"))
    except Exception as exc:
        return f"(its log could not be read: {exc})"


class NodeGateProvider(ResourceProvider):
    """`phase` "may-stop" or "back"; nothing waits on create, an update of `revision` waits for the gate."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds.get("revision") != news.get("revision"), replaces=[])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(f"{props['phase']}-{props['node']}", props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        node, timeout = _node(news), float(news.get("timeout_s") or GATE_TIMEOUT_S)
        with connection_of(news) as connection:
            try:
                if news["phase"] == "may-stop":
                    wait_gate(f"{node.name} to be safe to stop", timeout, lambda: gates.why_not_stop(connection, node))
                else:
                    since = int(time.time() * 1000)
                    wait_gate(f"{node.name} to be back", timeout,
                              lambda: gates.why_not_ready(connection, node, since))
            except RollHalted as exc:
                cause = f"; its log's last error: {_last_error(news['node'])}" if news["phase"] == "back" else ""
                raise RollHalted(f"the roll stopped at {node.name}: {exc}{cause}. The nodes after it were not "
                                 f"changed; fix the specs and run `pulumi up` again") from None
        return UpdateResult(news)


class NodeGate(pulumi.dynamic.Resource):
    def __init__(self, name: str, phase: str, node: Node, revision: pulumi.Input[str],
                 connection: pulumi.Input[dict[str, Any]], opts: pulumi.ResourceOptions) -> None:
        super().__init__(NodeGateProvider(), name, {
            "phase": phase, "node": node.name, "node_id": node.node_id, "roles": list(node.roles),
            "revision": revision, "timeout_s": GATE_TIMEOUT_S, "connection": pulumi.Output.secret(connection)},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["connection"])))


class PartitionsProvider(ResourceProvider):
    """`brokers`: the declared broker ids. A change moves replicas off brokers no longer declared and evens out
    the rest (added brokers included), throttled; then preferred leaders are elected."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=sorted(olds.get("brokers", [])) != sorted(news["brokers"]), replaces=[])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult("partitions", props)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        leaving = {node_id(b) for b in olds.get("brokers", [])} - {node_id(b) for b in news["brokers"]}
        with connection_of(news) as connection:
            rebalance(connection, leaving, RollOptions(throttle_bytes_per_s=int(news["throttle"])), lambda _m: None)
        return UpdateResult(news)


class Partitions(pulumi.dynamic.Resource):
    def __init__(self, name: str, brokers: list[int], throttle: int, connection: pulumi.Input[dict[str, Any]],
                 opts: pulumi.ResourceOptions) -> None:
        super().__init__(PartitionsProvider(), name, {
            "brokers": brokers, "throttle": throttle, "connection": pulumi.Output.secret(connection)},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["connection"])))


@contextlib.contextmanager
def _admin_properties(connection: Connection) -> Iterator[str]:
    fd, path = tempfile.mkstemp(prefix="kraftform-admin-", suffix=".properties")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(connection.java_properties())
        yield path
    finally:
        os.unlink(path)


def _cluster_runs(cluster: str | None) -> bool:
    """Whether any node container of `cluster` still exists (Docker's labels on the containers kraftform made);
    of any kraftform cluster for a resource recorded before its cluster's name was."""
    from kraftform.runtime.engine import docker_client

    label = LABEL_CLUSTER if cluster is None else f"{LABEL_CLUSTER}={cluster}"
    return bool(docker_client().containers.list(all=True, filters={"label": label}))


class MembershipProvider(ResourceProvider):
    """A node's place in the cluster's metadata: deleted after its container (which depends on it), so a removed
    broker is unregistered (kafka-cluster.sh unregister) and a removed controller taken out of the voters
    (kafka-metadata-quorum remove-controller) once it has stopped."""

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(f"node-{props['node_id']}", props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if not _cluster_runs(props.get("cluster")):
            return  # `pulumi destroy`: every node's container is gone, and with them the metadata to leave
        try:
            self._leave(props)
        except KraftformError:
            if not _cluster_runs(props.get("cluster")):
                return  # the rest of the cluster went meanwhile (a destroy deletes nodes in reverse roll order)
            raise

    def _leave(self, props: dict[str, Any]) -> None:
        with connection_of(props) as connection, _admin_properties(connection) as config:
            node = str(node_id(props["node_id"]))
            directory = gates.read_quorum(connection).directories.get(int(node)) if props.get("controller") else None
            if directory is not None:
                tool, args = METADATA_QUORUM, ["--bootstrap-server", connection.bootstrap, "--command-config", config,
                                               "remove-controller", "--controller-id", node,
                                               "--controller-directory-id", directory]
            elif props.get("controller"):
                return  # no longer a voter
            else:
                tool, args = CLUSTER_TOOL, ["unregister", "--bootstrap-server", connection.bootstrap, "--config",
                                            config, "--id", node]

            def attempt() -> str | None:
                try:
                    run_kafka_tool(tool, args)
                    return None
                except Exception as exc:
                    return str(exc)

            wait_gate(f"node {node} to leave the cluster's metadata", 60, attempt)


class Membership(pulumi.dynamic.Resource):
    def __init__(self, name: str, node: Node, cluster: str, connection: pulumi.Input[dict[str, Any]],
                 opts: pulumi.ResourceOptions) -> None:
        super().__init__(MembershipProvider(), name, {
            "node_id": node.node_id, "controller": node.is_controller, "cluster": cluster,
            "connection": pulumi.Output.secret(connection)},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["connection"])))
