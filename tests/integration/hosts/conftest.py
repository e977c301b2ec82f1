"""Four hosts for the package's tests (`harness`), made once and removed at the end, leaving nothing: three a
cluster runs on, the fourth one a test adds to it and drains again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kraftform.cluster.containers import LOCAL_IMAGE
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.engines.images import build_kafka

from . import harness

#: The images every host gets: the small base image is what the harness's own test runs, Kafka's the cluster's.
IMAGES = ("kraftform/debian:trixie", LOCAL_IMAGE)


@pytest.fixture(scope="package")
def four_hosts() -> Iterator[list[harness.Host]]:
    build_kafka(docker_client(), [])
    made = harness.up(["a", "b", "c", "d"], IMAGES)
    try:
        yield made
    finally:
        harness.down()


@pytest.fixture
def three_hosts(four_hosts: list[harness.Host]) -> list[harness.Host]:
    return four_hosts[:3]
