"""A consumer group's committed offsets moved as a reviewed change (`kraftform groups reset`): where to, per
partition, and what the group then skips or reads again. Pure: the offsets are read and written in
`kafka.offsets`.

A move forward skips records the group has not read: destructive (it will never process them). A move back
replays records: disruptive (they are processed again). A partition without a committed offset gets one: the
group starts there instead of at its `auto.offset.reset` position. Kafka only moves the offsets of a group with
no active members, so a group with members is a problem of the plan, named before anything is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from kraftform.errors import UsageError
from kraftform.plan.changes import Action, Change, GroupOffset, Kind, Plan, Safety
from kraftform.specset.model import SpecSet

Partition = tuple[str, int]
_OFFSET = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+):(?P<partition>\d+)=(?P<offset>\d+)$")


@dataclass(frozen=True)
class ResetTo:
    """Where `--to` points: the start or end of each partition, the first record at or after a time, or
    offsets given one by one."""

    kind: str  # "earliest" | "latest" | "datetime" | "offsets"
    text: str
    at_ms: int | None = None
    offsets: Mapping[Partition, int] = field(default_factory=dict)


def parse_reset_to(text: str) -> ResetTo:
    """`earliest`, `latest`, an ISO 8601 time with its zone (2026-11-24T09:30:00Z), or
    `topic:partition=offset,...`."""
    value = text.strip()
    if value in ("earliest", "latest"):
        return ResetTo(value, value)
    if ":" in value and "=" in value:
        offsets: dict[Partition, int] = {}
        for part in value.split(","):
            found = _OFFSET.match(part.strip())
            if found is None:
                raise UsageError(f"--to {text!r}: {part.strip()!r} is not topic:partition=offset")
            offsets[(found["topic"], int(found["partition"]))] = int(found["offset"])
        return ResetTo("offsets", value, offsets=offsets)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--to {text!r}: not earliest, latest, an ISO 8601 time (2026-11-24T09:30:00Z) or "
                         f"topic:partition=offset,...") from None
    if when.tzinfo is None:
        raise UsageError(f"--to {text!r}: give the time's zone (Z or +01:00): a record's timestamp is absolute")
    return ResetTo("datetime", value, at_ms=int(when.timestamp() * 1000))


def group_is_declared(specs: SpecSet, group: str) -> bool:
    """A group some ACL in the specs grants: by its literal name, or a prefix of it."""
    return any(a.resource_type == "group" and (
        a.resource_name == group if a.pattern_type == "literal" else group.startswith(a.resource_name))
        for a in specs.acls if a.permission == "allow")


def reset_plan(group: str, current: Mapping[Partition, int | None], targets: Mapping[Partition, int],
               ends: Mapping[Partition, tuple[int, int]], members: int) -> Plan:
    """The changes that move `group` from `current` (None: no committed offset) to `targets`; `ends` holds each
    partition's (earliest, latest) offset, which every target must lie within."""
    changes: list[Change] = []
    problems: list[str] = []
    for partition in sorted(targets):
        topic, number = partition
        target, now = targets[partition], current.get(partition)
        low, high = ends[partition]
        resource = f"{group} {topic}-{number}"
        if not low <= target <= high:
            changes.append(Change(Action.REFUSE, Kind.OFFSETS, resource, Safety.DESTRUCTIVE,
                                  f"offset {target} is outside the partition's records ({low} to {high})", "offset",
                                  None if now is None else str(now), str(target)))
            continue
        if now == target:
            continue
        if now is None:
            safety = Safety.DISRUPTIVE
            reason = "no committed offset yet: the group starts here, not at its auto.offset.reset position"
        elif target > now:
            safety, reason = Safety.DESTRUCTIVE, f"skips {target - now:,} record(s) the group has not read"
        else:
            safety, reason = Safety.DISRUPTIVE, f"replays {now - target:,} record(s) the group has read"
        changes.append(Change(Action.UPDATE, Kind.OFFSETS, resource, safety, reason, "offset",
                              None if now is None else str(now), str(target), GroupOffset(topic, number, target)))
    if members:
        problems.append(f"group {group!r} has {members} active member(s): Kafka moves the offsets of a group only "
                        f"when it has none; stop its consumers first")
    return Plan(tuple(sorted(changes, key=Change.sort_key)), problems=tuple(problems), subject="offsets reset")
