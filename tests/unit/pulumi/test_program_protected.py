"""A docker-mode stack that protects its objects (`kraftform:protect`, on in prod): its nodes too, under mocks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftform.pulumi.program import StackConfig

from ...conftest import EXAMPLE_SPECS
from .mocks import Mocks, RecordingMonitor, built_stack, pulumi_test

MONITOR: RecordingMonitor | None = None


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[Mocks, dict[str, Any]]]:
    global MONITOR
    with built_stack("dev", lambda: StackConfig(Path(EXAMPLE_SPECS), image="local", protect=True)) as (
            mocks, MONITOR, outputs):
        yield mocks, outputs


@pulumi_test
def test_the_nodes_are_protected_by_pulumi_and_by_their_own_check(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    """Pulumi's `protect` stops a deletion no Check sees (a renamed cluster is a new resource, `pulumi destroy`);
    the `protect` input lets the nodes' Check refuse removals within the same cluster."""
    mocks, outputs = stack

    def check(_: Any) -> None:
        assert MONITOR is not None and MONITOR.protected["platform-nodes"]
        [nodes] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "platform-nodes"]
        assert nodes.inputs["protect"] is True

    return outputs["bootstrapServers"].apply(check)
