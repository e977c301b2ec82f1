"""The declared subjects against a schema registry: what to register, which level to set, what drifted.

Pure: the registry's state and its answers to the compatibility checks (`registry.reconcile` asks them) come in
as data. The registry, not kraftform, judges compatibility: a new version the registry finds incompatible is
refused in its words; a version registered by hand after the declared one is drift the plan refuses to undo:
deleting a registered version leaves the records written with it unreadable.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kraftform.plan.changes import Action, Change, Kind, Safety, SubjectWork
from kraftform.plan.schema_fields import describe
from kraftform.specset.model import COMPATIBILITY_LEVELS, SubjectSpec


@dataclass(frozen=True)
class SubjectState:
    """One subject as the registry holds it."""

    name: str
    #: Its versions, oldest first, and the latest one's schema (text as registered) and type.
    versions: tuple[int, ...]
    latest_schema: str
    latest_type: str
    compatibility: str
    #: The version whose schema is the declared one, when the registry has it (None: not registered, or not asked).
    declared_version: int | None = None


@dataclass(frozen=True)
class CheckAnswer:
    """The registry's compatibility check of a declared schema against the subject's latest version."""

    compatible: bool
    messages: tuple[str, ...] = ()


def same_schema(a: str, b: str) -> bool:
    """Whether two schema texts are one schema (the registry keeps the text it was given; layout differs)."""
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def level_change_safety(current: str, desired: str) -> Safety:
    """Tightening is safe; loosening lets versions in that readers may not read (disruptive); NONE turns the check
    off (destructive: any version goes in, whatever it breaks)."""
    if desired == "NONE":
        return Safety.DESTRUCTIVE
    rank = {level: index for index, level in enumerate(COMPATIBILITY_LEVELS)}
    return Safety.DISRUPTIVE if rank.get(desired, 0) > rank.get(current, 0) else Safety.SAFE


def subject_topic(subject: str) -> str | None:
    """The topic a subject named by the topic strategy belongs to (`orders-value` -> `orders`)."""
    for suffix in ("-key", "-value"):
        if subject.endswith(suffix):
            return subject.removesuffix(suffix)
    return None


#: Why a declared version breaks a declared consumer of the subject's records, given the latest registered schema
#: and its label (`spark.schema_gate.readers_broken`, bound to the specs' consumers); empty when it breaks none.
Gate = Callable[[SubjectSpec, str, str], tuple[str, ...]]


def subject_changes(declared: tuple[SubjectSpec, ...], observed: Mapping[str, SubjectState],
                    checks: Mapping[str, CheckAnswer], owns_topic: Callable[[str], bool],
                    gate: Gate = lambda *_: ()) -> list[Change]:
    """The changes that take the registry to the declared subjects. `checks`: the registry's answer for each
    declared schema that would be a new version; `gate`: what declared consumers say of it (a refusal even where
    the registry's level allows the version). Subjects of topics kraftform owns that the specs no longer declare
    are deleted (destructive); others are left alone."""
    out: list[Change] = []
    for spec in declared:
        state = observed.get(spec.name)
        where = f"the {spec.part} schema of topic {spec.topic!r} ({spec.file})"
        if state is None:
            out.append(Change(Action.CREATE, Kind.SUBJECT, spec.name, Safety.SAFE,
                              f"{where}: version 1, compatibility {spec.compatibility}", "schema", None, spec.file,
                              SubjectWork(spec.compatibility, spec.schema, spec.schema_type)))
            continue
        if state.compatibility != spec.compatibility:
            safety = level_change_safety(state.compatibility, spec.compatibility)
            why = ("checks nothing: any version goes in, whatever readers it breaks" if spec.compatibility == "NONE"
                   else "fewer versions are refused" if safety is Safety.DISRUPTIVE else "more versions are refused")
            out.append(Change(Action.UPDATE, Kind.SUBJECT, spec.name, safety, f"compatibility level {why}",
                              "compatibility", state.compatibility, spec.compatibility,
                              SubjectWork(compatibility=spec.compatibility)))
        if same_schema(state.latest_schema, spec.schema) and state.latest_type == spec.schema_type:
            continue
        latest = state.versions[-1] if state.versions else 0
        if state.declared_version is not None:
            later = ", ".join(str(v) for v in state.versions if v > state.declared_version)
            out.append(Change(Action.REFUSE, Kind.SUBJECT, spec.name, Safety.DESTRUCTIVE,
                              f"drift: version(s) {later} registered outside the specs after the declared version "
                              f"{state.declared_version} ({spec.file}); kraftform never deletes a registered version "
                              f"(records written with it could no longer be read): declare that schema in the file, "
                              f"or delete the version(s) by hand once nothing writes with them",
                              "schema", f"version {latest}", f"version {state.declared_version}"))
            continue
        answer = checks.get(spec.name)
        if answer is not None and not answer.compatible and spec.compatibility != "NONE":
            words = "; ".join(answer.messages) or "not compatible"
            out.append(Change(Action.REFUSE, Kind.SUBJECT, spec.name, Safety.DESTRUCTIVE,
                              f"{where} refused by the registry under {state.compatibility} against version "
                              f"{latest}: {words}", "schema", f"version {latest}", spec.file))
            continue
        broken = gate(spec, state.latest_schema, f"version {latest}")
        if broken:
            out.append(Change(Action.REFUSE, Kind.SUBJECT, spec.name, Safety.DESTRUCTIVE,
                              f"{where} breaks what declared consumers read: {'; '.join(broken)}", "schema",
                              f"version {latest}", spec.file))
            continue
        checked = "checked compatible by the registry" if answer is not None else "not checked"
        fields = describe(state.latest_schema, spec.schema) if spec.schema_type == state.latest_type == "AVRO" \
            else spec.file
        out.append(Change(Action.UPDATE, Kind.SUBJECT, spec.name, Safety.SAFE,
                          f"{where}: version {latest + 1}, {checked} under {state.compatibility}", "schema",
                          f"version {latest}", f"version {latest + 1}: {fields}",
                          SubjectWork(None, spec.schema, spec.schema_type)))
    names = {s.name for s in declared}
    for name, state in sorted(observed.items()):
        topic = subject_topic(name)
        if name in names or topic is None or not owns_topic(topic):
            continue
        out.append(Change(Action.DELETE, Kind.SUBJECT, name, Safety.DESTRUCTIVE,
                          f"topic {topic!r} declares no such schema: its {len(state.versions)} version(s) go, and "
                          f"readers of records written with them can no longer decode them", "schema",
                          f"{len(state.versions)} version(s)", None, SubjectWork(delete=True)))
    return out
