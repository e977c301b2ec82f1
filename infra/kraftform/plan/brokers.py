"""The cluster section against the brokers a cluster runs: their count, racks and settings. Pure.

A declared cluster that differs from the running one is always a change, never a note beside "No changes".
What the Admin protocol can do is planned with a payload (a dynamic broker setting, applied live); what
only the nodes can do (more or fewer brokers, racks, a read-only setting) is node work (`Plan.node_work`),
classed as the offline diff classes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from kraftform.definitions.features import RELEASE_FEATURES
from kraftform.definitions.server_configs import THROTTLE_RATES, check_setting, definition
from kraftform.plan.changes import Action, BrokerSetting, Change, FeatureLevel, Kind, Safety
from kraftform.plan.diff import classify_config_change
from kraftform.plan.specdiff import UNSET
from kraftform.plan.state import BROKER_TOPIC_DEFAULTS, ClusterState
from kraftform.specset.checks import IRREVERSIBLE_FEATURES
from kraftform.specset.model import ClusterSpec

#: How a node change takes effect, in the plan's words. None of it goes through the Admin protocol.
NODE_WORK = "node work (kraftform cannot do it through --command-config)"

#: Why a replication throttle rate nobody declares is removed.
LEFT_THROTTLE = ("a replication throttle an interrupted replica move left behind (kraftform removes its throttles "
                 "when a move ends): removed")


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


MIN_ISR = "min.insync.replicas"
ELR = "eligible.leader.replicas.version"


def elr_enabled(observed: ClusterState) -> bool:
    return observed.features.get(ELR, 0) >= 1


def elr_changes(cluster: ClusterSpec | None, changes: list[Change], observed: ClusterState) -> list[Change]:
    """What eligible leader replicas (KIP-966) change on a cluster where they are enabled. Kafka then keeps the
    cluster's min.insync.replicas as a cluster-level dynamic default (it overrides what the brokers' files say,
    and broker-level values are refused): a declared `defaults.min_insync_replicas` that differs is refused
    with the command that sets it, since neither client library kraftform uses can address that resource. A
    topic's new min.insync.replicas clears that topic's ELR: said in the change's reason."""
    if not elr_enabled(observed):
        return changes
    out = [dataclasses.replace(c, reason=f"{c.reason}; it clears the topic's eligible leader replicas (ELR is "
                                         f"enabled)")
           if c.kind is Kind.TOPIC_CONFIG and c.key == MIN_ISR and c.action is not Action.REFUSE else c
           for c in changes]
    now = observed.broker_defaults.get(MIN_ISR)
    if cluster is not None and now is not None and now != str(cluster.defaults.min_insync_replicas):
        want = cluster.defaults.min_insync_replicas
        out.append(Change(Action.REFUSE, Kind.BROKER_CONFIG, "cluster default", Safety.DESTRUCTIVE,
                          f"with eligible leader replicas enabled Kafka keeps {MIN_ISR} as a cluster-level dynamic "
                          f"default, which kraftform's client libraries cannot set: run `kafka-configs.sh "
                          f"--bootstrap-server BOOTSTRAP --command-config admin.properties --entity-type brokers "
                          f"--entity-default --alter --add-config {MIN_ISR}={want}` (it clears every topic's "
                          f"eligible leader replicas), then plan again", MIN_ISR, now, str(want)))
    return out


def broker_setting_changes(declared: Mapping[str, str], observed: ClusterState) -> list[Change]:
    """Each declared broker setting against the running brokers: a dynamic one (Kafka's update mode
    cluster-wide or per-broker) set live on each broker that runs another value, a read-only one as node work;
    a value set dynamically on a broker that the specs do not declare is removed (it was set behind their back,
    or by an earlier revision of the specs). Neither client library can address Kafka's cluster-default
    resource, so kraftform sets and removes values broker by broker (`stray_cluster_defaults` lists the
    defaults `kafka-configs --entity-default` set)."""
    if not observed.brokers:
        return []
    changes: list[Change] = []
    for key, want in sorted(declared.items()):
        found = definition(key)
        if found is None:  # `validate` refuses it; an offline-built spec set may still carry one
            continue
        values = {b: observed.broker_settings.get(b, {}).get(key) for b in sorted(observed.brokers)}
        if found.dynamic:
            for broker, now in values.items():
                if now != want:
                    safety, why = _safety(key, now, want, f"dynamic ({found.mode}): taken live, no restart")
                    changes.append(Change(Action.UPDATE, Kind.BROKER_CONFIG, f"broker {broker}", safety, why, key,
                                          now, want, BrokerSetting(broker, want)))
        elif any(now != want for now in values.values()):
            shown = ", ".join(sorted({now or UNSET for now in values.values()}))
            changes.append(Change(Action.UPDATE, Kind.CLUSTER, "brokers", Safety.DISRUPTIVE,
                                  f"{NODE_WORK}: {key} is read at start: a rolling restart of the brokers",
                                  f"broker_config.{key}", shown, want))
    for broker in sorted(observed.broker_dynamic):
        for key, value in sorted(observed.broker_dynamic[broker].items()):
            # One a spec could declare: a setting kraftform derives from elsewhere, or refuses (a secret), is
            # another field's business.
            if key not in declared and check_setting(key, value) is None:
                safety, why = _safety(key, value, None, LEFT_THROTTLE if key in THROTTLE_RATES else
                                      "set on this broker behind the specs' back: removed, the broker falls back "
                                      "to its own setting")
                changes.append(Change(Action.DELETE, Kind.BROKER_CONFIG, f"broker {broker}",
                                      Safety.DISRUPTIVE if safety is Safety.SAFE else safety, why, key, value, None,
                                      BrokerSetting(broker, None)))
    return changes


def stray_cluster_defaults(declared: Mapping[str, str], observed: ClusterState) -> list[str]:
    """Dynamic cluster defaults the specs do not declare: a note (what the brokers run is still compared key by
    key above; kraftform cannot remove the default itself)."""
    return sorted(f"{k}={v}" for k, v in observed.broker_defaults.items()
                  if k not in declared and check_setting(k, v) is None)


def declared_features(cluster: ClusterSpec) -> dict[str, int]:
    """Feature -> declared level: metadata.version (from the release `metadata_version` names) first."""
    wanted = {} if cluster.metadata_version is None else \
        {"metadata.version": RELEASE_FEATURES[cluster.metadata_version]["metadata.version"]}
    return wanted | dict(sorted(cluster.features.items()))


def feature_changes(wanted: Mapping[str, int], observed: ClusterState) -> list[Change]:
    """The declared feature levels (`declared_features`) against the finalised ones. Raising metadata.version or
    kraft.version cannot be undone (destructive, so it waits for --allow-destructive) and lowering them is
    refused; another feature moves up (disruptive: brokers and clients change behaviour) or down (a safe
    downgrade, destructive: what used it stops working). A move Kafka's validate-only answer refuses is refused
    in Kafka's words; without that answer, a level above what every node supports is refused too."""
    if not observed.features and not observed.supported_features:
        return []  # not observed (an offline state)
    return [c for name, level in wanted.items() if (c := _feature_change(name, level, observed)) is not None]


def _release(level: int) -> str:
    """The newest Kafka release whose metadata.version is at most `level` (for the plan's words)."""
    return max((r for r, f in RELEASE_FEATURES.items() if f["metadata.version"] <= level), default="?",
               key=lambda r: RELEASE_FEATURES[r]["metadata.version"])


def _feature_change(name: str, level: int, observed: ClusterState) -> Change | None:
    now = observed.features.get(name, 0)
    if level == now:
        return None
    is_release = name == "metadata.version"
    declared = f"Kafka {_release(level)}'s {level}" if is_release else str(level)

    def refuse(reason: str) -> Change:
        return Change(Action.REFUSE, Kind.FEATURE, name, Safety.DESTRUCTIVE, reason, "level", str(now), str(level))

    verdict = observed.feature_verdicts.get(name, "OK")
    hint = " (declare the release the cluster runs)" if is_release and level < now else ""
    if verdict != "OK":
        return refuse(f"Kafka refuses {name} {now} -> {level}: {verdict}{hint}")
    # Without Kafka's answer (a login that may not alter the cluster), kraftform's own rules:
    supported = observed.supported_features.get(name)
    if level > now and supported is not None and level > supported:
        return refuse(f"the nodes support {name} up to level {supported}, not {level}: upgrade Kafka first")
    if level < now and name in IRREVERSIBLE_FEATURES:
        return refuse(f"finalised at level {now}, above {declared}: Kafka cannot lower a finalised {name}{hint}")
    if level < now:
        return Change(Action.UPDATE, Kind.FEATURE, name, Safety.DESTRUCTIVE,
                      f"a safe downgrade (UpdateFeatures): what relies on {name} {now} stops working",
                      "level", str(now), str(level), FeatureLevel(level, downgrade=True))
    if name in IRREVERSIBLE_FEATURES:
        release = _release(level)
        reason = (f"finalised for Kafka {release} (UpdateFeatures): irreversible, the cluster can never go back to "
                  f"a Kafka older than {release}" if is_release else
                  f"finalised (UpdateFeatures): irreversible, Kafka cannot lower {name} again")
        return Change(Action.UPDATE, Kind.FEATURE, name, Safety.DESTRUCTIVE, reason, "level", str(now), str(level),
                      FeatureLevel(level))
    return Change(Action.UPDATE, Kind.FEATURE, name, Safety.DISRUPTIVE,
                  f"finalised (UpdateFeatures): brokers and clients take up what {name} {level} enables",
                  "level", str(now), str(level), FeatureLevel(level))
