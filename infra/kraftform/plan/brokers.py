"""The cluster section against the brokers a cluster runs: their count, racks and settings. Pure.

A declared cluster that differs from the running one is always a change, never a note beside "No changes".
What the Admin protocol can do is planned with a payload (a dynamic broker setting, applied live); what
only the nodes can do (more or fewer brokers, racks, a read-only setting) is node work (`Plan.node_work`),
classed as the offline diff classes it.
"""

from __future__ import annotations

from collections.abc import Mapping

from kraftform.plan.changes import Action, BrokerSetting, Change, Kind, Safety
from kraftform.plan.diff import classify_config_change
from kraftform.plan.specdiff import UNSET
from kraftform.plan.state import BROKER_TOPIC_DEFAULTS, ClusterState
from kraftform.server_configs import check_setting, definition
from kraftform.specset.model import ClusterSpec

#: How a node change takes effect, in the plan's words. None of it goes through the Admin protocol.
NODE_WORK = "node work (kraftform cannot do it through --command-config)"
CLUSTER_DEFAULT = "cluster default"


def node_changes(cluster: ClusterSpec, observed: ClusterState) -> list[Change]:
    """The broker count and racks (when the specs declare racks) the observed brokers contradict."""
    if not observed.brokers:
        return []
    changes = []
    count = len(observed.brokers)
    if count != cluster.brokers:
        more = cluster.brokers > count
        changes.append(Change(
            Action.UPDATE, Kind.CLUSTER, cluster.name, Safety.SAFE if more else Safety.DESTRUCTIVE,
            f"{NODE_WORK}: " + ("start the new brokers, then move partitions onto them" if more else
                                "move every replica off the leaving brokers, then stop them"),
            "brokers", str(count), str(cluster.brokers)))
    # Compared as a multiset: which broker id got which rack is the cluster's own numbering (an existing cluster's
    # ids need not follow the specs' order); how many brokers stand in each rack is what replicas spread over.
    racks = sorted((observed.brokers[b] or UNSET) for b in observed.brokers)
    declared = sorted((cluster.rack_of(i) or UNSET) for i in range(count))
    if cluster.racks and count == cluster.brokers and racks != declared:  # no racks declared: not managed
        changes.append(Change(Action.UPDATE, Kind.CLUSTER, cluster.name, Safety.DISRUPTIVE,
                              f"{NODE_WORK}: broker.rack is read at start: a rolling restart", "racks",
                              ", ".join(racks), ", ".join(declared)))
    return changes


def _safety(key: str, current: str | None, desired: str | None, live: str) -> tuple[Safety, str]:
    """A broker default of a topic setting (log.retention.ms, ...) changes every topic without an override of
    its own: classed as that topic setting's change would be."""
    topic_key = BROKER_TOPIC_DEFAULTS.get(key)
    if topic_key is not None and current is not None and desired is not None:
        safety, why = classify_config_change(topic_key, current, desired)
        if safety is not Safety.SAFE:
            return safety, f"{live}; for every topic without its own {topic_key}: {why}"
    return Safety.SAFE, live


def broker_setting_changes(declared: Mapping[str, str], observed: ClusterState) -> list[Change]:
    """Each declared broker setting against the running brokers: dynamic ones as changes with a payload (a
    cluster-wide one as the cluster default, a per-broker one on each broker that differs), read-only ones as
    node work; a dynamic cluster default the specs do not declare is removed (it was set behind their back)."""
    if not observed.brokers:
        return []
    changes: list[Change] = []
    for key, want in sorted(declared.items()):
        found = definition(key)
        if found is None:  # `validate` refuses it; an offline-built spec set may still carry one
            continue
        values = {b: observed.broker_settings.get(b, {}).get(key) for b in sorted(observed.brokers)}
        if found.mode == "cluster-wide":
            now = observed.broker_defaults.get(key)
            if now != want:
                safety, why = _safety(key, now or next(iter(values.values()), None), want,
                                      "dynamic (cluster-wide): every broker takes it live, no restart")
                changes.append(Change(Action.CREATE if now is None else Action.UPDATE, Kind.BROKER_CONFIG,
                                      CLUSTER_DEFAULT, safety, why, key, now, want, BrokerSetting(None, want)))
        elif found.mode == "per-broker":
            changes += [Change(Action.UPDATE, Kind.BROKER_CONFIG, f"broker {b}", Safety.SAFE,
                               "dynamic (per broker): taken live, no restart", key, now, want, BrokerSetting(b, want))
                        for b, now in values.items() if now != want]
        elif any(now != want for now in values.values()):
            shown = ", ".join(sorted({now or UNSET for now in values.values()}))
            changes.append(Change(Action.UPDATE, Kind.CLUSTER, "brokers", Safety.DISRUPTIVE,
                                  f"{NODE_WORK}: {key} is read at start: a rolling restart of the brokers",
                                  f"broker_config.{key}", shown, want))
    for key, value in sorted(observed.broker_defaults.items()):
        # One a spec could declare: a default of a setting kraftform derives from elsewhere (min.insync.replicas
        # from `defaults`, say) or one it refuses (a secret) is another field's business.
        if key not in declared and check_setting(key, value) is None:
            safety, why = _safety(key, value, None, "a dynamic cluster default the specs do not declare "
                                                    "(kafka-configs --entity-default): removed, brokers fall back "
                                                    "to their own setting")
            changes.append(Change(Action.DELETE, Kind.BROKER_CONFIG, CLUSTER_DEFAULT,
                                  Safety.DISRUPTIVE if safety is Safety.SAFE else safety, why, key, value, None,
                                  BrokerSetting(None, None)))
    return changes
