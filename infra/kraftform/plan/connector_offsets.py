"""A connector's offsets moved as a reviewed change (`kraftform connect offsets`, KIP-875): per source partition,
where the connector stands and where it goes. Pure: the offsets are read and written through the worker's REST
API in `connect.rest`.

A reset is destructive, as the issue of offsets as code has it: a source starts over (it produces again what it
read), a sink's consumer starts at its `auto.offset.reset` position (Connect's default, earliest: it writes again
what it wrote). A numeric offset moved forward skips records (destructive), moved back replays them (disruptive);
a source offset of any other shape (a database's log position) cannot be ordered by kraftform and is destructive.
Connect changes the offsets of a stopped connector only: any other state is a problem of the plan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kraftform.errors import UsageError
from kraftform.plan.changes import Action, Change, ConnectorOffset, Kind, Plan, Safety
from kraftform.plan.connectors import STOPPED
from kraftform.specset.model import ConnectorSpec

#: Canonical JSON of a partition, of an offset.
Offsets = Mapping[str, str]


def canonical(value: Any) -> str:
    """One spelling per JSON value, so that equal offsets compare equal whatever their key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def from_rest(answer: Any) -> dict[str, str]:
    """`GET /connectors/{name}/offsets`'s `{"offsets": [{"partition": ..., "offset": ...}]}` by partition."""
    return {canonical(e["partition"]): canonical(e["offset"]) for e in (answer or {}).get("offsets", ())}


def parse_offsets_file(where: str, data: Any) -> dict[str, str | None]:
    """What `--set FILE` declares, in the shape `connect offsets` prints with `--format json` (an offset null
    resets its partition): each entry checked, at its place in `where`."""
    entries = data.get("offsets") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise UsageError(f"{where}: expected {{\"offsets\": [{{\"partition\": {{...}}, \"offset\": {{...}}}}, ...]}} "
                        f"(what `kraftform connect offsets NAME --format json` prints)")
    out: dict[str, str | None] = {}
    for i, entry in enumerate(entries):
        if not (isinstance(entry, dict) and isinstance(entry.get("partition"), dict)
                and (entry.get("offset") is None or isinstance(entry.get("offset"), dict))):
            raise UsageError(f"{where}: offsets[{i}]: expected a `partition` object and an `offset` object (or null "
                            f"to reset that partition)")
        partition = canonical(entry["partition"])
        if partition in out:
            raise UsageError(f"{where}: offsets[{i}]: partition {partition} is given twice")
        out[partition] = None if entry.get("offset") is None else canonical(entry["offset"])
    return out


def offsets_plan(cluster: str, connector: ConnectorSpec, state: str, current: Offsets,
                 target: Mapping[str, str | None]) -> Plan:
    """The changes that take `connector` (running in `state`) from `current` to `target` (None: reset)."""
    changes: list[Change] = []
    for partition in sorted(target):
        new, now = target[partition], current.get(partition)
        if new == now:
            continue
        safety, reason = _moved(connector, now, new)
        changes.append(Change(Action.DELETE if new is None else Action.UPDATE, Kind.OFFSETS,
                              f"{cluster}/{connector.name} {partition}", safety, reason, "offset", now,
                              "(reset)" if new is None else new, ConnectorOffset(partition, new)))
    problems = [f"{connector.location}: connector {connector.name!r}: {partition}: {wrong}"
                for partition, offset in sorted(target.items())
                if connector.type == "sink" and (wrong := _not_a_sink_offset(connector, partition, offset))]
    if changes and state != STOPPED:
        problems.append(f"{connector.location}: connector {connector.name!r} is {state}: Connect changes the offsets "
                        f"of a stopped connector only; declare `state: stopped` there and `kraftform connect apply`")
    return Plan(tuple(sorted(changes, key=Change.sort_key)), problems=tuple(problems), subject="offsets change")


def _moved(connector: ConnectorSpec, now: str | None, new: str | None) -> tuple[Safety, str]:
    if new is None:
        if connector.type == "source":
            return Safety.DESTRUCTIVE, "reset: the source starts over and produces again what it had read"
        return Safety.DESTRUCTIVE, ("reset: the sink's consumer starts at its auto.offset.reset position (Connect's "
                                    "default: earliest, so it writes again what it had written)")
    if now is None:
        return Safety.DISRUPTIVE, "no offset yet: the connector starts here"
    before, after = _number(now), _number(new)
    if before is None or after is None:
        return Safety.DESTRUCTIVE, "a source offset kraftform cannot order: it may skip or replay data"
    if after > before:
        return Safety.DESTRUCTIVE, f"moves {after - before:,} forward: skips what lies between"
    return Safety.DISRUPTIVE, f"moves {before - after:,} back: replays what lies between"


def _not_a_sink_offset(connector: ConnectorSpec, partition: str, offset: str | None) -> str | None:
    """Why Connect would refuse this (partition, offset) of a sink, found before it is sent (Connect answers a
    bare 500)."""
    where = json.loads(partition)
    if set(where) != {"kafka_topic", "kafka_partition"} or not isinstance(where["kafka_partition"], int):
        return "a sink's partition is {\"kafka_topic\": ..., \"kafka_partition\": N}"
    if where["kafka_topic"] not in connector.topics:
        return f"topic {where['kafka_topic']!r} is not one the connector reads ({', '.join(connector.topics)})"
    value = None if offset is None else json.loads(offset)
    if value is not None and not (isinstance(value, dict) and set(value) == {"kafka_offset"}
                                  and isinstance(value["kafka_offset"], int) and value["kafka_offset"] >= 0):
        return "a sink's offset is {\"kafka_offset\": N} with N at least 0 (or null: reset)"
    return None


def _number(offset: str) -> int | None:
    """A one-field numeric offset (a sink's `kafka_offset`, a file source's `position`) as a number."""
    value = json.loads(offset)
    if isinstance(value, dict) and len(value) == 1:
        (only,) = value.values()
        if isinstance(only, int) and not isinstance(only, bool):
            return only
    return None
