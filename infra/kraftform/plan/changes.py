"""A plan is data: a list of typed changes, each with a safety class and a reason a reviewer can read.

The offline diff (spec revision against spec revision) and the live plan (spec against cluster) produce
the same `Plan`; text, markdown and JSON are renderings of it, and `apply` accepts only a `Plan`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from kraftform.plan.nodes import NodeStep
from kraftform.specset.model import AclBinding, QuotaEntity


class Safety(StrEnum):
    """How much a change can hurt: reviewers read destructive changes first."""

    DESTRUCTIVE = "destructive"  # data or access is lost: deletions, shorter retention, partition decrease
    DISRUPTIVE = "disruptive"  # clients notice: keys remap, replicas move, throttling, restarts
    SAFE = "safe"

    @property
    def rank(self) -> int:
        """0 for the most dangerous; members are declared in that order."""
        return list(Safety).index(self)


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    REFUSE = "refuse"  # drift kraftform will not fix (Kafka cannot, or only by losing data)


class Kind(StrEnum):
    """What a change touches; the order here is the order a plan lists them in (apply's own order is
    `Applier.STEPS`)."""

    CLUSTER = "cluster"
    FEATURE = "feature"
    BROKER_CONFIG = "broker_config"
    USER = "user"
    TOPIC = "topic"
    TOPIC_CONFIG = "topic_config"
    SUBJECT = "subject"  # a schema registry subject: its versions and its compatibility level
    PARTITIONS = "partitions"
    REPLICATION = "replication"
    ACL = "acl"
    QUOTA = "quota"
    GROUP_CONFIG = "group_config"
    PROFILE = "profile"
    CONSUMER = "consumer"
    OFFSETS = "offsets"  # a group's or a connector's offsets (`groups reset`, `connect offsets`), never from the specs
    CONNECTOR = "connector"  # a Kafka Connect connector, through its cluster's REST API


KIND_ORDER = {kind: index for index, kind in enumerate(Kind)}


# --- What an apply sends, typed: the renderers format the display strings, apply reads only these. ---


@dataclass(frozen=True)
class NewTopic:
    partitions: int
    replication_factor: int
    config: Mapping[str, str]


@dataclass(frozen=True)
class ConfigValue:
    """A topic's (or a group's) config override to set; None deletes the override (back to the default)."""

    value: str | None


@dataclass(frozen=True)
class BrokerSetting:
    """A dynamic broker setting to set (None: remove) on one broker."""

    broker: int
    value: str | None


@dataclass(frozen=True)
class FeatureLevel:
    """A finalised feature level to move to (UpdateFeatures): up, or down as a safe downgrade (Kafka refuses one
    that would lose metadata)."""

    level: int
    downgrade: bool = False


@dataclass(frozen=True)
class PartitionCount:
    count: int


@dataclass(frozen=True)
class Reassignment:
    """Target replicas (leader first) of partitions `first`, `first + 1`, ... of a topic (all of them from 0,
    or one batch's share of a large topic), and the brokers the replication throttle goes on."""

    target: tuple[tuple[int, ...], ...]
    brokers: tuple[int, ...]
    first: int = 0


@dataclass(frozen=True)
class GroupOffset:
    """Where a consumer group's committed offset on one partition goes."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class QuotaValue:
    entity: QuotaEntity
    value: float | None  # None: the limit is removed


@dataclass(frozen=True)
class Credential:
    """A SCRAM credential operation: set (mechanism, iterations) with the user's password, and/or delete the
    credential of a mechanism (a user removed, or switching mechanism). The password is never in a plan."""

    upsert: tuple[str, int] | None
    delete: str | None = None


@dataclass(frozen=True)
class ConnectorWork:
    """What the Connect REST API is asked: `create` (with `config` and its first `state`), `config` (the whole
    config PUT, once however many keys changed), `state` (pause, stop or resume), `restart` (what failed),
    `relogin` (restart everything: its user's password changed), `delete`."""

    operation: str
    config: Mapping[str, str] | None
    state: str | None


@dataclass(frozen=True)
class ConnectorOffset:
    """One source partition's offset for a Connect connector (KIP-875), both as canonical JSON: Connect's own
    shapes, opaque to kraftform for a source (a file position, a database's log position), `kafka_topic`,
    `kafka_partition` and `kafka_offset` for a sink. `offset` None resets the partition."""

    partition: str
    offset: str | None


@dataclass(frozen=True)
class SubjectWork:
    """What the schema registry is asked for one subject: its compatibility level set first (None: left as it is),
    then `schema` registered as its next version, or (`delete`) the whole subject deleted."""

    compatibility: str | None = None
    schema: str | None = None
    schema_type: str = "AVRO"
    delete: bool = False


Payload = (NewTopic | ConfigValue | BrokerSetting | FeatureLevel | PartitionCount | Reassignment | AclBinding
           | QuotaValue | Credential | GroupOffset | NodeStep | ConnectorWork | ConnectorOffset | SubjectWork
           | None)


@dataclass(frozen=True)
class Change:
    """One difference between what is and what the specs want.

    `current` and `desired` are display strings (never secrets); None means absent. `payload` is what apply
    sends (None for changes that are only reviewed, or refused); it is not part of a rendering.
    """

    action: Action
    kind: Kind
    resource: str
    safety: Safety
    reason: str
    key: str | None = None
    current: str | None = None
    desired: str | None = None
    payload: Payload = field(default=None, compare=False, repr=False)

    def sort_key(self) -> tuple[int, str, str]:
        return KIND_ORDER[self.kind], self.resource, self.key or ""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (str(v) if isinstance(v, StrEnum) else v)
                for f in fields(self) if f.name != "payload" for v in [getattr(self, f.name)]}


@dataclass(frozen=True)
class Plan:
    """`notes` are facts a reviewer should see that are not changes (topics left alone as unmanaged);
    `problems` are what stops the plan from being applied as it is (a password the specs name but nobody set)."""

    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    #: "plan" (specs against a live cluster) or "diff" (two spec revisions): what a rendering is titled.
    subject: str = "plan"

    @classmethod
    def of(cls, changes: list[Change], notes: tuple[str, ...] = (), subject: str = "plan") -> Plan:
        return cls(tuple(sorted(changes, key=Change.sort_key)), notes, subject=subject)

    @property
    def empty(self) -> bool:
        return not self.changes

    def counts(self) -> dict[Safety, int]:
        counted = Counter(c.safety for c in self.changes)
        return {s: counted.get(s, 0) for s in Safety}

    def by_safety(self, safety: Safety) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.safety is safety)

    @property
    def refused(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.action is Action.REFUSE)

    @property
    def node_work(self) -> tuple[Change, ...]:
        """Changes to the cluster's nodes (their count, racks): not Admin-protocol work."""
        return tuple(c for c in self.changes if c.kind is Kind.CLUSTER)

    def without_node_work(self) -> Plan:
        return dataclasses.replace(self, changes=tuple(c for c in self.changes if c.kind is not Kind.CLUSTER))

    def with_node_work(self, changes: list[Change]) -> Plan:
        """This plan with its node work replaced by what a runtime that knows the nodes found (`runtime.nodes.rolling`):
        more than the Admin protocol can observe (heaps, Kafka versions, every rendered setting)."""
        kept = [c for c in self.changes if c.kind is not Kind.CLUSTER]
        return dataclasses.replace(self, changes=tuple(sorted(kept + changes, key=Change.sort_key)))

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject,
                "summary": {"changes": len(self.changes), **{str(k): v for k, v in self.counts().items()},
                            "refused": len(self.refused)},
                "changes": [c.to_dict() for c in self.changes], "notes": list(self.notes),
                "problems": list(self.problems)}
