"""What changed between two Avro record schemas, field by field: what a reviewer reads instead of two whole schemas.

Pure. Fields are matched as Avro's resolution matches them: by name, or by an alias the new field gives the old
name (a rename). Nested records are followed, so a field added inside `address` reads `+ address.zip`. Whether
the change is allowed is `plan.avro_compat`'s and the registry's call; this only says what it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from kraftform.plan.avro_compat import PRIMITIVES, named_types, resolved
from kraftform.plan.render import listed

FieldAction = Literal["added", "removed", "retyped", "renamed", "default"]


@dataclass(frozen=True)
class FieldChange:
    """One field of a record schema added, removed, retyped, renamed or given another default. `before` and
    `after` are short type texts (or defaults, for `default`); None where the field is absent."""

    path: str
    action: FieldAction
    before: str | None = None
    after: str | None = None

    def text(self) -> str:
        if self.action == "added":
            return f"+ {self.path} ({self.after})"
        if self.action == "removed":
            return f"- {self.path} ({self.before})"
        if self.action == "renamed":
            return f"~ {self.path} renamed from {self.before}"
        what = "default " if self.action == "default" else ""
        return f"~ {self.path}: {what}{self.before} -> {self.after}"


def type_text(schema: Any, table: dict[str, Any] | None = None) -> str:
    """A type as a reviewer reads it: `long`, `null | string`, `array<string>`, `record Address`, `long
    (timestamp-millis)`, `enum Status {NEW, PAID}`."""
    table = named_types(schema) if table is None else table
    if isinstance(schema, list):
        return " | ".join(type_text(branch, table) for branch in schema)
    if isinstance(schema, str):
        found = schema if schema in PRIMITIVES else resolved(schema, table)
        return found if isinstance(found, str) else type_text(found, table)
    kind = schema.get("type")
    if isinstance(kind, (list, dict)):
        return type_text(kind, table)
    logical = f" ({schema['logicalType']})" if schema.get("logicalType") else ""
    if kind == "record":
        return f"record {str(schema.get('name', '')).rsplit('.', 1)[-1]}"
    if kind == "enum":
        return f"enum {str(schema.get('name', '')).rsplit('.', 1)[-1]} {{{', '.join(schema.get('symbols', ()))}}}"
    if kind == "fixed":
        return f"fixed {str(schema.get('name', '')).rsplit('.', 1)[-1]}[{schema.get('size')}]{logical}"
    if kind == "array":
        return f"array<{type_text(schema.get('items'), table)}>"
    if kind == "map":
        return f"map<{type_text(schema.get('values'), table)}>"
    return f"{kind}{logical}"


def _default_text(field: dict[str, Any]) -> str:
    return json.dumps(field["default"]) if "default" in field else "none"


def _added_text(field: dict[str, Any], table: dict[str, Any]) -> str:
    default = f", default {json.dumps(field['default'])}" if "default" in field else ", no default"
    return f"{type_text(field['type'], table)}{default}"


def _fields(old: Any, new: Any, ot: dict[str, Any], nt: dict[str, Any], at: str,
            seen: set[str]) -> list[FieldChange]:
    old, new = resolved(old, ot), resolved(new, nt)
    if not (isinstance(old, dict) and isinstance(new, dict) and old.get("type") == new.get("type") == "record"):
        return []
    name = str(new.get("name"))
    if name in seen:  # a recursive type met again
        return []
    seen = seen | {name}
    written = {f["name"]: f for f in old.get("fields", ())}
    out: list[FieldChange] = []
    matched: set[str] = set()
    for field in new.get("fields", ()):
        path = f"{at}{field['name']}"
        match = next((n for n in (field["name"], *field.get("aliases", ())) if n in written), None)
        if match is None:
            out.append(FieldChange(path, "added", after=_added_text(field, nt)))
            continue
        matched.add(match)
        was = written[match]
        if match != field["name"]:
            out.append(FieldChange(path, "renamed", before=match))
        before, after = type_text(was["type"], ot), type_text(field["type"], nt)
        nested = _fields(was["type"], field["type"], ot, nt, f"{path}.", seen)
        if before != after and not (nested and before.startswith("record ") and after.startswith("record ")):
            out.append(FieldChange(path, "retyped", before, after))
        out += nested
        if _default_text(was) != _default_text(field):
            out.append(FieldChange(path, "default", _default_text(was), _default_text(field)))
    out += [FieldChange(f"{at}{n}", "removed", before=type_text(f["type"], ot))
            for n, f in written.items() if n not in matched]
    return out


def field_changes(old: str, new: str) -> tuple[FieldChange, ...]:
    """The fields added, removed, retyped, renamed or given another default between two Avro record schemas
    (their JSON texts); empty for anything not a record, or when only docs or order differ."""
    try:
        a, b = json.loads(old), json.loads(new)
    except ValueError:
        return ()
    return tuple(_fields(a, b, named_types(a), named_types(b), "", set()))


def describe(old: str, new: str) -> str:
    """The field changes as one line of a plan (the first twelve, and how many more)."""
    changes = field_changes(old, new)
    if changes:
        return listed([c.text() for c in changes], limit=12, sep="; ")
    try:
        same_fields = [f.get("name") for f in json.loads(old).get("fields", ())] == \
            [f.get("name") for f in json.loads(new).get("fields", ())]
    except (ValueError, AttributeError):
        return "another schema"
    return "no field changed (docs or other attributes)" if same_fields else "the same fields, in another order"
