"""Run a rendered cluster as JVM processes on this machine, each node on its own loopback address.

Every node listens on 127.A.0.N with the same ports a container would use, so the rendered configs
differ from the Docker runtime's only in addresses and paths. The second octet A is derived from the
state directory, so two clusters on one machine do not collide. Processes run detached (their own
session) and survive the command that started them; `down` stops them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import cast

from kraftform.artifacts import ensure_kafka
from kraftform.cluster.config import Addressing, NodePaths
from kraftform.cluster.render import RenderedNode, format_args, make_secrets, render_cluster, server_args
from kraftform.cluster.topology import CLIENT_PORT, Node, Role, Topology, topology
from kraftform.errors import ClusterUnhealthy, EnvironmentMissing
from kraftform.kafka.health import ClusterHealth, wait_healthy
from kraftform.runtime import deployment as dep
from kraftform.specset.model import DEFAULT_BROKER_HEAP, DEFAULT_CONTROLLER_HEAP, ClusterSpec
from kraftform.waiting import until

FORMAT_TIMEOUT = 120


def loopback_base(state_dir: Path) -> str:
    digest = hashlib.sha256(str(state_dir.resolve()).encode()).digest()
    return f"127.{20 + digest[0] % 200}.0."


def local_addressing(topo: Topology, state_dir: Path) -> Addressing:
    base = loopback_base(state_dir)
    hosts = {n.name: f"{base}{i + 1}" for i, n in enumerate(topo.nodes)}
    return Addressing(advertised=hosts, bind=hosts, external_host=None)


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise EnvironmentMissing("Java 17+ is needed for the local runtime (apt-get install openjdk-17-jre-headless)")
    return java


class LocalRuntime:
    """`up`, `stop`, `down`, `kill_node`, `start_node`, `resident_bytes` for one state directory."""

    name = "local"

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir.resolve()

    def node_dir(self, name: str) -> Path:
        return self.state_dir / "nodes" / name

    def _node_paths(self, name: str) -> NodePaths:
        return NodePaths(str(self.node_dir(name) / "config"), str(self.node_dir(name) / "data"))

    def _write(self, rendered: RenderedNode) -> None:
        config = Path(rendered.paths.config_dir)
        for f in rendered.files:
            target = config / f.relative_path
            if f.secret:
                dep.write_private(target, f.content)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f.content)
        Path(rendered.paths.data_dir).mkdir(parents=True, exist_ok=True)

    def _classpath(self, home: Path) -> str:
        return str(home / "libs" / "*")

    def _format(self, home: Path, nodes: tuple[RenderedNode, ...], cluster_id: str) -> None:
        java = java_binary()
        procs = []
        for r in nodes:
            if (Path(r.paths.data_dir) / "meta.properties").exists():
                continue
            cmd = [java, *format_args(self._classpath(home), cluster_id, r.paths), *r.scram_args]
            procs.append((r, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for r, proc in procs:
            out, _ = proc.communicate(timeout=FORMAT_TIMEOUT)
            if proc.returncode != 0:
                # The command line holds SCRAM passwords; report only the tool's output.
                raise EnvironmentMissing(f"formatting {r.node.name} failed:\n{out[-2000:]}")

    def _start(self, home: Path, node: Node) -> int:
        """Launch one node from the files already in its directory; returns its pid."""
        paths = self._node_paths(node.name)
        log = open(self.node_dir(node.name) / "kafka.log", "ab")  # noqa: SIM115 - handed to the child
        cmd = [java_binary(), *server_args(node, paths, self._classpath(home))]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=self.node_dir(node.name))
        log.close()
        return proc.pid

    def up(self, cluster: ClusterSpec, admin_password: str | None = None, timeout: float = 240) -> ClusterHealth:
        """Render, format and start every node, then wait until healthy. Idempotent: an existing cluster in
        the state directory is started again with its data and secrets."""
        home = ensure_kafka(cluster.kafka_version)
        topo = topology(cluster)
        addr = local_addressing(topo, self.state_dir)
        deployment = dep.load_existing(self.state_dir, self.name, cluster.name)
        if deployment is not None:
            dep.require_as_declared(self.state_dir, deployment, topo)
            for record in deployment.nodes:
                if not self._alive(record):
                    record.handle = str(self._start(home, topo.node(record.name)))
            dep.save(self.state_dir, deployment)
        else:
            secrets = make_secrets(topo, addr, admin_password)
            rendered = render_cluster(topo, addr, {n.name: self._node_paths(n.name) for n in topo.nodes}, secrets)
            for r in rendered:
                self._write(r)
            self._format(home, rendered, secrets.cluster_id)
            bootstrap = ",".join(f"{addr.advertised[n.name]}:{CLIENT_PORT}" for n in topo.brokers)
            dep.write_client_files(self.state_dir, bootstrap, cluster.security.admin_user, secrets.admin_password,
                                   cluster.security.sasl_mechanism, secrets.ca.cert_pem)
            deployment = dep.Deployment(self.name, cluster.name, bootstrap, cluster.brokers, cluster.kafka_version,
                                        [dep.NodeRecord(r.node.name, r.node.node_id, list(r.node.roles),
                                                        heap_bytes=r.node.heap_bytes)
                                         for r in rendered], {"kafka_home": str(home)})
            for r, record in zip(rendered, deployment.nodes, strict=True):
                record.handle = str(self._start(home, r.node))
            dep.save(self.state_dir, deployment)
        return wait_healthy(dep.admin_config(self.state_dir), cluster.brokers, timeout)

    def _alive(self, record: dep.NodeRecord) -> bool:
        if not record.handle:
            return False
        try:
            cmdline = Path(f"/proc/{int(record.handle)}/cmdline").read_bytes()
        except (OSError, ValueError):
            return False
        # A recycled pid belongs to someone else: check it runs this node's configuration.
        return str(self.node_dir(record.name)).encode() in cmdline and b"kafka.Kafka" in cmdline

    def kill_node(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Stop one node abruptly (SIGKILL) or cleanly (SIGTERM); its data stays."""
        record = dep.load(self.state_dir).node(name)
        if self._alive(record):
            os.kill(int(record.handle), sig)
            self._wait_gone(record, 60)

    def start_node(self, name: str) -> None:
        """Start a stopped node again with its data and configuration as they are."""
        deployment = dep.load(self.state_dir)
        record = deployment.node(name)
        if not self._alive(record):
            roles = cast(tuple[Role, ...], tuple(record.roles))
            heap = record.heap_bytes or (DEFAULT_BROKER_HEAP if "broker" in roles else DEFAULT_CONTROLLER_HEAP)
            node = Node(record.node_id, name, roles, heap_bytes=heap)
            record.handle = str(self._start(Path(deployment.extra["kafka_home"]), node))
            dep.save(self.state_dir, deployment)

    def _wait_gone(self, record: dep.NodeRecord, timeout: float) -> bool:
        try:
            until(f"{record.name} to exit", timeout, lambda: not self._alive(record), interval=0.2)
            return True
        except ClusterUnhealthy:
            return False

    def stop(self) -> None:
        """SIGTERM brokers and wait (a controlled shutdown needs the controllers), then the controllers;
        SIGKILL whatever outlives its grace period."""
        deployment = dep.load(self.state_dir)
        brokers = [r for r in deployment.nodes if "broker" in r.roles]
        controllers_only = [r for r in deployment.nodes if "broker" not in r.roles]
        for group in (brokers, controllers_only):
            for record in group:
                if self._alive(record):
                    os.kill(int(record.handle), signal.SIGTERM)
            for record in group:
                if not self._wait_gone(record, 30) and self._alive(record):
                    os.kill(int(record.handle), signal.SIGKILL)
                    self._wait_gone(record, 10)

    def down(self, purge: bool = False) -> None:
        self.stop()
        if purge:
            shutil.rmtree(self.state_dir)

    def resident_bytes(self) -> int:
        total = 0
        for record in dep.load(self.state_dir).nodes:
            if self._alive(record):
                for line in Path(f"/proc/{record.handle}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total
