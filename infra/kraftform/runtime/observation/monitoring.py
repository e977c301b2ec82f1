"""`kraftform monitoring up|down`: Prometheus (Debian's package) and kraftform's exporter as processes beside a
cluster of either runtime, everything on loopback.

Prometheus scrapes every node's JMX exporter where the runtime wrote it (`metrics.json`: a local node's own
loopback address, a container's port published on 127.0.0.1), kraftform's exporter, and the Spark consumers
that announce themselves; it evaluates the rules generated from the specs. Files live in STATE_DIR/monitoring:
the configuration, the rules, the dashboard, the time series, the logs and the processes' ids. The processes
run detached and outlive the command, as the local runtime's nodes do.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from kraftform.errors import ClusterUnhealthy, EnvironmentMissing, UsageError
from kraftform.monitoring.alerts import rules_yaml
from kraftform.monitoring.dashboard import dashboard
from kraftform.monitoring.scrape import Endpoint, prometheus_config
from kraftform.runtime.nodes.deployment import METRICS_ENDPOINTS, load
from kraftform.specset.model import SpecSet
from kraftform.statefiles import write_atomic
from kraftform.waiting import until

MONITORING_DIR = "monitoring"
RECORD = "monitoring.json"


@dataclass
class Running:
    prometheus_pid: int
    prometheus_url: str
    exporter_pid: int
    exporter_url: str
    rules_file: str
    targets_file: str


def endpoints(state_dir: Path) -> list[Endpoint]:
    path = state_dir / METRICS_ENDPOINTS
    if not path.is_file():
        raise UsageError(f"{state_dir}: no {METRICS_ENDPOINTS}: the cluster was started before its nodes served "
                         f"metrics; start it again with `kraftform cluster up` to get them")
    return [Endpoint(e["node"], e["roles"], e["address"], e.get("host", "")) for e in json.loads(path.read_text())]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int, marker: str) -> bool:
    try:
        return marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def _spawn(cmd: list[str], log: Path) -> int:
    with log.open("ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True).pid


def monitoring_up(specs: SpecSet, specs_dir: Path, state_dir: Path, data_dir: Path,
                  interval_s: float = 5.0, max_for_s: int | None = None) -> Running:
    """(Re)start Prometheus and the exporter for the cluster in `state_dir` with rules from `specs` (each `for:`
    capped at `max_for_s`, if given)."""
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        raise EnvironmentMissing("Prometheus is needed (apt-get install prometheus; scripts/setup installs it)")
    deployment = load(state_dir)
    if deployment.cluster_name != specs.cluster.name:
        raise UsageError(f"{state_dir} holds cluster {deployment.cluster_name!r}, the specs describe "
                         f"{specs.cluster.name!r}")
    nodes = endpoints(state_dir)
    monitoring_down(state_dir)
    home = state_dir.resolve() / MONITORING_DIR
    home.mkdir(parents=True, exist_ok=True)
    (home / "rules.yml").write_text(rules_yaml(specs, max_for_s))
    (home / "dashboard.json").write_text(json.dumps(dashboard(specs), indent=2) + "\n")
    exporter = f"127.0.0.1:{_free_port()}"
    config = prometheus_config(specs.cluster.name, nodes, exporter, str(home / "rules.yml"),
                               str(data_dir.resolve() / "prometheus" / "*.json"), interval_s)
    (home / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    exporter_pid = _spawn([sys.executable, "-m", "kraftform", "monitoring", "exporter", str(specs_dir),
                           "--state-dir", str(state_dir.resolve()), "--data-dir", str(data_dir.resolve()),
                           "--listen", exporter], home / "exporter.log")
    web = f"127.0.0.1:{_free_port()}"
    prometheus_pid = _spawn([prometheus, f"--config.file={home / 'prometheus.yml'}",
                             f"--storage.tsdb.path={home / 'tsdb'}", f"--web.listen-address={web}",
                             "--storage.tsdb.retention.time=7d", "--web.enable-lifecycle"], home / "prometheus.log")
    running = Running(prometheus_pid, f"http://{web}", exporter_pid, f"http://{exporter}/metrics",
                      str(home / "rules.yml"), str(home / "prometheus.yml"))
    write_atomic(home / RECORD, json.dumps(asdict(running), indent=2) + "\n")
    until("Prometheus to be ready", 60, lambda: _answers(f"{running.prometheus_url}/-/ready"))
    until("kraftform's exporter to answer", 60, lambda: _answers(running.exporter_url))
    return running


def running(state_dir: Path) -> Running | None:
    path = state_dir / MONITORING_DIR / RECORD
    return Running(**json.loads(path.read_text())) if path.is_file() else None


def _stop(pid: int, marker: str, what: str) -> None:
    os.kill(pid, signal.SIGTERM)
    try:
        until(f"{what} to stop", 20, lambda: not _alive(pid, marker))
    except ClusterUnhealthy:
        os.kill(pid, signal.SIGKILL)


def monitoring_down(state_dir: Path) -> list[str]:
    """Stop what `monitoring_up` started (its files and time series stay)."""
    found = running(state_dir)
    if found is None:
        return []
    stopped = []
    for what, pid, marker in (("Prometheus", found.prometheus_pid, "prometheus"),
                              ("kraftform exporter", found.exporter_pid, "exporter")):
        if _alive(pid, marker):
            _stop(pid, marker, what)
            stopped.append(f"{what} (pid {pid})")
    (state_dir / MONITORING_DIR / RECORD).unlink(missing_ok=True)
    return stopped
