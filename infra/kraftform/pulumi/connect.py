"""`ConnectCluster`: a declared Kafka Connect cluster under `pulumi up`, its workers in containers beside the
stack's cluster (`runtime.connect.containers`) and its connectors reconciled through their REST API by the code
`kraftform connect plan` and `apply` run (`connect.reconcile`), not a second one.

- create/update: the workers made (or made again, one at a time, where what they run changed), then the
  connectors' plan: a problem (a setting the plugin refuses, a grant not in Kafka) fails the update naming the
  connector, as does a destructive change (a connector deleted, or renamed) while the stack protects its objects;
  otherwise applied, and the update returns only once every connector is in its declared state with its tasks
  running: a task that fails fails `pulumi up` with the connector's name, its place in the specs and the
  task's error.
- diff: the inputs, and then what runs: a worker stopped or made from something else, a connector changed,
  paused or deleted with curl, is a change the preview shows and the update repairs.
- delete: the worker containers (the connectors' configs and offsets are in the cluster's internal topics).

The REST API's and the key stores' passwords are made at create and kept as secret outputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

from kraftform.cluster.certificates import KeyPair
from kraftform.cluster.connect import rest_port
from kraftform.cluster.spec_json import from_json, to_json
from kraftform.connect.reconcile import apply_connect, plan_connect
from kraftform.errors import ConnectionFailed, KafkaRequestFailed, Location, PlanRefusedError
from kraftform.kafka.observe import acl_bindings
from kraftform.plan.changes import Plan, Safety
from kraftform.plan.connectors import Logins
from kraftform.plan.render import render_text
from kraftform.pulumi.nodes import _plain
from kraftform.pulumi.providers import connection_of
from kraftform.runtime.connect.containers import ConnectDeployment, DockerConnectWorkers
from kraftform.runtime.engines.engine import docker_client
from kraftform.specset.model import ConnectSpec

#: Inputs a change of which is another Connect cluster (its containers' names), not a change of this one.
IDENTITY = ("cluster",)
#: Kept out of the diff: where a connector sits in the spec files (moving it is not a change of it).
UNDIFFED = ("locations",)
MADE = ("rest_password", "store_password")


def connect_props(spec: ConnectSpec, cluster: str, network: pulumi.Input[str], image: pulumi.Input[str],
                  bootstrap: str, ca: pulumi.Input[dict[str, str]], password: pulumi.Input[str],
                  logins: pulumi.Input[dict[str, str]], environment: pulumi.Input[dict[str, str]],
                  connection: pulumi.Input[dict[str, Any]], protect: bool) -> dict[str, Any]:
    """The resource's inputs: the Connect section as data (`spec_json`), the network and image of the cluster,
    and the secrets (`ca` the cluster CA's `cert` and `key`)."""
    return {"connect": to_json(spec), "cluster": cluster, "network": network, "image": image,
            "bootstrap": bootstrap, "ca": ca, "password": password, "logins": logins,
            "environment": environment, "connection": connection, "protect": protect,
            "locations": {"": to_json(spec.location), **{c.name: to_json(c.location) for c in spec.connectors}}}


def _spec(props: Mapping[str, Any]) -> ConnectSpec:
    """The Connect section, with the places in the spec files error messages name."""
    spec = from_json(ConnectSpec, props["connect"])
    places = props.get("locations") or {}

    def at(name: str) -> Location:
        return from_json(Location, places[name]) if name in places else Location("<the stack's specs>")

    return dataclasses.replace(spec, location=at(""), connectors=tuple(
        dataclasses.replace(c, location=at(c.name)) for c in spec.connectors))


def _deployment(props: Mapping[str, Any]) -> ConnectDeployment:
    p = _plain(props)
    return ConnectDeployment(_spec(p), p["cluster"], p["network"], p["image"], p["bootstrap"],
                             KeyPair(p["ca"]["cert"], p["ca"]["key"]), p["password"], p["rest_password"],
                             p["store_password"], dict(p.get("logins") or {}), dict(p.get("environment") or {}))


@contextlib.contextmanager
def _workers(props: Mapping[str, Any]) -> Iterator[DockerConnectWorkers]:
    """The workers for one provider call; the CA the REST client checks them with in a private temporary file
    removed when the call ends."""
    client = docker_client()
    deployment = _deployment(props)
    try:
        with tempfile.NamedTemporaryFile("w", prefix="kraftform-ca-", suffix=".pem") as ca:
            ca.write(deployment.ca.cert_pem)
            ca.flush()
            yield DockerConnectWorkers(client, deployment, ca.name)
    finally:
        client.close()


def _plan(workers: DockerConnectWorkers, props: Mapping[str, Any], relogin: frozenset[str] = frozenset()) -> Plan:
    """`relogin`: the connector users whose password the workers were just given (their tasks restart)."""
    with connection_of(dict(props)) as connection:
        granted = acl_bindings(connection)
    return plan_connect(workers.rest(), workers.d.spec, granted, Logins(workers.d.files().logins, relogin))


def _progress(line: str) -> None:
    """On the provider's standard error (its standard output is the engine's channel)."""
    print(line, file=sys.stderr, flush=True)


def reconcile(props: Mapping[str, Any]) -> None:
    """The workers as declared, then the connectors; returns when every connector is as declared."""
    with _workers(props) as workers:
        workers.up(_progress)
        plan = _plan(workers, props, workers.sync_logins())
        spec = workers.d.spec
        if plan.problems:
            raise PlanRefusedError(f"Connect cluster {spec.name!r}: the connectors' plan has problems; no connector "
                                   f"was changed:\n" + "\n".join(f"  {p}" for p in plan.problems))
        destructive = plan.by_safety(Safety.DESTRUCTIVE)
        if destructive and props.get("protect"):
            raise PlanRefusedError(f"Connect cluster {spec.name!r}: the stack protects its objects (kraftform:protect"
                                   f" or env prod) and the plan deletes or replaces connectors; nothing was changed:\n"
                                   + render_text(Plan(destructive)))
        if not plan.empty:
            _progress(render_text(plan))
        apply_connect(workers.rest(), spec, plan, _progress)
        workers.mark_logins_applied()


def drifted(props: Mapping[str, Any]) -> bool:
    """Whether what runs differs from the inputs: a worker not running or made from something else, a connector
    whose config or state is not as declared (changed with curl), a connector not declared."""
    with _workers(props) as workers:
        if workers.not_running() or workers.stale():
            return True
        try:
            return not _plan(workers, props, workers.stale_logins()).empty
        except (ConnectionFailed, KafkaRequestFailed):
            return True


class ConnectClusterProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = _plain(olds), _plain(news)
        changed = [k for k in new if k not in (*UNDIFFED, *MADE) and old.get(k) != new.get(k)]
        replaces = [k for k in IDENTITY if old.get(k) != new.get(k)]
        if old.get("connect", {}).get("name") != new["connect"]["name"]:
            replaces.append("connect")
        running = not changed and drifted({**new, **{k: old[k] for k in MADE}})
        return DiffResult(changes=bool(changed) or running, replaces=replaces, delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = {**props, **{k: secrets.token_urlsafe(24) for k in MADE}}
        reconcile(outs)
        return CreateResult(f"{props['cluster']}/{props['connect']['name']}", outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        outs = {**news, **{k: olds[k] for k in MADE}}
        reconcile(outs)
        return UpdateResult(outs)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        with _workers(props) as workers:
            workers.down()


class ConnectCluster(pulumi.dynamic.Resource):
    rest_password: pulumi.Output[str]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        spec = from_json(ConnectSpec, props["connect"])
        #: Each worker's REST API, published on this machine.
        self.urls = [f"https://127.0.0.1:{rest_port(spec, i)}" for i in range(spec.workers)]
        hidden = ["ca", "password", "logins", "environment", "connection", *MADE]
        super().__init__(ConnectClusterProvider(), name, {
            **props, **{k: pulumi.Output.secret(props[k]) for k in hidden if k in props}, "rest_password": None},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=hidden)))
