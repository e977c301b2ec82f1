"""A plan is data: a list of typed changes, each with a safety class and a reason a reviewer can read.

The offline diff (spec revision against spec revision) and the live plan (spec against cluster) produce
the same `Plan`; text, markdown and JSON are renderings of it, and `apply` accepts only a `Plan`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


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
    """What a change touches; the order here is the order an apply runs them in."""

    CLUSTER = "cluster"
    USER = "user"
    TOPIC = "topic"
    TOPIC_CONFIG = "topic_config"
    PARTITIONS = "partitions"
    REPLICATION = "replication"
    ACL = "acl"
    QUOTA = "quota"
    PROFILE = "profile"
    CONSUMER = "consumer"


KIND_ORDER = {kind: index for index, kind in enumerate(Kind)}


@dataclass(frozen=True)
class Change:
    """One difference between what is and what the specs want.

    `current` and `desired` are display strings (never secrets); None means absent.
    """

    action: Action
    kind: Kind
    resource: str
    safety: Safety
    reason: str
    key: str | None = None
    current: str | None = None
    desired: str | None = None

    def sort_key(self) -> tuple[int, str, str]:
        return KIND_ORDER[self.kind], self.resource, self.key or ""

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, StrEnum) else v) for k, v in asdict(self).items()}


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

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject,
                "summary": {"changes": len(self.changes), **{str(k): v for k, v in self.counts().items()},
                            "refused": len(self.refused)},
                "changes": [c.to_dict() for c in self.changes], "notes": list(self.notes),
                "problems": list(self.problems)}
