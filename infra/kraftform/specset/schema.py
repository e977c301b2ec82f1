"""JSON Schema validation of spec files, with errors pointing at the offending line.

The schemas are the ones in `specs/schema/` (editors use them too); an installed wheel carries a copy in
`kraftform/specset/schema/`. jsonschema's own messages print whole objects; here each error is rewritten to
name the key and what was expected, and unknown keys are reported one by one at their own line.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from kraftform.errors import Problem, UsageError
from kraftform.specset.yamlsource import JsonPath, SourceDoc

ROOT_SCHEMA = "kraftform.schema.json"
_BASE_URI = "https://schemas.kraftform.invalid/"


def schema_dir() -> Path:
    """The packaged copy when installed from a wheel, else the repository's `specs/schema/`."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "schema", here.parents[2] / "specs" / "schema"):
        if (candidate / ROOT_SCHEMA).is_file():
            return candidate
    raise UsageError(f"kraftform's JSON schemas are missing (looked in {here / 'schema'})")


@functools.cache
def _validator() -> Draft202012Validator:
    # Schemas refer to each other by relative file name (so editors resolve them from disk); give each a
    # base URI here so the same relative references resolve in memory.
    resources = []
    for path in sorted(schema_dir().glob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append((_BASE_URI + path.name, Resource.from_contents(contents, DRAFT202012)))
    registry: Registry = Registry().with_resources(resources)
    root = registry.contents(_BASE_URI + ROOT_SCHEMA)
    return Draft202012Validator({"$ref": _BASE_URI + ROOT_SCHEMA, **{k: v for k, v in root.items()
                                                                      if k == "$schema"}},
                                registry=registry)


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPE_NAMES = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


_YAML_WORDS = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}


def _kind(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _messages(error: ValidationError) -> Iterator[tuple[JsonPath, str]]:
    path: JsonPath = tuple(error.absolute_path)
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    if keyword == "additionalProperties" and isinstance(instance, dict):
        known = sorted(error.schema.get("properties", {}))
        for key in sorted(set(instance) - set(known), key=str):
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (expected one of: {', '.join(known)})"
            yield (*path, str(key)), f"unknown key {key!r}{hint}"
    elif keyword == "required":
        missing = [k for k in expected if isinstance(instance, dict) and k not in instance]
        for key in missing:
            yield path, f"missing required key {key!r}"
    elif keyword == "type":
        types: list[str] = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(_YAML_WORDS.get(t, t) for t in types)
        yield path, f"expected {wanted}, got {_kind(instance)} {_short(instance)}"
    elif keyword == "enum":
        yield path, f"expected one of {', '.join(map(str, expected))}, got {_short(instance)}"
    elif keyword in ("oneOf", "anyOf"):
        hint = error.schema.get("description") or error.message
        yield path, f"{_short(instance)} is not valid: {hint}"
    elif keyword == "pattern":
        hint = error.schema.get("description") or f"must match {expected}"
        yield path, f"{_short(instance)} is not valid: {hint}"
    elif keyword in ("minProperties", "maxProperties", "minItems", "maxItems", "minLength", "maxLength"):
        yield path, f"{_kind(instance)} of size {len(instance)} breaks {keyword} {expected}"
    elif keyword == "uniqueItems":
        yield path, "items must be unique"
    else:
        message = error.message
        yield path, message if len(message) <= 200 else f"{_short(instance)} fails {keyword} {expected}"


def schema_errors(doc: SourceDoc) -> list[tuple[JsonPath, Problem]]:
    """Every schema violation in one spec file, located, with the path of the value it is about."""
    if doc.data is None:
        return [((), Problem(doc.locate(()), "the file is empty; add a section (cluster, topics, acls, ...)"))]
    return [(path, Problem(doc.locate(path), message))
            for error in _validator().iter_errors(doc.data) for path, message in _messages(error)]

