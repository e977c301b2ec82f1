"""Shared fixtures: the repository's example specs and throw-away copies of them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Protocol

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_SPECS = REPO / "specs"
INVALID_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "invalid"



class SpecsCopy(Protocol):
    def __call__(self, name: str = "specs") -> Path: ...


@pytest.fixture
def example_specs() -> Path:
    return EXAMPLE_SPECS


@pytest.fixture
def specs_copy(tmp_path: Path) -> SpecsCopy:
    """A copy of the example specs under a new name, to edit freely."""

    def make(name: str = "specs") -> Path:
        target = tmp_path / name
        shutil.copytree(EXAMPLE_SPECS, target, ignore=shutil.ignore_patterns("schema"))
        return target

    return make


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    """Replace text in a spec file, failing loudly if the text is not there (so tests cannot rot)."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count))


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: s[0]*31^(n-1) + ... + s[n-1], in 32 bits."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The order a `java.util.HashMap` of these few keys (table of 16) iterates them: by bucket
    ((h ^ h >>> 16) & 15), then by insertion."""
    def bucket(key: str) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & 15
    return sorted(keys, key=bucket)
