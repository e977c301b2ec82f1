"""Rules a JSON Schema cannot express: uniqueness, references, Kafka's naming and replication rules.

Each check is a generator of problems over the whole model, so `check_specset` reports everything at once
and a new rule is one more function in `CHECKS`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from kraftform.definitions.features import RELEASE_FEATURES
from kraftform.definitions.group_configs import bounds_problem
from kraftform.definitions.server_configs import definition
from kraftform.errors import Location, Problem
from kraftform.specset.hosts import check_hosts, laid_out_nodes
from kraftform.specset.model import (
    DEFAULT_ENTITY,
    RESERVED_USERS,
    SCRAM_ANCHORS,
    AclSpec,
    ClusterSpec,
    ConnectorSpec,
    ConnectSpec,
    EnvSecret,
    SpecSet,
    TopicSpec,
)
from kraftform.versions import SUPPORTED_KAFKA_TEXT, supported_kafka

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249

#: Operations Kafka accepts per resource type (the Kafka documentation's "Operations and Resources").
VALID_OPERATIONS: dict[str, frozenset[str]] = {
    "topic": frozenset({"all", "read", "write", "create", "delete", "alter", "describe", "describe_configs",
                        "alter_configs"}),
    "group": frozenset({"all", "read", "describe", "delete"}),
    "cluster": frozenset({"all", "create", "cluster_action", "describe_configs", "alter_configs",
                          "idempotent_write", "alter", "describe"}),
    "transactional_id": frozenset({"all", "describe", "write"}),
    "delegation_token": frozenset({"all", "describe"}),
    "user": frozenset({"all", "create_tokens", "describe_tokens"}),
}

T = TypeVar("T")


def _duplicates(items: Iterable[T], key: Callable[[T], object], loc: Callable[[T], Location],
                what: str) -> Iterator[Problem]:
    first: dict[object, Location] = {}
    for item in items:
        k = key(item)
        if k in first:
            yield Problem(loc(item), f"duplicate {what} {k!r} (first declared at {first[k]})")
        else:
            first[k] = loc(item)


def check_unique_names(s: SpecSet) -> Iterator[Problem]:
    yield from _duplicates(s.topics, lambda t: t.name, lambda t: t.location, "topic")
    yield from _duplicates(s.users, lambda u: u.name, lambda u: u.location, "user")
    yield from _duplicates(s.principals, lambda p: p.name, lambda p: p.location, "principal")
    yield from _duplicates(s.consumers, lambda c: c.name, lambda c: c.location, "consumer")
    yield from _duplicates(s.quotas, lambda q: q.entity.describe(), lambda q: q.location, "quota entity")
    yield from _duplicates(s.groups, lambda g: g.name, lambda g: g.location, "group")
    bindings = [(b, acl.location) for acl in s.acls for b in acl.bindings()]
    yield from _duplicates(bindings, lambda pair: pair[0].describe(), lambda pair: pair[1], "ACL binding")


def check_cluster(s: SpecSet) -> Iterator[Problem]:
    c = s.cluster
    at = c.location
    if c.controllers % 2 == 0:
        yield Problem(at, f"controllers must be odd for a majority quorum, got {c.controllers} "
                          f"(3 tolerate 1 failure, 5 tolerate 2)")
    if c.mode == "combined" and c.controllers > c.brokers:
        yield Problem(at, f"combined mode runs controllers on brokers: {c.controllers} controllers "
                          f"need at least as many brokers, got {c.brokers}")
    if not supported_kafka(c.kafka_version):
        yield Problem(at, f"kafka_version {c.kafka_version} is not supported (supported: {SUPPORTED_KAFKA_TEXT})")
    yield from _node_config_problems(c, at)
    if c.metadata_version is not None:
        problem = metadata_version_problem(c.metadata_version, c.kafka_version)
        if problem:
            yield Problem(at, problem)
    if len(c.racks) > c.brokers:
        yield Problem(at, f"{len(c.racks)} racks but only {c.brokers} brokers: some racks would be empty")
    d = c.defaults
    if d.replication_factor > c.brokers:
        yield Problem(at, f"defaults.replication_factor {d.replication_factor} exceeds the {c.brokers} brokers")
    if d.min_insync_replicas > d.replication_factor:
        yield Problem(at, f"defaults.min_insync_replicas {d.min_insync_replicas} exceeds "
                          f"defaults.replication_factor {d.replication_factor}: no write could succeed")
    reserved = {u.name for u in s.users} & set(RESERVED_USERS)
    for name in sorted(reserved):
        why = ("a SCRAM anchor kraftform keeps on every cluster (docs/security.md)" if name in SCRAM_ANCHORS.values()
               else "kraftform's nodes authenticate as it (a super user)")
        yield Problem(at, f"user {name!r} is reserved: {why}")
    if c.security.admin_user in {u.name for u in s.users}:
        yield Problem(at, f"security.admin_user {c.security.admin_user!r} is also declared under users; "
                          f"the cluster creates the admin user itself")


def node_names(c: ClusterSpec) -> list[str]:
    """The names kraftform gives the cluster's nodes (`specset.hosts.laid_out_nodes`, as `cluster.topology`)."""
    return [n.name for n in laid_out_nodes(c)]


def _node_config_problems(c: ClusterSpec, at: Location) -> Iterator[Problem]:
    names = node_names(c)
    for node, settings in sorted(c.node_config.items()):
        if node not in names:
            near = difflib.get_close_matches(node, names, n=1)
            yield Problem(at, f"node_config: {node!r} is not a node of cluster {c.name!r}"
                              + (f"; did you mean {near[0]!r}?" if near else f" (nodes: {', '.join(names)})"))
            continue
        is_broker = "-broker-" in node or "-node-" in node
        for key in sorted(settings):
            found = definition(key)
            if is_broker and found is not None and found.dynamic:
                yield Problem(at, f"node_config.{node}.{key}: a dynamic broker setting is applied live to every "
                                  f"broker from broker_config; a per-broker value is not supported")


def release_name(version: str) -> str:
    """The release a Kafka version belongs to, as RELEASE_FEATURES keys it: "4.3.1" -> "4.3"."""
    return ".".join(version.split(".")[:2])


def release_of(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def metadata_version_problem(wanted: str, kafka_version: str) -> str | None:
    """A release kraftform knows the feature levels of, and one the cluster's Kafka can run."""
    if wanted not in RELEASE_FEATURES:
        near = difflib.get_close_matches(wanted, list(RELEASE_FEATURES), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        return (f"metadata_version {wanted!r} is not a Kafka release kraftform knows the feature levels of "
                f"({', '.join(RELEASE_FEATURES)}){hint}")
    if release_of(wanted) > release_of(kafka_version):
        return (f"metadata_version {wanted} is newer than kafka_version {kafka_version}: brokers of "
                f"{kafka_version} cannot run it; raise kafka_version first")
    return None


#: Features whose level can never go down once finalised: raising one is destructive.
IRREVERSIBLE_FEATURES = frozenset({"metadata.version", "kraft.version"})


def feature_problem(name: str, level: int, kafka_version: str) -> str | None:
    """A feature the cluster's Kafka has, at a level it ships (its release's production level at most: Kafka
    refuses unstable levels unless told to accept them). metadata.version is declared as a release."""
    if name == "metadata.version":
        return "metadata.version is declared as a release with metadata_version (e.g. \"4.3\"), not as a level"
    levels = RELEASE_FEATURES.get(release_name(kafka_version))
    if levels is None:
        return None  # an unsupported kafka_version is reported on its own
    known = [f for f in levels if f != "metadata.version"]
    if name not in levels:
        near = difflib.get_close_matches(name, known, n=1)
        return (f"{name!r} is not a feature of Kafka {kafka_version}"
                + (f"; did you mean {near[0]!r}?" if near else f" (features: {', '.join(known)})"))
    if level > levels[name]:
        return f"Kafka {kafka_version} ships {name} levels 0 to {levels[name]}, not {level}"
    return None


def _collision_key(name: str) -> str:
    # Kafka's metric names replace '.' with '_', so such topics collide and Kafka refuses the second.
    return name.replace(".", "_")


def check_host_layout(s: SpecSet) -> Iterator[Problem]:
    hosts = s.cluster.hosts
    yield from _duplicates(hosts, lambda h: h.name, lambda h: h.location, "host name")
    yield from _duplicates(hosts, lambda h: h.address, lambda h: h.location, "host address")
    # Two entries on one engine would be one machine counted as two: its loss would take both.
    yield from _duplicates(hosts, lambda h: h.docker, lambda h: h.location, "host Docker endpoint")
    yield from check_hosts(s)


def check_topic_names(s: SpecSet) -> Iterator[Problem]:
    seen: dict[str, TopicSpec] = {}
    for t in s.topics:
        if len(t.name) > MAX_TOPIC_NAME:
            yield Problem(t.location, f"topic name is {len(t.name)} characters; Kafka allows {MAX_TOPIC_NAME}")
        if not TOPIC_NAME.match(t.name):
            yield Problem(t.location, f"topic name {t.name!r} may only contain ASCII letters, digits, "
                                      f"'.', '_' and '-'")
        if t.name in (".", ".."):
            yield Problem(t.location, f"topic name {t.name!r} is not allowed by Kafka")
        if t.name.startswith("__"):
            yield Problem(t.location, f"topic name {t.name!r} starts with '__', reserved for Kafka's "
                                      f"internal topics")
        key = _collision_key(t.name)
        other = seen.get(key)
        if other is not None and other.name != t.name:
            yield Problem(t.location, f"topic {t.name!r} collides with {other.name!r} at {other.location} "
                                      f"('.' and '_' are the same in Kafka's metric names)")
        seen.setdefault(key, t)
        scope = s.cluster.managed_scope
        if scope.topic_prefixes and not scope.covers_topic(t.name) and t.derived_from is None:
            yield Problem(t.location, f"topic {t.name!r} is outside cluster.managed_scope.topic_prefixes "
                                      f"({', '.join(scope.topic_prefixes)}); kraftform could create it "
                                      f"but never manage it")


def check_topic_replication(s: SpecSet) -> Iterator[Problem]:
    for t in s.topics:
        named = f"topic {t.name!r}"  # besides file:line and the path: `$.topics[5]` alone names nothing
        if t.profile is not None and t.profile not in s.profiles:
            yield Problem(t.location, f"{named}: unknown profile {t.profile!r} "
                                      f"(known: {', '.join(sorted(s.profiles))})")
        if t.replication_factor > s.cluster.brokers:
            yield Problem(t.location, f"{named}: replication factor {t.replication_factor} exceeds the "
                                      f"{s.cluster.brokers} brokers of cluster {s.cluster.name!r}")
        min_isr = s.cluster.min_insync(t)
        if min_isr > t.replication_factor:
            yield Problem(t.location, f"{named}: min.insync.replicas {min_isr} exceeds the replication factor "
                                      f"{t.replication_factor}: producers with acks=all could never write")
        if t.profile == "durability" and (t.replication_factor < 3 or min_isr < 2):
            yield Problem(t.location, f"{named}: the durability profile needs replication factor >= 3 and "
                                      f"min.insync.replicas >= 2, got {t.replication_factor} and {min_isr}")


def _declared_principals(s: SpecSet) -> set[str]:
    return {f"User:{u.name}" for u in s.users} | {p.name for p in s.principals} | {
        f"User:{s.cluster.security.admin_user}", "User:*"}


def check_acls(s: SpecSet) -> Iterator[Problem]:
    known = _declared_principals(s)
    for acl in s.acls:
        if acl.principal not in known:
            yield Problem(acl.location, f"principal {acl.principal!r} is neither a declared user nor a "
                                        f"declared external principal")
        bad = sorted(set(acl.operations) - VALID_OPERATIONS[acl.resource_type])
        if bad:
            yield Problem(acl.location, f"operation(s) {', '.join(bad)} do not apply to a {acl.resource_type} "
                                        f"(valid: {', '.join(sorted(VALID_OPERATIONS[acl.resource_type]))})")
        if acl.resource_type == "cluster" and (acl.resource_name != "kafka-cluster"
                                               or acl.pattern_type != "literal"):
            yield Problem(acl.location, "a cluster ACL's resource is the literal name 'kafka-cluster'")


def check_group_bounds(s: SpecSet) -> Iterator[Problem]:
    for group in s.groups:
        for key, value in sorted(group.config.items()):
            problem = bounds_problem(key, value, s.cluster.broker_config)
            if problem is not None:
                yield Problem(group.location, f"group {group.name!r}: {problem}")


def feature_level(cluster: ClusterSpec, feature: str) -> int | None:
    """The level the cluster declares for `feature`, or the one its metadata_version (or Kafka release) formats
    it at; None for a release kraftform has no levels of."""
    if feature in cluster.features:
        return cluster.features[feature]
    release = cluster.metadata_version or release_name(cluster.kafka_version)
    return RELEASE_FEATURES.get(release, {}).get(feature)


def check_groups(s: SpecSet) -> Iterator[Problem]:
    """A group's settings are of its type's family; its readers read declared topics, and share groups' readers
    need a cluster with share groups (share.version 1)."""
    topics = [t.name for t in s.topics]
    share_level = feature_level(s.cluster, "share.version")
    for group in s.groups:
        named = f"group {group.name!r}"
        if group.type is not None:
            for key in sorted(k for k in group.config if not k.startswith(f"{group.type}.")):
                yield Problem(group.location, f"{named} is a {group.type} group: {key} is a "
                                              f"{key.split('.')[0]} group's setting (a {group.type} group "
                                              f"takes {group.type}.*)")
        if group.readers and group.type == "streams":
            yield Problem(group.readers[0].location, f"{named}: a streams group's application also needs its "
                                                     f"internal topics; declare its ACLs in the acls section")
        for reader in group.readers:
            for topic in reader.topics:
                if topic not in topics:
                    near = difflib.get_close_matches(topic, topics, n=1)
                    yield Problem(reader.location, f"{named}: {reader.principal} reads undeclared topic {topic!r}"
                                                   + (f"; did you mean {near[0]!r}?" if near else ""))
        if group.readers and group.type == "share" and share_level == 0:
            yield Problem(group.location, f"{named}: share groups need share.version 1 and the cluster's is 0 "
                                          f"(declare `features: {{share.version: 1}}` in the cluster section)")


def check_quotas(s: SpecSet) -> Iterator[Problem]:
    known = {p.removeprefix("User:") for p in _declared_principals(s)} | {DEFAULT_ENTITY}
    for q in s.quotas:
        if q.entity.user is not None and q.entity.user not in known:
            yield Problem(q.location, f"quota user {q.entity.user!r} is neither a declared user nor a "
                                      f"declared external principal (use {DEFAULT_ENTITY!r} for the default)")


def acl_allows(acls: Iterable[AclSpec], user: str, resource_type: str, name: str, operation: str) -> bool:
    """Whether the ACLs grant `operation` the way Kafka's authorizer would (a deny wins)."""

    def matches(acl: AclSpec) -> bool:
        if acl.principal not in (f"User:{user}", "User:*") or acl.resource_type != resource_type:
            return False
        if acl.host != "*":
            return False
        hit = acl.resource_name == "*" or acl.resource_name == name or (
            acl.pattern_type == "prefixed" and name.startswith(acl.resource_name))
        implied = {operation, "all"} | ({"read", "write", "delete", "alter"} if operation == "describe" else set())
        return hit and bool(implied & set(acl.operations))

    relevant = [a for a in acls if matches(a)]
    return any(a.permission == "allow" for a in relevant) and not any(a.permission == "deny" for a in relevant)



#: Worker settings kraftform sets itself (security, identity, internal topics, REST, plugins, secrets).
CONNECT_OWNED = re.compile(r"^(bootstrap\.servers|group\.id|security\.protocol|sasl\..*|ssl\..*|"
                           r"(config|offset|status)\.storage\..*|listeners|rest\..*|admin\.listeners|"
                           r"plugin\.path|config\.providers.*|(producer|consumer|admin)\.(security|sasl|ssl)\..*|"
                           r"connector\.client\.config\.override\.policy)$")
#: Connector settings kraftform writes from the connector's own fields.
CONNECTOR_FIELDS = {"name": "name", "connector.class": "class", "tasks.max": "tasks_max", "topics": "topics",
                    "topics.regex": "topics"}
#: Connector settings kraftform writes from the connector's `user`: the login of the clients a worker makes for it.
CONNECTOR_LOGIN = re.compile(r"^(producer|consumer|admin)\.override\.(security\.protocol|sasl\..*|ssl\..*)$")
#: A connector setting by this name holds a secret: only a reference ({env: NAME}) may give it.
SECRET_KEY = re.compile(r"(password|secret|credential|private[._-]?key|token|jaas)", re.IGNORECASE)


def check_connect(s: SpecSet) -> Iterator[Problem]:
    users = {u.name for u in s.users}
    yield from _duplicates(s.connect, lambda c: c.name, lambda c: c.location, "Connect cluster")
    ports: dict[int, str] = {}
    for c in s.connect:
        named = f"Connect cluster {c.name!r}"
        if c.user not in users:
            yield Problem(c.location, f"{named}: user {c.user!r} is not a declared SCRAM user (its workers log "
                                      f"in as it); declare it under `users`")
        for port in range(c.rest_port, c.rest_port + c.workers):
            if port in ports:
                yield Problem(c.location, f"{named}: REST port {port} is also {ports[port]}'s")
            ports[port] = c.name
        for key in sorted(k for k in c.config if CONNECT_OWNED.match(k)):
            yield Problem(c.location, f"{named}: worker setting {key!r} is kraftform's (security, identity, "
                                      f"internal topics, REST and plugins follow from the specs)")
        yield from _duplicates(c.plugins, lambda p: p.name, lambda p: p.location, "plugin")
        yield from _duplicates(c.connectors, lambda k: k.name, lambda k: k.location, "connector")
        for k in c.connectors:
            yield from _connector_problems(s, k, users)
    # A sink's consumer group is `connect-<name>` whichever Connect cluster runs it: two sinks of one name on one
    # Kafka cluster would share it, and split the topics' partitions between them.
    sinks = [(c, k) for c in s.connect for k in c.connectors if k.type == "sink"]
    first: dict[str, ConnectSpec] = {}
    for c, k in sinks:
        if k.name in first and first[k.name] is not c:
            yield Problem(k.location, f"sink connector {k.name!r} is also a sink of Connect cluster "
                                      f"{first[k.name].name!r}: both would read as consumer group 'connect-{k.name}' "
                                      f"and split its partitions; name them apart")
        first.setdefault(k.name, c)


#: `${provider:[path:]key}`, as Kafka's config providers resolve it in a connector's config.
PROVIDER_REFERENCE = re.compile(r"\$\{[^}:]+:[^}]*\}")


def _connector_problems(s: SpecSet, k: ConnectorSpec, users: set[str]) -> Iterator[Problem]:
    named = f"connector {k.name!r}"
    for topic in k.topics:
        if s.topic(topic) is None:
            yield Problem(k.location, f"{named}: topic {topic!r} is not declared (its ACLs are derived from "
                                      f"the declared topics it {'reads' if k.type == 'sink' else 'writes'})")
    if k.user is not None and k.user not in users:
        yield Problem(k.location, f"{named}: user {k.user!r} is not a declared SCRAM user (its clients log in as "
                                  f"it); declare it under `users`")
    for key, value in k.config.items():
        if CONNECTOR_LOGIN.match(key):
            yield Problem(k.location, f"{named}: {key!r} is kraftform's: a connector's clients log in as the "
                                      f"workers' user, or as the connector's own `user`")
        elif key in CONNECTOR_FIELDS:
            yield Problem(k.location, f"{named}: set {key!r} through the connector's `{CONNECTOR_FIELDS[key]}`, "
                                      f"not its config")
        elif isinstance(value, str) and PROVIDER_REFERENCE.search(value):
            yield Problem(k.location, f"{named}: {key!r} holds a config provider reference ({value!r}): the workers "
                                      f"would resolve it with their own secrets; a connector reads only what it "
                                      f"declares, as {{env: NAME}}, and its own `user`'s login")
        elif SECRET_KEY.search(key) and not isinstance(value, EnvSecret):
            yield Problem(k.location, f"{named}: {key!r} looks like a secret; give it as {{env: NAME}} (the "
                                      f"workers read it from their environment), never in the specs")


CHECKS: tuple[Callable[[SpecSet], Iterator[Problem]], ...] = (
    check_unique_names, check_cluster, check_topic_names, check_topic_replication, check_acls,
    check_quotas, check_host_layout,
    check_group_bounds, check_groups, check_connect,
)

Check = Callable[[SpecSet], Iterator[Problem]]


def check_specset(s: SpecSet, more: Iterable[Check] = ()) -> list[Problem]:
    """Every problem the model's own checks and `more` (checks of layers above, such as Spark's) find, each once
    (a group reader's grants share its place: one wrong principal is one problem)."""
    return list(dict.fromkeys(problem for check in (*CHECKS, *more) for problem in check(s)))
