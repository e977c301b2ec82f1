"""Dynamic providers: each Kafka resource in a Pulumi stack is planned and applied by kraftform's own
planner and applier, scoped to that one resource (the stack's topics, as one resource, are in `topics`).

Pulumi pickles providers with dill into the stack state, so a provider holds no client and no secret:
connection settings arrive as (secret) inputs, and clients are created inside each method. Observations
are cached per process for a few seconds, so the many resources of one `pulumi refresh` share one bulk
read of the cluster instead of one read each.

`read` reports what the cluster holds, so `pulumi refresh` (and `preview --refresh`) shows drift made
behind Pulumi's back; `diff` compares canonical forms (ACL bindings one operation each, quota values as
numbers), so an observed resource that matches its inputs diffs to nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pulumi
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from kraftform.errors import ConnectionFailed, KraftformError
from kraftform.kafka.admin import Admin
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.connect import Connection
from kraftform.kafka.credentials import check_passwords
from kraftform.kafka.observe import observe
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.plan.state import ClusterState
from kraftform.specset.model import (
    DEFAULT_ENTITY,
    AclBinding,
    AclSpec,
    ClusterSpec,
    PrincipalSpec,
    QuotaEntity,
    QuotaSpec,
    SecretRef,
    SpecSet,
    UserSpec,
)
from kraftform.versions import KAFKA_VERSION
from kraftform.waiting import poll

OBSERVATION_TTL_S = 5.0
FIRST_READ_S = 180.0
_observations: dict[str, tuple[float, ClusterState]] = {}


@contextlib.contextmanager
def connection_of(props: dict[str, Any]) -> Iterator[Connection]:
    """The connection for one provider call. `ca_pem` (a cluster made by the stack) is written to a private
    temporary file librdkafka can read, removed when the call ends, so nothing is left behind in /tmp;
    `ca_path` (an existing cluster's CA) is used as is."""
    c = props["connection"]
    with contextlib.ExitStack() as cleanup:
        ca_path = c.get("ca_path")
        if c.get("ca_pem"):
            fd, ca_path = tempfile.mkstemp(prefix="kraftform-ca-", suffix=".pem")
            cleanup.callback(os.unlink, ca_path)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(c["ca_pem"])
        yield Connection(c["bootstrap"], c.get("protocol", "SASL_SSL"), c.get("mechanism"), c.get("username"),
                         c.get("password"), ca_path)


def first_read(connection: Connection, what: str, topics_only: list[str] | None = None,
               admin: Admin | None = None) -> ClusterState:
    """One observation; a cluster the same `pulumi up` is still starting gets FIRST_READ_S to answer."""
    return poll(f"reading {what} at {connection.bootstrap}", FIRST_READ_S,
                lambda: observe(connection, topics_only, admin).state, interval=2.0, retry_on=(KraftformError,),
                error=ConnectionFailed)


def observed(connection: Connection, fresh: bool = False) -> ClusterState:
    """The cluster, read in bulk at most once per OBSERVATION_TTL_S for all resources of this process."""
    cached = _observations.get(connection.bootstrap)
    if fresh or cached is None or time.monotonic() - cached[0] > OBSERVATION_TTL_S:
        state = first_read(connection, "the cluster")
        cached = (time.monotonic(), state)
        _observations[connection.bootstrap] = cached
    return cached[1]


class TopicProvider(ResourceProvider):
    """The provider of the per-topic resources earlier versions registered, kept so stacks that hold them still
    load (the state names this class). The topics are now one `Topics` resource that adopts them as they
    are, so the engine deleting these old resources must not delete a topic: here it only forgets it."""

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to do: the stack's `Topics` resource manages the topic now."""


def _access_specs(props: dict[str, Any], brokers: int) -> tuple[SpecSet, dict[str, str | None]]:
    """One principal's SCRAM credential, ACL bindings and quotas as a spec set declaring only them."""
    principal = props.get("principal")
    user = props.get("user")
    users: tuple[UserSpec, ...] = ()
    found: dict[str, str | None] = {}
    if user:
        users = (UserSpec(user["name"], SecretRef("pulumi_config", user["name"]), user["mechanism"],
                          int(user["iterations"])),)
        found[user["name"]] = user["password"]
    acls = tuple(_acl_spec(a) for a in props.get("acls") or ())
    quotas = tuple(QuotaSpec(QuotaEntity(q.get("user"), q.get("client_id")),
                             {k: float(v) for k, v in q["values"].items()}) for q in props.get("quotas") or ())
    principals = (PrincipalSpec(principal),) if principal else ()
    return SpecSet(ClusterSpec("pulumi", max(1, brokers), KAFKA_VERSION), acls=acls, quotas=quotas, users=users,
                   principals=principals), found


def _bindings(acls: Any) -> frozenset[AclBinding]:
    """ACL inputs (grouped operations, as the specs write them) as Kafka's bindings, one operation each."""
    return frozenset(b for a in acls or () for b in _acl_spec(a).bindings())


def _acl_spec(a: Mapping[str, Any]) -> AclSpec:
    return AclSpec(a["principal"], a["resource_type"], a["resource_name"], tuple(a["operations"]),
                   a["pattern_type"], a["permission"], a["host"])


def _quota_values(quotas: Any) -> dict[tuple[str | None, str | None], dict[str, float]]:
    return {(q.get("user"), q.get("client_id")): {k: float(v) for k, v in q["values"].items()} for q in quotas or ()}


def _user_facts(user: Any) -> tuple[Any, ...] | None:
    return None if not user else (user["name"], user["mechanism"], int(user["iterations"]), user.get("password"))


class AccessProvider(ResourceProvider):
    """Everything of one principal: its SCRAM credential, ACL bindings and quotas, planned and applied by
    `kraftform apply`'s code scoped to that principal. Deleting the resource removes them all (the
    principal stays declared for the planner, so it owns them); quotas of default entities, which belong
    to no principal, are set by a resource without a principal and left in place when it goes."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key, canonical in (("user", _user_facts), ("acls", _bindings), ("quotas", _quota_values))
                   if canonical(olds.get(key)) != canonical(news.get(key))]
        replaces = ["principal"] if olds.get("principal") != news.get("principal") else []
        return DiffResult(changes=bool(changed or replaces), replaces=replaces, delete_before_replace=True)

    def _reconcile(self, props: dict[str, Any]) -> None:
        with connection_of(props) as connection:
            specs, found = _access_specs(props, len(observed(connection).brokers))
            live = plan_cluster(connection, specs, found)
            apply_cluster(connection, specs, live, ApplyOptions(allow_destructive=True), lambda _m: None)
            _observations.pop(connection.bootstrap, None)

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._reconcile(props)
        return CreateResult(props.get("principal") or "defaults", props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._reconcile(news)
        return UpdateResult(news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """What the cluster holds for this principal, in the inputs' shape where it matches them (so a
        refresh without drift changes nothing) and one binding per operation where it does not. A user
        whose stored password no longer logs in reads back without it, so the next update sets it again."""
        principal = props.get("principal")
        with connection_of(props) as connection:
            state = observed(connection, fresh=True)
            specs, found = _access_specs(props, len(state.brokers))
            state = check_passwords(connection, state, specs.users, found)
        current_acls = frozenset(b for b in state.acls if principal is not None and b.principal == principal)
        acls = props.get("acls") or [] if current_acls == _bindings(props.get("acls")) else [
            {"principal": b.principal, "resource_type": b.resource_type, "resource_name": b.resource_name,
             "pattern_type": b.pattern_type, "operations": [b.operation], "permission": b.permission,
             "host": b.host} for b in sorted(current_acls, key=lambda b: dataclasses.astuple(b))]
        name = principal.removeprefix("User:") if principal else None
        ours = (lambda e: e.user == name) if name else (lambda e: e.user in (None, DEFAULT_ENTITY))
        current_quotas = {(e.user, e.client_id): dict(v) for e, v in state.quotas.items() if ours(e)}
        quotas = props.get("quotas") or [] if current_quotas == _quota_values(props.get("quotas")) else [
            {"user": u, "client_id": c, "values": v}
            for (u, c), v in sorted(current_quotas.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or ""))]
        user = props.get("user")
        if user:
            live = state.users.get(user["name"])
            user = None if live is None else {**user, "mechanism": live.mechanism, "iterations": live.iterations,
                                               "password": None if live.password_ok is False else user["password"]}
        return ReadResult(id_, {**props, "acls": acls, "quotas": quotas, "user": user})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        self._reconcile({**props, "user": None, "acls": [], "quotas": []})


def access_props(principal: str | None, specs: SpecSet, password: pulumi.Input[str] | None) -> dict[str, Any]:
    """The inputs of one principal's `Access` resource, from the stack's specs."""
    name = principal.removeprefix("User:") if principal else None
    user = next((u for u in specs.users if u.name == name), None)
    acls = [{"principal": a.principal, "resource_type": a.resource_type, "resource_name": a.resource_name,
             "pattern_type": a.pattern_type, "operations": list(a.operations), "permission": a.permission,
             "host": a.host} for a in specs.acls if a.principal == principal]
    quotas = [{"user": q.entity.user, "client_id": q.entity.client_id, "values": dict(q.values)}
              for q in specs.quotas
              if (f"User:{q.entity.user}" == principal if principal else q.entity.user in (None, DEFAULT_ENTITY))]
    return {"principal": principal, "acls": acls, "quotas": quotas,
            "user": None if user is None else {"name": user.name, "mechanism": user.mechanism,
                                               "iterations": user.iterations, "password": password}}


class Access(pulumi.dynamic.Resource):
    def __init__(self, name: str, props: dict[str, Any], connection: pulumi.Input[dict[str, Any]],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(AccessProvider(), name, {**props, "connection": pulumi.Output.secret(connection)},
                         pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                             additional_secret_outputs=["connection", "user"])))
