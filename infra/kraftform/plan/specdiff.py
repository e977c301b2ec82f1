"""Offline diff of two spec revisions, for pull-request review: no cluster needed.

Kafka resources go through the same `diff_states` as live plans; what only specs describe (the cluster's
shape, profiles) is compared here, and the streaming consumers in `spark.diff`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from kraftform.definitions.server_configs import definition
from kraftform.plan.avro_compat import incompatibilities
from kraftform.plan.changes import Action, Change, Kind, Plan, Safety
from kraftform.plan.connectors import connector_changes, declared_as_live
from kraftform.plan.diff import diff_states
from kraftform.plan.groups import group_config_changes, unmanaged_groups
from kraftform.plan.placement import (
    DEFAULT_THROTTLE,
    PlacementRefused,
    describe_moves,
    estimate_moves,
    kafka_layout,
)
from kraftform.plan.schema_fields import describe
from kraftform.plan.state import state_of
from kraftform.plan.subjects import level_change_safety, same_schema
from kraftform.specset.checks import IRREVERSIBLE_FEATURES
from kraftform.specset.model import ClusterSpec, SpecSet
from kraftform.specset.profiles import SECTIONS

#: Cluster fields that never reach a node's configuration: sizing inputs, the managed-scope declaration,
#: topic defaults (their effect shows as topic changes) and lint's conventions.
_CLUSTER_SAFE = {"load", "managed_scope", "storage_per_broker_bytes", "defaults", "conventions"}
UNSET = "(unset)"


def flat_fields(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested dataclasses -> dotted keys, so a change names `security.controller_auth`, not `security`."""
    if hasattr(value, "__dataclass_fields__"):
        out: dict[str, str] = {}
        for f in fields(value):
            if f.compare:
                out.update(flat_fields(getattr(value, f.name), f"{prefix}.{f.name}" if prefix else f.name))
        return out
    if isinstance(value, tuple):
        return {prefix: ", ".join(map(str, value))}
    if isinstance(value, Mapping):  # settings: one change per key
        return {f"{prefix}.{k}": str(v) for k, v in value.items()}
    return {prefix: UNSET if value is None else str(value)}


def node_change_moves(base: SpecSet, head: SpecSet) -> str:
    """The replica moves a change of brokers implies, estimated offline: on the layout Kafka's assignment gives
    the declared topics, by the placement code apply runs, each partition's bytes at its topic's retention.bytes
    where one is declared."""
    before = {i + 1: base.cluster.rack_of(i) for i in range(base.cluster.brokers)}
    every = before | {i + 1: head.cluster.rack_of(i) for i in range(head.cluster.brokers)}
    leaving = set(range(head.cluster.brokers + 1, base.cluster.brokers + 1))
    topics = [t for t in base.topics if t.partitions > 0]
    layout = kafka_layout([(t.name, t.partitions, t.replication_factor) for t in topics], before)
    sized = [t for t in topics if int(t.config.get("retention.bytes", -1)) > 0]
    sizes = {(t.name, p): int(t.config["retention.bytes"]) for t in sized for p in range(t.partitions)}
    even = head.cluster.placement.even_topics
    try:
        moves = estimate_moves(layout, every, leaving, sizes, even)
    except PlacementRefused as exc:
        return f"refused by apply as declared: {exc}"
    unsized = len(topics) - len(sized)
    return (f"estimated on the layout Kafka's assignment gives the declared topics, "
            f"{describe_moves(moves, DEFAULT_THROTTLE)} (bytes at each topic's retention.bytes"
            + (f"; {unsized} topic(s) declare none and count 0)" if unsized else ")"))


def _cluster(base: ClusterSpec, head: ClusterSpec) -> list[Change]:
    before, after = flat_fields(base, ""), flat_fields(head, "")
    changes = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, UNSET), after.get(key, UNSET)
        if a == b:
            continue
        top = key.split(".")[0]
        if key == "brokers" and int(b or 0) < int(a or 0):
            safety, reason = Safety.DESTRUCTIVE, ("fewer brokers: replicas on the removed brokers must be "
                                                  "reassigned first, or they are lost")
        elif key == "name":
            safety, reason = Safety.DESTRUCTIVE, ("containers, volumes and network are named after the cluster: a "
                                                  "cluster kraftform runs is replaced by a new, empty one (for an "
                                                  "existing cluster the name is only a label)")
        elif key == "mode":
            safety, reason = Safety.DESTRUCTIVE, "switching dedicated/combined controllers rebuilds the quorum"
        elif key == "brokers":
            safety, reason = Safety.SAFE, "more brokers: new brokers start empty until partitions are moved"
        elif key == "metadata_version":
            safety, reason = Safety.DESTRUCTIVE, ("feature levels finalised (UpdateFeatures): irreversible, the "
                                                  "cluster can never run an older Kafka again; a lower release is "
                                                  "refused by the live plan")
        elif top == "features":
            safety, reason = _feature_diff(key.split(".", 1)[1], a, b)
        elif top == "broker_config":
            found = definition(key.split(".", 1)[1])
            safety, reason = ((Safety.SAFE, "dynamic broker setting: applied live, no restart")
                              if found is not None and found.dynamic else
                              (Safety.DISRUPTIVE, "read at start: the brokers restart (rolling) to take it"))
        elif top == "placement":
            safety, reason = Safety.SAFE, ("how replicas move when brokers join or leave: the next node change's "
                                           "plan moves and shows them so; nothing moves now")
        elif top in _CLUSTER_SAFE:
            safety, reason = Safety.SAFE, ("checked by `kraftform lint`; nothing on the cluster changes"
                                           if top == "conventions" else "spec setting; no node restarts")
        else:
            safety, reason = Safety.DISRUPTIVE, "nodes restart (rolling) to take the new setting"
        changes.append(Change(Action.UPDATE, Kind.CLUSTER, head.name, safety, reason, key, a, b))
    return changes


def _feature_diff(name: str, before: str, after: str) -> tuple[Safety, str]:
    """A declared feature level against the last revision's (the live plan compares with what is finalised)."""
    if after == UNSET:
        return Safety.SAFE, "no longer managed: the cluster keeps the level it has"
    if before != UNSET and int(after) < int(before):
        if name in IRREVERSIBLE_FEATURES:
            return Safety.DESTRUCTIVE, f"Kafka cannot lower {name}: the live plan refuses it"
        return Safety.DESTRUCTIVE, f"a safe downgrade (UpdateFeatures): what relies on {name} {before} stops working"
    if name in IRREVERSIBLE_FEATURES:
        return Safety.DESTRUCTIVE, f"finalised (UpdateFeatures): irreversible, Kafka cannot lower {name} again"
    return Safety.DISRUPTIVE, f"finalised (UpdateFeatures): brokers and clients take up what {name} {after} enables"


def _profiles(base: SpecSet, head: SpecSet) -> list[Change]:
    """Client-side profile settings; topic-side ones already show up as topic config changes."""
    changes: list[Change] = []
    for name in sorted(set(base.profiles) | set(head.profiles)):
        a, b = base.profiles.get(name), head.profiles.get(name)
        for section in SECTIONS:
            if section == "topic":
                continue
            before = dict(getattr(a, section)) if a else {}
            after = dict(getattr(b, section)) if b else {}
            for key in sorted(set(before) | set(after)):
                if before.get(key) != after.get(key):
                    changes.append(Change(Action.UPDATE, Kind.PROFILE, name, Safety.SAFE,
                                          f"{section} setting; clients using the profile pick it up on restart",
                                          f"{section}.{key}", before.get(key), after.get(key)))
    return changes


def diff_specsets(base: SpecSet, head: SpecSet) -> Plan:
    """The changes between two spec revisions that this layer classifies (Kafka resources, the cluster,
    profiles); `kraftform.declared.diff_specs` adds the consumers' (`spark.diff`)."""
    before, after = state_of(base), state_of(head)
    kafka = diff_states(before, after)
    groups = [*group_config_changes(after.group_configs, before.group_configs),
              *unmanaged_groups(before.group_configs, after.group_configs)]
    cluster = _cluster(base.cluster, head.cluster)
    if base.cluster.brokers != head.cluster.brokers:
        moves = node_change_moves(base, head)
        cluster = [dataclasses.replace(c, reason=f"{c.reason}; {moves}") if c.key == "brokers" else c
                   for c in cluster]
    return Plan.of([*kafka.changes, *groups, *cluster, *_profiles(base, head), *_connect(base, head),
                    *subject_diff(base, head)], subject="diff")


def subject_diff(base: SpecSet, head: SpecSet) -> list[Change]:
    """The registry's subjects between two revisions, classed without a registry (`plan.avro_compat`): a new
    version its level lets readers read is safe, one it does not destructive (the registry will refuse it, or with
    NONE take it and break readers); a level loosened disruptive, turned off (NONE) destructive; a subject no
    longer declared destructive (a live plan deletes it from the registry)."""
    before, after = {s.name: s for s in base.subjects}, {s.name: s for s in head.subjects}
    changes: list[Change] = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            gone = b is None
            spec = a if b is None else b
            assert spec is not None
            changes.append(Change(Action.DELETE if gone else Action.CREATE, Kind.SUBJECT, name,
                                  Safety.DESTRUCTIVE if gone else Safety.SAFE,
                                  f"the {spec.part} schema of topic {spec.topic!r} is no longer declared: its "
                                  f"versions leave the registry" if gone else
                                  f"the {spec.part} schema of topic {spec.topic!r}, compatibility "
                                  f"{spec.compatibility}", "schema", a.file if a else None, b.file if b else None))
            continue
        if a.compatibility != b.compatibility:
            safety = level_change_safety(a.compatibility, b.compatibility)
            changes.append(Change(Action.UPDATE, Kind.SUBJECT, name, safety,
                                  "the check turned off" if b.compatibility == "NONE" else
                                  "loosened: fewer versions are refused" if safety is Safety.DISRUPTIVE else
                                  "tightened: more versions are refused", "compatibility", a.compatibility,
                                  b.compatibility))
        if same_schema(a.schema, b.schema):
            continue
        if a.schema_type != "AVRO" or b.schema_type != "AVRO":
            changes.append(Change(Action.UPDATE, Kind.SUBJECT, name, Safety.DISRUPTIVE,
                                  f"a new {b.schema_type} schema version: the registry checks it under "
                                  f"{b.compatibility} at plan time", "schema", a.file, b.file))
            continue
        found = incompatibilities(b.compatibility, json.loads(a.schema), json.loads(b.schema))
        readers = incompatibilities("FULL", json.loads(a.schema), json.loads(b.schema))
        if found:
            safety, reason = Safety.DESTRUCTIVE, (f"incompatible under {b.compatibility}, the registry will refuse "
                                                 f"it: {'; '.join(found)}")
        elif readers and b.compatibility == "NONE":
            safety, reason = Safety.DESTRUCTIVE, f"with the check off, readers break: {'; '.join(readers)}"
        elif readers:
            safety, reason = Safety.DISRUPTIVE, (f"allowed by {b.compatibility} but not both ways (upgrade the "
                                                 f"other side first): {'; '.join(readers)}")
        else:
            safety, reason = Safety.SAFE, "a new version compatible both ways"
        where = b.file if a.file == b.file else f"{b.file}, was {a.file}"
        changes.append(Change(Action.UPDATE, Kind.SUBJECT, name, safety, f"{where}: {reason}", "schema", None,
                              describe(a.schema, b.schema)))
    return changes


def _connect(base: SpecSet, head: SpecSet) -> list[Change]:
    """Connect clusters' workers and their connectors. A connector's declared topics changing is destructive in a
    diff even for a source, whose config names its topics its own way (the grants follow the declared ones)."""
    changes: list[Change] = []
    before, after = {c.name: c for c in base.connect}, {c.name: c for c in head.connect}
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            changes.append(Change(Action.CREATE if a is None else Action.DELETE, Kind.CONNECTOR, name,
                                  Safety.SAFE if a is None else Safety.DESTRUCTIVE,
                                  "a new Connect cluster" if a is None else
                                  "the Connect cluster and its connectors are no longer declared"))
            if b is not None:
                changes += connector_changes(name, b.connectors, {}, subject="diff")
            continue
        old, new = ({k: v for k, v in flat_fields(c).items() if k != "connectors"} for c in (a, b))
        changes += [Change(Action.UPDATE, Kind.CONNECTOR, name, Safety.DISRUPTIVE,
                           "the workers restart one at a time with it", key, old.get(key), new.get(key))
                    for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
        changes += connector_changes(name, b.connectors,
                                     {c.name: declared_as_live(c) for c in a.connectors}, subject="diff")
        old_topics = {c.name: c.topics for c in a.connectors}
        changes += [Change(Action.UPDATE, Kind.CONNECTOR, f"{name}/{c.name}", Safety.DESTRUCTIVE,
                           "it moves other data", "declared topics", ", ".join(old_topics[c.name]),
                           ", ".join(c.topics))
                    for c in b.connectors if c.type == "source" and c.name in old_topics
                    and old_topics[c.name] != c.topics]
    return changes
