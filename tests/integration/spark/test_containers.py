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

import grpc
import pytest
import yaml
from docker.errors import NotFound

from kraftform.pulumi.consumers import ConsumerReadyProvider
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.engines.images import build_spark
from kraftform.spark.containers import consumers_volume, container_name
from kraftform.waiting import NotYet, poll

from ...conftest import REPO
from ..conftest import LiveCluster, assert_hardened, unique
from ..kafka.conftest import Workspace
from ..pulumi.engine import ProviderHost
from .conftest import Pipeline, example_pipeline
from .test_pipelines import expected_score, payments

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
    assert_hardened(container, None)
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
    assert down.returncode == 0 and f"removed 1 container(s) and their volume: {name}" in down.stdout
    with pytest.raises(NotFound):
        client.containers.get(name)
    with pytest.raises(NotFound):
        client.volumes.get(consumers_volume(docker_cluster.spec.name))


def test_consumers_up_refuses_a_cluster_that_is_not_in_docker(local_cluster: LiveCluster, tmp_path: Path) -> None:
    root = tmp_path / "specs"
    root.mkdir()
    example_pipeline(Workspace(local_cluster, root, unique("ct")), tmp_path, "fraud-scoring")
    done = consumers("up", str(root), "--state-dir", str(local_cluster.state_dir), "--image", "unused")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "holds a local cluster; consumers run in containers beside a cluster from" in done.stderr


OUTSIDER = "kraftform-outsider"
MASTER_UI = "http://localhost:8080/json/"
#: An application submitted as a user would without the cluster's secret. The master gives an application it
#: admits an id `app-...`; until then Spark calls it `spark-application-...`, and gives up after three tries.
_OUTSIDER_JOB = f"""
import socket, sys
from pyspark.sql import SparkSession
try:
    spark = (SparkSession.builder.master(sys.argv[1]).appName({OUTSIDER!r})
             .config("spark.driver.host", socket.gethostbyname(socket.gethostname()))
             .config("spark.ui.enabled", "false").getOrCreate())
    given = spark.sparkContext.applicationId
    print("ADMITTED" if given.startswith("app-") else "REFUSED", given)
except Exception as exc:
    print("REFUSED", type(exc).__name__, str(exc).splitlines()[0][:300])
"""


def _one_shot(image: str, network: str, *command: str) -> str:
    """`command` in a container of `image` on `network`, removed after; what it printed."""
    out: bytes = docker_client().containers.run(image, list(command), network=network, remove=True,
                                                stdout=True, stderr=False)
    return out.decode(errors="replace")


def _submit_without_the_secret(image: str, network: str, master: str) -> str:
    return _one_shot(image, network, "python", "-c", _OUTSIDER_JOB, master)


def test_a_consumer_submitted_to_a_standalone_spark_cluster_scores_every_payment_as_the_rule_says(
        docker_cluster: LiveCluster, tmp_path: Path) -> None:
    """The consumer's driver in its container submits to a standalone master with two workers, one core each; its
    sink holds every payment scored as specs/consumers.yaml's rule says (written again in Python, as
    test_pipelines checks the local master's)."""
    image = build_spark(docker_client(), [])
    state = str(docker_cluster.state_dir)
    sent = payments(200, seed=31)
    root = tmp_path / "specs"
    root.mkdir()
    pipe = example_pipeline(Workspace(docker_cluster, root, unique("stand")), tmp_path, "fraud-scoring", trigger="2s")
    cluster = yaml.safe_load((root / "cluster.yaml").read_text())
    cluster["cluster"]["name"] = docker_cluster.spec.name  # the standalone master is named after it
    cluster["cluster"]["spark"] = {"master": "standalone", "workers": 2, "worker_cores": 1, "worker_memory": "1GiB"}
    (root / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    assert pipe.produce((pipe.inputs[i % 2], p["payment_id"], p) for i, p in enumerate(sent)) == 200
    up = consumers("up", str(root), "--state-dir", state, "--image", image)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        committed = sink_holds(pipe, {p["payment_id"] for p in sent})
        master_name = f"{docker_cluster.spec.name}-spark-master"
        assert f"Spark standalone master {master_name} with 2 worker(s): up" in up.stdout
        logs = docker_client().containers.get(container_name(docker_cluster.spec.name, pipe.name)).logs()
        assert f"submitted to spark://{master_name}:7077 in client mode".encode() in logs
        apps = docker_client().containers.get(master_name).exec_run(
            ["python", "-c", f"import urllib.request; print(urllib.request.urlopen({MASTER_UI!r}).read().decode())"]
        ).output
        running = json.loads(apps)["activeapps"]
        assert [a["name"] for a in running] == ["kraftform-fraud-scoring"]
        assert sum(a["cores"] for a in running) == 2  # the consumer's cores, one on each worker
        network = docker_cluster.deployment.network("the outsider's container")
        outsider = _submit_without_the_secret(image, network, f"spark://{master_name}:7077")
        assert outsider.startswith("REFUSED"), outsider
        seen = json.loads(docker_client().containers.get(master_name).exec_run(
            ["python", "-c", f"import urllib.request; print(urllib.request.urlopen({MASTER_UI!r}).read().decode())"]
        ).output)
        assert OUTSIDER not in {a["name"] for a in (*seen["activeapps"], *seen["completedapps"])}
        # The master's UI answers on its own loopback alone: not at its address on the cluster's network.
        assert "URLError" in _one_shot(image, network, "python", "-c", (
            f"import urllib.request\ntry: urllib.request.urlopen('http://{master_name}:8080/json/', timeout=5)\n"
            f"except Exception as e: print(type(e).__name__)"))
    finally:
        down = consumers("down", "--state-dir", state, "--purge")
    assert down.returncode == 0, down.stdout + down.stderr
    scored = {k.decode(): json.loads(value) for k, value in committed if k is not None}
    assert len(committed) == len(scored) == 200
    for i, payment in enumerate(sent):
        out = scored[payment["payment_id"]]
        assert out["score"] == pytest.approx(expected_score(payment)), payment
        assert out["source"] == pipe.inputs[i % 2] and out["account_id"] == payment["account_id"]


def test_a_consumer_whose_job_fails_fails_its_deployment_with_the_jobs_own_error(
        docker_cluster: LiveCluster, tmp_path: Path) -> None:
    """A query `validate` cannot fault (types are Spark's business) that Spark refuses at start: `consumers up`
    and `pulumi up`'s wait (ConsumerReady, driven through Pulumi's provider host) both fail, naming the consumer
    and Spark's cause, instead of reporting a crash-looping container healthy."""
    image = build_spark(docker_client(), [])
    root = tmp_path / "specs"
    root.mkdir()
    pipe = example_pipeline(Workspace(docker_cluster, root, unique("bad")), tmp_path, "fraud-scoring",
                            query="SELECT payment_id AS key, to_json(amount) AS value FROM input\n")
    state = str(docker_cluster.state_dir)
    up = consumers("up", str(root), "--state-dir", state, "--image", image, "--timeout", "240")
    assert up.returncode == 1 and "Traceback" not in up.stderr, up.stdout + up.stderr
    name = container_name(docker_cluster.spec.name, pipe.name)
    assert f"consumer {pipe.name} ({name}) failed (" in up.stderr, up.stderr
    assert "): consumer 'fraud-scoring' failed: [DATATYPE_MISMATCH.INVALID_JSON_SCHEMA] Cannot resolve " \
           "\"to_json(amount)\"" in up.stderr

    # Started again (its restart policy, unless-stopped, is the one Pulumi's container has too): the wait through
    # Pulumi's provider host ends at its first failure as well.
    client = docker_client()
    container = client.containers.get(name)
    assert container.attrs["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    container.restart()
    (tmp_path / "host-tmp").mkdir()
    host = ProviderHost(REPO, tmp_path / "host-tmp")
    try:
        with pytest.raises(grpc.RpcError) as failed:
            host.create(ConsumerReadyProvider(), f"{pipe.name}-ready",
                        {"consumer": pipe.name, "container_id": container.id, "timeout_s": 240})
    finally:
        host.close()
        consumers("down", "--state-dir", state, "--purge")
    said = failed.value.details()
    assert f"consumer {pipe.name} ({name}) failed" in said and "Cannot resolve \"to_json(amount)\"" in said
