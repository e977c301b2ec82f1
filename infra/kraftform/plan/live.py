"""Specs against a live cluster: what kraftform owns there, and the plan that takes it to the specs.

A live cluster holds more than the specs describe: Kafka's internal topics, kraftform's own health topic,
the brokers' identities, and whatever other teams created. Ownership decides what kraftform may change or
delete; everything else is reported in the plan's notes and never touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from kraftform.plan.brokers import (
    broker_setting_changes,
    declared_features,
    elr_changes,
    feature_changes,
    node_changes,
    stray_cluster_defaults,
)
from kraftform.plan.changes import Action, Change, Credential, Kind, Plan, Safety
from kraftform.plan.diff import Ownership, diff_states
from kraftform.plan.groups import group_config_changes
from kraftform.plan.render import listed
from kraftform.plan.state import ClusterState, state_of
from kraftform.specset.model import (
    BROKER_USER,
    CONTROLLER_USER,
    DEFAULT_ENTITY,
    SCRAM_ANCHORS,
    AclBinding,
    ClusterSpec,
    QuotaEntity,
    SpecSet,
    UserSpec,
)

#: Kafka's internal topics (`__consumer_offsets`, ...) and kraftform's own (`kraftform.health`).
RESERVED_PREFIXES = ("__", "kraftform.")


def reserved(topic: str) -> bool:
    return topic.startswith(RESERVED_PREFIXES)


def declared_principals(specs: SpecSet) -> frozenset[str]:
    """Principals the specs speak about: SCRAM users, declared principals, ACL and quota subjects."""
    names = {f"User:{u.name}" for u in specs.users} | {p.name for p in specs.principals}
    names |= {a.principal for a in specs.acls}
    names |= {f"User:{q.entity.user}" for q in specs.quotas if q.entity.user not in (None, DEFAULT_ENTITY)}
    return frozenset(names)


def cluster_identities(admin_user: str) -> frozenset[str]:
    """The users the cluster itself runs as: never managed, never exported."""
    return frozenset({admin_user, BROKER_USER, CONTROLLER_USER, *SCRAM_ANCHORS.values()})


def ownership_of(specs: SpecSet) -> Ownership:
    """Topics: declared or under a managed prefix. ACLs, quotas, users: of declared principals, or all of
    them with `acl_principals: all`; the cluster's own identities never. With `acl_resources: managed`, an
    ACL also needs a managed resource: a topic (or topic prefix) inside the scope, or a group, transactional
    id or cluster resource that one of the specs' ACLs names."""
    scope = specs.cluster.managed_scope
    declared_topics = frozenset(t.name for t in specs.topics)
    principals = declared_principals(specs)
    everything = scope.acl_principals == "all"
    identities = cluster_identities(specs.cluster.security.admin_user)
    named = frozenset((a.resource_type, a.resource_name, a.pattern_type) for a in specs.acls)

    def topic(name: str) -> bool:
        return not reserved(name) and (name in declared_topics or scope.covers_topic(name))

    def managed_resource(binding: AclBinding) -> bool:
        if binding.resource_type != "topic":
            return (binding.resource_type, binding.resource_name, binding.pattern_type) in named
        if binding.pattern_type == "prefixed":  # every topic it matches must be inside the scope
            return scope.covers_topic(binding.resource_name)
        return binding.resource_name != "*" and topic(binding.resource_name)

    def acl(binding: AclBinding) -> bool:
        if scope.acl_resources == "managed" and not managed_resource(binding):
            return False
        return everything or binding.principal in principals

    def quota(entity: QuotaEntity) -> bool:
        return everything or (entity.user not in (None, DEFAULT_ENTITY) and f"User:{entity.user}" in principals)

    def user(name: str) -> bool:
        return name not in identities and (everything or f"User:{name}" in principals)

    return Ownership(topic=topic, acl=acl, quota=quota, user=user)


@dataclass(frozen=True)
class Desired:
    """What should be on a cluster and what may be touched there to get it. A spec set gives the whole of it
    (`desired_of`); a Pulumi resource gives its own slice (one principal's access, the stack's topics) without
    pretending to be a spec set."""

    state: ClusterState
    owns: Ownership
    #: The users whose passwords the plan checks by logging in, and names when missing.
    users: tuple[UserSpec, ...] = ()
    #: Principals the declaration speaks about (for the notes on what was left alone).
    principals: frozenset[str] = frozenset()
    #: The cluster section, when the declaration has one: its nodes are compared with the observed brokers.
    cluster: ClusterSpec | None = None
    #: The broker settings declared (None: not managed by this declaration, as by a Pulumi topic resource).
    broker_config: Mapping[str, str] | None = None
    #: Observe only these topics (and nothing but topics); None: the whole cluster.
    topics_only: tuple[str, ...] | None = None
    #: Feature -> declared level (`plan.brokers.declared_features`); the features not named are not managed.
    features: Mapping[str, int] = field(default_factory=dict)
    #: Group -> its declared settings; the groups not named are not read nor touched.
    group_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def desired_of(specs: SpecSet) -> Desired:
    return Desired(state_of(specs), ownership_of(specs), specs.users, declared_principals(specs), specs.cluster,
                   specs.cluster.broker_config, features=declared_features(specs.cluster),
                   group_configs={g.name: dict(g.config) for g in specs.groups})


def live_plan(specs: SpecSet, observed: ClusterState) -> Plan:
    """The changes that take the observed cluster to the specs."""
    return plan_against(desired_of(specs), observed)


@dataclass(frozen=True)
class OwnLogin:
    """A login kraftform itself uses: why it is one, and what a user does to change it all the same."""

    why: str
    remedy: str = ("change it by hand with kafka-configs, logged in as another admin, or remove it from the "
                   "specs")


def own_logins(changes: list[Change], logins: Mapping[str, OwnLogin],
               wanted: Desired) -> tuple[list[Change], list[str]]:
    """The changes with those that would alter or remove a login kraftform uses taken out: refused, naming the
    rule and the principal, when the declaration asks for them; left alone, with a note, when only the ownership
    of every principal (`acl_principals: all`) brought them in. Without this an admin named differently in the
    specs had its credential planned for deletion, and the next apply could not log in; a Connect cluster's
    running workers lost theirs to a rotation they had not been restarted for."""
    kept: list[Change] = []
    left: list[str] = []
    for change in changes:
        user = (change.resource if change.kind is Kind.USER else
                change.resource.removeprefix("User:") if change.kind is Kind.ACL and change.action is Action.DELETE
                and change.resource.startswith("User:") else None)
        login = logins.get(user) if user is not None else None
        if user is None or login is None:
            kept.append(change)
        elif user in wanted.state.users or f"User:{user}" in wanted.principals:
            kept.append(Change(Action.REFUSE, change.kind, change.resource, Safety.DESTRUCTIVE,
                               f"{change.action} refused: User:{user} is a login kraftform itself uses "
                               f"({login.why}): a plan never alters or deletes it, whatever the ownership settings "
                               f"say (rule: own logins); {login.remedy}",
                               change.key, change.current, change.desired))
        else:
            left.append(f"User:{user} {change.kind} ({change.action})")
    notes = [f"the logins kraftform uses are never altered or deleted (rule: own logins); left alone: {listed(left)}"
             ] if left else []
    return kept, notes


def plan_against(wanted: Desired, observed: ClusterState, logins: Mapping[str, OwnLogin] | None = None) -> Plan:
    """The changes that take the observed cluster to what `wanted` declares, touching only what it owns and never
    the `logins` kraftform uses (user -> which login it is)."""
    owns = wanted.owns
    current = dataclasses.replace(observed, topics={n: t for n, t in observed.topics.items() if not reserved(n)})
    # Removing an override reverts to *this cluster's* default, whatever the specs assume of its brokers.
    desired = dataclasses.replace(wanted.state, topic_defaults=observed.topic_defaults)
    plan = diff_states(current, desired, owns)
    notes: list[str] = []
    unmanaged = sorted(n for n in current.topics if n not in desired.topics and not owns.topic(n))
    if unmanaged:
        notes.append(f"{len(unmanaged)} topic{'s' if len(unmanaged) != 1 else ''} outside the managed scope "
                     f"left alone: {listed(unmanaged)}")
    left = [b for b in current.acls - desired.acls if not owns.acl(b)]
    principals = wanted.principals
    foreign_acls = sorted({b.principal for b in left if b.principal not in principals})
    if foreign_acls:
        notes.append(f"ACLs of {len(foreign_acls)} undeclared principal{'s' if len(foreign_acls) != 1 else ''} "
                     f"left alone: {listed(foreign_acls)}")
    outside = sorted(f"{b.principal} {b.grant()}" for b in left if b.principal in principals)
    if outside:
        notes.append(f"{len(outside)} ACL binding{'s' if len(outside) != 1 else ''} of declared principals on "
                     f"resources outside the managed scope left alone (acl_resources: managed): {listed(outside, 5)}")
    nodes = node_changes(wanted.cluster, observed) if wanted.cluster is not None else []
    nodes += feature_changes(wanted.features, observed)
    settings: list[Change] = []
    if wanted.broker_config is not None:
        settings = broker_setting_changes(wanted.broker_config, observed)
        stray = stray_cluster_defaults(wanted.broker_config, observed)
        if stray:
            notes.append(f"dynamic cluster-wide broker defaults the specs do not declare, left alone (declare them in "
                         f"cluster.broker_config, or remove them with kafka-configs --entity-default "
                         f"--delete-config): {listed(stray)}")
    groups = group_config_changes(wanted.group_configs, observed.group_configs)
    guarded, kept_notes = own_logins([*plan.changes, *settings, *groups], _logins(wanted, logins), wanted)
    anchors = anchor_changes(observed) if wanted.state.users or any(c.kind is Kind.USER for c in guarded) else []
    return Plan.of(elr_changes(wanted.cluster, [*anchors, *guarded, *nodes], observed), tuple(notes + kept_notes))


ANCHOR_REASON = ("guards the other SCRAM users of its mechanism: without it, a Kafka node restarted after a user was "
                 "deleted can lose them all (docs/security.md, \"SCRAM anchors\"); nobody logs in as it")


def anchor_changes(observed: ClusterState) -> list[Change]:
    """The SCRAM anchors a cluster lacks (specset/model.py, SCRAM_ANCHORS): kraftform's own clusters have them
    from their format; a cluster made otherwise, or before them, gets them from the first plan that touches or
    declares SCRAM users."""
    return [Change(Action.CREATE, Kind.USER, name, Safety.SAFE, ANCHOR_REASON, "mechanism", None, mechanism,
                   Credential((mechanism, UserSpec.iterations)))
            for mechanism, name in sorted(SCRAM_ANCHORS.items()) if name not in observed.users]


def _logins(wanted: Desired, logins: Mapping[str, OwnLogin] | None) -> dict[str, OwnLogin]:
    """The given logins, and the admin the cluster section names (the one the nodes make super user)."""
    found = dict(logins or {})
    if wanted.cluster is not None:
        found.setdefault(wanted.cluster.security.admin_user, OwnLogin("the cluster's admin, security.admin_user"))
    return found
