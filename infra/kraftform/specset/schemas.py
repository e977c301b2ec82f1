"""The topics' schema files, read and checked offline: `kraftform validate` finds a schema the registry would
refuse, at its place in the schema file, before any plan asks the registry.

Avro schemas are parsed by fastavro (the parser confluent-kafka's serializers use); JSON Schemas are checked
against their meta-schema. A file's text is compacted for the model: the registry compares schemas, not layout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from kraftform.errors import Location, Problem
from kraftform.specset.model import SchemaType


@dataclass(frozen=True)
class ParsedSchema:
    """A schema file's content: compact text for the registry, and the record's full name (for the record
    naming strategies; None when the schema is not a named record)."""

    text: str
    record_name: str | None


def _line_of(text: str, needle: str) -> tuple[int, int]:
    """Where `needle` first appears as a JSON string in `text` (1-based), or the top of the file."""
    found = re.search(re.escape(json.dumps(needle)), text)
    if found is None:
        return 1, 1
    line = text.count("\n", 0, found.start()) + 1
    return line, found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1


def _quoted(message: str) -> Iterator[str]:
    """The names fastavro's messages quote ("Unknown type: strng", "... 'x' ..."), to find them in the file."""
    for quoted in re.findall(r"'([^']+)'", message):
        yield quoted
        yield quoted.rsplit(".", 1)[-1]  # a name fastavro qualified with the record's namespace
    tail = message.rsplit(":", 1)[-1].strip()
    if tail and " " not in tail:
        yield tail


def parse_schema_file(text: str, file: str, schema_type: SchemaType) -> tuple[ParsedSchema | None, list[Problem]]:
    """The schema in `text` (the content of `file`), or the problems that make the registry refuse it, each at its
    line in the file."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [Problem(Location(file, exc.lineno, exc.colno), f"not JSON: {exc.msg}")]
    if schema_type == "JSON":
        return _json_schema(document, text, file)
    return _avro(document, text, file)


def _avro(document: Any, text: str, file: str) -> tuple[ParsedSchema | None, list[Problem]]:
    from fastavro.schema import SchemaParseException, UnknownType, parse_schema

    try:
        parse_schema(document, _write_hint=False, _force=True)
    except (SchemaParseException, UnknownType, ValueError, TypeError, KeyError, AttributeError) as exc:
        message = (f"unknown type {exc.name!r}" if isinstance(exc, UnknownType) else
                   f"missing {exc}" if isinstance(exc, KeyError) else str(exc))
        line, column = next((_line_of(text, name) for name in _quoted(message) if _line_of(text, name) != (1, 1)),
                            (1, 1))
        return None, [Problem(Location(file, line, column), f"not a valid Avro schema: {message}")]
    problems = [Problem(Location(file, *_line_of(text, name)), problem) for name, problem in _defaults(document)]
    if problems:
        return None, problems
    return ParsedSchema(_compact(document), _full_name(document)), []


def _full_name(document: Any) -> str | None:
    if not isinstance(document, dict) or document.get("type") != "record":
        return None
    name, namespace = str(document.get("name", "")), document.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


PRIMITIVE_DEFAULTS: dict[str, tuple[type, ...]] = {
    "null": (type(None),), "boolean": (bool,), "int": (int,), "long": (int,), "float": (int, float),
    "double": (int, float), "bytes": (str,), "string": (str,)}


def _defaults(schema: Any) -> Iterator[tuple[str, str]]:
    """Union fields whose default is not of the union's first type: fastavro takes any branch, Avro's Java parser
    (the registry's, and Spark's) only the first. The field's name, and the problem."""
    if isinstance(schema, list):
        for branch in schema:
            yield from _defaults(branch)
        return
    if not isinstance(schema, dict):
        return
    for field in schema.get("fields", ()) if schema.get("type") == "record" else ():
        kind = field.get("type")
        yield from _defaults(kind)
        if "default" not in field or not isinstance(kind, list) or not kind or not isinstance(kind[0], str):
            continue
        allowed, value = PRIMITIVE_DEFAULTS.get(kind[0]), field["default"]
        wrong = allowed is not None and (not isinstance(value, allowed) or
                                         (bool not in allowed and isinstance(value, bool)))
        if wrong:
            yield field.get("name", ""), (f"field {field.get('name')!r}: default {json.dumps(value)} is not a "
                                          f"{kind[0]}, the union's first type (Avro takes a union's default as "
                                          f"its first type)")
    for key in ("items", "values"):
        if key in schema:
            yield from _defaults(schema[key])


def _json_schema(document: Any, text: str, file: str) -> tuple[ParsedSchema | None, list[Problem]]:
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(document).check_schema(document)
    except SchemaError as exc:
        where = next((str(p) for p in reversed(exc.path) if isinstance(p, str)), "")
        line, column = _line_of(text, where) if where else (1, 1)
        return None, [Problem(Location(file, line, column), f"not a valid JSON Schema: {exc.message}")]
    return ParsedSchema(_compact(document), None), []


def _compact(document: Any) -> str:
    return json.dumps(document, separators=(",", ":"))


def subject_name(topic: str, part: Literal["key", "value"], naming: str, record_name: str | None) -> str | None:
    """The subject a topic's key or value schema is registered under, by Confluent's strategies; None when the
    strategy needs a record name the schema does not have."""
    if naming == "topic":
        return f"{topic}-{part}"
    if record_name is None:
        return None
    return record_name if naming == "record" else f"{topic}-{record_name}"
