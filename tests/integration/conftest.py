"""Real secure clusters for integration tests: one per runtime per test session, started by kraftform's own
test-cluster code (`kraftform.testing`), as a user's suite starts its clusters.

Each runs the test spec in tests/fixtures/cluster (3 controllers, 3 brokers on 3 racks, TLS and SCRAM on
every listener) under a name of its own (`LiveCluster.spec.name`). Tests get unique topic names, so they never
depend on each other's data.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftform.cluster.connection import Connection
from kraftform.runtime import Runtime, runtime_of
from kraftform.runtime.nodes.deployment import Deployment, admin_config, load
from kraftform.specset.model import ClusterSpec
from kraftform.testing.cluster import ephemeral_cluster

CLUSTER_SPECS = Path(__file__).resolve().parents[1] / "fixtures" / "cluster"


@dataclass
class LiveCluster:
    runtime: Runtime
    state_dir: Path
    spec: ClusterSpec

    @property
    def deployment(self) -> Deployment:
        return load(self.state_dir)

    @property
    def connection(self) -> Connection:
        """The admin (super) user's login, as `cluster up` wrote it."""
        return admin_config(self.state_dir)

    @property
    def admin(self) -> dict[str, Any]:
        """librdkafka config of the admin (super) user, for the tests' own producers and consumers."""
        return self.connection.librdkafka()

    def client(self, **overrides: str) -> dict[str, Any]:
        return {**self.admin, **overrides}


def unique(prefix: str = "it") -> str:
    return f"{prefix}.{uuid.uuid4().hex[:10]}"


class Clusters:
    """Starts at most one cluster per runtime per session, on first use, through `kraftform.testing` as a user's
    suite starts its own (the `faithful` topology: the test spec's 3 controllers and 3 brokers, its security, a
    name, ports and a directory of its own, swept if a killed session left it); stops each once no test left
    needs it, and all at the end."""

    def __init__(self) -> None:
        self.running: dict[str, LiveCluster] = {}
        self._stacks: dict[str, contextlib.ExitStack] = {}

    def get(self, runtime_name: str) -> LiveCluster:
        if runtime_name not in self.running:
            stack = self._stacks[runtime_name] = contextlib.ExitStack()
            started = stack.enter_context(ephemeral_cluster(CLUSTER_SPECS, "faithful", runtime_name))
            self.running[runtime_name] = LiveCluster(runtime_of(started.state_dir), started.state_dir,
                                                     started.specs.cluster)
        return self.running[runtime_name]

    def stop(self, runtime_name: str) -> None:
        self.running.pop(runtime_name, None)
        stack = self._stacks.pop(runtime_name, None)
        if stack is not None:
            stack.close()

    def stop_all(self) -> None:
        for runtime_name in list(self._stacks):
            self.stop(runtime_name)


#: Session fixtures that, once started, run until the session ends (the Docker cluster: until its last test).
SHARED_FIXTURES = {"clusters", "spark"}
#: The session's clusters once made, and the last test that needs the Docker one: `pytest_runtest_teardown`
#: stops it there.
_SESSION: list[Clusters] = []
_LAST_DOCKER: list[pytest.Item] = []

#: `.ci/run` runs the suite as two pytest sessions at once, `-m docker_side` and `-m "not docker_side"`, so that each
#: shared cluster starts in one session only and the two halves wait on their clusters at the same time. The
#: Docker side: whatever runs on the Docker engine's clusters (the shared one, the runtimes' own, Pulumi's), and
#: these modules of their own clusters, which even out the halves; the local side: the rest, unit tests first. A
#: test parametrized by runtime goes with its runtime, so a module-scoped cluster per runtime still starts once.
#: (Not xdist: its `loadgroup` sets a node id pytest 9 no longer reads, and splits modules across workers.)
DOCKER_SIDE = ("tests/integration/pulumi/test_cluster_nodes.py", "tests/integration/pulumi/test_connect_cluster.py",
               "tests/integration/pulumi/test_docker_readback.py",
               "tests/integration/pulumi/test_monitoring_containers.py", "tests/integration/spark/test_containers.py",
               "tests/integration/runtime/test_docker_engine.py",
               "tests/integration/runtime/test_monitoring.py", "tests/integration/registry/",
               "tests/integration/hosts/")


def group_of(item: pytest.Item) -> str:
    fixtures = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    runtimes = {v for v in (callspec.params.values() if callspec is not None else ()) if v in ("local", "docker")}
    if "docker_cluster" in fixtures or "docker" in runtimes:
        return "docker"
    if "local_cluster" in fixtures or "local" in runtimes:
        return "local"
    return "docker" if item.nodeid.startswith(DOCKER_SIDE) else "local"


def needs_docker_cluster(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return ("docker_cluster" in getattr(item, "fixturenames", ())
            or (callspec is not None and callspec.params.get("cluster") == "docker"))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the side marked here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules that start clusters of their own run before the first test that needs a shared one (a shared
    cluster or the shared Spark session); among those, the modules that need the shared Docker cluster first, so
    that it stops early (`pytest_runtest_teardown`).

    The shared clusters live until the session ends once started: twelve idle JVMs beside a module's own cluster
    on 2 cores doubled its rolls and starts (a read-only roll 78-114 s alone, 210 s in CI). Whole modules move,
    so their module-scoped clusters start once; within each group pytest's order (unit tests first, the shared
    clusters' parameters grouped) is kept.
    """
    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    shared = {module(i) for i in items if SHARED_FIXTURES & set(getattr(i, "fixturenames", ()))}
    first_shared = next((n for n, i in enumerate(items) if module(i) in shared), len(items))
    head, tail = items[:first_shared], items[first_shared:]
    on_docker = {module(i) for i in tail if needs_docker_cluster(i)}
    items[:] = (head + [i for i in tail if module(i) not in shared]
                + [i for i in tail if module(i) in on_docker] + [i for i in tail if module(i) in shared - on_docker])
    last = [i for i in items if needs_docker_cluster(i)]
    _LAST_DOCKER[:] = last[-1:]
    for item in items:
        if item.nodeid.startswith("tests/integration/") and group_of(item) == "docker":
            item.add_marker(pytest.mark.docker_side)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """The shared Docker cluster stops after the last test that needs it: six idle containers beside the local
    cluster, Spark and Connect would cost every test after it its share of two cores."""
    if _SESSION and _LAST_DOCKER and item is _LAST_DOCKER[0]:
        _SESSION[0].stop("docker")


@pytest.fixture(scope="session")
def clusters() -> Iterator[Clusters]:
    started = Clusters()
    _SESSION.append(started)
    try:
        yield started
    finally:
        _SESSION.remove(started)
        started.stop_all()


@pytest.fixture(scope="session", params=["local", "docker"])
def cluster(request: pytest.FixtureRequest, clusters: Clusters) -> LiveCluster:
    """Each runtime in turn: for tests that every runtime must pass."""
    return clusters.get(request.param)


@pytest.fixture(scope="session")
def local_cluster(clusters: Clusters) -> LiveCluster:
    """The local-runtime cluster, for tests whose subject is not the runtime."""
    return clusters.get("local")


@pytest.fixture(scope="session")
def docker_cluster(clusters: Clusters) -> LiveCluster:
    """The Docker-runtime cluster, for tests of what runs beside it in containers (the consumers)."""
    return clusters.get("docker")


def assert_hardened(container: Any, memory_bytes: int | None) -> None:
    """What Docker holds for a container kraftform made, and what its main process really runs with: no privilege to
    gain (NoNewPrivs), no capability (CapEff 0, bounding set empty), a bounded log, the memory limit."""
    host = container.attrs["HostConfig"]
    assert host["SecurityOpt"] == ["no-new-privileges:true"] and host["CapDrop"] == ["ALL"], host
    assert host["LogConfig"] == {"Type": "json-file", "Config": {"max-size": "20m", "max-file": "5"}}
    assert host["Memory"] == (memory_bytes or 0) and host["MemorySwap"] == (memory_bytes or 0), host
    status = dict(line.split(":\t", 1) for line in container.exec_run(["cat", "/proc/1/status"]).output.decode()
                  .splitlines() if ":\t" in line)
    assert status["NoNewPrivs"].strip() == "1", status
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0, status
    assert int(status["Uid"].split()[0]) != 0
