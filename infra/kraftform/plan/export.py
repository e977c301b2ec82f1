"""A cluster's state as spec files: what `kraftform import` writes, so that `plan` on them is empty (feature
levels and the settings of the groups its ACLs name included).

Pure: a `ClusterState` in, file names and YAML text out. Users get a password reference to an
environment variable (Kafka never reveals passwords); principals that are not SCRAM users (mTLS
certificates, users of another mechanism) are declared as such, so every ACL and quota names a known one.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

import yaml

from kraftform.definitions.features import RELEASE_FEATURES
from kraftform.definitions.server_configs import check_setting
from kraftform.plan.live import cluster_identities, reserved
from kraftform.plan.state import ClusterState
from kraftform.specset.checks import release_name
from kraftform.specset.model import DEFAULT_ENTITY, Security
from kraftform.versions import KAFKA_VERSION

HEADER = "# Written by `kraftform import`; review before committing.\n"


def password_env(user: str) -> str:
    return "KRAFTFORM_PASSWORD_" + re.sub(r"[^A-Za-z0-9]+", "_", user).strip("_").upper()


def _dump(data: dict[str, Any]) -> str:
    return HEADER + yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)


def render_specs(state: ClusterState, name: str, admin_user: str = Security().admin_user) -> dict[str, str]:
    """File name -> YAML text."""
    topics = [t for n, t in sorted(state.topics.items()) if not reserved(n)]
    rf = Counter(t.replication_factor for t in topics).most_common(1)
    racks = sorted({r for r in state.brokers.values() if r})
    cluster: dict[str, Any] = {"name": name, "kafka_version": KAFKA_VERSION, "brokers": max(1, len(state.brokers))}
    if racks and len(racks) <= len(state.brokers):
        cluster["racks"] = racks
    min_isr = int(state.topic_defaults.get("min.insync.replicas", "1"))
    replication = rf[0][0] if rf else min(3, max(1, len(state.brokers)))
    cluster["defaults"] = {"replication_factor": replication, "min_insync_replicas": min(min_isr, replication)}
    cluster["security"] = {"admin_user": admin_user}
    # The dynamic broker settings a spec can declare (the others are derived from the fields above): the cluster
    # defaults, and what is set alike on every broker.
    common = [dict(values) for values in state.broker_dynamic.values()]
    alike = {k: v for k, v in common[0].items() if all(other.get(k) == v for other in common)} if common else {}
    settings = {k: v for k, v in sorted({**state.broker_defaults, **alike}.items()) if check_setting(k, v) is None}
    if settings:
        cluster["broker_config"] = settings
    cluster |= _features(state)
    files = {"cluster.yaml": _dump({"cluster": cluster})}
    if topics:
        files["topics.yaml"] = _dump({"topics": [
            {"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
             **({"config": dict(sorted(t.config.items()))} if t.config else {})} for t in topics]})
    users = [u for n, u in sorted(state.users.items()) if n not in cluster_identities(admin_user)]
    scram = {f"User:{u.name}" for u in users}
    subjects = {b.principal for b in state.acls} | {
        f"User:{e.user}" for e in state.quotas if e.user not in (None, DEFAULT_ENTITY)}
    principals = sorted(subjects - scram - {"User:*", f"User:{admin_user}"})
    if users or principals:
        doc: dict[str, Any] = {}
        if users:
            doc["users"] = [{"name": u.name, "mechanism": u.mechanism, "iterations": u.iterations,
                             "password": {"env": password_env(u.name)}} for u in users]
        if principals:
            doc["principals"] = [{"name": p} for p in principals]
        files["users.yaml"] = _dump(doc)
    if state.acls:
        grouped: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for b in sorted(state.acls):
            grouped[(b.principal, b.resource_type, b.resource_name, b.pattern_type, b.permission, b.host)].append(
                b.operation)
        acls = []
        for (principal, rtype, rname, pattern, permission, host), operations in grouped.items():
            entry: dict[str, Any] = {"principal": principal,
                                     "resource": {"type": rtype, "name": rname, "pattern": pattern},
                                     "operations": operations}
            if permission != "allow":
                entry["permission"] = permission
            if host != "*":
                entry["host"] = host
            acls.append(entry)
        files["acls.yaml"] = _dump({"acls": acls})
    if state.quotas:
        files["quotas.yaml"] = _dump({"quotas": [
            {"entity": {k: v for k, v in (("user", e.user), ("client_id", e.client_id)) if v is not None},
             **{k: int(v) if float(v).is_integer() else v for k, v in sorted(values.items())}}
            for e, values in sorted(state.quotas.items())]})
    groups = [{"name": g, "config": dict(sorted(config.items()))}
              for g, config in sorted(state.group_configs.items()) if config]
    if groups:
        files["groups.yaml"] = _dump({"groups": groups})
    return files


def _features(state: ClusterState) -> dict[str, Any]:
    """The finalised feature levels the pinned Kafka knows, as the cluster section declares them: metadata.version
    as the release whose level it is (none if it is between releases: then it stays unmanaged)."""
    known = RELEASE_FEATURES[release_name(KAFKA_VERSION)]
    found: dict[str, Any] = {}
    level = state.features.get("metadata.version")
    release = next((r for r, levels in RELEASE_FEATURES.items() if levels["metadata.version"] == level), None)
    if release is not None:
        found["metadata_version"] = release
    features = {k: v for k, v in sorted(state.features.items()) if k in known and k != "metadata.version"}
    if features:
        found["features"] = features
    return found
