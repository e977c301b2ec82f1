"""Every container input the program passes is in the form pulumi-docker reads back from Docker, so a second
`pulumi up` (and `pulumi preview --expect-no-changes`) finds nothing to change.

The engine cannot run here, so this does what its docker provider does on either side of the state: each
container the dev stack declares (the inputs the program hands the engine, from a build under mocks) is
created in the real Docker engine with those values, inspected, and rendered back as the provider's Read
renders it (durations through Go's `time.Duration.String()`, labels as a set, ports with their protocol).
A run of the real engine once found `startPeriod: "240s"` read back as `"4m0s"` on every consumer."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker.models.containers import Container

from kraftform.pulumi.program import StackConfig
from kraftform.runtime.engines.engine import docker_client

from ...conftest import EXAMPLE_SPECS
from ...unit.pulumi.mocks import SECRET_SIG, registered

pytestmark = pytest.mark.integration

#: An image that is here after `kraftform images build` (the containers are created, never started).
IMAGE = "kraftform/debian:bookworm"
_UNITS_NS = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def parse_go(text: str) -> int:
    """A Go duration string (what the provider's schema takes) in nanoseconds."""
    parts = re.findall(r"(\d+)(h|ms|us|ns|m|s)", text)
    assert parts and "".join(n + u for n, u in parts) == text, f"not a Go duration: {text!r}"
    return sum(int(n) * _UNITS_NS[u] for n, u in parts)


def go_string(ns: int) -> str:
    """Go's `time.Duration.String()` for whole seconds, written here from Go's rules (not kraftform's code)."""
    assert ns % 10**9 == 0, ns
    total = ns // 10**9
    h, m, s = total // 3600, total % 3600 // 60, total % 60
    return f"{h}h{m}m{s}s" if h else f"{m}m{s}s" if m else f"{s}s"


def declared_containers() -> list[tuple[str, dict[str, Any]]]:
    mocks = registered("dev", lambda: StackConfig(Path(EXAMPLE_SPECS), image="local"))

    def plain(value: Any) -> Any:
        return value["value"] if isinstance(value, dict) and SECRET_SIG in value else value

    return [(c.name, {k: plain(v) for k, v in c.inputs.items()})
            for c in mocks.of_type("docker:index/container:Container")]


@pytest.fixture(scope="module")
def created() -> Iterator[list[tuple[str, dict[str, Any], Container]]]:
    client = docker_client()
    made: list[tuple[str, dict[str, Any], Container]] = []
    try:
        for name, inputs in declared_containers():
            check = inputs["healthcheck"]
            # The engine hands numbers over as floats (a protobuf Struct); the provider's schema makes them ints.
            ports = {f"{int(p['internal'])}/tcp": (p["ip"], int(p["external"])) for p in inputs.get("ports") or []}
            container = client.containers.create(
                IMAGE, command=inputs["command"], name=f"kftest-readback-{uuid.uuid4().hex[:8]}",
                hostname=inputs["hostname"], user=inputs["user"], ports=ports or None,
                labels={label["label"]: label["value"] for label in inputs["labels"]},
                healthcheck={"test": check["tests"], "interval": parse_go(check["interval"]),
                             "timeout": parse_go(check["timeout"]), "retries": int(check["retries"]),
                             "start_period": parse_go(check["startPeriod"])})
            container.reload()
            made.append((name, inputs, container))
        yield made
    finally:
        for _, _, container in made:
            container.remove(force=True)


def test_every_container_of_the_stack_is_checked(created: list[tuple[str, dict[str, Any], Container]]) -> None:
    names = {name for name, _, _ in created}
    # The nodes are not among them: the runtime's engine runs those (`pulumi.nodes`), not pulumi-docker.
    assert names == {"fraud-scoring-consumer", "clickstream-sessionizer-consumer"}


def test_what_docker_reports_reads_back_as_the_inputs(created: list[tuple[str, dict[str, Any], Container]]) -> None:
    for name, inputs, container in created:
        config = container.attrs["Config"]
        check = config["Healthcheck"]
        read_back = {"tests": check["Test"], "interval": go_string(check["Interval"]),
                     "timeout": go_string(check["Timeout"]), "startPeriod": go_string(check["StartPeriod"]),
                     "retries": check["Retries"]}
        declared = {**{k: inputs["healthcheck"][k] for k in read_back},
                    "retries": int(inputs["healthcheck"]["retries"])}
        assert read_back == declared, name
        assert config["Cmd"] == inputs["command"] and config["User"] == inputs["user"], name
        assert config["Hostname"] == inputs["hostname"], name
        assert config["Labels"] == {label["label"]: label["value"] for label in inputs["labels"]}, name
        bindings = container.attrs["HostConfig"]["PortBindings"] or {}
        assert {(int(k.split("/")[0]), b[0]["HostIp"], int(b[0]["HostPort"])) for k, b in bindings.items()} == \
            {(int(p["internal"]), p["ip"], int(p["external"])) for p in inputs.get("ports") or []}, name
