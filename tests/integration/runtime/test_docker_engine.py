"""The Docker runtime's containers as Docker sees them: the health check `pulumi up` waits for, and a first start
that cannot finish leaving nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from docker.errors import ImageNotFound

from kraftform.cluster.containers import network_name
from kraftform.cluster.topology import CONTROLLER_ID_BASE
from kraftform.declared import load_specs
from kraftform.errors import HostUnreachable
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.deployment import SECRETS_FILE, STATE_FILE
from kraftform.runtime.nodes.docker_engine import DockerRuntime
from kraftform.specset.hosts import metrics_port as node_metrics_port
from kraftform.versions import KAFKA_VERSION

from ...conftest import SpecsCopy
from ...unit.specset.test_hosts import with_hosts
from ..conftest import LiveCluster, assert_hardened
from .conftest import fixture_specs


def test_docker_reports_every_node_healthy_and_the_check_can_fail(docker_cluster: LiveCluster) -> None:
    cluster = docker_cluster
    client = docker_client()
    names = [c.name for c in client.containers.list(filters={"label": f"dev.kraftform.cluster={cluster.spec.name}"})]
    assert len(names) == cluster.spec.brokers + cluster.spec.controllers

    def health() -> dict[str, Any]:
        return {n: client.containers.get(n).attrs["State"].get("Health", {}).get("Status") for n in names}

    deadline = time.monotonic() + 90
    while set(health().values()) != {"healthy"} and time.monotonic() < deadline:
        time.sleep(1)
    assert set(health().values()) == {"healthy"}, health()
    # The same check against a port nothing listens on fails: "healthy" above means something.
    container = client.containers.get(names[0])
    kind, command = container.attrs["Config"]["Healthcheck"]["Test"]
    assert kind == "CMD-SHELL"
    port = command.split("':", 1)[1][:4]
    result = container.exec_run(["sh", "-c", command.replace(f"':{port} ", "':FFFE ")])
    assert result.exit_code == 1, result.output


def _left_in_docker(name: str) -> list[str]:
    client = docker_client()
    label = f"dev.kraftform.cluster={name}"
    return ([c.name for c in client.containers.list(all=True, filters={"label": label})]
            + [v.name for v in client.volumes.list(filters={"name": f"{name}-"})]
            + [n.name for n in client.networks.list(filters={"label": label})])


def test_every_node_runs_unprivileged_with_a_bounded_log_and_a_memory_limit_from_its_heap(
        docker_cluster: LiveCluster) -> None:
    from kraftform.cluster.containers import memory_limit
    from kraftform.cluster.topology import topology

    client = docker_client()
    nodes = topology(docker_cluster.spec).nodes
    for node in nodes:
        assert_hardened(client.containers.get(node.name), memory_limit(node.heap_bytes))
    assert memory_limit(nodes[0].heap_bytes) > nodes[0].heap_bytes


def test_a_published_port_already_taken_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    base = fixture_specs(specs, name="kfport")["cluster"]["security"]["external_listener"]["base_port"]
    state = tmp_path / "state"
    # A metrics port, the way CI met it: not the first port, and taken by someone else's socket.
    metrics_port = base + node_metrics_port(0, CONTROLLER_ID_BASE + 1)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", metrics_port))
        taken.listen()
        result = subprocess.run([shutil.which("kraftform") or "kraftform", "cluster", "up", str(specs), "--runtime",
                                 "docker", "--state-dir", str(state)], capture_output=True, text=True, timeout=600,
                                check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"host port(s) {metrics_port} already in use" in result.stderr, result.stderr
    assert "external_listener.base_port" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (state / SECRETS_FILE).exists() and not (state / STATE_FILE).exists()
    assert _left_in_docker("kfport") == []


def test_a_first_start_that_fails_takes_back_what_it_made(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    fixture_specs(specs, name="kfundo")
    state = tmp_path / "state"
    runtime = DockerRuntime(state, image="kraftform-no-such-image:0")
    with pytest.raises(ImageNotFound):
        runtime.up(load_specs(specs).cluster, timeout=60)
    assert not (state / SECRETS_FILE).exists() and not (state / STATE_FILE).exists()
    assert _left_in_docker("kfundo") == []
    # And the next start is a fresh one, not a refusal of its own volumes as another cluster's; a network it did
    # not make (`pulumi up`'s own resource) stays.
    network = docker_client().networks.create(network_name("kfundo"), driver="bridge",
                                              labels={"dev.kraftform.cluster": "kfundo"})
    try:
        with pytest.raises(ImageNotFound):
            runtime.up(load_specs(specs).cluster, timeout=60)
        assert _left_in_docker("kfundo") == [network.name]
    finally:
        network.remove()


def test_a_connect_clusters_running_containers_hold_a_login_a_plan_leaves_alone(docker_cluster: LiveCluster) -> None:
    """The Docker-runtime branch of `workers_logins` and `stop_undeclared`: a container labelled as a Connect
    worker of this cluster (a shell standing in for the worker: what is read is Docker's labels), its login
    recorded as `connect up` records it."""
    from kraftform.cluster.containers import LABEL_CLUSTER
    from kraftform.runtime.connect.clusters import stop_undeclared, workers_logins
    from kraftform.runtime.connect.containers import LABEL_CONNECT

    state = docker_cluster.state_dir
    record = state / "connect" / "probe" / "login.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"user": "probe-connect"}\n')
    container = docker_client().containers.run(
        docker_cluster.deployment.extra["image"], ["sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"],
        entrypoint=[], detach=True, network_mode="none", name=f"{docker_cluster.spec.name}-probe-connect-0",
        labels={LABEL_CLUSTER: docker_cluster.spec.name, LABEL_CONNECT: "probe"})
    try:
        logins = workers_logins(state)
        assert list(logins) == ["probe-connect"], logins
        assert logins["probe-connect"].why == "Connect cluster 'probe' logs in as it, 1 worker(s) running"
        assert stop_undeclared(state, "probe") == 1
        assert workers_logins(state) == {}
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)
        shutil.rmtree(record.parent, ignore_errors=True)


def test_the_schema_registry_runs_beside_a_docker_cluster_and_keeps_its_subjects(docker_cluster: LiveCluster,
                                                                                 tmp_path: Path) -> None:
    """`kraftform registry up` beside a Docker-runtime cluster: a container on its network, HTTPS with client
    certificates from its CA, its subjects on a volume that outlives the container."""
    import json
    import ssl

    from kraftform.cluster.containers import memory_limit
    from kraftform.errors import AuthorizationDenied, ConnectionFailed
    from kraftform.registry.rest import RegistryRest
    from kraftform.runtime.registry.container import data_volume, registry_container
    from kraftform.specset.model import RegistrySpec

    state, name = docker_cluster.state_dir, docker_cluster.spec.name
    port = next(p for p in range(28100, 28200, 2) if not _listening(p) and not _listening(p + 1))
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "cluster.yaml").write_text(f"cluster: {{name: {name}, mode: combined, controllers: 1, brokers: 1, "
                                        f"defaults: {{replication_factor: 1, min_insync_replicas: 1}}}}\n"
                                        f"registry: {{port: {port}}}\n")

    def kraftform(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kraftform", *args, str(specs), "--state-dir", str(state)],
                              capture_output=True, text=True, timeout=300, check=False)

    client = docker_client()
    try:
        up = kraftform("registry", "up")
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"https://127.0.0.1:{port}/apis/ccompat/v6" in up.stdout
        container = client.containers.get(registry_container(name))
        assert container.attrs["HostConfig"]["PortBindings"] == {f"{port}/tcp": [{"HostIp": "127.0.0.1",
                                                                                   "HostPort": str(port)}]}
        assert not [e for e in container.attrs["Config"]["Env"] if "password" in e.lower()]
        assert_hardened(container, memory_limit(RegistrySpec().heap_bytes))
        registry = RegistryRest(f"https://127.0.0.1:{port}/apis/ccompat/v6", str(state / "ca.pem"),
                                str(state / "registry" / "client.pem"), str(state / "registry" / "client.key"))
        schema = json.dumps({"type": "record", "name": "Probe", "fields": [{"name": "id", "type": "string"}]})
        registry.register("probe-value", schema, "AVRO")
        # Its certificate names the container, for clients on the cluster's network.
        context = ssl.create_default_context(cafile=str(state / "ca.pem"))
        context.load_cert_chain(str(state / "registry" / "client.pem"), str(state / "registry" / "client.key"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname=registry_container(name)) as tls:
            assert tls.version() is not None
        # Nothing anonymous gets in; a reader's certificate reads and does not write.
        with pytest.raises(ConnectionFailed):  # the TLS handshake, refused without a certificate
            RegistryRest(registry.url, str(state / "ca.pem")).subjects()
        assert kraftform("registry", "certificate", "--name", "reader", "--out", str(tmp_path)).returncode == 0
        reader = RegistryRest(registry.url, str(state / "ca.pem"), str(tmp_path / "reader.pem"),
                              str(tmp_path / "reader.key"))
        assert reader.subjects() == ["probe-value"]
        with pytest.raises(AuthorizationDenied):
            reader.register("probe-value", schema.replace("Probe", "Other"), "AVRO")
        # Stopped, then made again with another heap: the subjects stay (the volume).
        assert kraftform("registry", "down").returncode == 0
        assert kraftform("registry", "status").returncode == 1
        (specs / "cluster.yaml").write_text((specs / "cluster.yaml").read_text().replace(
            f"registry: {{port: {port}}}", f"registry: {{port: {port}, heap: 320MiB}}"))
        again = kraftform("registry", "up")
        assert again.returncode == 0 and "making the schema registry container" in again.stderr + again.stdout, \
            again.stdout + again.stderr
        assert registry.versions("probe-value") == [1]
    finally:
        kraftform("registry", "down", "--purge")
    assert not client.containers.list(all=True, filters={"name": f"^{registry_container(name)}$"})
    assert not client.volumes.list(filters={"name": f"^{data_volume(name)}$"})


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_hosts_moved_endpoint_is_recorded_where_its_engine_answers_and_kept_where_it_does_not(
        tmp_path: Path, specs_copy: SpecsCopy) -> None:
    """Host a's engine now answers at another socket (an alias of this machine's), host b's new one answers
    nowhere: `record_endpoints` (what `apply` and `cluster up` end with) records a's, so commands given only the
    state directory reach it, and keeps b's old one rather than a guess."""
    engine = tmp_path / "moved.sock"
    engine.symlink_to(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://"))
    specs = with_hosts(specs_copy(), f"""\
  hosts:
    - {{name: host-a, docker: "unix://{engine}", address: 10.0.0.1, racks: [rack-a]}}
    - {{name: host-b, docker: "unix://{tmp_path}/b-now.sock", address: 10.0.0.2, racks: [rack-b]}}
    - {{name: host-c, docker: "unix://{tmp_path}/c.sock", address: 10.0.0.3, racks: [rack-c]}}
""")
    state = tmp_path / "state"
    state.mkdir()
    before = {h: {"docker": f"unix://{tmp_path}/{h}-before.sock", "tls": None, "address": a}
              for h, a in (("host-a", "10.0.0.1"), ("host-b", "10.0.0.2"))}
    dep.save(state, dep.Deployment("docker", "platform", "10.0.0.1:29092", 3, KAFKA_VERSION,
                                   extra={dep.HOSTS: json.dumps(before)}))
    runtime = DockerRuntime(state)
    runtime.know(load_specs(specs).cluster)
    runtime.engine("host-a").ping()
    with pytest.raises(HostUnreachable, match="host-b"):
        runtime.engine("host-b")
    runtime.record_endpoints()
    recorded = json.loads(dep.load(state).extra[dep.HOSTS])
    assert recorded["host-a"]["docker"] == f"unix://{engine}"
    assert recorded["host-b"] == before["host-b"]
    assert "host-c" not in recorded  # runs nothing in the records: not theirs to learn
    DockerRuntime(state).engine("host-a").ping()  # from the state directory alone
