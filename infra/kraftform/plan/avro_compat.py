"""Avro schema resolution, offline: can a reader with one schema read what a writer wrote with another?

The registry answers this for a live plan; the offline `kraftform diff` of two spec revisions has no registry and
must still class a schema change before review. The rules are Avro's (the specification's "Schema Resolution"):
fields matched by name (or the reader's aliases), a reader's field missing from the writer needs a default, numeric
promotions (int to long, float, double; long to float, double; float to double), string and bytes interchangeable,
enum symbols the writer may send known to the reader (or a reader default), unions branch by branch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
              "string": {"bytes"}, "bytes": {"string"}}
PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def named_types(schema: Any, namespace: str = "", table: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every named type (record, enum, fixed) by its full name and its short name."""
    table = {} if table is None else table
    if isinstance(schema, list):
        for branch in schema:
            named_types(branch, namespace, table)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "enum", "fixed"):
            name = str(schema.get("name", ""))
            space = schema.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
            full = name if "." in name or not space else f"{space}.{name}"
            table[full] = schema
            table.setdefault(name.rsplit(".", 1)[-1], schema)
            namespace = space or ""
        for field in schema.get("fields", ()) if kind == "record" else ():
            named_types(field.get("type"), namespace, table)
        for key in ("items", "values"):
            if key in schema:
                named_types(schema[key], namespace, table)
        if isinstance(kind, (dict, list)):
            named_types(kind, namespace, table)
    return table


def resolved(schema: Any, table: dict[str, Any]) -> Any:
    """A name used as a type, replaced by its definition; `{"type": "int"}` as `int`."""
    if isinstance(schema, str) and schema not in PRIMITIVES:
        return table.get(schema, table.get(schema.rsplit(".", 1)[-1], schema))
    if isinstance(schema, dict) and isinstance(schema.get("type"), str) and schema["type"] in PRIMITIVES \
            and not schema.get("logicalType"):
        return schema["type"]
    return schema


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        return str(schema.get("type"))
    return str(schema)


def unreadable(reader: Any, writer: Any) -> list[str]:
    """Why a reader of `reader` cannot read data written with `writer`: empty when it can."""
    return list(_problems(reader, writer, named_types(reader), named_types(writer), "", set()))


def _problems(reader: Any, writer: Any, rt: dict[str, Any], wt: dict[str, Any], at: str,
              seen: set[tuple[str, str]]) -> Iterator[str]:
    reader, writer = resolved(reader, rt), resolved(writer, wt)
    rk, wk = _kind(reader), _kind(writer)
    where = at or "the top level"
    if wk == "union":
        for branch in writer:
            if not any(not list(_problems(r, branch, rt, wt, at, set(seen)))
                       for r in (reader if rk == "union" else [reader])):
                yield f"{where}: the writer's {_kind(resolved(branch, wt))} has no matching type in the reader"
        return
    if rk == "union":
        if not any(not list(_problems(r, writer, rt, wt, at, set(seen))) for r in reader):
            yield f"{where}: the writer's {wk} matches no type of the reader's union"
        return
    if rk != wk and wk not in PROMOTIONS.get(rk, set()) and rk not in PROMOTIONS.get(wk, set()):
        yield f"{where}: type changed from {wk} to {rk}"
        return
    if rk != wk and rk not in PROMOTIONS.get(wk, set()):
        yield f"{where}: {wk} cannot be read as {rk} (only widening promotions are)"
        return
    if rk == "record":
        key = (str(reader.get("name")), str(writer.get("name")))
        if key in seen:  # a recursive type met again
            return
        seen.add(key)
        if str(reader.get("name", "")).rsplit(".", 1)[-1] != str(writer.get("name", "")).rsplit(".", 1)[-1]:
            yield f"{where}: record {writer.get('name')!r} renamed {reader.get('name')!r}"
            return
        written = {f["name"]: f for f in writer.get("fields", ())}
        for field in reader.get("fields", ()):
            path = f"{at}.{field['name']}" if at else field["name"]
            match = next((written[n] for n in (field["name"], *field.get("aliases", ())) if n in written), None)
            if match is None:
                if "default" not in field:
                    yield f"field {path!r}: added without a default (data written before has none)"
                continue
            yield from _problems(field["type"], match["type"], rt, wt, path, seen)
    elif rk == "enum":
        missing = [s for s in writer.get("symbols", ()) if s not in reader.get("symbols", ())]
        if missing and "default" not in reader:
            yield f"{where}: enum symbol(s) {', '.join(missing)} unknown to the reader"
    elif rk == "array":
        yield from _problems(reader["items"], writer["items"], rt, wt, f"{at}[]", seen)
    elif rk == "map":
        yield from _problems(reader["values"], writer["values"], rt, wt, f"{at}{{}}", seen)
    elif rk == "fixed" and reader.get("size") != writer.get("size"):
        yield f"{where}: fixed size changed from {writer.get('size')} to {reader.get('size')}"


def incompatibilities(level: str, old: Any, new: Any) -> list[str]:
    """Why `new` may not follow `old` under a compatibility level (a transitive level is judged against `old`
    alone: an offline diff knows the previous revision, the registry every version)."""
    backward = level.startswith(("BACKWARD", "FULL"))
    forward = level.startswith(("FORWARD", "FULL"))
    out: list[str] = []
    if backward:
        out += [f"new readers of old data: {p}" for p in unreadable(new, old)]
    if forward:
        out += [f"old readers of new data: {p}" for p in unreadable(old, new)]
    return out
