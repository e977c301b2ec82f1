"""Dynamic providers: each Kafka resource in a Pulumi stack is planned and applied by kraftform's own
planner and applier, scoped to that one resource (the stack's topics, as one resource, are in `topics`).

Pulumi pickles providers with dill into the stack state, so a provider holds no client and no secret:
connection settings arrive as (secret) inputs, and clients are created inside each method. Each resource
hands the planner what it declares and owns (`plan.live.Desired`), not a made-up spec set, so the plan is
the CLI's plan of that slice: same ownership rules, same refusals, same settle loop.

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
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import pulumi
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from kraftform.cluster.connection import Connection
from kraftform.errors import (
    AuthenticationFailed,
    AuthorizationDenied,
    ConnectionFailed,
    KraftformError,
    PlanRefusedError,
    UsageError,
)
from kraftform.kafka.admin import Admin
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.credentials import check_passwords
from kraftform.kafka.observe import observe
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.plan.changes import Plan
from kraftform.plan.diff import OWNS_NOTHING
from kraftform.plan.live import Desired, cluster_identities
from kraftform.plan.state import ClusterState, UserState
from kraftform.specset.model import (
    DEFAULT_ENTITY,
    AclBinding,
    AclSpec,
    QuotaEntity,
    SecretRef,
    SpecSet,
    UserSpec,
)
from kraftform.waiting import NotYet, poll

T = TypeVar("T")

#: How long a cluster the same `pulumi up` is still starting gets to answer.
FIRST_READ_S = 180.0
#: A refused login this long after the first attempt is the password's fault, not a broker still starting.
LOGIN_GRACE_S = 15.0


@contextlib.contextmanager
def connection_of(props: dict[str, Any]) -> Iterator[Connection]:
    """The connection for one provider call. `ca_pem` (a cluster made by the stack) is written to a private
    temporary file librdkafka can read, removed when the call ends, so nothing is left behind in /tmp;
    `ca_path` (an existing cluster's CA) is used as is."""
    c = props["connection"]
    with contextlib.ExitStack() as cleanup:
        ca_path = None
        if c.get("ca_pem"):
            fd, ca_path = tempfile.mkstemp(prefix="kraftform-ca-", suffix=".pem")
            cleanup.callback(os.unlink, ca_path)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(c["ca_pem"])
        yield Connection.from_props(c, ca_path)


def until_answering(connection: Connection, what: str, attempt: Callable[[], T]) -> T:
    """`attempt` once the cluster answers: a cluster the same `pulumi up` is still starting gets FIRST_READ_S,
    but a refused login after LOGIN_GRACE_S, or an ACL that denies the admin, fails at once with its cause."""
    started = time.monotonic()

    def once() -> T:
        try:
            return attempt()
        except AuthenticationFailed:
            if time.monotonic() - started >= LOGIN_GRACE_S:
                raise
            raise NotYet("the login was refused (retrying while the brokers start)") from None
        except (AuthorizationDenied, PlanRefusedError, UsageError):
            raise
        except KraftformError as exc:
            raise NotYet(str(exc)) from None

    return poll(f"{what} at {connection.bootstrap}", FIRST_READ_S, once, interval=2.0, error=ConnectionFailed)


def first_read(connection: Connection, what: str, topics_only: list[str] | None = None,
               admin: Admin | None = None) -> ClusterState:
    """One observation, once the cluster answers (`until_answering`)."""
    return until_answering(connection, f"reading {what}", lambda: observe(connection, topics_only, admin).state)


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


def _access(props: dict[str, Any], admin_user: str | None) -> tuple[Desired, dict[str, str | None]]:
    """What one principal's resource declares (its SCRAM credential, ACL bindings and quotas) and owns (only
    those: its user, bindings with it as principal, quotas of its user), with the password it holds. The
    resource for default quotas owns nothing: its quotas are set, and left in place when it goes."""
    principal = props.get("principal")
    name = principal.removeprefix("User:") if principal else None
    user = props.get("user")
    users: tuple[UserSpec, ...] = ()
    found: dict[str, str | None] = {}
    if user:
        users = (UserSpec(user["name"], SecretRef("pulumi_config", user["name"]), user["mechanism"],
                          int(user["iterations"])),)
        found[user["name"]] = user["password"]
    state = ClusterState(acls=_bindings(props.get("acls")),
                         quotas={QuotaEntity(u, c): v for (u, c), v in _quota_values(props.get("quotas")).items()},
                         users={u.name: UserState(u.name, u.mechanism, u.iterations) for u in users})
    identities = cluster_identities(admin_user or "")
    owns = dataclasses.replace(OWNS_NOTHING, acl=lambda b: principal is not None and b.principal == principal,
                     quota=lambda e: name is not None and e.user == name,
                     user=lambda u: u == name and u not in identities)
    return Desired(state, owns, users, frozenset({principal}) if principal else frozenset()), found


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
            desired, found = _access(props, connection.username)
            # One client for the call's reads and writes: each new one is a TLS and SCRAM exchange per broker.
            admin = Admin(connection)
            live = until_answering(connection, f"planning {props.get('principal') or 'default quotas'}",
                                   lambda: plan_cluster(connection, desired, found, admin))
            apply_cluster(connection, desired, live, ApplyOptions(allow_destructive=True), lambda _m: None,
                          admin=admin)

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
            desired, found = _access(props, connection.username)
            state = check_passwords(connection, first_read(connection, "the cluster"), desired.users, found)
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


def _plan_and_apply(props: dict[str, Any], desired: Desired, what: str) -> None:
    """`kraftform apply`'s plan and apply of one resource's slice (`desired`), once the cluster answers."""
    with connection_of(props) as connection:
        admin = Admin(connection)
        live = until_answering(connection, f"planning {what}", lambda: plan_cluster(connection, desired, {}, admin))
        apply_cluster(connection, desired, live, ApplyOptions(allow_destructive=True), lambda _m: None, admin=admin)


def _planned(props: dict[str, Any], desired: Desired, what: str) -> Plan:
    """What the cluster holds against `desired`, for a refresh: each change's `current` is what Kafka has."""
    with connection_of(props) as connection:
        return until_answering(connection, f"reading {what}", lambda: plan_cluster(connection, desired, {})).plan


def _broker_desired(props: dict[str, Any]) -> Desired:
    """The broker settings the stack declares (`cluster.broker_config`), owning nothing else."""
    return Desired(ClusterState(), OWNS_NOTHING, broker_config=_settings(props))


def _settings(props: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in (props.get("settings") or {}).items()}


class BrokerSettingsProvider(ResourceProvider):
    """The cluster section's broker settings on a running cluster, planned and applied by `kraftform apply`'s
    code: dynamic ones set live (no container is replaced for them); a dynamic cluster default set behind the
    stack's back is removed. Read-only ones are in the brokers' server.properties (their containers), so the
    plan this resource makes never holds node work it would have to ignore."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=_settings(olds) != _settings(news), replaces=[], stables=[])

    def _reconcile(self, props: dict[str, Any]) -> None:
        _plan_and_apply(props, _broker_desired(props), "the broker settings")

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._reconcile(props)
        return CreateResult("broker-settings", props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._reconcile(news)
        return UpdateResult(news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """What the brokers' cluster defaults hold of the declared settings: drift shows on refresh."""
        declared = _settings(props)
        plan = _planned(props, _broker_desired(props), "the broker settings")
        current = dict(declared)
        for change in plan.changes:
            if change.key is not None and change.key in current:
                current[change.key] = change.current or ""
        return ReadResult(id_, {**props, "settings": current})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """The declared dynamic settings removed: brokers fall back to their own values."""
        self._reconcile({**props, "settings": {}})


def _levels(props: dict[str, Any]) -> dict[str, int]:
    return {k: int(v) for k, v in (props.get("levels") or {}).items()}


def _features_desired(props: dict[str, Any]) -> Desired:
    """The feature levels the stack declares (`plan.brokers.declared_features`), owning nothing else."""
    return Desired(ClusterState(), OWNS_NOTHING, features=_levels(props))


class FeaturesProvider(ResourceProvider):
    """The declared feature levels on a running cluster (metadata.version from `metadata_version`, then each of
    `features`), planned and applied by `kraftform apply`'s code with UpdateFeatures: no container is replaced for
    them. A move Kafka refuses fails the update in Kafka's words, and nothing is sent. The resource's removal
    leaves the levels as they are (Kafka cannot lower some of them; the others are no longer managed)."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=_levels(olds) != _levels(news), replaces=[], stables=[])

    def _reconcile(self, props: dict[str, Any]) -> None:
        _plan_and_apply(props, _features_desired(props), "the feature levels")

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._reconcile(props)
        return CreateResult("features", props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._reconcile(news)
        return UpdateResult(news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The finalised levels of the declared features: a level changed behind the stack shows on refresh."""
        plan = _planned(props, _features_desired(props), "the feature levels")
        levels = _levels(props)
        for change in plan.changes:
            if change.resource in levels and change.current is not None:
                levels[change.resource] = int(change.current)
        return ReadResult(id_, {**props, "levels": levels})


class Features(pulumi.dynamic.Resource):
    """The stack's feature levels (`FeaturesProvider`)."""

    def __init__(self, name: str, levels: dict[str, int], connection: pulumi.Input[dict[str, Any]],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(FeaturesProvider(), name, {"levels": levels, "connection": pulumi.Output.secret(
            connection)}, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                additional_secret_outputs=["connection"])))


def _groups(props: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {g: {k: str(v) for k, v in settings.items()} for g, settings in (props.get("groups") or {}).items()}


def _groups_desired(props: dict[str, Any]) -> Desired:
    """The declared groups' settings (`groups[].config`), owning nothing else."""
    return Desired(ClusterState(), OWNS_NOTHING, group_configs=_groups(props))


class GroupSettingsProvider(ResourceProvider):
    """The declared consumer, share and streams groups' settings (GROUP resources), planned and applied by
    `kraftform apply`'s code: set live, a setting on a declared group the stack does not declare removed. The
    resource's removal removes the settings it declared (the groups fall back to the brokers' defaults)."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=_groups(olds) != _groups(news), replaces=[], stables=[])

    def _reconcile(self, props: dict[str, Any]) -> None:
        _plan_and_apply(props, _groups_desired(props), "the groups' settings")

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._reconcile(props)
        return CreateResult("group-settings", props)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # A group the stack no longer declares: its settings go, as the resource's removal would remove them.
        gone: dict[str, dict[str, str]] = {g: {} for g in _groups(olds) if g not in _groups(news)}
        self._reconcile({**news, "groups": {**gone, **_groups(news)}})
        return UpdateResult(news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """What the declared groups hold: a setting changed behind the stack shows on refresh."""
        groups = _groups(props)
        for change in _planned(props, _groups_desired(props), "the groups' settings").changes:
            if change.resource in groups and change.key is not None:
                if change.current is None:
                    groups[change.resource].pop(change.key, None)
                else:
                    groups[change.resource][change.key] = change.current
        return ReadResult(id_, {**props, "groups": groups})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        self._reconcile({**props, "groups": {g: {} for g in _groups(props)}})


class GroupSettings(pulumi.dynamic.Resource):
    """The stack's groups' settings (`GroupSettingsProvider`)."""

    def __init__(self, name: str, groups: dict[str, dict[str, str]], connection: pulumi.Input[dict[str, Any]],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GroupSettingsProvider(), name, {"groups": groups, "connection": pulumi.Output.secret(
            connection)}, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                additional_secret_outputs=["connection"])))


class BrokerSettings(pulumi.dynamic.Resource):
    """The stack's dynamic broker settings (`BrokerSettingsProvider`)."""

    def __init__(self, name: str, settings: dict[str, str], connection: pulumi.Input[dict[str, Any]],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(BrokerSettingsProvider(), name, {"settings": settings, "connection": pulumi.Output.secret(
            connection)}, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                additional_secret_outputs=["connection"])))
