"""A consumer in a container beside the secure Docker cluster, as `kraftform consumers up` runs it: the
locally built Spark image, the brokers' in-network listener, the consumer's own SCRAM login from a file.
Killed with SIGKILL and redeployed, it continues from the checkpoint on its volume: every input record is in
the sink exactly once."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from docker.errors import NotFound

from kraftform.runtime.images import build_spark, docker_client
from kraftform.spark.containers import consumer_volume, container_name
from kraftform.waiting import NotYet, poll

from ..conftest import LiveCluster, unique
from ..kafka.conftest import Workspace
from .conftest import Pipeline, example_pipeline
from .test_pipelines import payments

pytestmark = pytest.mark.integration


def consumers(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftform", "consumers", *args], capture_output=True, text=True,
                          check=False, timeout=900)


def sink_holds(pipe: Pipeline, expected: set[str]) -> list[tuple[bytes | None, bytes]]:
    def attempt() -> list[tuple[bytes | None, bytes]]:
        committed = pipe.read_sink("read_committed", idle_s=3.0)
        missing = expected - {k.decode() for k, _ in committed if k is not None}
        if missing:
            raise NotYet(f"{len(missing)} of {len(expected)} payments not in the sink yet")
        return committed

    return poll("the consumer container to score every payment", 300.0, attempt, interval=2.0)


def test_a_consumer_container_fills_its_sink_and_continues_from_its_checkpoint_after_a_kill(
        docker_cluster: LiveCluster, tmp_path: Path) -> None:
    image = build_spark(docker_client(), [])
    root = tmp_path / "specs"
    root.mkdir()
    pipe = example_pipeline(Workspace(docker_cluster, root, unique("ct")), tmp_path, "fraud-scoring", trigger="2s")
    state = str(docker_cluster.state_dir)
    client = docker_client()
    name = container_name(docker_cluster.spec.name, pipe.name)

    first = payments(300, seed=11)
    assert pipe.produce((pipe.inputs[i % 2], p["payment_id"], p) for i, p in enumerate(first)) == 300
    up = consumers("up", str(root), "--state-dir", state, "--image", image)
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"consumer {pipe.name}: container {name} running, healthy" in up.stdout
    container = client.containers.get(name)
    # The password reached the container as a 0600 file: nothing `docker inspect` shows holds it.
    assert pipe.password not in json.dumps(container.attrs)
    mode = container.exec_run(["stat", "-c", "%a %u", "/etc/kraftform/client.properties"]).output.decode().strip()
    assert mode == "600 1000"
    sink_holds(pipe, {p["payment_id"] for p in first})

    container.kill(signal="SIGKILL")
    second = payments(300, seed=12)
    assert pipe.produce((pipe.inputs[i % 2], p["payment_id"], p) for i, p in enumerate(second)) == 300
    again = consumers("up", str(root), "--state-dir", state, "--image", image)
    assert again.returncode == 0, again.stdout + again.stderr
    committed = sink_holds(pipe, {p["payment_id"] for p in first + second})
    keys = Counter(k for k, _ in committed)
    assert len(committed) == 600 and max(keys.values()) == 1  # nothing lost, nothing twice

    status = consumers("status", str(root), "--state-dir", state)
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"{pipe.name}: container {name} running, healthy" in status.stdout and "done; lag" in status.stdout

    down = consumers("down", "--state-dir", state, "--purge")
    assert down.returncode == 0 and f"removed 1 consumer container(s) and their volumes: {pipe.name}" in down.stdout
    with pytest.raises(NotFound):
        client.containers.get(name)
    with pytest.raises(NotFound):
        client.volumes.get(consumer_volume(docker_cluster.spec.name, pipe.name))


def test_consumers_up_refuses_a_cluster_that_is_not_in_docker(local_cluster: LiveCluster, tmp_path: Path) -> None:
    root = tmp_path / "specs"
    root.mkdir()
    example_pipeline(Workspace(local_cluster, root, unique("ct")), tmp_path, "fraud-scoring")
    done = consumers("up", str(root), "--state-dir", str(local_cluster.state_dir), "--image", "unused")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "holds a local cluster; consumers run in containers beside a cluster from" in done.stderr
