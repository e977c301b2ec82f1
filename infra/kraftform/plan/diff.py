"""Current state + desired state -> Plan. Pure: the same code serves pull-request diffs and live plans.

Safety classes follow what a change does to data and clients, not what kind of resource it touches:
shortening retention deletes data (destructive) although it is "only a config"; growing partitions loses
nothing but remaps keys (disruptive). A partition decrease is refused, never done by recreating the topic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kraftform.plan.changes import (
    Action,
    Change,
    ConfigValue,
    Credential,
    Kind,
    NewTopic,
    PartitionCount,
    Plan,
    QuotaValue,
    Reassignment,
    Safety,
)
from kraftform.plan.placement import describe, reassign
from kraftform.plan.render import listed
from kraftform.plan.state import ClusterState, TopicState
from kraftform.specset.model import DEFAULT_ENTITY, AclBinding, QuotaEntity
from kraftform.units import human_bytes, human_duration_ms

#: Retention-like keys where a smaller value deletes existing data; -1 (and -2 for local.*) mean "no limit".
_SHRINK_DELETES = ("retention.ms", "retention.bytes", "local.retention.ms", "local.retention.bytes")


@dataclass(frozen=True)
class Ownership:
    """What kraftform may change or delete on the current side. Offline diffs own everything."""

    topic: Callable[[str], bool] = lambda _name: True
    acl: Callable[[AclBinding], bool] = lambda _binding: True
    quota: Callable[[QuotaEntity], bool] = lambda _entity: True
    user: Callable[[str], bool] = lambda _name: True


#: Owns nothing: the start of a declaration that owns only its own slice (`dataclasses.replace` in what it owns).
OWNS_NOTHING = Ownership(topic=lambda _name: False, acl=lambda _binding: False, quota=lambda _entity: False,
                         user=lambda _name: False)


def _limit(value: str | None) -> float:
    number = int(value) if value is not None else -1
    return float("inf") if number < 0 else float(number)


def _display(key: str, value: str | None) -> str | None:
    if value is not None and key.endswith(".ms") and value.lstrip("-").isdigit() and int(value) > 0:
        return f"{value} ({human_duration_ms(int(value))})"
    return value


def classify_config_change(key: str, current: str | None, desired: str | None) -> tuple[Safety, str]:
    """Safety and reason of changing one topic config from `current` to `desired` (effective values)."""
    if key in _SHRINK_DELETES and _limit(desired) < _limit(current):
        return Safety.DESTRUCTIVE, "shorter retention: existing records beyond it are deleted"
    if key == "cleanup.policy":
        return Safety.DESTRUCTIVE, ("cleanup policy change: compaction drops older values per key, and "
                                   "delete removes old segments")
    if key == "min.insync.replicas" and int(desired or 1) > int(current or 1):
        return Safety.DISRUPTIVE, "more in-sync replicas required: acks=all producers fail sooner"
    if key == "max.message.bytes" and int(desired or 0) < int(current or 0):
        return Safety.DISRUPTIVE, "smaller maximum message: producers of larger records are rejected"
    if key == "unclean.leader.election.enable" and desired == "true":
        return Safety.DISRUPTIVE, "unclean leader election allows losing acknowledged writes on failover"
    if key == "remote.storage.enable":
        return Safety.DISRUPTIVE, "tiered storage switched: segments move between local and remote storage"
    return Safety.SAFE, "config change"


def _replication_change(name: str, cur: TopicState, want: TopicState, current: ClusterState) -> Change:
    now, then = str(cur.replication_factor), str(want.replication_factor)
    if current.brokers and cur.assignment:
        try:
            target = reassign(cur.assignment, current.brokers, want.replication_factor)
        except ValueError as exc:
            return Change(Action.REFUSE, Kind.REPLICATION, name, Safety.DISRUPTIVE,
                          f"{exc}: add brokers or lower the replication factor", "replication_factor", now, then)
        then += f" (replicas {describe(target)})"
        payload: Reassignment | None = Reassignment(target, tuple(sorted(current.brokers)))
    else:
        payload = None  # an offline diff: reviewed, never applied
    return Change(Action.UPDATE, Kind.REPLICATION, name, Safety.DISRUPTIVE,
                  "replica reassignment: replicas move between brokers (rack-aware, throttled)",
                  "replication_factor", now, then, payload)


def _topic_changes(name: str, cur: TopicState, want: TopicState, current: ClusterState,
                   desired: ClusterState) -> list[Change]:
    changes: list[Change] = []
    if want.partitions > cur.partitions:
        changes.append(Change(Action.UPDATE, Kind.PARTITIONS, name, Safety.DISRUPTIVE,
                              "more partitions: keys map to different partitions from now on, so per-key "
                              "ordering across the change is lost", "partitions",
                              str(cur.partitions), str(want.partitions), PartitionCount(want.partitions)))
    elif want.partitions < cur.partitions:
        changes.append(Change(Action.REFUSE, Kind.PARTITIONS, name, Safety.DESTRUCTIVE,
                              f"Kafka cannot decrease partitions; kraftform refuses rather than delete and "
                              f"recreate the topic (all data would be lost): keep {cur.partitions} in the specs, "
                              f"or migrate to a new topic", "partitions", str(cur.partitions),
                              str(want.partitions)))
    if want.replication_factor != cur.replication_factor:
        changes.append(_replication_change(name, cur, want, current))
    for key in sorted(set(cur.config) | set(want.config)):
        now = cur.config.get(key, current.default_of(key))
        then = want.config.get(key, desired.default_of(key))
        if now == then:
            continue
        safety, reason = classify_config_change(key, now, then)
        if key not in want.config:
            reason += "; the override is removed and the topic reverts to the default"
        action = Action.DELETE if key not in want.config else (
            Action.CREATE if key not in cur.config else Action.UPDATE)
        changes.append(Change(action, Kind.TOPIC_CONFIG, name, safety, reason, key,
                              _display(key, now), _display(key, then), ConfigValue(want.config.get(key))))
    return changes


def _topics(current: ClusterState, desired: ClusterState, owns: Ownership) -> list[Change]:
    changes: list[Change] = []
    for name, want in desired.topics.items():
        cur = current.topics.get(name)
        if cur is None:
            overrides = ", ".join(f"{k}={v}" for k, v in sorted(want.config.items())) or "no overrides"
            changes.append(Change(Action.CREATE, Kind.TOPIC, name, Safety.SAFE,
                                  f"new topic ({overrides})", None, None,
                                  f"{want.partitions} partitions, RF {want.replication_factor}",
                                  NewTopic(want.partitions, want.replication_factor, want.config)))
        else:
            changes.extend(_topic_changes(name, cur, want, current, desired))
    for name, cur in current.topics.items():
        if name not in desired.topics and owns.topic(name):
            changes.append(Change(Action.DELETE, Kind.TOPIC, name, Safety.DESTRUCTIVE,
                                  "topic removed from the specs: the topic and all its records are deleted",
                                  None, f"{cur.partitions} partitions, RF {cur.replication_factor}", None))
    return changes


def _may_have_clients(user: str, current: ClusterState) -> bool:
    """Whether clients can be running as `user` now. A SCRAM user kraftform sees as absent has none; other
    principals (TLS distinguished names, `*`) authenticate without a credential it can see, so they might."""
    if user == "*":
        return bool(current.users)
    return user in current.users or "=" in user


def _new_acl(b: AclBinding, current: ClusterState) -> Change:
    user = b.principal.partition(":")[2]
    if b.permission != "deny":
        safety, reason = Safety.SAFE, "new grant"
    elif _may_have_clients(user, current):
        safety, reason = Safety.DISRUPTIVE, ("new deny rule on a principal that may have running clients: their "
                                             "matching requests start failing")
    else:
        safety, reason = Safety.SAFE, (f"new deny rule; user {user!r} does not exist yet, so no running client "
                                       f"is refused")
    return Change(Action.CREATE, Kind.ACL, b.principal, safety, reason, b.grant(), payload=b)


def _acls(current: ClusterState, desired: ClusterState, owns: Ownership) -> list[Change]:
    changes = [_new_acl(b, current) for b in sorted(desired.acls - current.acls)]
    changes += [Change(Action.DELETE, Kind.ACL, b.principal,
                       Safety.DISRUPTIVE if b.permission == "deny" else Safety.DESTRUCTIVE,
                       "deny rule lifted" if b.permission == "deny"
                       else "grant removed: the principal loses this access", b.grant(), payload=b)
                for b in sorted(current.acls - desired.acls) if owns.acl(b)]
    return changes


def _fmt_quota(key: str, value: float | None) -> str | None:
    if value is None:
        return None
    if key.endswith("_byte_rate"):
        return f"{value:.0f} ({human_bytes(value)}/s)"
    return f"{value:g}"


def _new_limit(entity: QuotaEntity, key: str, current: ClusterState, desired: ClusterState) -> tuple[Safety, str]:
    """A limit where there was none throttles only clients that exist and fall under it: say which."""
    if entity.client_id is not None:
        return Safety.DISRUPTIVE, "new limit: running clients with this client id and above it are throttled"
    if entity.user != DEFAULT_ENTITY:
        assert entity.user is not None
        if _may_have_clients(entity.user, current):
            return Safety.DISRUPTIVE, "new limit on an existing principal: its clients above it are throttled"
        return Safety.SAFE, f"new limit; user {entity.user!r} does not exist yet, so no running client is throttled"
    # Kafka applies the default user quota to every user without a quota of its own for this key.
    covered = [u for u in sorted(current.users) if key not in desired.quotas.get(QuotaEntity(user=u), {})]
    if covered:
        return Safety.DISRUPTIVE, (f"new default limit: users with no {key} of their own ({listed(covered, 5)}) "
                                   f"are throttled above it")
    return Safety.SAFE, "new default limit; no existing user falls under it"


def _quotas(current: ClusterState, desired: ClusterState, owns: Ownership) -> list[Change]:
    changes: list[Change] = []
    entities = sorted(set(current.quotas) | set(desired.quotas))
    for entity in entities:
        if entity not in desired.quotas and not owns.quota(entity):
            continue
        now, then = current.quotas.get(entity, {}), desired.quotas.get(entity, {})
        for key in sorted(set(now) | set(then)):
            a, b = now.get(key), then.get(key)
            if a == b:
                continue
            if b is None:
                action, safety, reason = Action.DELETE, Safety.SAFE, "limit lifted"
            elif a is None:
                action = Action.CREATE
                safety, reason = _new_limit(entity, key, current, desired)
            elif b < a:
                action, safety = Action.UPDATE, Safety.DISRUPTIVE
                reason = "tighter limit: clients above it are throttled"
            else:
                action, safety, reason = Action.UPDATE, Safety.SAFE, "looser limit"
            changes.append(Change(action, Kind.QUOTA, entity.describe(), safety, reason, key,
                                  _fmt_quota(key, a), _fmt_quota(key, b), QuotaValue(entity, b)))
    return changes


def _users(current: ClusterState, desired: ClusterState, owns: Ownership) -> list[Change]:
    changes: list[Change] = []
    for name, want in sorted(desired.users.items()):
        cur = current.users.get(name)
        setting = Credential((want.mechanism, want.iterations))
        if cur is None:
            changes.append(Change(Action.CREATE, Kind.USER, name, Safety.SAFE, "new SCRAM user",
                                  "mechanism", None, want.mechanism, setting))
            continue
        if cur.mechanism != want.mechanism:
            changes.append(Change(Action.UPDATE, Kind.USER, name, Safety.DISRUPTIVE,
                                  "clients must switch SASL mechanism", "mechanism", cur.mechanism,
                                  want.mechanism, Credential((want.mechanism, want.iterations), cur.mechanism)))
        if cur.iterations != want.iterations:
            changes.append(Change(Action.UPDATE, Kind.USER, name, Safety.SAFE,
                                  "credential re-salted with the same password", "iterations",
                                  str(cur.iterations), str(want.iterations), setting))
        if cur.password_ok is False:
            changes.append(Change(Action.UPDATE, Kind.USER, name, Safety.DISRUPTIVE,
                                  "the password in the secret store does not log in: it is set (a rotation; "
                                  "the value is never shown)", "password", payload=setting))
        if None not in (cur.password_version, want.password_version) and \
                cur.password_version != want.password_version:
            changes.append(Change(Action.UPDATE, Kind.USER, name, Safety.DISRUPTIVE,
                                  "password rotated: clients need the new password (the value is never shown)",
                                  "password_version", str(cur.password_version), str(want.password_version),
                                  setting))
    for name in sorted(set(current.users) - set(desired.users)):
        if owns.user(name):
            changes.append(Change(Action.DELETE, Kind.USER, name, Safety.DESTRUCTIVE,
                                  "user removed: its clients can no longer authenticate", "mechanism",
                                  current.users[name].mechanism, None, Credential(None, current.users[name].mechanism)))
    return changes


def diff_states(current: ClusterState, desired: ClusterState, owns: Ownership | None = None) -> Plan:
    """Changes that take `current` to `desired`, touching on the current side only what `owns` allows."""
    owns = owns or Ownership()
    return Plan.of(_users(current, desired, owns) + _topics(current, desired, owns)
                   + _acls(current, desired, owns) + _quotas(current, desired, owns))
