"""Which files of a spec directory are specs: read by validation, and by the cache that keys on them."""

from __future__ import annotations

from pathlib import Path

SPEC_SUFFIXES = (".yaml", ".yml")


def spec_files(specs_dir: Path) -> list[Path]:
    """YAML files below the directory, sorted, skipping hidden folders (such as .git)."""
    return sorted(
        p for p in specs_dir.rglob("*")
        if p.suffix in SPEC_SUFFIXES and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(specs_dir).parts)
    )


def spec_texts(specs_dir: Path) -> dict[str, str]:
    """The spec files' text by path relative to the directory: what a consumer's container gets as its specs."""
    return {str(p.relative_to(specs_dir)): p.read_text(encoding="utf-8") for p in spec_files(specs_dir)}
