"""Three hosts for the package's tests (`harness`), made once and removed at the end, leaving nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import harness

#: The images every host gets: the small base image is what the harness's own test runs.
IMAGES = ("kraftform/debian:trixie",)


@pytest.fixture(scope="package")
def three_hosts() -> Iterator[list[harness.Host]]:
    made = harness.up(["a", "b", "c"], IMAGES)
    try:
        yield made
    finally:
        harness.down()
