"""An Avro record schema as Spark sees it. Pure: `kraftform validate` checks an Avro consumer's SQL against the
columns its topics' declared schema gives, and the job reads with a schema cut down to the fields the SQL uses.

The types follow spark-avro's `SchemaConverters` (the library that decodes the records): a union of null and one
type is that type, nullable; enums and uuids are strings, fixed and bytes binary; the `date`, `timestamp-*` and
`decimal` logical types their SQL types; any other union a struct of `member0`, `member1`, ...
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import fastavro

PRIMITIVES: Mapping[str, str] = {
    "null": "VOID", "boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
    "bytes": "BINARY", "string": "STRING",
}
LOGICAL: Mapping[str, str] = {
    "date": "DATE", "timestamp-millis": "TIMESTAMP", "timestamp-micros": "TIMESTAMP",
    "local-timestamp-millis": "TIMESTAMP_NTZ", "local-timestamp-micros": "TIMESTAMP_NTZ", "uuid": "STRING",
}


class AvroShapeError(ValueError):
    """The schema is not one a consumer can read as columns (not a record)."""


def _sql_type(schema: Any, named: dict[str, Any], namespace: str = "") -> str:
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return PRIMITIVES[schema]
        full = schema if "." in schema or not namespace else f"{namespace}.{schema}"
        found = named.get(full, named.get(schema))
        if found is None:
            raise AvroShapeError(f"unknown type {schema!r}")
        return _sql_type(found, named, namespace)
    if isinstance(schema, list):
        members = [m for m in schema if m != "null"]
        if len(members) == 1:
            return _sql_type(members[0], named, namespace)
        return "STRUCT<" + ", ".join(f"member{i}: {_sql_type(m, named, namespace)}"
                                     for i, m in enumerate(members)) + ">"
    kind, logical = schema["type"], schema.get("logicalType")
    if kind in ("record", "enum", "fixed"):
        space = schema.get("namespace", namespace)
        full = schema["name"] if "." in schema["name"] else ".".join(p for p in (space, schema["name"]) if p)
        named[full] = schema
        namespace = full.rpartition(".")[0]
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return f"DECIMAL({schema['precision']},{schema.get('scale', 0)})"
    if logical in LOGICAL and not (logical == "uuid" and kind != "string"):
        return LOGICAL[logical]
    if kind == "record":
        return "STRUCT<" + ", ".join(f"`{f['name']}`: {_sql_type(f['type'], named, namespace)}"
                                     for f in schema["fields"]) + ">"
    if kind == "enum":
        return "STRING"
    if kind == "fixed":
        return "BINARY"
    if kind == "array":
        return f"ARRAY<{_sql_type(schema['items'], named, namespace)}>"
    if kind == "map":
        return f"MAP<STRING, {_sql_type(schema['values'], named, namespace)}>"
    return _sql_type(kind, named, namespace)


def _record(text: str) -> dict[str, Any]:
    schema = json.loads(text)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise AvroShapeError("the value schema is not an Avro record: a consumer reads a record's fields as "
                             "columns")
    return schema


def columns(text: str) -> dict[str, str]:
    """The record's fields as the `input` view's columns: {field: Spark SQL type}."""
    schema, named = _record(text), dict[str, Any]()
    namespace = schema.get("namespace", "")
    _sql_type(schema, named, namespace)  # registers the record's named types, nested ones included
    space = schema["name"].rpartition(".")[0] if "." in schema["name"] else namespace
    return {f["name"]: _sql_type(f["type"], named, space) for f in schema["fields"]}


def reader_schema(text: str, reads: Sequence[str] | None) -> str:
    """The declared record with only the fields the query reads (Avro's schema resolution skips the others
    while decoding, so they cost no objects). Every field when `reads` is None; the first one when the query
    reads none (a record needs a field for Spark to make a struct of it). Named types a dropped field defined
    are kept by moving their definition into the first field that still names them."""
    schema = _record(text)
    if reads is None:
        return json.dumps(schema, separators=(",", ":"))
    wanted = {r.lower() for r in reads}
    fields = [f for f in schema["fields"] if f["name"].lower() in wanted] or schema["fields"][:1]
    kept = [f["name"] for f in fields]
    definitions = _definitions([f for f in schema["fields"] if f["name"] not in kept])
    pruned = {**schema, "fields": [_with_definitions(f, definitions) for f in fields]}
    return json.dumps(pruned, separators=(",", ":"))


#: The Confluent header (a 0 byte and the schema id) read as the first field of the record: Avro encodes a
#: `fixed` of 5 bytes as those 5 bytes, so a whole wire-format value is a record of the header and the body.
HEADER_FIELD = "kraftform_wire_header"
HEADER_TYPE = {"type": "fixed", "name": "WireHeader", "namespace": "dev.kraftform", "size": 5}


def framed(writer: str) -> str:
    """The writer's record with the Confluent header as a first field of 5 fixed bytes: what a whole
    wire-format value is, so `from_avro` decodes the value as it is, not a copy of its body cut after the header.
    The reader schema has no such field: Avro's schema resolution skips it."""
    schema = _record(writer)
    return json.dumps({**schema, "fields": [{"name": HEADER_FIELD, "type": HEADER_TYPE}, *schema["fields"]]},
                      separators=(",", ":"))


def encoder(text: str, schema_id: int) -> Callable[[Mapping[str, Any]], bytes]:
    """Values -> the Confluent wire format: a 0 byte, the schema's id in the registry (4 bytes, big-endian), the
    Avro body; what a producer's AvroSerializer writes and the job's `from_avro` reads after the header."""
    parsed = fastavro.parse_schema(json.loads(text))
    header = b"\0" + schema_id.to_bytes(4, "big")

    def encode(value: Mapping[str, Any]) -> bytes:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed, value)
        return header + body.getvalue()

    return encode


def _definitions(fields: list[dict[str, Any]]) -> dict[str, Any]:
    """Named types (records, enums, fixed) defined inside `fields`, by name and full name."""
    found: dict[str, Any] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("type") in ("record", "enum", "fixed") and "name" in node:
                found[node["name"]] = node
                found[node["name"].rpartition(".")[2]] = node
            for value in node.values():
                walk(value)

    for f in fields:
        walk(f["type"])
    return found


def _with_definitions(field: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """A kept field whose type names a type a dropped field defined: the definition inlined at its first use."""
    if not definitions:
        return field
    used: set[str] = set()

    def inline(node: Any) -> Any:
        if isinstance(node, str) and node in definitions and node not in used:
            used.add(node)
            return inline(definitions[node])
        if isinstance(node, list):
            return [inline(n) for n in node]
        if isinstance(node, dict):
            return {k: inline(v) if k in ("type", "items", "values", "fields") else v for k, v in node.items()}
        return node

    return {**field, "type": inline(field["type"])}
