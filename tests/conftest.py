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
