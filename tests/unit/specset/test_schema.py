"""The JSON Schemas themselves: valid draft 2020-12, strict, and usable from editors."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

from kraftform.specset.schema import schema_dir

from ...conftest import EXAMPLE_SPECS


def _schemas() -> dict[str, dict]:  # type: ignore[type-arg]
    return {p.name: json.loads(p.read_text()) for p in schema_dir().glob("*.schema.json")}


def test_schemas_are_valid_draft_2020_12() -> None:
    schemas = _schemas()
    assert {"kraftform.schema.json", "cluster.schema.json", "topic.schema.json", "acl.schema.json",
            "quota.schema.json", "user.schema.json", "consumer.schema.json", "profile.schema.json"} <= set(schemas)
    for name, schema in schemas.items():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", name
        Draft202012Validator.check_schema(schema)


def test_every_object_forbids_unknown_keys() -> None:
    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, where
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    for name, schema in _schemas().items():
        walk(schema, name)


def test_every_example_file_has_an_editor_modeline_that_resolves() -> None:
    for path in EXAMPLE_SPECS.rglob("*.yaml"):
        first = path.read_text().splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path
        target = (path.parent / first.split("=", 1)[1]).resolve()
        assert target == (schema_dir() / "kraftform.schema.json").resolve(), path


def test_relative_refs_point_at_existing_files() -> None:
    names = {p.name for p in Path(schema_dir()).glob("*.json")}
    for name, schema in _schemas().items():
        for ref in _refs(schema):
            assert ref.split("#")[0] in names | {""}, f"{name}: {ref}"


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []
