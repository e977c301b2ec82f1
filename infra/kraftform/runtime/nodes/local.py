"""Run a rendered cluster as JVM processes on this machine, each node on its own loopback address.

Every node listens on 127.A.0.N with the same ports a container would use, so the rendered configs
differ from the Docker runtime's only in addresses and paths. The second octet A is derived from the
state directory, skipping ranges where another cluster answers, and recorded there, so two clusters on one
machine do not collide. Processes run detached (their own session) and survive the command that started them;
`down` stops them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from kraftform.artifacts import ensure_kafka, metrics_agent
from kraftform.cluster.config import Addressing, NodePaths
from kraftform.cluster.jmx import METRICS_FILE, METRICS_PORT
from kraftform.cluster.render import (
    FORMAT_ARGS,
    ClusterSecrets,
    RenderedNode,
    format_args,
    make_secrets,
    render_cluster,
    server_args,
    tool_argfile,
)
from kraftform.cluster.topology import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    Node,
    Role,
    Topology,
    topology,
)
from kraftform.errors import ClusterUnhealthy, EnvironmentMissing, UsageError
from kraftform.kafka.health import ClusterHealth, wait_healthy
from kraftform.plan.nodes import NodePlan, node_plan
from kraftform.runtime.nodes import class_archive
from kraftform.runtime.nodes import deployment as dep
from kraftform.specset.hosts import node_number
from kraftform.specset.model import DEFAULT_BROKER_HEAP, DEFAULT_CONTROLLER_HEAP, ClusterSpec
from kraftform.statefiles import write_atomic
from kraftform.waiting import until

FORMAT_TIMEOUT = 120
#: the line `_start` writes to a node's log before its process's own output.
START_MARKER = "=== kraftform: starting"


#: The loopback range a local cluster was given when it was made (`claim_loopback_base`), in its state directory.
LOOPBACK_FILE = "loopback"
RANGES = 200


def _derived_range(state_dir: Path) -> int:
    return hashlib.sha256(str(state_dir.resolve()).encode()).digest()[0] % RANGES


def loopback_base(state_dir: Path) -> str:
    """The cluster's range "127.A.": the one recorded when it was made; else (a cluster made before ranges were
    recorded, or one not made yet) the range its state directory's path derives."""
    try:
        return (state_dir / LOOPBACK_FILE).read_text().strip()
    except OSError:
        return f"127.{20 + _derived_range(state_dir)}."


#: Machine-wide: which local cluster holds which range (a file per range naming its state directory). Two
#: clusters made at the same moment both find a range silent, neither listening yet; the one that creates the
#: range's claim file first has it.
CLAIMS_DIR = Path(tempfile.gettempdir()) / "kraftform-loopback"
#: A claim this young is held even before its cluster recorded the range (it is being made).
CLAIM_GRACE_S = 120.0


def _claimed_by_another(claim: Path, state_dir: Path) -> bool:
    try:
        owner = Path(claim.read_text().strip())
        age = time.time() - claim.stat().st_mtime
        if owner == state_dir.resolve():
            return False
        return age < CLAIM_GRACE_S or (owner / LOOPBACK_FILE).read_text().strip() == f"127.{claim.name}."
    except OSError:  # no claim, or its cluster's directory is gone (purged, or never made)
        return False


def _claim(claim: Path, state_dir: Path) -> bool:
    if _claimed_by_another(claim, state_dir):
        return False
    claim.parent.mkdir(parents=True, exist_ok=True)
    claim.unlink(missing_ok=True)  # stale, or this directory's own
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:  # another cluster claimed it in between
        return False
    with os.fdopen(fd, "w") as f:
        f.write(f"{state_dir.resolve()}\n")
    return True


def answers_in(base: str) -> bool:
    """Whether a cluster listens in the range `base`: its first broker's or first controller's ports."""
    probes = ((f"{base}0.1", CLIENT_PORT), (f"{base}0.1", METRICS_PORT), (f"{base}1.1", CONTROLLER_PORT),
              (f"{base}1.1", METRICS_PORT))
    return any(listening(host, port) for host, port in probes)


def claim_loopback_base(state_dir: Path, claims: Path = CLAIMS_DIR) -> str:
    """A new cluster's range, claimed and recorded: its state directory's derived one unless another cluster holds
    it or answers there (two paths derive the same range one time in 200: the second cluster's nodes then could not
    bind), else the next free one."""
    first = _derived_range(state_dir)
    for i in range(RANGES):
        octet = 20 + (first + i) % RANGES
        base = f"127.{octet}."
        if not answers_in(base) and _claim(claims / str(octet), state_dir):
            state_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(state_dir / LOOPBACK_FILE, base + "\n")
            return base
    raise EnvironmentMissing(f"no free loopback range for another local cluster: all {RANGES} are held or have one "
                             f"listening (claims in {claims})")


def release_loopback_base(state_dir: Path, claims: Path = CLAIMS_DIR) -> None:
    """A purged cluster's range is free again at once (a claim whose directory is gone would be, later)."""
    try:
        claim = claims / loopback_base(state_dir).removeprefix("127.").rstrip(".")
        if Path(claim.read_text().strip()) == state_dir.resolve():
            claim.unlink()
    except OSError:
        pass


def listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def local_host(node_id: int, state_dir: Path) -> str:
    """From the node id, never its position, so an added node moves nobody: brokers (and combined nodes) on
    127.A.0.<id>, dedicated controllers on 127.A.1.<id - 1000>."""
    base = loopback_base(state_dir)
    controller, number = node_number(node_id)
    return f"{base}{int(controller)}.{number}"


def local_addressing(topo: Topology, state_dir: Path) -> Addressing:
    hosts = {n.name: local_host(n.node_id, state_dir) for n in topo.nodes}
    return Addressing(advertised=hosts, bind=hosts, external_host=None)


def local_bootstrap(topo: Topology, state_dir: Path) -> str:
    addr = local_addressing(topo, state_dir)
    return ",".join(f"{addr.advertised[n.name]}:{CLIENT_PORT}" for n in topo.brokers)


def local_endpoints(topo: Topology, state_dir: Path) -> dict[str, tuple[str, str]]:
    """Each node's metrics, on its own loopback address (none for quick-start nodes: they serve none)."""
    return {n.name: (",".join(n.roles), f"{local_host(n.node_id, state_dir)}:{METRICS_PORT}") for n in topo.nodes
            if not n.quick_start}


def _runs_node(pid: int, node_dir: Path) -> bool:
    """Process `pid` is a Kafka node running the files under `node_dir` (and is not a zombie). A recycled pid
    belongs to someone else, and `broker-1` is no prefix of `broker-10`'s files."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X") and b"kafka.Kafka" in cmdline and (str(node_dir) + "/").encode() in cmdline


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise EnvironmentMissing("Java 17+ is needed for the local runtime (apt-get install openjdk-17-jre-headless)")
    return java


class LocalRuntime:
    """`up`, `stop`, `down`, `kill_node`, `start_node`, `resident_bytes` for one state directory, and the node
    operations a roll and a resize need (`Nodes`)."""

    name = "local"

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir.resolve()
        #: the processes this object started, by pid: how one that exited ended (its status is ours to read).
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        #: the node writing the class archive at its exit: its process, the dump's path, its Kafka version.
        self._dumping: tuple[subprocess.Popen[bytes], Path, str] | None = None

    def node_dir(self, name: str) -> Path:
        return self.state_dir / "nodes" / name

    def _node_paths(self, name: str) -> NodePaths:
        return NodePaths(str(self.node_dir(name) / "config"), str(self.node_dir(name) / "data"), str(metrics_agent()))

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

    def _format(self, nodes: Sequence[RenderedNode], cluster_id: str, kafka_version: str) -> None:
        java, classpath = java_binary(), _classpath(kafka_version)
        procs = []
        for r in nodes:
            if (Path(r.paths.data_dir) / "meta.properties").exists():
                continue
            # The SCRAM users' passwords from a 0600 argument file, not the command line every local user reads.
            argfile = Path(r.paths.config_dir) / FORMAT_ARGS
            dep.write_private(argfile, tool_argfile(r.scram_args))
            cmd = [java, *format_args(classpath, cluster_id, r.paths), *r.format_options, f"@{argfile}"]
            procs.append((r, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for r, proc in procs:
            try:
                out, _ = proc.communicate(timeout=FORMAT_TIMEOUT)
            finally:
                (Path(r.paths.config_dir) / FORMAT_ARGS).unlink(missing_ok=True)
            if proc.returncode != 0:
                raise EnvironmentMissing(f"formatting {r.node.name} failed:\n{out[-2000:]}")

    def _start(self, record: dep.NodeRecord, kafka_version: str) -> None:
        """Launch one node from the files already in its directory, with the heap and Kafka version its record
        holds; the record gets the new process id."""
        roles = cast(tuple[Role, ...], tuple(record.roles))
        heap = record.heap_bytes or (DEFAULT_BROKER_HEAP if "broker" in roles else DEFAULT_CONTROLLER_HEAP)
        node = Node(record.node_id, record.name, roles, heap_bytes=heap, quick_start=record.quick_start)
        paths = self._node_paths(node.name)
        log = open(self.node_dir(node.name) / LOG_FILE, "ab")  # noqa: SIM115 - handed to the child
        # Where this process's output starts: a node that dies before writing is not blamed on its predecessor.
        log.write(f"{START_MARKER} {node.name} at {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        log.flush()
        # A node whose files predate the metrics agent has no rules for it: it starts without metrics. A test
        # cluster's nodes (quick start) serve none: nothing scrapes them, and six agents cost 2 s of its start.
        with_metrics = (Path(paths.config_dir) / METRICS_FILE).is_file() and not record.quick_start
        metrics = local_host(node.node_id, self.state_dir) if with_metrics else ""
        version = record.kafka_version or kafka_version
        archive, dump = self._class_archive(record, version)
        cmd = [java_binary(), *server_args(node, paths, _classpath(version), metrics, archive)]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=self.node_dir(node.name))
        log.close()
        self._children[proc.pid] = proc
        if dump is not None:
            self._dumping = (proc, dump, version)
        record.handle = str(proc.pid)

    def _class_archive(self, record: dep.NodeRecord, kafka_version: str) -> tuple[tuple[str, ...], Path | None]:
        """A quick-start node maps the archive of Kafka's classes; without one yet, one node per cluster writes it
        as it exits (`stop` adopts it). Returns the JVM options and where the dump goes, if this node dumps."""
        if not record.quick_start:
            return (), None
        archive = class_archive.archive_path(kafka_version, java_binary())
        if archive.is_file():
            return class_archive.use_options(archive), None
        if self._dumping is not None:
            return (), None
        target = class_archive.dump_target(archive, record.name)
        return class_archive.dump_options(target), target

    def render(self, cluster: ClusterSpec, secrets: ClusterSecrets) -> tuple[RenderedNode, ...]:
        topo = topology(cluster)
        return render_cluster(topo, local_addressing(topo, self.state_dir),
                              {n.name: self._node_paths(n.name) for n in topo.nodes}, secrets,
                              dep.principal_mapping_now(self.state_dir))

    def rendered(self, cluster: ClusterSpec, keep_new_keys: bool = False) -> tuple[RenderedNode, ...]:
        """Every node as the specs now describe it, with this cluster's own CA, keys and passwords; a node new to
        the cluster gets a key from its CA, kept in the state directory with `keep_new_keys` (when it is added)."""
        topo = topology(cluster)
        secrets = dep.grown_secrets(self.state_dir, topo, local_addressing(topo, self.state_dir), keep_new_keys)
        return self.render(cluster, secrets)

    def up(self, cluster: ClusterSpec, admin_password: str | None = None, timeout: float = 240) -> ClusterHealth:
        """Render, format and start every node, then wait until healthy. Idempotent: an existing cluster in
        the state directory is started again with its data and secrets, if it still is what its specs say."""
        if cluster.hosts:
            raise UsageError(f"{cluster.hosts[0].location}: cluster.hosts places the nodes on those hosts' Docker "
                             f"engines: use --runtime docker")
        topo = topology(cluster)
        deployment = dep.load_existing(self.state_dir, self.name, cluster.name)
        if deployment is not None:
            dep.require_as_declared(self.state_dir, deployment, topo, self.node_plan(cluster))
            for record in deployment.nodes:
                if not self._alive(record):
                    self._start(record, deployment.kafka_version)
            dep.save(self.state_dir, deployment)
        else:
            ensure_kafka(cluster.kafka_version)
            claim_loopback_base(self.state_dir)
            addr = local_addressing(topo, self.state_dir)
            secrets = make_secrets(topo, addr, admin_password)
            dep.save_secrets(self.state_dir, secrets)
            rendered = self.render(cluster, secrets)
            for r in rendered:
                self._write(r)
            self._format(rendered, secrets.cluster_id, cluster.kafka_version)
            bootstrap = local_bootstrap(topo, self.state_dir)
            dep.write_client_files(self.state_dir, bootstrap, cluster.security.admin_user, secrets.admin_password,
                                   cluster.security.sasl_mechanism, secrets.ca.cert_pem)
            deployment = dep.Deployment(self.name, cluster.name, bootstrap, cluster.brokers, cluster.kafka_version,
                                        [dep.started(r, cluster.kafka_version) for r in rendered])
            for record in deployment.nodes:
                self._start(record, cluster.kafka_version)
            dep.save(self.state_dir, deployment)
        dep.write_endpoints(self.state_dir, local_endpoints(topo, self.state_dir))
        return wait_healthy(dep.admin_config(self.state_dir), {n.node_id: n.name for n in topo.brokers}, timeout,
                            self.last_error, self.restart_node)

    def node_plan(self, cluster: ClusterSpec) -> NodePlan | None:
        """The running nodes against the specs; None for a cluster whose secrets an earlier kraftform did not
        keep."""
        if not (self.state_dir / dep.SECRETS_FILE).is_file():
            return None
        return node_plan(dep.running_nodes(dep.load(self.state_dir)), self.rendered(cluster), cluster.kafka_version,
                         dep.load_secrets(self.state_dir).dynamic_quorum)

    def _alive(self, record: dep.NodeRecord) -> bool:
        """The node's process runs: the one its record names or, when that one does not, one running the node's
        files that no record names (a kill between a node's launch and its record left it): adopted into
        `record` and the state, so that it is waited for, stopped or killed rather than started twice on one data
        directory."""
        if self._recorded_alive(record):
            return True
        unrecorded = self._unrecorded(record.name)
        if unrecorded is None:
            return False
        record.handle = str(unrecorded)
        deployment = dep.load(self.state_dir)  # and in the state, for every later reader
        if any(r.name == record.name for r in deployment.nodes):
            deployment.node(record.name).handle = record.handle
            dep.save(self.state_dir, deployment)
        return True

    def _recorded_alive(self, record: dep.NodeRecord) -> bool:
        if not record.handle.isdigit():
            return False
        child = self._children.get(int(record.handle))
        if child is not None:
            # Ours: alive until it ends. Its command line is no witness just after the start: until the fork has
            # exec'd Java it is this Python's (a roll once took a node it had just started for one that exited).
            return child.poll() is None
        return _runs_node(int(record.handle), self.node_dir(record.name))

    def _unrecorded(self, name: str) -> int | None:
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit() and _runs_node(int(proc.name), self.node_dir(name)):
                return int(proc.name)
        return None

    def kill_node(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Stop one node abruptly (SIGKILL) or cleanly (SIGTERM); its data stays."""
        self._stop(dep.load(self.state_dir).node(name), sig)

    def _stop(self, record: dep.NodeRecord, sig: int = signal.SIGTERM, grace: float = 60) -> None:
        """The recorded process, then any other running the node's files (`_alive` adopts it)."""
        for _ in range(3):
            if not self._alive(record):
                return
            os.kill(int(record.handle), sig)
            if not self._wait_gone(record, grace) and self._recorded_alive(record):
                os.kill(int(record.handle), signal.SIGKILL)
                self._wait_gone(record, 10)

    def restart_node(self, name: str) -> None:
        """SIGKILL and start again (a broker that never registered holds nothing to hand over)."""
        self.kill_node(name)
        self.start_node(name)

    def start_node(self, name: str) -> None:
        """Start a stopped node again with its data and configuration as they are (the configuration a roll set
        aside and did not replace, when it was interrupted in between)."""
        deployment = dep.load(self.state_dir)
        record = deployment.node(name)
        config = self.node_dir(name) / "config"
        if not config.exists() and (self.node_dir(name) / "config.previous").exists():
            (self.node_dir(name) / "config.previous").rename(config)
        if not self._alive(record):
            self._start(record, deployment.kafka_version)
            dep.save(self.state_dir, deployment)

    # --- what a roll and a resize do to single nodes (`runtime.rolling.Nodes`) ---------------------------
    def process_id(self, name: str) -> str:
        record = dep.load(self.state_dir).node(name)
        return record.handle if self._alive(record) else ""

    def replace_node(self, cluster: ClusterSpec, rendered: RenderedNode) -> None:
        """Stop the node (a controlled shutdown), put its new files in place and start it; the previous files
        and record are kept until `settle_node` or `revert_node`."""
        deployment = dep.load(self.state_dir)
        record = deployment.node(rendered.node.name)
        self._stop(record)
        config, previous = Path(rendered.paths.config_dir), self.node_dir(record.name) / "config.previous"
        shutil.rmtree(previous, ignore_errors=True)
        config.rename(previous)
        self._write(rendered)
        deployment.previous[record.name] = record
        new = dep.started(rendered, cluster.kafka_version)
        deployment.nodes[deployment.nodes.index(record)] = new
        dep.save(self.state_dir, deployment)  # recorded before it runs: a kill from here on leaves no stranger
        self._start(new, cluster.kafka_version)
        dep.save(self.state_dir, deployment)

    def revert_node(self, name: str) -> None:
        """Back to the files and record the node ran before `replace_node`, started again."""
        deployment = dep.load(self.state_dir)
        record, old = deployment.node(name), deployment.previous.pop(name)
        self._stop(record, signal.SIGKILL)
        config = self.node_dir(name) / "config"
        shutil.rmtree(config)
        (self.node_dir(name) / "config.previous").rename(config)
        deployment.nodes[deployment.nodes.index(record)] = old
        self._start(old, deployment.kafka_version)
        dep.save(self.state_dir, deployment)

    def settle_node(self, name: str) -> None:
        """The node runs its new configuration healthily: forget the previous one."""
        deployment = dep.load(self.state_dir)
        if deployment.previous.pop(name, None) is not None:
            dep.save(self.state_dir, deployment)
        shutil.rmtree(self.node_dir(name) / "config.previous", ignore_errors=True)

    def add_node(self, cluster: ClusterSpec, rendered: RenderedNode) -> None:
        """Write, format (with the cluster's id) and start a node the cluster did not have."""
        self._write(rendered)
        self._format([rendered], dep.load_secrets(self.state_dir).cluster_id, cluster.kafka_version)
        deployment = dep.load(self.state_dir)
        record = dep.started(rendered, cluster.kafka_version)
        deployment.nodes.append(record)
        # Recorded (without a process yet) before it runs: a kill between the launch and the second save leaves a
        # node the next apply finds by its files (`_alive`), never a JVM nobody knows beside a second one.
        dep.save(self.state_dir, deployment)
        self._start(record, cluster.kafka_version)
        dep.save(self.state_dir, deployment)

    def remove_node(self, name: str, purge: bool) -> None:
        """Stop a node for good and forget it; with `purge`, its directory (data included) goes too."""
        deployment = dep.load(self.state_dir)
        record = deployment.node(name)
        self._stop(record)
        deployment.nodes.remove(record)
        dep.save(self.state_dir, deployment)
        if purge:
            shutil.rmtree(self.node_dir(name), ignore_errors=True)

    def last_error(self, name: str) -> str:
        """The last error its current process logged, and how that process ended if it did."""
        record = dep.load(self.state_dir).node(name)
        child = self._children.get(int(record.handle)) if record.handle.isdigit() else None
        status = child.poll() if child is not None else None
        ended = "" if status is None else f"exited with status {status}" if status >= 0 else \
            f"was killed by {signal.Signals(-status).name}"
        return last_error_line(tail(self.node_dir(name) / LOG_FILE)) + (f" (the process {ended})" if ended else "")

    def set_bootstrap(self, cluster: ClusterSpec) -> None:
        """After brokers were added or removed: the client files list the brokers that now run."""
        dep.reshaped(self.state_dir, cluster, local_bootstrap(topology(cluster), self.state_dir))
        dep.write_endpoints(self.state_dir, local_endpoints(topology(cluster), self.state_dir))

    def _gone(self, record: dep.NodeRecord) -> bool:
        """The node's process has released everything it held. Not the same as `not _alive`: an exiting process
        loses its command line (its memory) before its sockets, and a node started at once on its ports in that
        window fails (seen: the metrics agent's `Address already in use` in a roll). Gone: no such process, a
        zombie (its files closed; our own child is reaped), or a recycled pid running something else."""
        if not record.handle.isdigit():
            return True
        pid = int(record.handle)
        child = self._children.get(pid)
        if child is not None:
            return child.poll() is not None
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, IndexError):
            return True
        return state in ("Z", "X") or (bool(cmdline) and not self._recorded_alive(record))

    def _wait_gone(self, record: dep.NodeRecord, timeout: float) -> bool:
        try:
            until(f"{record.name} to exit", timeout, lambda: self._gone(record), interval=0.2)
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
                if not self._wait_gone(record, 30) and self._recorded_alive(record):
                    os.kill(int(record.handle), signal.SIGKILL)
                    self._wait_gone(record, 10)
        for record in deployment.nodes:  # a node's process no record names (killed between launch and record)
            self._stop(record, signal.SIGKILL, 10)
        if self._dumping is not None:
            proc, target, version = self._dumping
            self._dumping = None
            code = proc.poll()
            class_archive.adopt(target, class_archive.archive_path(version, java_binary()),
                                code is not None and code >= 0)

    def down(self, purge: bool = False) -> None:
        self.stop()
        if purge:
            release_loopback_base(self.state_dir)
            shutil.rmtree(self.state_dir)

    def resident_bytes(self) -> int:
        total = 0
        for record in dep.load(self.state_dir).nodes:
            if self._alive(record):
                for line in Path(f"/proc/{record.handle}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total


LOG_FILE = "kafka.log"


def _classpath(kafka_version: str) -> str:
    return str(ensure_kafka(kafka_version) / "libs" / "*")


def tail(path: Path, size: int = 64 * 1024) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - size))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def last_error_line(log: str) -> str:
    """A node log's last ERROR or FATAL line, with the exception line after it: why it did not come up. Only the
    current process's part of the log counts (after the last start marker)."""
    if START_MARKER in log:
        log = log.rsplit(START_MARKER, 1)[1].partition("\n")[2]
        if not log.strip():
            return "(its process wrote nothing to its log)"
    lines = log.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if " ERROR " in lines[i] or " FATAL " in lines[i]:
            after = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].startswith("[") else ""
            return (lines[i].strip() + (f" / {after}" if after else ""))[:600]
    return lines[-1].strip()[:600] if lines else "(its log is empty)"
