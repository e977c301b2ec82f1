"""The shape both sides of a plan share: what a cluster holds, whether read from specs or from Kafka.

A spec revision becomes a `ClusterState` through `state_of`; the `kafka/` observer builds one from Admin
reads. Diffing two `ClusterState`s is then the same code for pull-request diffs and live plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kraftform.definitions.topic_configs import kafka_default
from kraftform.specset.model import AclBinding, QuotaEntity, SpecSet

#: Broker settings whose value is the default of a topic config of the same name.
BROKER_TOPIC_DEFAULTS = {"min.insync.replicas": "min.insync.replicas",
                         "unclean.leader.election.enable": "unclean.leader.election.enable",
                         "log.retention.ms": "retention.ms", "log.retention.bytes": "retention.bytes",
                         "log.cleanup.policy": "cleanup.policy", "log.segment.bytes": "segment.bytes",
                         "compression.type": "compression.type", "message.max.bytes": "max.message.bytes"}


@dataclass(frozen=True)
class TopicState:
    """`config` holds only the overrides set on the topic itself; defaults are not drift."""

    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)
    #: Replicas of each partition, leader first; observed clusters only (needed to plan replica moves).
    assignment: tuple[tuple[int, ...], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class UserState:
    """Kafka never reveals a password: spec revisions carry `password_version`, and an observed user carries
    `password_ok`, whether the password in the secret store logs in (None: not checked)."""

    name: str
    mechanism: str
    iterations: int
    password_version: int | None = None
    password_ok: bool | None = None


@dataclass(frozen=True)
class ClusterState:
    topics: Mapping[str, TopicState] = field(default_factory=dict)
    acls: frozenset[AclBinding] = frozenset()
    quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=dict)
    users: Mapping[str, UserState] = field(default_factory=dict)
    #: Effective defaults of topic configs on this cluster (broker overrides of Kafka's defaults).
    topic_defaults: Mapping[str, str] = field(default_factory=dict)
    #: Group -> the settings set on its GROUP resource (observed: the declared groups' only).
    group_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: Broker id -> rack (None without racks); observed clusters only.
    brokers: Mapping[int, str | None] = field(default_factory=dict)
    #: Broker id -> the effective value of each broker setting the specs declare; observed clusters only.
    broker_settings: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    #: Broker id -> the settings set dynamically on that broker; observed clusters only.
    broker_dynamic: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    #: Dynamic cluster-wide broker defaults (what `kafka-configs --entity-default` sets); observed clusters only.
    broker_defaults: Mapping[str, str] = field(default_factory=dict)
    #: Finalised feature levels (metadata.version, ...) and the highest level every node supports; observed only.
    features: Mapping[str, int] = field(default_factory=dict)
    supported_features: Mapping[str, int] = field(default_factory=dict)
    #: Feature -> Kafka's answer ("OK" or its reason) to a validate-only UpdateFeatures to the declared level, for
    #: each declared feature whose level differs; observed only, and only when the observer may ask.
    feature_verdicts: Mapping[str, str] = field(default_factory=dict)

    def default_of(self, key: str) -> str | None:
        return self.topic_defaults.get(key, kafka_default(key))


def topic_defaults_of(specs: SpecSet) -> dict[str, str]:
    """Topic config defaults the brokers kraftform renders will have."""
    broker = {"min.insync.replicas": str(specs.cluster.defaults.min_insync_replicas)}
    return {topic_key: broker[broker_key] for broker_key, topic_key in BROKER_TOPIC_DEFAULTS.items()
            if broker_key in broker}


def state_of(specs: SpecSet) -> ClusterState:
    """The state a cluster will be in once these specs are applied."""
    return ClusterState(
        topics={t.name: TopicState(t.name, t.partitions, t.replication_factor, dict(t.config))
                for t in specs.topics},
        acls=specs.acl_bindings(),
        quotas={q.entity: dict(q.values) for q in specs.quotas},
        users={u.name: UserState(u.name, u.mechanism, u.iterations, u.password_version) for u in specs.users},
        topic_defaults=topic_defaults_of(specs),
        group_configs={g.name: dict(g.config) for g in specs.groups},
    )
