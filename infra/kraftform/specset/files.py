"""Which files of a spec directory are specs: read by validation, and by the cache that keys on them."""

from __future__ import annotations

from pathlib import Path

SPEC_SUFFIXES = (".yaml", ".yml")
#: Schema files the topics name (`schemas:`): Avro's .avsc, JSON Schema's .json. They lie below the spec files.
SCHEMA_SUFFIXES = (".avsc", ".json")


def _below(specs_dir: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(
        p for p in specs_dir.rglob("*")
        if p.suffix in suffixes and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(specs_dir).parts)
    )


def spec_files(specs_dir: Path) -> list[Path]:
    """YAML files below the directory, sorted, skipping hidden folders (such as .git)."""
    return _below(specs_dir, SPEC_SUFFIXES)


def input_files(specs_dir: Path) -> list[Path]:
    """Everything validation may read: the spec files and the schema files beside them (what the spec cache keys
    on: a schema file changed is a spec changed)."""
    return _below(specs_dir, SPEC_SUFFIXES + SCHEMA_SUFFIXES)


def spec_texts(specs_dir: Path) -> dict[str, str]:
    """The spec files' and Avro schemas' text by path relative to the directory: what `verify` mutates (JSON files
    are left out: the JSON Schemas of kraftform's own format often lie beside the specs, as in specs/schema/)."""
    return {str(p.relative_to(specs_dir)): p.read_text(encoding="utf-8")
            for p in _below(specs_dir, (*SPEC_SUFFIXES, ".avsc"))}
