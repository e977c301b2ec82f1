"""Ways to run a cluster spec: JVM processes on this machine, or containers on a Docker engine.

Both take the same rendered configuration and expose the same operations (`up`, `stop`, `down`,
`kill_node`, `start_node`, `resident_bytes`); the state directory records which one a cluster uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kraftform.errors import UsageError
from kraftform.kafka.health import ClusterHealth
from kraftform.specset.model import ClusterSpec

RUNTIMES = ("local", "docker")


class Runtime(Protocol):
    name: str
    state_dir: Path

    def up(self, cluster: ClusterSpec, admin_password: str | None = None, timeout: float = 240) -> ClusterHealth: ...
    def stop(self) -> None: ...
    def down(self, purge: bool = False) -> None: ...
    def kill_node(self, name: str) -> None: ...
    def start_node(self, name: str) -> None: ...
    def resident_bytes(self) -> int: ...


def get_runtime(name: str, state_dir: Path, image: str | None = None) -> Runtime:
    if name == "local":
        from kraftform.runtime.nodes.local import LocalRuntime

        return LocalRuntime(state_dir)
    if name == "docker":
        from kraftform.runtime.nodes.docker_engine import DockerRuntime

        return DockerRuntime(state_dir, image)
    raise UsageError(f"unknown runtime {name!r} (choose from {', '.join(RUNTIMES)})")


def runtime_of(state_dir: Path) -> Runtime:
    """The runtime that started the cluster recorded in `state_dir`."""
    from kraftform.runtime.nodes.deployment import load

    deployment = load(state_dir)
    return get_runtime(deployment.runtime, state_dir, deployment.extra.get("image"))
